"""``Simulator.ended_log``: the record of ended jobs that step-by-step callers (the Gym env) rely on."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from hetgym.sim import JobStatus, SimConfig, Simulator, make_policy
from hetgym.workloads import get_scenario


def test_ended_log_records_every_job_once_with_its_outcome() -> None:
    sc = get_scenario("tiny")
    # With the recipe's deadlines admission control admits some jobs and rejects others; a time cap
    # leaves a job unfinished.
    jobs = dataclasses.replace(sc.workload, tightness=1.0).build(sc.cluster, seed=1).jobs
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
