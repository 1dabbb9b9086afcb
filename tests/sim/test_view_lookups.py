"""``ClusterView.is_active`` and ``ClusterView.remaining_iters`` answer for one job what its view says,
without building it: before and after the index of every view is built, and once the snapshot is sealed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hetgym.sim import ClusterView, SimConfig, Simulator, make_policy
from hetgym.workloads.scenario import get_scenario


def _jobs(num_jobs: int = 60, seed: int = 5) -> Any:
    return get_scenario("default").with_overrides(workload={"num_jobs": num_jobs}).workload.build("default", seed=seed)


def _check(view: ClusterView, ids: list[int]) -> None:
    for jid in ids:
        assert view.is_active(jid) is (jid in view.job_index)
        if jid in view.job_index:
            assert view.remaining_iters(jid) == view.job(jid).remaining_iters
        else:
            with pytest.raises(KeyError):
                view.remaining_iters(jid)


@pytest.mark.parametrize("compat", ["none", "gavel"])
def test_one_job_lookups_match_its_view(compat: str) -> None:
    jobs = list(_jobs())
    sim = Simulator("default", jobs, config=SimConfig(compat=compat))  # type: ignore[arg-type]
    policy = make_policy("tiresias")
    policy.reset(sim.cluster, rng=np.random.default_rng(0))
    view = sim.reset(round_s=policy.round_s)
    ids = [j.job_id for j in jobs] + [-1]
    kept: list[ClusterView] = []
    running_seen = 0
    while view is not None:
        # Without the index: the engine's live records; running jobs' progress read at the epoch's time.
        for jid in ids:
            active = view.is_active(jid)
            if active:
                left = view.remaining_iters(jid)
                assert left == view.active.view_of(jid).remaining_iters
                running_seen += view.active.view_of(jid).is_running
        assert "job_index" not in view.__dict__
        _check(view, ids)  # with the index built
        if view.epoch % 7 == 0:
            kept.append(view)  # sealed at the next step
        view = sim.step(policy.schedule(view))
    assert running_seen > 50
    for old in kept:
        assert old.active.sealed
        _check(old, ids)
