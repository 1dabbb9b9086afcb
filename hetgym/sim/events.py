"""The event queue of a run: arrivals, completions and round ticks in one object, and the fast-forward.

SimPy keeps one heap of ``(time, priority, sequence, event)``; this queue gives the same order with the
three kinds of event held where each is cheapest, merged when it is read:

* completions: a heap of ``(time, sequence, job_id, version)`` (the list is shared with
  :class:`~hetgym.sim.apply.Placements`, which pushes a job's completion whenever it places the job);
  an entry whose job was reconfigured or preempted since (its version moved on) is stale and dropped
  when it reaches the top;
* arrivals: the job records in submission order with a cursor on the next one (already sorted by time);
* the round tick: the one pending tick time (``inf`` when none is due).

:meth:`EventQueue.peek_s` is the next event's time. Events at one instant are taken kind by kind with the
kind as priority (completions, then arrivals, then the tick), and within a kind by sequence (completions by
their push order, arrivals by submission order), so runs are exactly reproducible. The engine
(:class:`~hetgym.sim.engine.Simulator`) pops them and turns them into decision epochs.

The queue also offers the fast-forward over quiet round ticks (:meth:`EventQueue.pass_quiet_ticks`, the
semantics in :mod:`hetgym.sim.fastforward`): it knows when the next completion and arrival come, so it
knows how many ticks before them are quiet.
"""

from __future__ import annotations

import heapq
import math

from hetgym.sim.apply import Placements
from hetgym.sim.config import SimConfig
from hetgym.sim.deadlines import DeadlineBook
from hetgym.sim.fastforward import QuietTicks
from hetgym.sim.job import JobStatus
from hetgym.sim.runtime import JobRecord
from hetgym.sim.watchdog import Watchdog

_EPS_S = 1e-9  # the tolerance when a tick is placed on the round grid
_RUNNING = JobStatus.RUNNING


class EventQueue:
    """The pending events of one run (see the module).

    Args:
        order: The job records in submission order (the arrivals).
        heap: The completion heap (the same list as the run's ``Placements.heap``).
        round_s: The run's round length.
        ticks: Whether round ticks are decision epochs.
        gavel_rounds: Whether Gavel's rounds are in force (``compat="gavel"`` with ticks: a round ends with its
            micro-tasks, set by the placements at each round's start).

    Attributes:
        jobs: Every job's record by id.
        next_arrival: The index in ``order`` of the next job to arrive.
        next_tick_s: The next round tick (``inf`` when none is due).
    """

    def __init__(
        self,
        order: list[JobRecord],
        heap: list[tuple[float, int, int, int]],
        round_s: float,
        *,
        ticks: bool,
        gavel_rounds: bool,
    ) -> None:
        self.order = order
        self.jobs: dict[int, JobRecord] = {r.spec.job_id: r for r in order}
        self.heap = heap
        self.round_s = round_s
        self.ticks = ticks
        self.gavel_rounds = gavel_rounds
        self.next_arrival = 0
        self.next_tick_s = math.inf

    def fork(self, jobs: dict[int, JobRecord], heap: list[tuple[float, int, int, int]]) -> EventQueue:
        """A copy over a fork's job records (``jobs``, the same ids) and its completion heap."""
        out = EventQueue.__new__(EventQueue)
        out.__dict__.update(self.__dict__)
        out.jobs = jobs
        out.order = [jobs[record.spec.job_id] for record in self.order]
        out.heap = heap
        return out

    @property
    def pending(self) -> bool:
        """Whether a job is still to arrive."""
        return self.next_arrival < len(self.order)

    def grid_tick_s(self, t_s: float) -> float:
        """The first tick of the round grid after ``t_s``."""
        return (math.floor(t_s / self.round_s + _EPS_S) + 1) * self.round_s

    def next_completion_s(self) -> float:
        """The next valid completion's time (stale entries are dropped on the way)."""
        heap = self.heap
        jobs = self.jobs
        while heap:
            _, _, jid, version = heap[0]
            job = jobs[jid]
            if job.version == version and job.status == JobStatus.RUNNING:
                return heap[0][0]
            heapq.heappop(heap)  # stale completion: the job was reconfigured or preempted
        return math.inf

    def next_arrival_s(self) -> float:
        """The next arrival's time (``inf`` when none is left)."""
        order = self.order
        return order[self.next_arrival].spec.submit_s if self.next_arrival < len(order) else math.inf

    def peek_s(self, now_s: float, *, active: bool, idle_until_s: float) -> float:
        """The next event's time: a completion, an arrival, the tick, or ``idle_until_s`` (the watchdog's).

        ``active``: whether jobs are active. Without ticks a run whose active jobs all wait would end here
        (no event left); it goes on once per round instead, so that the watchdog, not an empty queue,
        decides that nothing can progress.
        """
        # next_completion_s() and next_arrival_s(), inlined: this runs once per event.
        heap = self.heap
        jobs = self.jobs
        while heap:
            _, _, jid, version = heap[0]
            job = jobs[jid]
            if job.version == version and job.status == _RUNNING:
                break
            heapq.heappop(heap)  # stale completion: the job was reconfigured or preempted
        t_completion = heap[0][0] if heap else math.inf
        order = self.order
        t_arrival = order[self.next_arrival].spec.submit_s if self.next_arrival < len(order) else math.inf
        t_tick = self.next_tick_s
        if not self.ticks and t_completion == math.inf and t_arrival == math.inf and active:
            t_tick = self.next_tick_s = self.grid_tick_s(now_s)
        return min(t_completion, t_arrival, t_tick, idle_until_s)

    def pop_completions(self, now_s: float) -> list[JobRecord]:
        """The running jobs completing at or before ``now_s``, in the order their completions were pushed."""
        heap = self.heap
        jobs = self.jobs
        done: list[JobRecord] = []
        while heap and heap[0][0] <= now_s:
            _, _, jid, version = heapq.heappop(heap)
            job = jobs[jid]
            if job.version == version and job.status == JobStatus.RUNNING:
                done.append(job)
        return done

    def pop_arrivals(self, now_s: float) -> list[JobRecord]:
        """The jobs arriving at or before ``now_s``, in submission order."""
        order = self.order
        start = end = self.next_arrival
        while end < len(order) and order[end].spec.submit_s <= now_s:
            end += 1
        self.next_arrival = end
        return order[start:end]

    def pass_quiet_ticks(
        self,
        request: QuietTicks,
        *,
        now_s: float,
        epoch: int,
        placements: Placements,
        deadlines: DeadlineBook,
        watchdog: Watchdog,
        config: SimConfig,
    ) -> tuple[float, int]:
        """After a step's decision is applied at ``now_s`` (epoch ``epoch``, jobs active): pass over the quiet
        ticks that follow (:mod:`hetgym.sim.fastforward`), recorded in ``request.times_s``.

        Moves the next tick and the watchdog's counters as the tick-by-tick replay would; returns the time of
        the last tick passed over and the epoch count after it (``(now_s, epoch)`` when none was).
        """
        times: list[float] = []
        request.times_s = times
        t = self.next_tick_s
        if not self.ticks or self.gavel_rounds:
            # (Gavel's rounds end with their micro-tasks, set at each round's start: no tick is passed over.)
            return now_s, epoch
        if request.kept and placements.changed:
            # The decision changed a job: whether giving it again at a tick changes nothing more (a placer that
            # re-packs the cluster could move a job once more) is seen at the next tick, replayed.
            return now_s, epoch
        end_s = self.next_completion_s()
        pending = self.pending
        if pending:
            end_s = min(end_s, self.next_arrival_s())
        if placements.idle_holders:  # the epoch at which the watchdog stops a job held at zero rate
            end_s = min(end_s, watchdog.idle_holders_until_s(placements.idle_holders))
        if not (t < end_s and t <= config.max_time_s):
            return now_s, epoch
        until_s = min(request.horizon() if request.horizon is not None else request.until_s, config.max_time_s)
        if request.deadlines:
            until_s = min(until_s, deadlines.horizon_s(self.jobs))
        limit = watchdog.epoch_limit if config.max_epochs is None else min(watchdog.epoch_limit, config.max_epochs)
        # The watchdog at a tick: with a job still to arrive it sees work at every epoch; else once a running
        # job with a rate is past its restart penalty (work_from_s), and until then it counts the epoch as a
        # stall, and stops the run where the engine would (a running job still in its penalty up to penalty_to_s).
        running = [j.penalty_until_s for j in placements.running.values() if j.rate > 0]
        work_from_s = -math.inf if pending else min(running, default=math.inf)
        penalty_to_s = max(running, default=-math.inf)
        stall, last_work_s = watchdog.stall_count, watchdog.last_work_s
        patience_s, stall_epochs = watchdog.patience_s, config.stall_epochs
        round_s, gavel = self.round_s, self.gavel_rounds
        prev_s = now_s
        while t < end_s and t <= until_s and epoch < limit:
            if times and not (t - prev_s).is_integer():
                break
            if t > work_from_s:
                stall, last_work_s = 0, t
            else:
                stall += 1
                if stall >= stall_epochs and (t - last_work_s > patience_s or not t <= penalty_to_s):
                    break  # the watchdog stops the run at this tick: the engine's advance does it
            times.append(t)
            epoch += 1
            prev_s = t
            watchdog.stall_count, watchdog.last_work_s = stall, last_work_s
            # The next tick, as the engine places it after a tick epoch.
            t = t + round_s if gavel else self.grid_tick_s(t)
        if not times:
            return now_s, epoch
        self.next_tick_s = t
        if request.views:
            request.running = tuple([r.make_view(prev_s) for r in placements.running.values()])
        return prev_s, epoch
