"""The discrete-event engine: arrivals, completions and round ticks drive decision epochs.

Time jumps from event to event and never steps through idle time. Events at the same instant are
resolved in a fixed order (completions, then arrivals, then the round tick; within a kind by job id
or by a sequence counter), then the policy is called once for that instant, so runs are exactly
reproducible. Progress is accounted lazily: a running job advances at its allocation's rate, after
paying the reconfiguration penalty whenever its GPUs change.

Two ways to drive it:

* :meth:`Simulator.run` calls a policy at every epoch (the fast path for benchmarks and sweeps);
* :meth:`Simulator.reset` and :meth:`Simulator.step` hand the epochs to the caller (the Gym env).
"""

from __future__ import annotations

import bisect
import heapq
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from hetgym.sim.allocation import Allocation, JobAllocation, check_allocation
from hetgym.sim.cluster import ClusterSpec, ClusterState, get_cluster
from hetgym.sim.comm import placement_rate
from hetgym.sim.config import SimConfig
from hetgym.sim.errors import HetgymError, InvalidJobError, UnknownNameError
from hetgym.sim.job import JobSpec, JobStatus
from hetgym.sim.metrics import compute_metrics, jobs_frame
from hetgym.sim.placement import PlacementRequest, Placer, make_placer
from hetgym.sim.policy import policy_placer
from hetgym.sim.rates import RateTable
from hetgym.sim.throughput import ServerGroup, ThroughputModel, allocation_rate
from hetgym.sim.view import ClusterView, JobView, _submission_order

if TYPE_CHECKING:
    from hetgym.sim.policy import PolicyProtocol

DEFAULT_ROUND_S = 360.0
_EPS_S = 1e-9


class _Job:
    """Mutable runtime record of one job (simulator-internal).

    Progress is accounted lazily: ``remaining``, ``attained_gpu_s``, ``executed_s`` and
    ``gpu_s_by_type`` hold their values at ``last_update_s`` (the last allocation change), and the
    values at any later time follow from the current rate and GPUs (:meth:`flush` brings them up to
    date when the allocation changes or the job ends).
    """

    __slots__ = (
        "alloc",
        "attained_gpu_s",
        "executed_s",
        "finish_s",
        "first_start_s",
        "gpu_s_by_type",
        "groups",
        "last_change_s",
        "last_run_s",
        "last_update_s",
        "num_gpus_now",
        "num_reconfigs",
        "penalty_until_s",
        "rate",
        "remaining",
        "run_start_s",
        "spec",
        "status",
        "version",
        "view",
    )

    def __init__(self, spec: JobSpec) -> None:
        self.spec = spec
        self.status = JobStatus.PENDING
        self.remaining = float(spec.total_iters)
        self.alloc: JobAllocation | None = None
        self.groups: tuple[ServerGroup, ...] = ()
        self.num_gpus_now = 0
        self.rate = 0.0
        self.penalty_until_s = 0.0
        self.last_update_s = spec.submit_s
        self.attained_gpu_s = 0.0
        self.gpu_s_by_type: dict[str, float] = {}
        self.executed_s = 0.0
        self.first_start_s: float | None = None
        self.last_change_s: float | None = None
        self.run_start_s = 0.0
        self.last_run_s = 0.0
        self.finish_s: float | None = None
        self.num_reconfigs = 0
        self.version = 0
        self.view: JobView | None = None

    @property
    def allocation(self) -> JobAllocation | None:
        return self.alloc

    def remaining_at(self, now: float) -> float:
        """Iterations left at ``now`` under the current allocation."""
        if self.status != JobStatus.RUNNING or self.rate <= 0:
            return self.remaining
        effective = now - max(self.last_update_s, self.penalty_until_s)
        return max(0.0, self.remaining - self.rate * effective) if effective > 0 else self.remaining

    def flush(self, now: float) -> None:
        """Bring the accounted progress and service up to ``now``."""
        dt = now - self.last_update_s
        if dt > 0 and self.status == JobStatus.RUNNING:
            self.remaining = self.remaining_at(now)
            self.attained_gpu_s += self.num_gpus_now * dt
            self.executed_s += dt
            per_type = dict(self.gpu_s_by_type)  # copy on write: views keep the old mapping
            for g in self.groups:
                per_type[g.gpu_type] = per_type.get(g.gpu_type, 0.0) + g.num_gpus * dt
            self.gpu_s_by_type = per_type
        self.last_update_s = now

    def make_view(self, now: float) -> JobView:
        view = self.view
        if view is not None:
            return view
        s = self.spec
        if self.status == JobStatus.RUNNING:
            dt = now - self.last_update_s
            return JobView(
                s,
                s.job_id,
                s.submit_s,
                s.job_type,
                s.batch_size,
                s.total_iters,
                s.num_gpus,
                s.deadline_s,
                self.status,
                self.remaining_at(now),
                self.alloc,
                self.groups,
                self.rate,
                max(0.0, self.penalty_until_s - now),
                self.attained_gpu_s + self.num_gpus_now * dt,
                self.executed_s + dt,
                self.first_start_s,
                self.last_change_s,
                now - self.run_start_s,
                self.num_reconfigs,
                self.gpu_s_by_type,
                dt,
            )
        # A waiting job's snapshot stays valid until its state changes.
        view = JobView(
            s,
            s.job_id,
            s.submit_s,
            s.job_type,
            s.batch_size,
            s.total_iters,
            s.num_gpus,
            s.deadline_s,
            self.status,
            self.remaining,
            None,
            (),
            0.0,
            0.0,
            self.attained_gpu_s,
            self.executed_s,
            self.first_start_s,
            self.last_change_s,
            self.last_run_s,
            self.num_reconfigs,
            self.gpu_s_by_type,
            0.0,
        )
        self.view = view
        return view


def _job_order(job: _Job) -> tuple[float, int]:
    return (job.spec.submit_s, job.spec.job_id)


@dataclass
class SimulationResult:
    """What :meth:`Simulator.run` returns.

    Attributes:
        policy: Policy name.
        cluster: Cluster name.
        metrics: Scalar metrics (see :mod:`hetgym.sim.metrics` for each definition).
        jobs: One row per job with its outcome.
        timeline: GPUs in use per type over time (a step function: one row per change).
        stalled: Whether the run stopped because no job could make progress.
        num_epochs: Decision epochs.
        num_events: Arrival, completion and tick events processed.
        wall_s: Wall-clock duration of the run.
    """

    policy: str
    cluster: str
    metrics: dict[str, float]
    jobs: pd.DataFrame
    timeline: pd.DataFrame
    stalled: bool = False
    num_epochs: int = 0
    num_events: int = 0
    wall_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        """A short human-readable line of the headline metrics."""
        m = self.metrics
        return (
            f"{self.policy} on {self.cluster}: DSR {m['dsr']:.3f}, avg JCT {m['jct_mean_s'] / 3600:.2f} h, "
            f"makespan {m['makespan_s'] / 3600:.2f} h, util {m['utilisation']:.3f}, "
            f"{int(m['num_completed'])}/{int(m['num_jobs'])} done"
        )


class Simulator:
    """Event-driven simulator of one workload on one cluster.

    Args:
        cluster: A :class:`ClusterSpec` or a preset name.
        jobs: The workload (any iterable of :class:`JobSpec`; ids must be unique).
        config: Simulation knobs (:class:`SimConfig`).
        throughput: The throughput model (default: the embedded table).

    Raises:
        InvalidJobError: A job whose type has no throughput figures, a duplicate id, or a job no GPU
            type of the cluster may run.
    """

    def __init__(
        self,
        cluster: ClusterSpec | str,
        jobs: Iterable[JobSpec],
        *,
        config: SimConfig | None = None,
        throughput: ThroughputModel | None = None,
    ) -> None:
        self.cluster = get_cluster(cluster)
        self.config = config or SimConfig()
        self.throughput = throughput or ThroughputModel.default()
        specs = sorted(jobs, key=lambda j: (j.submit_s, j.job_id))
        self._check_jobs(specs)
        self.specs: tuple[JobSpec, ...] = tuple(specs)
        for t in self.cluster.gpu_types:
            self.throughput.check_gpu_type(t)
        self._round_s = self.config.round_s or DEFAULT_ROUND_S
        self._placer: Placer = make_placer(self.config.placer or "default")
        #: Per-job rates per GPU type, shared with the policy and the environment through the views.
        self.rate_table = RateTable(self.cluster, self.throughput)
        # Clock and counters read before reset(): a simulation that has not started is at time 0.
        self._now = 0.0
        self._epoch = 0
        self._events = 0
        self._ended = 0
        self._done = False
        self._started = False
        self._latencies_s: list[float] = []
        self._ended_log: list[tuple[int, float, JobStatus]] = []

    def _check_jobs(self, specs: list[JobSpec]) -> None:
        seen: set[int] = set()
        types = set(self.cluster.gpu_types)
        total = self.cluster.total_gpus
        known_types: set[str] = set()
        for row, s in enumerate(specs):
            if s.job_id in seen:
                raise InvalidJobError(f"job {s.job_id}: duplicate job_id (ids must be unique)")
            seen.add(s.job_id)
            if s.job_type not in known_types:
                try:
                    self.throughput.check_job_type(s.job_type)
                except UnknownNameError as err:
                    raise InvalidJobError(f"job {s.job_id} (row {row}): field 'job_type': {err}") from None
                known_types.add(s.job_type)
            if s.gpu_types is not None and not types.intersection(s.gpu_types):
                raise InvalidJobError(
                    f"job {s.job_id}: may only run on {list(s.gpu_types)}, none of which is in cluster "
                    f"{self.cluster.name!r} ({list(self.cluster.gpu_types)})"
                )
            if s.min_gpus > total:
                raise InvalidJobError(
                    f"job {s.job_id}: needs at least {s.min_gpus} GPUs but cluster {self.cluster.name!r} has {total}"
                )

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
    def done(self) -> bool:
        """Whether the simulation has ended."""
        return self._done

    def ended_log(self, start: int = 0) -> list[tuple[int, float, JobStatus]]:
        """``(job_id, time_s, status)`` of every job that ended, in order, from record ``start`` on.

        Completions and rejections are recorded as they happen; jobs still active when the simulation
        stops are recorded as ``UNFINISHED`` at the stop time. Step-by-step callers (the Gym env) keep
        a cursor to see what ended between two epochs, including a last completion that leaves the
        cluster idle and so opens no epoch of its own.
        """
        return self._ended_log[start:]

    def reset(
        self, round_s: float | None = None, *, ticks: bool = True, placer: str | None = None
    ) -> ClusterView | None:
        """Start (or restart) the simulation and advance to the first decision epoch.

        Args:
            round_s: Round length for this run when the configuration leaves it open.
            ticks: Whether round ticks are decision epochs. Policies whose decisions depend only on
                arrivals and completions (``uses_ticks = False``) run without them, which is faster
                and gives the same schedule.
            placer: The placer (:mod:`hetgym.sim.placement`) for this run when the configuration leaves
                it open (``SimConfig.placer``); ``None`` for ``"default"``.

        Returns:
            The first view, or ``None`` if the workload is empty.
        """
        self._round_s = float(self.config.round_s or round_s or DEFAULT_ROUND_S)
        self._ticks = ticks
        self.rate_table.clear(self.throughput)
        self._placer = make_placer(self.config.placer or placer or "default")
        # The placer's own stream (the random placer), independent of the policy's.
        self._placer.reset(self.cluster, rng=np.random.default_rng([self.config.seed, 1]))
        self._jobs: dict[int, _Job] = {s.job_id: _Job(s) for s in self.specs}
        self._order: list[_Job] = [self._jobs[s.job_id] for s in self.specs]
        self._next_arrival = 0
        self._active: dict[int, _Job] = {}  # arrived, not ended, in submission order
        self._running: dict[int, _Job] = {}  # the active jobs holding GPUs
        self._waiting_views: dict[int, JobView] = {}  # the others' (cached) views, in submission order
        self._state = ClusterState(self.cluster)
        self._heap: list[tuple[float, int, int, int]] = []  # (time, seq, job_id, version)
        self._seq = 0
        self._now = 0.0
        self._next_tick_s = math.inf
        self._epoch = 0
        self._events = 0
        self._ended = 0
        self._stall_count = 0
        self._stalled = False
        self._done = False
        self._timeline: list[tuple[float, tuple[int, ...]]] = []
        self._ended_log = []
        self._latencies_s = []
        self._started = True
        self._wall_start = time.perf_counter()
        self._record_usage()
        return self._advance()

    def step(self, allocation: Allocation) -> ClusterView | None:
        """Apply the decision for the current epoch and advance to the next one.

        Raises:
            InvalidAllocationError: The allocation is invalid; nothing was applied.

        Returns:
            The next view, or ``None`` when the simulation has ended.
        """
        if not self._started or self._done:
            raise HetgymError("call reset() before step(), and do not step a finished simulation")
        check_allocation(allocation, self.cluster, self._active, self._now)
        self._apply(allocation)
        return self._advance()

    def run(self, policy: PolicyProtocol, *, progress: bool = False, ticks: bool | None = None) -> SimulationResult:
        """Run ``policy`` over the whole workload and return the results.

        Args:
            policy: Any object following the policy protocol.
            progress: Show a progress bar over jobs.
            ticks: Whether round ticks are decision epochs; ``None`` (default) asks the policy
                (``uses_ticks``). The Gym environment always has ticks, so compare with ``ticks=True``.
        """
        policy.reset(self.cluster, rng=np.random.default_rng(self.config.seed))
        if ticks is None:
            ticks = getattr(policy, "uses_ticks", True)
        view = self.reset(round_s=getattr(policy, "round_s", None), ticks=ticks, placer=policy_placer(policy))
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(self.specs), desc=getattr(policy, "name", "policy"), unit="job", leave=False)
        latencies = self._latencies_s
        perf = time.perf_counter
        schedule = policy.schedule
        while view is not None:
            t0 = perf()
            allocation = schedule(view)
            latencies.append(perf() - t0)
            view = self.step(allocation)
            if bar is not None and self._epoch % 256 == 0:
                bar.n = self._ended
                bar.refresh()
        if bar is not None:
            bar.n = self._ended
            bar.close()
        return self.result(getattr(policy, "name", type(policy).__name__))

    # ----------------------------------------------------------------------------------------
    # Event processing

    def _advance(self) -> ClusterView | None:
        """Process events up to the next decision epoch and return its view (None when finished)."""
        cfg = self.config
        while True:
            t_next = self._peek_time()
            if t_next == math.inf:
                self._finish()
                return None
            if t_next > cfg.max_time_s:
                self._now = cfg.max_time_s
                self._finish()
                return None
            if cfg.max_epochs is not None and self._epoch >= cfg.max_epochs:
                self._finish()
                return None
            self._now = t_next
            completed = self._pop_completions(t_next)
            arrived = self._pop_arrivals(t_next)
            is_tick = self._next_tick_s <= t_next
            if is_tick:
                self._events += 1
                self._next_tick_s = math.inf
            if not self._active:
                # Nothing to decide (the last active job just completed): no ticks until the next arrival.
                self._next_tick_s = math.inf
                continue
            if self._ticks and self._next_tick_s == math.inf:
                self._next_tick_s = (math.floor(t_next / self._round_s + _EPS_S) + 1) * self._round_s
            if self._is_stalled():
                self._stall_count += 1
                if self._stall_count >= cfg.stall_epochs:
                    self._stalled = True
                    self._finish()
                    return None
            else:
                self._stall_count = 0
            self._view = self._make_view(arrived, completed, is_tick)
            self._epoch += 1
            return self._view

    def _peek_time(self) -> float:
        heap = self._heap
        jobs = self._jobs
        while heap:
            _, _, jid, version = heap[0]
            job = jobs[jid]
            if job.version == version and job.status == JobStatus.RUNNING:
                break
            heapq.heappop(heap)  # stale completion: the job was reconfigured or preempted
        t_completion = heap[0][0] if heap else math.inf
        order = self._order
        t_arrival = order[self._next_arrival].spec.submit_s if self._next_arrival < len(order) else math.inf
        t_tick = self._next_tick_s
        if not self._ticks and t_completion == math.inf and t_arrival == math.inf and self._active:
            # Without ticks a run whose active jobs all wait would end here; keep going once per round
            # so the stall detector, not an empty heap, decides that nothing can progress.
            t_tick = (math.floor(self._now / self._round_s + _EPS_S) + 1) * self._round_s
            self._next_tick_s = t_tick
        return min(t_completion, t_arrival, t_tick)

    def _pop_completions(self, now: float) -> tuple[int, ...]:
        heap = self._heap
        done: list[int] = []
        while heap and heap[0][0] <= now:
            _, _, jid, version = heapq.heappop(heap)
            job = self._jobs[jid]
            if job.version != version or job.status != JobStatus.RUNNING:
                continue
            job.flush(now)
            job.remaining = 0.0
            job.status = JobStatus.COMPLETED
            job.finish_s = now
            job.last_run_s = now - job.run_start_s
            for g in job.groups:
                self._state.release(g.server_id, g.num_gpus)
            job.view = None
            del self._active[jid]
            del self._running[jid]
            self._ended += 1
            self._ended_log.append((jid, now, JobStatus.COMPLETED))
            self._events += 1
            done.append(jid)
        if done:
            self._record_usage()
        return tuple(sorted(done))

    def _pop_arrivals(self, now: float) -> tuple[int, ...]:
        arrived: list[int] = []
        order = self._order
        while self._next_arrival < len(order) and order[self._next_arrival].spec.submit_s <= now:
            job = order[self._next_arrival]
            self._next_arrival += 1
            job.status = JobStatus.WAITING
            job.last_update_s = now
            self._active[job.spec.job_id] = job
            self._waiting_views[job.spec.job_id] = job.make_view(now)
            self._events += 1
            arrived.append(job.spec.job_id)
        return tuple(arrived)

    def _is_stalled(self) -> bool:
        if self._next_arrival < len(self._order):
            return False
        return not any(j.rate > 0 for j in self._running.values())

    def _make_view(self, arrived: tuple[int, ...], completed: tuple[int, ...], is_tick: bool) -> ClusterView:
        now = self._now
        free = self._state.free_by_type()
        return ClusterView(
            now_s=now,
            epoch=self._epoch,
            cluster=self.cluster,
            running=tuple([job.make_view(now) for job in self._running.values()]),
            waiting=tuple(self._waiting_views.values()),
            free_gpus=dict(zip(self.cluster.gpu_types, free.tolist(), strict=True)),
            free_by_server=tuple(self._state.free.tolist()),
            arrived=arrived,
            completed=completed,
            is_tick=is_tick,
            round_s=self._round_s,
            throughput=self.throughput,
            config=self.config,
            rate_table=self.rate_table,
            num_pending=len(self._order) - self._next_arrival,
            num_ended=self._ended,
        )

    # ----------------------------------------------------------------------------------------
    # Applying a decision

    def _apply(self, allocation: Allocation) -> None:
        """Apply a validated allocation: only jobs whose resources change are released and re-placed."""
        now = self._now
        active = self._active
        for jid in sorted(allocation.reject):
            job = active.pop(jid)
            self._running.pop(jid, None)
            self._waiting_views.pop(jid, None)
            job.flush(now)
            for g in job.groups:
                self._state.release(g.server_id, g.num_gpus)
            if job.status == JobStatus.RUNNING:
                job.last_run_s = now - job.run_start_s
            job.status = JobStatus.REJECTED
            job.finish_s = now
            job.alloc, job.groups, job.rate, job.num_gpus_now = None, (), 0.0, 0
            job.version += 1
            job.view = None
            self._ended += 1
            self._ended_log.append((jid, now, JobStatus.REJECTED))

        new = allocation.jobs
        if self._placer.replaces_all:
            moved: dict[int, JobAllocation | None] = {}
            if new or self._running:
                free, placed = self._place_all(new, keep_unchanged=False)
                moved = self._moved(new, placed)
                for jid, target in moved.items():
                    self._reconfigure(active[jid], target, placed.get(jid, ()), now)
                self._state.free = free
            if moved or allocation.reject:
                self._record_usage()
            return
        changes: dict[int, JobAllocation | None] = {jid: None for jid in self._running if jid not in new}
        for jid, ja in new.items():
            cur = active[jid].alloc
            if ja is cur or (
                cur is not None
                and ja.counts == cur.counts
                and ja.mode == cur.mode
                and (ja.servers is None or ja.servers == cur.servers)
            ):
                continue  # unchanged: same resources, and no new placement asked for
            changes[jid] = ja
        if changes:
            free = self._state.free.copy()
            for jid in changes:
                for g in active[jid].groups:
                    free[g.server_id] += g.num_gpus
            found = self._place_changes(changes, free)
            if found is None:
                # An explicit placement claims GPUs that unchanged jobs hold: place everything afresh.
                free, final = self._place_all(new, keep_unchanged=True)
                changes = self._moved(new, final)
            else:
                final = found
            for jid, target in changes.items():
                self._reconfigure(active[jid], target, final.get(jid, ()), now)
            self._state.free = free
        if changes or allocation.reject:
            self._record_usage()

    def _moved(
        self, new: Mapping[int, JobAllocation], final: Mapping[int, tuple[ServerGroup, ...]]
    ) -> dict[int, JobAllocation | None]:
        """The active jobs whose servers or mode differ between now and ``final`` (the new allocation)."""
        return {
            jid: new.get(jid)
            for jid, job in self._active.items()
            if final.get(jid, ()) != job.groups
            or (jid in new and job.alloc is not None and new[jid].mode != job.alloc.mode)
        }

    def _requests(self, pending: Mapping[int, JobAllocation]) -> list[PlacementRequest]:
        active = self._active
        return [
            PlacementRequest(jid, active[jid].spec, ja.counts, ja.mode, active[jid].groups)
            for jid, ja in sorted(pending.items())
        ]

    def _place_changes(
        self, changes: Mapping[int, JobAllocation | None], free: np.ndarray
    ) -> dict[int, tuple[ServerGroup, ...]] | None:
        """Place the changed jobs into ``free`` (modified); ``None`` if an explicit placement conflicts."""
        servers = self.cluster.servers
        final: dict[int, tuple[ServerGroup, ...]] = {}
        pending: dict[int, JobAllocation] = {}
        for jid, ja in changes.items():
            if ja is None:
                continue
            if ja.servers is None:
                pending[jid] = ja
                continue
            for s, n in ja.servers:
                free[s] -= n
                if free[s] < 0:
                    return None
            final[jid] = tuple(ServerGroup(s, servers[s].gpu_type, n) for s, n in ja.servers)
        if pending:
            final.update(self._placer.place(self.cluster, free, self._requests(pending)))
        return final

    def _place_all(
        self, new: Mapping[int, JobAllocation], *, keep_unchanged: bool
    ) -> tuple[np.ndarray, dict[int, tuple[ServerGroup, ...]]]:
        """Place every allocated job from an empty cluster: explicit placements first, then (when
        ``keep_unchanged``) unchanged jobs on their servers where possible, then the rest with the placer."""
        free = np.array([s.num_gpus for s in self.cluster.servers], dtype=np.int64)
        servers = self.cluster.servers
        final: dict[int, tuple[ServerGroup, ...]] = {}
        active = self._active
        if keep_unchanged:
            explicit = {jid for jid, ja in new.items() if ja.servers is not None}
        else:
            # A placer that re-packs the cluster moves kept jobs too: a job's current placement repeated
            # (what keeping it spells out) is no pin, only a new explicit placement is.
            explicit = {
                jid for jid, ja in new.items() if ja.servers is not None and not _repeats(ja, active[jid].alloc)
            }
        for jid in explicit:
            ja = new[jid]
            assert ja.servers is not None
            final[jid] = tuple(ServerGroup(s, servers[s].gpu_type, n) for s, n in ja.servers)
            for s, n in ja.servers:
                free[s] -= n
        pending: dict[int, JobAllocation] = {}
        for jid, ja in new.items():
            if jid in explicit:
                continue
            job = self._active[jid]
            if (
                keep_unchanged
                and ja.same_resources(job.alloc)
                and all(free[g.server_id] >= g.num_gpus for g in job.groups)
            ):
                for g in job.groups:
                    free[g.server_id] -= g.num_gpus
                final[jid] = job.groups
            else:
                pending[jid] = ja
        if pending:
            final.update(self._placer.place(self.cluster, free, self._requests(pending)))
        return free, final

    def _reconfigure(self, job: _Job, ja: JobAllocation | None, groups: tuple[ServerGroup, ...], now: float) -> None:
        job.flush(now)
        started_before = job.first_start_s is not None
        job.version += 1
        job.view = None
        job.last_change_s = now
        jid = job.spec.job_id
        if groups and ja is not None:
            if started_before:
                job.num_reconfigs += 1
            else:
                job.first_start_s = now
            if job.status != JobStatus.RUNNING:
                job.run_start_s = now
            charge = started_before or self.config.charge_first_start
            job.penalty_until_s = now + (self.config.restart_penalty_for(job.spec.job_type) if charge else 0.0)
            if job.status != JobStatus.RUNNING:
                self._insert_running(job)
            job.status = JobStatus.RUNNING
            self._waiting_views.pop(jid, None)
            job.alloc = JobAllocation(ja.counts, tuple((g.server_id, g.num_gpus) for g in groups), ja.mode)
            job.groups = groups
            job.num_gpus_now = sum(g.num_gpus for g in groups)
            job.rate = self._rate(job.spec, groups, ja)
            if job.rate > 0:
                t_done = job.penalty_until_s + job.remaining / job.rate
                self._seq += 1
                heapq.heappush(self._heap, (t_done, self._seq, jid, job.version))
        else:
            job.num_reconfigs += 1  # a preemption
            job.last_run_s = now - job.run_start_s
            job.status = JobStatus.WAITING
            self._running.pop(jid, None)
            job.alloc, job.groups, job.rate, job.num_gpus_now = None, (), 0.0, 0
            self._insert_waiting(job, now)

    def _insert_running(self, job: _Job) -> None:
        """Add a job to the running ones, keeping submission order (views need no sorting)."""
        running = self._running
        if not running or _job_order(next(reversed(running.values()))) < _job_order(job):
            running[job.spec.job_id] = job
            return
        self._running = {j.spec.job_id: j for j in sorted([*running.values(), job], key=_job_order)}

    def _insert_waiting(self, job: _Job, now: float) -> None:
        """Put a preempted job's view back among the waiting ones, keeping submission order."""
        views = self._waiting_views
        view = job.make_view(now)
        if not views or _submission_order(next(reversed(views.values()))) < _submission_order(view):
            views[job.spec.job_id] = view
            return
        items = list(views.items())
        keys = [_submission_order(v) for _, v in items]
        pos = bisect.bisect_left(keys, _submission_order(view))
        items.insert(pos, (job.spec.job_id, view))
        self._waiting_views = dict(items)

    def _rate(self, spec: JobSpec, groups: tuple[ServerGroup, ...], ja: JobAllocation) -> float:
        comm = self.config.comm_model
        if comm.is_bandwidth and ja.mode != "fork" and spec.model_bytes is not None:
            return placement_rate(self.throughput, self.cluster, comm, spec, groups, ja.mode)
        aggregation_s = 0.0
        if ja.mode == "fork" and self.config.fork_aggregation and spec.model_bytes and len(groups) > 1:
            nic = min(self.cluster.servers[g.server_id].nic_bw_gb_per_s for g in groups)
            aggregation_s = spec.model_bytes / 1e9 / nic
        return allocation_rate(
            self.throughput,
            spec.job_type,
            spec.batch_size,
            groups,
            ja.mode,
            aggregation_s=aggregation_s,
            round_s=self._round_s,
            fork_efficiency=self.config.fork_efficiency,
        )

    def _record_usage(self) -> None:
        if not self.config.record_timeline:
            return
        used = tuple(self._state.used_by_type().tolist())
        timeline = self._timeline
        if timeline and timeline[-1][1] == used:
            return
        if timeline and timeline[-1][0] == self._now:
            timeline[-1] = (self._now, used)
        else:
            timeline.append((self._now, used))

    # ----------------------------------------------------------------------------------------
    # Results

    def _finish(self) -> None:
        if not self._done:
            self._done = True
            for job in self._active.values():
                job.flush(self._now)
                if job.status == JobStatus.RUNNING:
                    job.last_run_s = self._now - job.run_start_s
                job.status = JobStatus.UNFINISHED
                self._ended_log.append((job.spec.job_id, self._now, JobStatus.UNFINISHED))
            self._wall_s = time.perf_counter() - self._wall_start
        return None

    def result(self, policy_name: str = "") -> SimulationResult:
        """Metrics and per-job table of the finished (or stopped) simulation."""
        if not self._started:
            raise HetgymError("the simulation has not been run; call run(policy) or reset()/step()")
        jobs = [j for j in self._order if j.status != JobStatus.PENDING]
        frame = jobs_frame(
            [
                (
                    j.spec,
                    j.status,
                    j.first_start_s,
                    j.finish_s,
                    j.attained_gpu_s,
                    j.num_reconfigs,
                    j.remaining,
                )
                for j in jobs
            ],
            self.throughput,
            self.cluster,
        )
        types = list(self.cluster.gpu_types)
        timeline = pd.DataFrame([(t, *used) for t, used in self._timeline], columns=["time_s", *types])
        metrics = compute_metrics(frame, timeline, self.cluster, self._latencies_s)
        metrics["num_not_arrived"] = float(len(self._order) - len(jobs))
        return SimulationResult(
            policy=policy_name,
            cluster=self.cluster.name,
            metrics=metrics,
            jobs=frame,
            timeline=timeline,
            stalled=self._stalled,
            num_epochs=self._epoch,
            num_events=self._events,
            wall_s=getattr(self, "_wall_s", time.perf_counter() - self._wall_start),
        )


def _repeats(ja: JobAllocation, current: JobAllocation | None) -> bool:
    """Whether ``ja`` spells out ``current`` (same counts, mode and servers)."""
    return current is not None and ja.same_resources(current) and ja.servers == current.servers


def run_policy(
    policy: PolicyProtocol | str,
    cluster: ClusterSpec | str,
    jobs: Iterable[JobSpec],
    *,
    config: SimConfig | Mapping[str, Any] | None = None,
    throughput: ThroughputModel | None = None,
    **policy_kwargs: Any,
) -> SimulationResult:
    """One-call convenience: make the policy (if named), simulate, return the result."""
    if isinstance(policy, str):
        from hetgym.sim.policy import make_policy

        policy = make_policy(policy, **policy_kwargs)
    if isinstance(config, Mapping):
        config = SimConfig.from_dict(config)
    return Simulator(cluster, jobs, config=config, throughput=throughput).run(policy)
