"""The stepping hooks the Gym environment relies on: ``plan_placement`` and ``Simulator.ended_log``."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from hetgym.sim import JobStatus, SimConfig, Simulator, make_policy
from hetgym.sim.placement import plan_placement
from hetgym.workloads import get_scenario


@pytest.mark.parametrize("policy", ["fifo", "srtf", "tiresias", "edf"])
def test_plan_placement_predicts_the_simulators_servers(policy: str) -> None:
    sc = get_scenario("tiny")
    jobs = sc.workload.build(sc.cluster, seed=3).jobs
    sim = Simulator(sc.cluster, jobs, config=sc.sim)
    pol = make_policy(policy)
    pol.reset(sim.cluster, rng=np.random.default_rng(0))
    view = sim.reset()
    checked = 0
    while view is not None:
        allocation = pol.schedule(view)
        current = {j.job_id: (j.allocation, j.groups) for j in view.jobs}
        planned, free = plan_placement(view.cluster, allocation.jobs, current)
        assert (free >= 0).all()
        view = sim.step(allocation)
        if view is None:
            break
        for job in view.jobs:
            if job.job_id in view.arrived:
                continue
            assert job.groups == planned.get(job.job_id, ()), (policy, job.job_id, view.now_s)
            checked += 1
    assert checked > 0


def test_ended_log_records_every_job_once_with_its_outcome() -> None:
    sc = get_scenario("tiny")
    # Deadlines a little looser than the recipe's so that admission control admits some jobs and rejects
    # others; a time cap leaves some jobs unfinished.
    jobs = dataclasses.replace(sc.workload, tightness=0.3).build(sc.cluster, seed=1).jobs
    sim = Simulator(sc.cluster, jobs, config=SimConfig(max_time_s=20 * 3600.0))
    pol = make_policy("edf-admission")
    pol.reset(sim.cluster, rng=np.random.default_rng(0))
    view = sim.reset()
    seen: list[tuple[int, float, JobStatus]] = []
    cursor = 0
    while view is not None:
        view = sim.step(pol.schedule(view))
        new = sim.ended_log(cursor)
        cursor += len(new)
        seen.extend(new)
        assert all(t <= sim.now_s for _, t, _ in new)
    frame = sim.result("x").jobs.set_index("job_id")
    assert sorted(j for j, _, _ in seen) == sorted(frame.index.tolist())  # each arrived job exactly once
    assert {s for _, _, s in seen} == {JobStatus.COMPLETED, JobStatus.REJECTED, JobStatus.UNFINISHED}
    for jid, t, status in seen:
        assert frame.loc[jid, "status"] == status.name.lower()
        if status != JobStatus.UNFINISHED:
            assert frame.loc[jid, "finish_s"] == t
        else:
            assert math.isnan(frame.loc[jid, "finish_s"]) and t == sim.now_s
    assert sim.ended_log() == seen
