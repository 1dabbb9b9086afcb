"""A decision as arrays (``Simulator.step_counts`` with a ``CountsDelta``) runs exactly as the same decision
as an ``Allocation``; bad rows are refused with nothing applied; the deadline log has one outcome per
deadline job, and its met count is the metrics' DSR."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from hetgym.sim import Allocation, ClusterView, InvalidAllocationError, JobSpec, Simulator, make_policy
from hetgym.sim.counts import CountsDelta
from hetgym.sim.metrics import DEADLINE_TOL_S
from hetgym.workloads.scenario import get_scenario


def _jobs(num_jobs: int = 80, seed: int = 5) -> Any:
    return get_scenario("default").with_overrides(workload={"num_jobs": num_jobs}).workload.build("default", seed=seed)


def _as_counts(view: ClusterView, decision: Allocation) -> CountsDelta:
    """The rows of the jobs ``decision`` changes against the epoch's running allocations."""
    types = view.cluster.gpu_types
    current = view.running_allocations
    ids, rows, modes, flags = [], [], [], []
    for job in view.jobs:
        jid = job.job_id
        ja = decision.jobs.get(jid)
        rejected = jid in decision.reject
        if (not rejected and ja == current.get(jid)) or (ja is None and jid not in current and not rejected):
            continue
        ids.append(jid)
        rows.append([0 if ja is None else ja.count(t) for t in types])
        modes.append("sync" if ja is None else ja.mode)
        flags.append(rejected)
    return CountsDelta(
        view.active.token,
        np.array(ids, dtype=np.int64),
        np.array(rows, dtype=np.int64).reshape(len(ids), len(types)),
        tuple(modes),
        np.array(flags, dtype=bool),
    )


def _drive(policy_name: str, arrays: bool) -> pd.DataFrame:
    sim = Simulator("default", _jobs())
    policy = make_policy(policy_name)
    policy.reset(sim.cluster, rng=np.random.default_rng(0))
    view = sim.reset(round_s=getattr(policy, "round_s", None))
    while view is not None:
        decision = policy.schedule(view)
        view = sim.step_counts(_as_counts(view, decision)) if arrays else sim.step(decision)
    return sim.result("x").jobs


@pytest.mark.parametrize("policy", ["edf-admission", "tiresias", "fifo"])
def test_step_counts_runs_as_step(policy: str) -> None:
    pd.testing.assert_frame_equal(_drive(policy, arrays=True), _drive(policy, arrays=False))


def _first_view() -> tuple[Simulator, ClusterView]:
    jobs = [JobSpec(0, 0.0, "resnet50", 64, 1e6, 2, min_gpus=2, max_gpus=4), JobSpec(1, 0.0, "resnet50", 64, 1e6, 1)]
    sim = Simulator("tiny", jobs)
    view = sim.reset()
    assert view is not None
    return sim, view


def _delta(view: ClusterView, ids: list[int], rows: list[list[int]], reject: list[bool] | None = None) -> CountsDelta:
    return CountsDelta(
        view.active.token,
        np.array(ids, dtype=np.int64),
        np.array(rows, dtype=np.int64).reshape(len(ids), len(view.cluster.gpu_types)),
        ("sync",) * len(ids),
        np.array(reject or [False] * len(ids), dtype=bool),
    )


@pytest.mark.parametrize(
    ("ids", "rows", "reject", "match"),
    [
        ([7], [[1, 0]], None, "unknown job 7"),
        ([0], [[1, 0]], None, "min_gpus=2"),
        ([0], [[4, 1]], None, "max_gpus=4"),
        ([0, 1], [[4, 0], [1, 0]], None, "over capacity"),
        ([0], [[2, 0]], [True], "both allocated GPUs and rejected"),
        ([0, 0], [[2, 0], [2, 0]], None, "more than one row"),
    ],
)
def test_bad_rows_are_refused_and_change_nothing(
    ids: list[int], rows: list[list[int]], reject: list[bool] | None, match: str
) -> None:
    sim, view = _first_view()
    with pytest.raises(InvalidAllocationError, match=match):
        sim.step_counts(_delta(view, ids, rows, reject))
    assert sim.now_s == view.now_s and not sim._placements.running
    nxt = sim.step_counts(_delta(view, [0, 1], [[2, 0], [0, 1]]))  # a valid decision still applies
    assert nxt is not None and set(nxt.running_allocations) == {0, 1}


def test_a_delta_of_another_epoch_is_refused() -> None:
    sim, view = _first_view()
    nxt = sim.step_counts(_delta(view, [0], [[2, 0]]))
    assert nxt is not None
    with pytest.raises(InvalidAllocationError, match="not of this epoch"):
        sim.step_counts(_delta(view, [1], [[1, 0]]))


def test_deadline_log_has_one_outcome_per_deadline_job_and_counts_the_dsr() -> None:
    sim = Simulator("default", _jobs(120, seed=2))
    result = sim.run(make_policy("edf"))
    log = sim.deadline_log()
    specs = {s.job_id: s for s in sim.specs}
    assert sorted(o.job_id for o in log) == sorted(j for j, s in specs.items() if s.has_deadline)
    met = sum(o.met for o in log)
    assert met == pytest.approx(result.metrics["dsr"] * result.metrics["num_with_deadline"])
    for o in log:
        if o.met:
            assert o.time_s <= specs[o.job_id].deadline_s + DEADLINE_TOL_S
        else:
            assert not math.isnan(o.time_s)
    assert sim.deadline_log(len(log) - 1) == log[-1:]
