"""Passing over quiet round ticks (:mod:`hetgym.sim.fastforward`) gives the tick-by-tick replay's results.

A policy that declares ``stands_on_ticks`` is run with the fast-forward on and off (``Simulator(...,
fast_forward=False)`` asks it at every tick): the per-job tables, usage timelines, epoch and event counts
and stop reasons are identical, on several scenarios, seeds and configurations (caps, the watchdog,
Gavel's rounds, a round that is not a whole number of seconds), and the fast run asks the policy less.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from hetgym.sim import (
    Allocation,
    ClusterSpec,
    JobAllocation,
    JobSpec,
    SimConfig,
    Simulator,
    ThroughputModel,
    make_policy,
)
from hetgym.sim.fastforward import QuietTicks
from hetgym.sim.policy import Policy
from hetgym.sim.view import ClusterView
from hetgym.workloads import get_scenario


class Standing(Policy):
    """``inner`` asked on news only: at a tick at which nothing arrived or completed it keeps everything."""

    name: ClassVar[str] = "standing"
    stands_on_ticks: ClassVar[bool] = True

    def __init__(self, inner: str, *, idle: bool = False) -> None:
        super().__init__()
        self.inner = make_policy(inner)
        self.idle = idle  # never allocate: the watchdog stops the run
        self.calls = 0

    def _reset(self) -> None:
        assert self.cluster is not None
        self.inner.reset(self.cluster, rng=self.rng)
        self.calls = 0

    def schedule(self, view: ClusterView) -> Allocation:
        self.calls += 1
        if self.idle:
            return Allocation({})
        if view.is_tick and not view.arrived and not view.completed:
            return Allocation(dict(view.running_allocations))
        return self.inner.schedule(view)


def _runs(
    scenario: str, seed: int, inner: str, config: SimConfig | None = None, *, idle: bool = False, num_jobs: int = 0
) -> tuple[object, object, int, int]:
    sc = get_scenario(scenario)
    jobs = sc.workload.build(sc.cluster, seed=seed)
    if num_jobs:
        jobs = jobs[:num_jobs]
    out = []
    for fast in (True, False):
        policy = Standing(inner, idle=idle)
        result = Simulator(sc.cluster, jobs, config=config, fast_forward=fast).run(policy, ticks=True)
        out.append((result, policy.calls))
    (fast_r, fast_calls), (slow_r, slow_calls) = out
    return fast_r, slow_r, fast_calls, slow_calls


def _assert_same(fast, slow) -> None:  # type: ignore[no-untyped-def]
    assert fast.jobs.equals(slow.jobs)
    assert fast.timeline.equals(slow.timeline)
    assert (fast.num_epochs, fast.num_events) == (slow.num_epochs, slow.num_events)
    assert (fast.stalled, fast.stall_reason) == (slow.stalled, slow.stall_reason)
    wall = ("decision_ms_p50", "decision_ms_p99", "wall_s")
    assert {k: v for k, v in fast.metrics.items() if k not in wall} == pytest.approx(
        {k: v for k, v in slow.metrics.items() if k not in wall}, nan_ok=True, rel=0, abs=0
    )


@pytest.mark.parametrize(
    ("scenario", "seed", "inner", "config"),
    [
        ("tiny", 0, "fifo", None),
        ("tiny", 1, "edf", None),
        ("default", 2, "fifo", None),
        ("default", 3, "edf", SimConfig(round_s=60.0)),
        ("tiny", 4, "fifo", SimConfig(max_time_s=20_000.0)),
        ("tiny", 5, "edf", SimConfig(max_epochs=40)),
        ("tiny", 6, "fifo", SimConfig(round_s=37.5)),  # ticks not whole seconds apart: replayed one by one
        ("tiny", 7, "fifo", SimConfig(restart_penalty_s=500.0, round_s=120.0)),  # penalties longer than rounds
        ("tiny", 8, "fifo", SimConfig(compat="gavel")),  # Gavel's rounds
    ],
)
def test_fast_forward_gives_the_replays_results(scenario: str, seed: int, inner: str, config: SimConfig | None) -> None:
    fast, slow, fast_calls, slow_calls = _runs(scenario, seed, inner, config)
    _assert_same(fast, slow)
    assert slow_calls == slow.num_epochs  # the reference asks the policy at every epoch
    if config is not None and config.compat == "gavel":
        # Gavel's rounds end with their micro-tasks, set at each round's start: no tick is passed over.
        assert fast_calls == slow_calls
    elif config is None or config.round_s != 37.5:
        assert fast_calls < slow_calls


def test_the_watchdog_stops_at_the_same_epoch() -> None:
    fast, slow, _, _ = _runs("tiny", 9, "fifo", SimConfig(stall_epochs=5), idle=True, num_jobs=3)
    assert fast.stalled and slow.stalled
    _assert_same(fast, slow)


def test_a_policy_without_the_declaration_is_asked_at_every_epoch() -> None:
    sc = get_scenario("tiny")
    jobs = sc.workload.build(sc.cluster, seed=0)

    class Asked(Standing):
        stands_on_ticks: ClassVar[bool] = False

    policy = Asked("fifo")
    result = Simulator(sc.cluster, jobs).run(policy, ticks=True)
    assert policy.calls == result.num_epochs
    assert Policy.stands_on_ticks is False  # opt-in


def test_step_records_the_ticks_it_passed_over(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    # One job of 1,000 iterations at 1 it/s alone on the cluster, 100 s rounds: the ticks at 100 ... 900 are quiet.
    jobs = [JobSpec(0, 0.0, "a", 1, 1000.0, 1)]
    sim = Simulator(two_by_two, jobs, config=SimConfig(round_s=100.0, restart_penalty_s=0.0), throughput=toy)
    view = sim.reset()
    assert view is not None
    quiet = QuietTicks(views=True)
    view = sim.step(Allocation({0: JobAllocation({"v100": 1})}), quiet=quiet)
    assert quiet.times_s == [100.0 * k for k in range(1, 10)]
    assert [j.job_id for j in quiet.running] == [0]
    assert quiet.running[0].remaining_iters == pytest.approx(100.0)
    assert view is None and sim.now_s == 1000.0  # it completed, the cluster empty: the end
    assert sim.result().num_epochs == 10  # the first epoch and the nine ticks passed over
    # Bounded by until_s: the ticks up to it only.
    sim.reset()
    quiet = QuietTicks(until_s=350.0)
    view = sim.step(Allocation({0: JobAllocation({"v100": 1})}), quiet=quiet)
    assert quiet.times_s == [100.0, 200.0, 300.0]
    assert view is not None and view.now_s == 400.0 and view.is_tick
    # Off: nothing is passed over.
    off = Simulator(two_by_two, jobs, config=sim.config, throughput=toy, fast_forward=False)
    off.reset()
    quiet = QuietTicks()
    view = off.step(Allocation({0: JobAllocation({"v100": 1})}), quiet=quiet)
    assert quiet.times_s == [] and view is not None and view.now_s == 100.0
    assert np.isfinite(view.now_s)
