"""Views built on first use still show their own epoch, and decisions checked by delta are checked.

The engine hands policies snapshots (``EpochJobs``) that read its live state until its next step;
these tests pin what that must not change: a view read late equals one read at once (also through
a pickle), and an allocation built by ``AllocationBuilder.keeping_running`` (checked and applied only for
the jobs it changed) gives the same run as the same allocation without that record, and is refused
when it is invalid.
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest

from hetgym.sim import Allocation, AllocationBuilder, ClusterView, JobAllocation, Simulator, make_policy
from hetgym.sim.errors import InvalidAllocationError
from hetgym.workloads.scenario import get_scenario


def _jobs(num_jobs: int = 60, seed: int = 3) -> Any:
    scenario = get_scenario("default").with_overrides(workload={"num_jobs": num_jobs})
    return scenario.workload.build("default", seed=seed)


def _state(view: ClusterView) -> tuple[Any, ...]:
    return (view.now_s, view.running, view.waiting, dict(view.running_allocations), view.free_by_server)


def _drive(keep_views: bool) -> list[Any]:
    """Step a Tiresias run by hand; either keep every view unread or read each one at once."""
    sim = Simulator("default", _jobs())
    policy = make_policy("tiresias")
    policy.reset(sim.cluster, rng=np.random.default_rng(0))
    view = sim.reset(round_s=policy.round_s)
    kept: list[Any] = []
    while view is not None:
        kept.append(view if keep_views else _state(view))
        view = sim.step(policy.schedule(view))
    return [_state(v) for v in kept] if keep_views else kept


def test_a_view_read_after_later_steps_shows_its_own_epoch() -> None:
    late = _drive(keep_views=True)
    at_once = _drive(keep_views=False)
    assert len(late) == len(at_once) > 50
    assert late == at_once
    assert any(state[1] for state in late) and any(state[2] for state in late)


def test_iter_waiting_walks_the_waiting_jobs_in_order() -> None:
    sim = Simulator("default", _jobs())
    view = sim.reset()
    seen = 0
    while view is not None:
        assert tuple(view.iter_waiting()) == view.waiting
        seen += len(view.waiting)
        builder = AllocationBuilder.keeping_running(view)
        for job in view.iter_waiting():
            if builder.can_fit({"v100": job.num_gpus}):
                builder.assign(job.job_id, {"v100": job.num_gpus})
        view = sim.step(builder.build())
    assert seen > 0


def test_a_pickled_view_shows_the_same_jobs_whether_read_or_not() -> None:
    def view_after(steps: int, read: bool) -> bytes:
        sim = Simulator("default", _jobs())
        policy = make_policy("fifo")
        policy.reset(sim.cluster, rng=np.random.default_rng(0))
        view = sim.reset()
        for _ in range(steps):
            assert view is not None
            view = sim.step(policy.schedule(view))
        assert view is not None
        if read:
            _state(view)
        return pickle.dumps(view)

    unread, read = pickle.loads(view_after(30, read=False)), pickle.loads(view_after(30, read=True))
    assert unread.running and unread.waiting
    assert _state(unread) == _state(read)


class _Plain:
    """FIFO whose decisions lose the builder's record of changed jobs (the full check and apply)."""

    name = "fifo-plain"
    uses_ticks = False

    def __init__(self) -> None:
        self.inner = make_policy("fifo-backfill")

    def reset(self, cluster: Any, rng: Any = None) -> None:
        self.inner.reset(cluster, rng=rng)

    def schedule(self, view: ClusterView) -> Allocation:
        out = self.inner.schedule(view)
        return Allocation(dict(out.jobs), out.reject)


@pytest.mark.parametrize("cluster", ["default", "tiny"])
def test_the_delta_path_gives_the_same_run_as_the_full_one(cluster: str) -> None:
    jobs = get_scenario("default").with_overrides(workload={"num_jobs": 80}).workload.build(cluster, seed=1)
    fast = Simulator(cluster, jobs).run(make_policy("fifo-backfill"))
    plain = Simulator(cluster, jobs).run(_Plain())
    assert fast.jobs.equals(plain.jobs)
    assert fast.num_epochs == plain.num_epochs
    assert fast.timeline.equals(plain.timeline)


def test_the_delta_check_still_refuses_an_allocation_over_capacity() -> None:
    sim = Simulator("tiny", get_scenario("tiny").workload.build("tiny", seed=0))
    view = sim.reset()
    while view is not None and len(view.waiting) < 2:
        view = sim.step(Allocation())
    assert view is not None
    builder = AllocationBuilder.keeping_running(view)
    gpu_type = view.cluster.gpu_types[0]
    capacity = view.cluster.capacity[gpu_type]
    for job in view.waiting[:2]:
        # take() trusts its caller: give more GPUs of one type than the cluster has.
        builder.take(job.job_id, JobAllocation({gpu_type: capacity}))
    decision = builder.build()
    assert decision.delta is not None
    with pytest.raises(InvalidAllocationError, match=f"over capacity on {gpu_type}"):
        sim.step(decision)
