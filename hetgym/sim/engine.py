"""The discrete-event engine: arrivals, completions and round ticks drive decision epochs.

Time jumps from event to event and never steps through idle time; events at one instant resolve in a
fixed order (:mod:`hetgym.sim.events`), then the policy is called once for that instant, so runs are
exactly reproducible. Progress is accounted lazily: a running job advances at its allocation's rate,
after paying the reconfiguration penalty whenever its GPUs change.

Two ways to drive it: :meth:`Simulator.run` calls a policy at every epoch (the fast path for benchmarks
and sweeps); :meth:`Simulator.reset` and :meth:`Simulator.step` hand the epochs to the caller (the Gym
env), one :class:`~hetgym.sim.decision.Decision` per step, each answered by a
:class:`~hetgym.sim.decision.StepReport`.

Each epoch's view reads the engine's state through a snapshot (:class:`~hetgym.sim.view.EpochJobs`)
that builds job views only when they are read and is sealed (copied out) at the next step if still
referenced; a decision names the jobs it changes, and only those are checked and applied (a policy's
allocation that changes no job is neither: every job keeps its allocation), so an epoch costs what changes
and what the policy reads, not the number of active jobs. Each view names the jobs the previous step changed
(``changed``) and the epoch it follows (``previous_token``).

This module holds the clock and the decision epochs; the state lives in composed objects beside it:
the run's physics (:mod:`hetgym.sim.physics`), the job records (:mod:`hetgym.sim.runtime`), the
placements and the applying of a decision (:class:`~hetgym.sim.apply.Placements`), the pending events
and the pass over quiet ticks (:class:`~hetgym.sim.events.EventQueue`), the stall detection
(:class:`~hetgym.sim.watchdog.Watchdog`), the logs and reports (:class:`~hetgym.sim.runlog.RunLog`), and
the results (:mod:`hetgym.sim.result`, re-exported here). ``fork`` copies each of them for rollouts.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from hetgym.progress import ProgressReport
from hetgym.sim.admission import check_jobs
from hetgym.sim.allocation import Allocation
from hetgym.sim.apply import Placements
from hetgym.sim.cluster import ClusterSpec, get_cluster
from hetgym.sim.config import SimConfig
from hetgym.sim.deadlines import DeadlineOutcome
from hetgym.sim.decision import NO_ROWS, Decision, Resolved, StepReport, check_decision, decision_or_none
from hetgym.sim.errors import HetgymError, InvalidAllocationError
from hetgym.sim.events import EventQueue
from hetgym.sim.fastforward import QuietTicks, quiet_hook, quiet_request
from hetgym.sim.forking import fork_policy
from hetgym.sim.job import JobSpec, JobStatus
from hetgym.sim.physics import DEFAULT_ROUND_S, Physics, resolve_physics
from hetgym.sim.placement import Placer, make_placer
from hetgym.sim.rates import RateTable
from hetgym.sim.result import SimulationResult, build_result
from hetgym.sim.runlog import RunLog
from hetgym.sim.runtime import JobRecord
from hetgym.sim.throughput import ThroughputModel
from hetgym.sim.view import ClusterView, EpochJobs
from hetgym.sim.watchdog import Watchdog

if TYPE_CHECKING:
    from hetgym.sim.policy import PolicyProtocol

_ENDED = (JobStatus.COMPLETED, JobStatus.REJECTED)


class Simulator:
    """Event-driven simulator of one workload on one cluster.

    Args:
        cluster: A :class:`ClusterSpec` or a preset name.
        jobs: The workload (any iterable of :class:`JobSpec`; ids must be unique).
        config: Simulation knobs (:class:`SimConfig`).
        throughput: The throughput model (default: the embedded table).
        fast_forward: Pass over round ticks at which no decision can change (:mod:`hetgym.sim.fastforward`)
            where the caller asks; ``False`` replays them one by one (the same results: reference runs).

    Raises:
        InvalidJobError: A job whose type has no throughput figures, a duplicate id, or a job no GPU
            type of the cluster may run.
    """

    fast_forward: bool = True  # (a class default too: a simulator pickled before the setting existed has it)
    _num_steps = 0  # decisions applied since reset (before any reset: none)

    def __init__(
        self,
        cluster: ClusterSpec | str,
        jobs: Iterable[JobSpec],
        *,
        config: SimConfig | None = None,
        throughput: ThroughputModel | None = None,
        fast_forward: bool = True,
    ) -> None:
        self.cluster = get_cluster(cluster)
        self.fast_forward = fast_forward
        self.config = config or SimConfig()
        raw = self.config.compat == "gavel"  # the figures as measured, as Gavel reads them
        self.throughput = throughput or (ThroughputModel.raw() if raw else ThroughputModel.default())
        specs = sorted(jobs, key=lambda j: (j.submit_s, j.job_id))
        self._watchdog = Watchdog(self.cluster, self.config, self.throughput)
        self._oversize: set[int] = check_jobs(
            specs, self.cluster, self.throughput, self.config, self._watchdog.fastest_run_s
        )
        self.specs: tuple[JobSpec, ...] = tuple(specs)
        for t in self.cluster.gpu_types:
            self.throughput.check_gpu_type(t)
        self.physics = resolve_physics(self.config)  # the run's (reset sets it)
        self._round_s = self.physics.round_s
        self._placer: Placer = make_placer(self.physics.placer)
        #: Per-job rates per GPU type, shared with the policy and the environment through the views.
        self.rate_table = RateTable(self.cluster, self.throughput)
        # Clock and counters read before reset(): a simulation that has not started is at time 0.
        self._now = 0.0
        self._epoch = 0
        self._events = 0
        self._ended = 0
        self._done = False
        self._started = False
        self._log = RunLog(self.cluster.gpu_types, record_timeline=self.config.record_timeline)
        self._snapshots: list[weakref.ref[EpochJobs]] = []

    # ----------------------------------------------------------------------------------------
    # Stepping API

    @property
    def round_s(self) -> float:
        """The round length in force."""
        return self._round_s

    @property
    def now_s(self) -> float:
        """Current simulated time."""
        return self._now

    @property
    def decision_latencies_s(self) -> tuple[float, ...]:
        """Wall time of each ``schedule`` call of the last :meth:`run`, in order (what the result's
        ``decision_ms_p50`` and ``decision_ms_p99`` summarise); empty when stepped by hand."""
        return tuple(self._log.latencies_s)

    @property
    def num_steps(self) -> int:
        """Decisions applied since :meth:`reset` (each a consultation of the policy; ticks passed over are not)."""
        return self._num_steps

    @property
    def done(self) -> bool:
        """Whether the simulation has ended."""
        return self._done

    def ended_log(self, start: int = 0) -> list[tuple[int, float, JobStatus]]:
        """``(job_id, time_s, status)`` of each job ended, in order, from record ``start`` (UNFINISHED: at the stop)."""
        return self._log.ended[start:]

    def deadline_log(self, start: int = 0) -> list[DeadlineOutcome]:
        """Every deadline outcome decided so far (:mod:`hetgym.sim.deadlines`), from record ``start`` on."""
        return self._log.deadline_log(start)

    def report(self, view: ClusterView | None) -> StepReport:
        """What was recorded since the previous report, with ``view`` (for an advance that made none: reset, run)."""
        return self._log.report(view, self._now)

    def reset(
        self,
        round_s: float | None = None,
        *,
        ticks: bool = True,
        placer: str | None = None,
        physics: Physics | None = None,
    ) -> ClusterView | None:
        """Start (or restart) the simulation and advance to the first decision epoch.

        Args:
            physics: The run's round, placer and ticks (:func:`~hetgym.sim.physics.resolve_physics` gives a
                policy's). Without it they come from ``SimConfig`` and the three arguments below.
            round_s: Round length for this run when the configuration leaves it open.
            ticks: Whether round ticks are decision epochs (policies with ``uses_ticks = False`` run without).
            placer: The placer for this run when the configuration leaves it open; ``None`` for ``"default"``.

        Returns:
            The first view, or ``None`` if the workload is empty.
        """
        if physics is None:
            cfg = self.config
            physics = Physics(
                float(cfg.round_s or round_s or DEFAULT_ROUND_S), cfg.placer or placer or "default", ticks=ticks
            )
        self.physics = physics
        self._round_s = physics.round_s
        ticks = physics.ticks
        gavel_rounds = ticks and self.config.compat == "gavel"
        if self._started:
            self._seal_snapshots()
        self.rate_table.clear(self.throughput)
        self._placer = make_placer(physics.placer)
        # The placer's own stream (the random placer), independent of the policy's.
        self._placer.reset(self.cluster, rng=np.random.default_rng([self.config.seed, 1]))
        order = [JobRecord(s) for s in self.specs]
        for rank, record in enumerate(order):
            record.rank = rank
        self._rank: dict[int, int] = {s.job_id: rank for rank, s in enumerate(self.specs)}
        self._active: dict[int, JobRecord] = {}  # arrived, not ended, in submission order
        # The running jobs, their allocations and placements, the waiting jobs' views, the completions.
        self._placements = Placements(
            self.cluster, self.config, self.throughput, self._placer, self._round_s, self._active, self._rank
        )
        self._placements.gavel_rounds = gavel_rounds
        # Arrivals, completions (the placements' heap: the same list) and ticks.
        self._queue = EventQueue(order, self._placements.heap, self._round_s, ticks=ticks, gavel_rounds=gavel_rounds)
        # This epoch's snapshot of the jobs (held weakly: only views keep it) and its identity token;
        # snapshots still referenced have the records they show saved before those change.
        self._snapshots = []
        self._epoch_token: object | None = None
        # The previous epoch's token and the jobs its step changed, for the next view.
        self._previous_token: object | None = None
        self._now = 0.0
        self._tick_epoch = False  # whether the current epoch is a round tick (compat="gavel" rounds)
        self._epoch = self._events = self._ended = 0
        self._watchdog.start(self._round_s, self._watchdog.epoch_bound(self.specs, self._round_s))
        self._num_steps = 0
        self._done = False
        self._log = RunLog(self.cluster.gpu_types, record_timeline=self.config.record_timeline)
        self._started = True
        self._wall_start = time.perf_counter()
        self._log.usage(0.0, self._placements.totals)
        return self._advance()

    @overload
    def step(self, decision: Decision, *, quiet: QuietTicks | None = None) -> StepReport: ...

    @overload
    def step(self, decision: Allocation, *, quiet: QuietTicks | None = None) -> ClusterView | None: ...

    def step(
        self, decision: Decision | Allocation, *, quiet: QuietTicks | None = None
    ) -> StepReport | ClusterView | None:
        """Apply the decision for the current epoch and advance to the next one.

        A :class:`~hetgym.sim.decision.Decision` (the rows it changes) is checked once
        (:func:`~hetgym.sim.decision.check_decision`) and the step returns a :class:`StepReport`: the next view
        and what ended, the deadline outcomes and the busy GPU-seconds since the previous report. A policy's
        :class:`Allocation` is turned into its decision (:func:`~hetgym.sim.decision.decision_of`) and the step
        returns the next view alone.

        With ``quiet`` (and ``fast_forward``), the quiet round ticks that follow are passed over as epochs
        that keep every allocation, and recorded in ``quiet`` (:mod:`hetgym.sim.fastforward`).

        Raises:
            InvalidAllocationError: The decision is invalid, or of another epoch; nothing was applied.
        """
        if not isinstance(decision, Decision):
            return self._step(decision, quiet)
        view = self._step(decision, quiet)
        return self._log.report(view, self._now, tuple(quiet.times_s) if quiet is not None else ())

    def step_counts(self, delta: Decision, *, quiet: QuietTicks | None = None) -> ClusterView | None:
        """:meth:`step` of a decision, returning the next view alone (the environment's former entry)."""
        return self._step(delta, quiet)

    def _step(self, decision: Decision | Allocation, quiet: QuietTicks | None) -> ClusterView | None:
        if not self._started or self._done:
            raise HetgymError("call reset() before step(), and do not step a finished simulation")
        placements = self._placements
        if not isinstance(decision, Decision):  # a policy's Allocation: its rows (None: it changes no job)
            rows = decision_or_none(decision, self.cluster, self._epoch_token, placements.allocs)
        elif decision.epoch is not self._epoch_token:
            raise InvalidAllocationError("the decision is not of this epoch (its epoch is not view.active.token)")
        else:
            rows = decision
        resolved = NO_ROWS  # no row: nothing to check, and every job keeps its allocation
        if rows is not None:
            resolved = check_decision(rows, self.cluster, self._active, placements.allocs, placements.totals, self._now)
        self._seal_snapshots()
        self._num_steps += 1
        placements.changed = []
        # A decision without a row changes nothing unless the placer re-packs the whole cluster at every step.
        if resolved is not NO_ROWS or placements.placer.replaces_all:
            self._apply(resolved)
        return self._end_step(quiet)

    def _end_step(self, quiet: QuietTicks | None) -> ClusterView | None:
        """After a step's decision is applied: pass over quiet ticks if asked, advance to the next epoch."""
        self._previous_token = self._epoch_token
        self._epoch_token = None
        queue = self._queue
        if queue.gavel_rounds:
            queue.next_tick_s = self._placements.end_gavel_step(self._now, queue.next_tick_s, tick=self._tick_epoch)
        if quiet is not None and self.fast_forward:
            quiet.times_s = []
            if self._active and not self._done:
                now_s, epoch = queue.pass_quiet_ticks(
                    quiet,
                    now_s=self._now,
                    epoch=self._epoch,
                    placements=self._placements,
                    deadlines=self._log.deadlines,
                    watchdog=self._watchdog,
                    config=self.config,
                )
                if quiet.times_s:  # each tick an epoch (and an event) whose step changed nothing
                    self._events += epoch - self._epoch
                    self._now, self._epoch = now_s, epoch
                    self._placements.changed = []
                    self._previous_token = None  # the next epoch follows none its caller saw
        return self._advance()

    def run(self, policy: PolicyProtocol, *, progress: bool = False, ticks: bool | None = None) -> SimulationResult:
        """Run ``policy`` over the whole workload and return the results.

        Args:
            policy: Any object following the policy protocol.
            progress: Report progress over jobs (:class:`~hetgym.progress.ProgressReport`: a bar on a
                terminal, else a line every few seconds).
            ticks: Whether round ticks are decision epochs; ``None`` (default) asks the policy
                (``uses_ticks``). The Gym environment always has ticks, so compare with ``ticks=True``.

        A policy declaring ``stands_on_ticks`` is not asked at quiet ticks, and one declaring how long its
        answer stands (:meth:`~hetgym.sim.policy.Policy.quiet_until_s`) is asked only where it may change
        (:mod:`hetgym.sim.fastforward`); the result is the tick-by-tick run's.
        """
        policy.reset(self.cluster, rng=np.random.default_rng(self.config.seed))
        view = self.reset(physics=resolve_physics(self.config, policy, ticks=ticks))
        ticks = self.physics.ticks
        self._placements.watch_idle = True  # a policy holding GPUs at zero rate is stopped (fastforward.py)
        latencies = self._log.latencies_s
        perf = time.perf_counter
        schedule = policy.schedule
        name = getattr(policy, "name", type(policy).__name__)
        stands = ticks and bool(getattr(policy, "stands_on_ticks", False))
        quiet_until = quiet_hook(policy) if ticks and not stands else None
        with ProgressReport(enabled=progress) as report:
            report.task(f"simulate {name}", len(self.specs), unit="jobs ended")
            while view is not None:
                t0 = perf()
                try:
                    allocation = schedule(view)
                    latencies.append(perf() - t0)
                    view = None  # unless the policy kept it, the epoch's snapshot need not outlive the step
                    quiet = quiet_request(quiet_until(), self._now) if quiet_until else QuietTicks() if stands else None
                    view = self._step(allocation, quiet)  # (step() of an Allocation, without its dispatch)
                except InvalidAllocationError as err:
                    raise InvalidAllocationError(f"policy {name!r} at t={self._now:.1f}s: {err}") from None
                if progress and self._epoch % 256 == 0:
                    report.update(completed=self._ended)
            report.update(completed=self._ended)
        result = self.result(name)
        if stands or quiet_until is not None:  # the ticks passed over were decided too (everything kept)
            result.metrics["num_decisions"] = float(self._epoch)
        return result

    def _apply(self, resolved: Resolved) -> None:
        """Apply a checked decision: the rejected jobs end, the placements change (:class:`Placements`)."""
        now = self._now
        placements = self._placements
        for jid in sorted(resolved.reject) if resolved.reject else ():
            job = self._active.pop(jid)
            placements.reject(job, now)
            self._ended += 1
            self._log.end(job.spec, now, JobStatus.REJECTED)
        new = resolved.new
        if placements.placer.replaces_all or resolved.explicit:
            # A placer that re-packs everything, or an explicit placement that may displace kept jobs, needs
            # the whole decision: every job without a row keeps its allocation.
            touched = set(resolved.touched)
            new = {**{j: a for j, a in placements.allocs.items() if j not in touched}, **new}
        if placements.apply(new, resolved.touched, now) or resolved.reject:
            self._log.usage(now, placements.totals)
        placements.restore_order()

    # ----------------------------------------------------------------------------------------
    # Event processing

    def _advance(self) -> ClusterView | None:
        """Process events up to the next decision epoch and return its view (None when finished)."""
        cfg = self.config
        queue, placements, watchdog = self._queue, self._placements, self._watchdog
        order = queue.order
        while True:
            holders = placements.idle_holders  # (calls below are guarded by their cheap preconditions)
            idle_until_s = watchdog.idle_holders_until_s(holders) if holders else math.inf
            t_next = queue.peek_s(self._now, active=bool(self._active), idle_until_s=idle_until_s)
            if (
                t_next == math.inf
                or t_next > cfg.max_time_s
                or (cfg.max_epochs is not None and self._epoch >= cfg.max_epochs)
            ):
                if math.inf > t_next > cfg.max_time_s:
                    self._now = cfg.max_time_s
                break
            self._now = t_next
            heap = queue.heap
            completed = self._pop_completions(t_next) if heap and heap[0][0] <= t_next else ()
            i = queue.next_arrival
            arrived = self._pop_arrivals(t_next) if i < len(order) and order[i].spec.submit_s <= t_next else ()
            is_tick = queue.next_tick_s <= t_next
            if queue.gavel_rounds and not placements.running and self._active and not is_tick:
                # Gavel's round ends when the last job running in it does; on an idle cluster it starts
                # with the next arrival.
                is_tick = True
                queue.next_tick_s = t_next
            if is_tick:
                self._events += 1
                queue.next_tick_s = math.inf
            if not self._active:
                # Nothing to decide (the last active job just completed): no ticks until the next arrival.
                queue.next_tick_s = math.inf
                self._previous_token = None  # the next epoch follows no epoch: its view cannot say what ended
                continue
            if queue.ticks and queue.next_tick_s == math.inf:
                gavel_tick = queue.gavel_rounds and is_tick
                queue.next_tick_s = t_next + self._round_s if gavel_tick else queue.grid_tick_s(t_next)
            if completed or queue.next_arrival < len(order):  # work: Watchdog.at_epoch's first case, at once
                watchdog.worked(t_next)
                reason = None
            else:
                reason = watchdog.at_epoch(
                    t_next, pending=False, completed=False, arrived=bool(arrived), running=placements.running.values()
                )
            if reason is None and placements.idle_holders:
                # A job held GPUs at zero rate for too long (the watchdog names it).
                reason = watchdog.idle_holders_reason(placements.idle_holders, placements.running, t_next)
            if reason is None and self._epoch >= watchdog.epoch_limit:
                reason = watchdog.epoch_limit_reason(self._epoch)
            if reason is not None:
                watchdog.stop(reason)
                break
            self._log.deadlines.passed(t_next, queue.jobs)
            view = self._make_view(arrived, completed, is_tick)
            self._tick_epoch = is_tick
            self._epoch += 1
            return view
        self._finish()
        return None

    def _pop_completions(self, now: float) -> tuple[int, ...]:
        done: list[int] = []
        for job in self._queue.pop_completions(now):
            jid = job.spec.job_id
            job.complete(now)
            del self._active[jid]
            self._placements.remove(job)
            self._ended += 1
            self._log.end(job.spec, now, JobStatus.COMPLETED)
            self._events += 1
            done.append(jid)
        if done:
            self._log.usage(now, self._placements.totals)
        return tuple(sorted(done))

    def _pop_arrivals(self, now: float) -> tuple[int, ...]:
        arrived: list[int] = []
        for job in self._queue.pop_arrivals(now):
            jid = job.spec.job_id
            self._events += 1
            if jid in self._oversize:
                # Admitted by oversize_jobs="reject": it can never fit, so it leaves at once.
                job.status = JobStatus.REJECTED
                job.last_update_s = job.finish_s = now
                self._ended += 1
                self._log.end(job.spec, now, JobStatus.REJECTED)
                continue
            job.status = JobStatus.WAITING
            job.last_update_s = now
            self._active[jid] = job
            self._placements.arrive(job, now)
            self._log.deadlines.arrived(job.spec)
            arrived.append(jid)
        return tuple(arrived)

    def _make_view(self, arrived: tuple[int, ...], completed: tuple[int, ...], is_tick: bool) -> ClusterView:
        now = self._now
        # Free GPUs per type from the running allocations' totals (kept as they change): what the
        # servers' free GPUs add up to, without summing them.
        placements = self._placements
        capacity, held = self.cluster.capacity, placements.totals
        # The jobs' views are built only if read (EpochJobs): no per-job cost here.
        jobs = EpochJobs(now, placements.running, placements.waiting_views, placements.allocs)
        self._snapshots.append(weakref.ref(jobs))
        self._epoch_token = jobs.token
        return ClusterView._of_fields(
            now_s=now,
            epoch=self._epoch,
            cluster=self.cluster,
            active=jobs,
            free_gpus={t: capacity[t] - held[t] for t in self.cluster.gpu_types},
            free_servers=placements.servers.free.copy(),
            arrived=arrived,
            completed=completed,
            is_tick=is_tick,
            round_s=self._round_s,
            throughput=self.throughput,
            config=self.config,
            rate_table=self.rate_table,
            num_pending=len(self._queue.order) - self._queue.next_arrival,
            num_ended=self._ended,
            changed=tuple(placements.changed),
            previous_token=self._previous_token,
        )

    # ----------------------------------------------------------------------------------------
    # Copies: forks for rollouts, pickles, and the views kept past their epoch

    def _seal_snapshots(self) -> None:
        """Before the state changes: every snapshot still referenced (a view kept past its decision)
        copies what it shows out of the engine's mappings; then none is tracked any more."""
        for ref in self._snapshots:
            jobs = ref()
            if jobs is not None:
                jobs.seal()
        self._snapshots = []

    def __getstate__(self) -> dict[str, Any]:
        # Weak references do not pickle: build the views of live snapshots, then drop the references.
        self._seal_snapshots()
        return self.__dict__.copy()

    def fork(self) -> Simulator:
        """An independent copy of the simulation at this point: stepping one leaves the other as it was.

        Shared: what no step changes (cluster, configuration, throughput model, specs, the records of jobs
        that ended, caches that are pure functions of their keys). Copied: the clock and counters, the other
        records, the placements, the event queue, the watchdog, the placer (with any random stream) and the
        logs. Continued with the same decisions, a fork gives the original's continuation, bit for bit; the
        current epoch's view reads the original's state (:meth:`rebind_view` gives the fork its own).
        """
        out = Simulator.__new__(Simulator)
        out.__dict__.update(self.__dict__)
        # The placer may keep state (a random stream, its last answer): copy it, sharing the immutable
        # objects it refers to (its copy_state() where it has one, else a deep copy).
        memo: dict[int, Any] = {id(obj): obj for obj in (self.cluster, self.config, self.throughput)}
        out._placer = fork_policy(self._placer, memo)
        out._watchdog = copy.copy(self._watchdog)  # its counters are numbers; its rate cache is shared
        out._log = self._log.copy()
        out._snapshots = []
        if self._started:
            # A completed or rejected job's record never changes again: shared.
            jobs = {jid: r if r.status in _ENDED else r.copy() for jid, r in self._queue.jobs.items()}
            out._active = {jid: jobs[jid] for jid in self._active}
            out._placements = self._placements.fork(out._active, out._placer)
            out._queue = self._queue.fork(jobs, out._placements.heap)
        return out

    def rebind_view(self, view: ClusterView) -> ClusterView:
        """The current epoch's ``view``, taken from the simulator this one was forked from, reading this one's state.

        The epoch keeps its identity (``view.active.token``): a policy forked along with the simulator sees
        the fork's next view follow it, as the original's would.

        Raises:
            HetgymError: ``view`` is not of this simulator's current epoch.
        """
        if not self._started or self._done or view.active.token is not self._epoch_token:
            raise HetgymError(
                "rebind_view: the view is not of this simulator's current epoch; pass the view the original "
                "simulator returned last, before stepping it (fork again after every step)"
            )
        placements = self._placements
        jobs = EpochJobs(view.now_s, placements.running, placements.waiting_views, placements.allocs)
        jobs.token = view.active.token
        self._snapshots.append(weakref.ref(jobs))
        return dataclasses.replace(view, active=jobs, free_servers=placements.servers.free.copy())

    # ----------------------------------------------------------------------------------------
    # Results

    def _finish(self) -> None:
        """End the run: the active jobs end unfinished (once); returns ``None``, the view of no epoch."""
        if not self._done:
            self._done = True
            self._seal_snapshots()
            for job in self._active.values():
                job.flush(self._now)
                if job.status == JobStatus.RUNNING:
                    job.last_run_s = self._now - job.run_start_s
                job.status = JobStatus.UNFINISHED
                self._log.end(job.spec, self._now, JobStatus.UNFINISHED)
            self._wall_s = time.perf_counter() - self._wall_start
        return None

    def result(self, policy_name: str = "") -> SimulationResult:
        """Metrics and per-job table of the finished (or stopped) simulation."""
        if not self._started:
            raise HetgymError("the simulation has not been run; call run(policy) or reset()/step()")
        return build_result(
            policy_name,
            self.cluster,
            self.throughput,
            self._queue.order,
            self._log.timeline,
            self._log.latencies_s,
            stalled=self._watchdog.stalled,
            stall_reason=self._watchdog.reason,
            num_oversize=len(self._oversize),
            num_epochs=self._epoch,
            num_events=self._events,
            wall_s=getattr(self, "_wall_s", time.perf_counter() - self._wall_start),
        )
