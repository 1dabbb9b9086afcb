"""The simulator's event queue (``hetgym.sim.events``): one object holding arrivals, completions and the round tick,
taken at one instant kind by kind (completions, then arrivals, then the tick), stale completions dropped; and the
simulator composed of such objects, inheriting from nothing."""

from __future__ import annotations

import heapq
import math

from hetgym.sim import JobSpec, JobStatus, Simulator
from hetgym.sim.events import EventQueue
from hetgym.sim.runtime import JobRecord


def _records(*submits_s: float) -> list[JobRecord]:
    return [JobRecord(JobSpec(i, s, "resnet18", 64, 1000, 1)) for i, s in enumerate(submits_s)]


def test_events_at_one_instant_come_kind_by_kind_and_stale_completions_are_dropped() -> None:
    order = _records(0.0, 100.0, 100.0, 250.0)
    heap: list[tuple[float, int, int, int]] = []
    queue = EventQueue(order, heap, 60.0, ticks=True, gavel_rounds=False)
    assert queue.peek_s(0.0, active=False, idle_until_s=math.inf) == 0.0
    assert [r.spec.job_id for r in queue.pop_arrivals(0.0)] == [0]
    job = order[0]
    job.status = JobStatus.RUNNING
    heapq.heappush(heap, (100.0, 1, 0, job.version))
    heapq.heappush(heap, (50.0, 2, 0, job.version - 1))  # an older placement's completion: stale
    queue.next_tick_s = queue.grid_tick_s(0.0)
    assert queue.next_tick_s == 60.0
    assert queue.next_completion_s() == 100.0 and len(heap) == 1  # the stale entry went on the way
    assert queue.peek_s(0.0, active=True, idle_until_s=math.inf) == 60.0  # the tick comes first
    queue.next_tick_s = 120.0
    t = queue.peek_s(60.0, active=True, idle_until_s=math.inf)
    assert t == 100.0
    # At 100 s: the completion, then both arrivals (submission order); the tick waits for 120 s.
    assert [r.spec.job_id for r in queue.pop_completions(t)] == [0]
    assert [r.spec.job_id for r in queue.pop_arrivals(t)] == [1, 2]
    assert queue.pending and queue.next_arrival_s() == 250.0 and queue.next_tick_s > t


def test_without_ticks_waiting_jobs_still_see_one_epoch_a_round() -> None:
    idle = EventQueue(_records(0.0), [], 360.0, ticks=False, gavel_rounds=False)
    idle.pop_arrivals(0.0)
    assert idle.peek_s(10.0, active=False, idle_until_s=math.inf) == math.inf  # nothing active: the run ends
    waiting = EventQueue(_records(0.0), [], 360.0, ticks=False, gavel_rounds=False)
    waiting.pop_arrivals(0.0)
    assert waiting.peek_s(10.0, active=True, idle_until_s=math.inf) == 360.0 == waiting.next_tick_s
    assert waiting.peek_s(10.0, active=True, idle_until_s=200.0) == 200.0  # the watchdog's time comes first


def test_the_simulator_is_composed_not_mixed_in() -> None:
    assert Simulator.__mro__ == (Simulator, object)
    sim = Simulator("tiny", [JobSpec(0, 0.0, "resnet18", 64, 1000, 1)])
    view = sim.reset()
    assert view is not None
    twin = sim.fork()
    assert twin._queue is not sim._queue and twin._queue.heap is twin._placements.heap
    assert twin._watchdog is not sim._watchdog and twin._watchdog.best_rates is sim._watchdog.best_rates
