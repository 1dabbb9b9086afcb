"""Quiet epochs: the fast-forward over round ticks at which no decision can change, and the watchdog.

A round tick at which nothing arrives or completes is a decision epoch like any other: the engine
builds its view, the caller decides, the engine applies the decision and advances. When the caller's
decision at such a tick is known in advance to keep every allocation (a policy that declares
``stands_on_ticks``, or the Gym environment between two pieces of news), replaying those epochs one
by one changes nothing but the clock and the counters. :class:`FastForwardMixin` passes over them in
one go inside :meth:`Simulator.step <hetgym.sim.engine.Simulator.step>`: given a :class:`QuietTicks`
request, the step applies its decision, then moves the clock over every following tick that would be
such an epoch, with the epoch and event counters, the next tick and the watchdog's state left exactly
as the tick-by-tick replay leaves them, and returns the next epoch that is not passed over. Job
progress is accounted lazily (only when allocations change), so nothing else moves.

A tick is passed over only when the tick-by-tick replay would have reached it as a quiet epoch and
committed it unchanged: before the next completion and the next arrival (strictly: an event at the
same instant makes the epoch news), within ``SimConfig.max_time_s``, ``max_epochs`` and the epoch
bound, before the request's ``until_s``, and before the tick at which the watchdog would stop the run
(the stall counter moves as in the replay: reset at a tick with work, a job still to arrive or a
running job past its restart penalty, else counted). Consecutive ticks passed
over are a whole number of seconds apart, so per-interval sums over them (the environment's reward
components) are exact whatever the order of their terms; ticks on a round that is not a whole
number of seconds are replayed one by one.

A policy whose answer at ticks between events is its last decision, until a time it can compute
(ElasticFlow: its plans' next change point), declares that time (:meth:`Policy.quiet_until_s
<hetgym.sim.policy.Policy.quiet_until_s>`); :meth:`Simulator.run <hetgym.sim.engine.Simulator.run>` and the
event environment then ask it at a tick only when its answer may change. Such a request carries ``kept``:
ticks are passed over only after a step whose decision changed no job. The state after that step is a fixed
point of the decision: at the next tick the policy gives the same decision (its declaration, its own state
unchanged), the placer gets the same inputs (the same counts and current servers on the same cluster) and
so places as before, and nothing changes again; so every tick before the declared time is a quiet epoch
committed unchanged. A decision that changed a job is verified at the next tick, replayed.

The same mixin holds the watchdog's helpers (work done, penalties in force, the epoch bound), which
decide both when a run stalls and how far a fast-forward may go, and the bounds on a job's run time
that the epoch bound and the workload's checks use.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hetgym.sim.config import MAX_RESTART_PENALTY_S, SimConfig
from hetgym.sim.job import JobSpec, JobStatus
from hetgym.sim.policy import Policy
from hetgym.sim.runtime import JobRecord
from hetgym.sim.throughput import ThroughputModel
from hetgym.sim.view import JobView

if TYPE_CHECKING:
    from hetgym.sim.apply import Placements
    from hetgym.sim.cluster import ClusterSpec
    from hetgym.sim.deadlines import DeadlineBook

_EPS_S = 1e-9  # the engine's tolerance when it places a tick on the round grid


class QuietTicks:
    """A request to pass over quiet round ticks in one step, and what the step passed over.

    Args:
        until_s: Pass over no tick later than this time.
        views: Keep the running jobs' views at the last tick passed over (:attr:`running`).
        horizon: Gives ``until_s`` instead, called only when a tick comes before the next event.
        deadlines: Pass over no tick at which an active job has lost its deadline (a tick past
            ``deadline + DEADLINE_TOL_S``; :mod:`hetgym.sim.deadlines`): the epoch there brings news.
        kept: Pass over ticks only if the step's decision changed no job (nothing started, moved, resized,
            preempted or rejected): the request of a policy that declares its answer until ``until_s`` is
            the allocation it just gave (:meth:`Policy.quiet_until_s <hetgym.sim.policy.Policy.quiet_until_s>`).

    Attributes:
        times_s: The ticks passed over, in order (empty when none was): each was an epoch whose
            decision kept every allocation.
        running: With ``views``, the running jobs' views (submission order) at the last of them.
    """

    __slots__ = ("deadlines", "horizon", "kept", "running", "times_s", "until_s", "views")

    def __init__(
        self,
        until_s: float = math.inf,
        *,
        views: bool = False,
        horizon: Callable[[], float] | None = None,
        deadlines: bool = False,
        kept: bool = False,
    ) -> None:
        self.until_s = until_s
        self.kept = kept
        self.views = views
        self.horizon = horizon
        self.deadlines = deadlines
        self.times_s: list[float] = []
        self.running: tuple[JobView, ...] = ()


def quiet_hook(policy: object) -> Callable[[], float] | None:
    """The policy's :meth:`~hetgym.sim.policy.Policy.quiet_until_s`, or ``None`` when it declares nothing."""
    hook = getattr(policy, "quiet_until_s", None)
    if hook is None or getattr(type(policy), "quiet_until_s", None) is Policy.quiet_until_s:
        return None
    return hook


def quiet_request(until_s: float, now_s: float, *, deadlines: bool = True) -> QuietTicks | None:
    """The request for a policy whose answer stands at ticks before ``until_s`` (exclusive), after a decision at
    ``now_s``: ``None`` when no tick can be passed over. ``deadlines`` (default) keeps the epochs at which a
    deadline is lost (the deadline log as in the replay)."""
    if not until_s > now_s:
        return None
    return QuietTicks(math.nextafter(until_s, -math.inf), deadlines=deadlines, kept=True)


class FastForwardMixin:
    """Quiet-tick fast-forward and watchdog helpers of the simulator (mixed into ``Simulator``)."""

    # State owned and initialised by the simulator (its __init__ and reset()).
    cluster: ClusterSpec
    config: SimConfig
    throughput: ThroughputModel
    specs: tuple[JobSpec, ...]
    _best_rates: dict[tuple[Any, ...], float]
    _jobs: dict[int, JobRecord]
    _order: list[JobRecord]
    _active: dict[int, JobRecord]
    _placements: Placements
    _deadlines: DeadlineBook
    _heap: list[tuple[float, int, int, int]]
    _next_arrival: int
    _now: float
    _next_tick_s: float
    _round_s: float
    _ticks: bool
    _gavel_rounds: bool
    _epoch: int
    _epoch_limit: int
    _events: int
    _stall_count: int
    _last_work_s: float
    _stalled: bool
    _stall_reason: str
    _done: bool
    _previous_token: object | None

    def _finish(self) -> None: ...  # the engine's

    def _pass_quiet_ticks(self, request: QuietTicks) -> None:
        """After a step's decision is applied: pass over the quiet ticks that follow (see the module)."""
        times: list[float] = []
        request.times_s = times
        t = self._next_tick_s
        if not self._ticks or not self._active or self._done or self._gavel_rounds:
            # (Gavel's rounds end with their micro-tasks, set at each round's start: no tick is passed over.)
            return
        if request.kept and self._placements.changed:
            # The decision changed a job: whether giving it again at a tick changes nothing more (a placer that
            # re-packs the cluster could move a job once more) is seen at the next tick, replayed.
            return
        heap, jobs = self._heap, self._jobs
        while heap:  # the next valid completion (stale entries go, as the engine's peek drops them)
            _, _, jid, version = heap[0]
            job = jobs[jid]
            if job.version == version and job.status == JobStatus.RUNNING:
                break
            heapq.heappop(heap)
        end_s = heap[0][0] if heap else math.inf
        order = self._order
        pending = self._next_arrival < len(order)
        if pending:
            end_s = min(end_s, order[self._next_arrival].spec.submit_s)
        if self._placements.idle_holders:  # the epoch at which the watchdog stops a job held at zero rate
            end_s = min(end_s, self._idle_holders_until_s())
        cfg = self.config
        if not (t < end_s and t <= cfg.max_time_s):
            return
        until_s = min(request.horizon() if request.horizon is not None else request.until_s, cfg.max_time_s)
        if request.deadlines:
            until_s = min(until_s, self._deadlines.horizon_s(jobs))
        limit = self._epoch_limit if cfg.max_epochs is None else min(self._epoch_limit, cfg.max_epochs)
        # The watchdog at a tick: with a job still to arrive it sees work at every epoch; else once a running
        # job with a rate is past its restart penalty (work_from_s), and until then it counts the epoch as a
        # stall, and stops the run where the engine would (a running job still in its penalty up to penalty_to_s).
        running = [j.penalty_until_s for j in self._placements.running.values() if j.rate > 0]
        work_from_s = -math.inf if pending else min(running, default=math.inf)
        penalty_to_s = max(running, default=-math.inf)
        stall, last_work_s = self._stall_count, self._last_work_s
        round_s, gavel = self._round_s, self._gavel_rounds
        epoch, prev_s = self._epoch, self._now
        while t < end_s and t <= until_s and epoch < limit:
            if times and not (t - prev_s).is_integer():
                break
            if t > work_from_s:
                stall, last_work_s = 0, t
            else:
                stall += 1
                if stall >= cfg.stall_epochs and (t - last_work_s > self._patience_s or not t <= penalty_to_s):
                    break  # the watchdog stops the run at this tick: the engine's advance does it
            times.append(t)
            epoch += 1
            prev_s = t
            self._stall_count, self._last_work_s = stall, last_work_s
            # The next tick, as the engine places it after a tick epoch.
            t = t + round_s if gavel else (math.floor(t / round_s + _EPS_S) + 1) * round_s
        if not times:
            return
        # The state the replay leaves: each tick an epoch (and an event) whose step changed nothing, the
        # watchdog's count as it left it, the next tick placed. The next epoch follows none its caller saw.
        self._now = prev_s
        self._epoch = epoch
        self._events += len(times)
        self._next_tick_s = t
        self._placements.changed = []
        self._previous_token = None
        if request.views:
            request.running = tuple([r.make_view(prev_s) for r in self._placements.running.values()])

    # ----------------------------------------------------------------------------------------
    # The watchdog, and bounds on a job's run time

    def _worked(self) -> bool:
        """Whether some running job did work since the previous epoch (a rate and its penalty paid)."""
        now = self._now
        return any(j.rate > 0 and j.penalty_until_s < now for j in self._placements.running.values())

    def _in_penalty(self) -> bool:
        """Whether some running job has a rate and is paying its restart penalty now."""
        now = self._now
        return any(j.rate > 0 and j.penalty_until_s >= now for j in self._placements.running.values())

    def _stop(self, reason: str) -> None:
        """End the run as stalled, for ``reason``."""
        self._stalled = True
        self._stall_reason = reason
        self._finish()

    def _idle_holders_until_s(self) -> float:
        """When the watchdog stops the run for the jobs holding GPUs at zero rate (``inf`` if none)."""
        holders = self._placements.idle_holders
        return min(holders.values()) + self._patience_s if holders else math.inf

    def _stop_idle_holders(self, now: float) -> bool:
        """Stop the run (and return ``True``) if a job has held GPUs at zero rate for the watchdog's patience.

        A placement's rate is fixed until the policy moves the job, so a job placed where it cannot run
        (a GPU type or count at which the throughput table gives 0) would hold its GPUs for ever while the
        others progress; the watchdog gives the policy the longest restart penalty plus a round to move it
        (an epoch is due then: :meth:`_idle_holders_until_s` is one of the engine's event times).
        """
        holders = self._placements.idle_holders
        if now < self._idle_holders_until_s():
            return False
        running = self._placements.running
        named = []
        for jid, since_s in sorted(holders.items(), key=lambda item: (item[1], item[0]))[:5]:
            job = running[jid]
            counts = ", ".join(f"{n} {t}" for t, n in (job.alloc.counts if job.alloc is not None else ()))
            gpus = f"{job.num_gpus_now} GPU{'' if job.num_gpus_now == 1 else 's'}"
            named.append(f"job {jid} holds {gpus} ({counts}) at zero throughput since t={since_s:.0f} s")
        more = f" and {len(holders) - 5} more jobs likewise" if len(holders) > 5 else ""
        self._stop(
            "; ".join(named) + more + ": the rate of its placement is 0 iterations/s (a GPU type or count the "
            f"throughput table cannot run it on), and the policy kept it there for more than {self._patience_s:.0f} s "
            "(the longest restart penalty plus a round); a policy must move or stop a job it placed where it "
            "cannot run"
        )
        return True

    @property
    def _patience_s(self) -> float:
        """Simulated time without work the watchdog allows: the longest restart penalty plus a round."""
        return self._max_penalty_s() + self._round_s

    def _max_penalty_s(self) -> float:
        """The longest restart penalty in force (capped at the longest a configuration accepts)."""
        cfg = self.config
        return min(max([cfg.restart_penalty_s, *cfg.restart_penalty_by_type.values()]), MAX_RESTART_PENALTY_S)

    def _epoch_bound(self) -> int:
        """The most decision epochs a run may take: ten times the epochs of running the jobs one after
        another, each on ``min_gpus`` GPUs of its slowest allowed type and paying the longest restart
        penalty, after the last arrival (two epochs per job plus one per round)."""
        specs = self.specs
        if not specs:
            return 1
        penalty_s = self._max_penalty_s()
        serial_s = sum(self._slowest_run_s(s) + penalty_s for s in specs)
        horizon_s = specs[-1].submit_s + serial_s
        return int(10 * (2 * len(specs) + horizon_s / self._round_s)) + 1000

    def _slowest_run_s(self, spec: JobSpec) -> float:
        """An upper bound on a sensible run time: the job's work at its slowest allowed type's rate on
        ``min_gpus`` GPUs (0 when no type runs it)."""
        rates = [
            self.throughput.rate(spec.job_type, spec.batch_size, t, spec.min_gpus)
            for t in self.cluster.gpu_types
            if spec.gpu_types is None or t in spec.gpu_types
        ]
        slowest = min((r for r in rates if r > 0), default=0.0)
        return spec.total_iters / slowest if slowest > 0 else 0.0

    def _fastest_run_s(self, spec: JobSpec) -> float:
        """A lower bound on the job's run time: its work at the sum over allowed types of the best rate
        on that type (at one GPU, or at as many as the type holds up to ``max_gpus``)."""
        key = (spec.job_type, spec.batch_size, spec.gpu_types, spec.max_gpus)
        best = self._best_rates.get(key)
        if best is None:
            best = 0.0
            for t, cap in self.cluster.capacity.items():
                if spec.gpu_types is not None and t not in spec.gpu_types:
                    continue
                n = cap if spec.max_gpus is None else min(cap, spec.max_gpus)
                best += max(self.throughput.rate(spec.job_type, spec.batch_size, t, k) for k in {1, n})
            self._best_rates[key] = best
        return spec.total_iters / best if best > 0 else math.inf
