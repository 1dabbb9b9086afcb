"""Views say what the previous step changed, so that a policy can keep its state across epochs.

``ClusterView.changed`` names the jobs whose GPUs the previous step changed, ``previous_token`` ties a
view to the epoch it follows, ``ClusterView.job`` reads one job without building every view, and
``AllocationBuilder.replacing`` records which jobs a from-scratch decision changes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hetgym.sim import Allocation, AllocationBuilder, ClusterView, JobSpec, Simulator, make_policy
from hetgym.workloads.scenario import get_scenario


def _jobs(num_jobs: int = 60, seed: int = 3) -> Any:
    return get_scenario("default").with_overrides(workload={"num_jobs": num_jobs}).workload.build("default", seed=seed)


def test_changed_names_the_jobs_whose_gpus_the_step_changed() -> None:
    sim = Simulator("default", _jobs())
    policy = make_policy("tiresias")
    policy.reset(sim.cluster, rng=np.random.default_rng(0))
    view = sim.reset(round_s=policy.round_s)
    checked = 0
    while view is not None:
        before = {j.job_id: j.allocation for j in view.jobs}
        token = view.active.token
        decision = policy.schedule(view)
        view = sim.step(decision)
        if view is None:
            break
        assert view.previous_token is token or view.previous_token is None
        after = {j.job_id: j.allocation for j in view.jobs}
        # Jobs active at both epochs whose allocation differs are exactly the changed ones still active.
        moved = {jid for jid in after if jid in before and before[jid] != after[jid]}
        assert moved == {jid for jid in view.changed if jid in after}
        checked += bool(moved)
    assert checked > 20


def test_previous_token_is_none_after_the_cluster_fell_empty() -> None:
    # Job 0 ends before job 1 arrives: the epoch at job 1's arrival follows no epoch.
    jobs = [JobSpec(0, 0.0, "resnet50", 64, 10.0, 1), JobSpec(1, 1e6, "resnet50", 64, 10.0, 1)]
    sim = Simulator("default", jobs)
    policy = make_policy("fifo")
    policy.reset(sim.cluster, rng=np.random.default_rng(0))
    views: list[ClusterView] = []
    view = sim.reset()
    while view is not None:
        views.append(view)
        view = sim.step(policy.schedule(view))
    arrival = next(v for v in views if v.arrived == (1,))
    assert arrival.previous_token is None and views[0].previous_token is None


def test_job_reads_one_view_without_building_them_all() -> None:
    sim = Simulator("default", _jobs())
    view = sim.reset()
    for _ in range(30):
        assert view is not None
        view = sim.step(make_policy("fifo-backfill").schedule(view))
    assert view is not None and view.running and view.waiting
    first = view.job(view.running[0].job_id)
    assert "job_index" not in view.__dict__  # one job read, no index of them all built
    fresh = {j.job_id: view.job(j.job_id) for j in view.jobs}
    assert fresh == dict(view.job_index) and first == fresh[first.job_id]
    with pytest.raises(KeyError):
        view.job(-1)


def test_replacing_builder_touches_only_the_jobs_it_changes() -> None:
    sim = Simulator("default", _jobs())
    view = sim.reset()
    while view is not None and len(view.running) < 3:
        view = sim.step(make_policy("fifo-backfill").schedule(view))
    assert view is not None
    running = list(view.running)
    builder = AllocationBuilder.replacing(view)
    for job in running[1:]:
        assert job.allocation is not None
        builder.take(job.job_id, job.allocation)  # kept: no change
    decision = builder.build()
    assert decision.touched == (running[0].job_id,)  # left out: preempted
    full = Allocation(dict(decision.jobs))
    assert full.touched is None
    after = sim.step(decision)
    assert after is not None
    assert running[0].job_id in {j.job_id for j in after.waiting}
    assert after.changed == (running[0].job_id,)
