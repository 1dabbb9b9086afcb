"""``shift_time`` moves every absolute time of an epoch by the same amount and leaves every duration alone."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hetgym.experiments import simulator_for
from hetgym.sim import AllocationBuilder, SimConfig, make_policy
from hetgym.sim.view import ClusterView, shift_time
from hetgym.workloads.scenario import get_scenario


def _views(count: int) -> list[ClusterView]:
    """The first ``count`` epochs of EDF on the tiny scenario (running and waiting jobs among them)."""
    scenario = get_scenario("tiny")
    cluster = scenario.cluster_spec()
    sim = simulator_for(cluster, scenario.workload.build(cluster, seed=3), SimConfig(), None)
    policy = make_policy("edf")
    policy.reset(cluster, rng=np.random.default_rng(0))
    out: list[ClusterView] = []
    view = sim.reset(round_s=60.0)
    while view is not None and len(out) < count:
        out.append(view)
        view = sim.step(policy.schedule(view))
    return out


def test_absolute_times_move_and_durations_stay() -> None:
    views = _views(40)
    assert any(v.running for v in views) and any(v.waiting for v in views)
    for view in views:
        moved = shift_time(view, 17.5)
        assert moved.now_s == view.now_s + 17.5
        assert moved.previous_token is None and moved.active.sealed
        assert [j.job_id for j in moved.jobs] == [j.job_id for j in view.jobs]
        for a, b in zip(view.jobs, moved.jobs, strict=True):
            assert b.submit_s == a.submit_s + 17.5 and b.spec.submit_s == a.spec.submit_s + 17.5
            assert b.deadline_s == a.deadline_s + 17.5 and b.spec.deadline_s == a.spec.deadline_s + 17.5
            for field in ("first_start_s", "last_change_s"):
                old, new = getattr(a, field), getattr(b, field)
                assert (old is None and new is None) or new == old + 17.5
            # Durations and progress are untouched.
            for field in ("remaining_iters", "attained_gpu_s", "executed_s", "last_run_s", "penalty_left_s", "status"):
                assert getattr(b, field) == getattr(a, field)
            assert b.allocation is a.allocation and b.spec.total_iters == a.spec.total_iters
        assert dict(moved.free_gpus) == dict(view.free_gpus)
        # A decision built from the moved epoch keeps the running jobs of the original one.
        assert AllocationBuilder.keeping_running(moved).build().jobs == dict(view.running_allocations)


def test_zero_is_the_view_itself_and_bad_shifts_are_refused() -> None:
    view = _views(1)[0]
    assert shift_time(view, 0.0) is view
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="delta_s"):
            shift_time(view, bad)
