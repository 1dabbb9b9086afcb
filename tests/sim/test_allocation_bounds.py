"""``check_allocation`` enforces each job's ``min_gpus``/``max_gpus`` and whole, finite GPU counts; the
error names the policy, the job and the value; and no registered policy breaks the bounds."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from hetgym.sim import (
    Allocation,
    AllocationBuilder,
    ClusterSpec,
    InvalidAllocationError,
    JobAllocation,
    JobSpec,
    SimConfig,
    Simulator,
    ThroughputModel,
    list_policies,
    make_policy,
)
from hetgym.workloads import get_scenario
from tests.helpers import Scripted, toy_model


@pytest.fixture
def cluster() -> ClusterSpec:
    return ClusterSpec.from_inventory("4x4", {"v100": (4, 4)})


def _run(cluster: ClusterSpec, job: JobSpec, decide: Any, toy: ThroughputModel) -> None:
    Simulator(cluster, [job], config=SimConfig(restart_penalty_s=0.0), throughput=toy).run(Scripted(decide))


def test_more_gpus_than_max_gpus_is_refused(cluster: ClusterSpec) -> None:
    job = JobSpec(0, 0.0, "a", 1, 100.0, 1, max_gpus=1)
    with pytest.raises(InvalidAllocationError) as info:
        _run(cluster, job, lambda v: Allocation.from_counts({0: {"v100": 16}}), toy_model())
    message = str(info.value)
    assert "policy 'scripted'" in message and "job 0: 16 GPUs given" in message
    assert "at most max_gpus=1" in message and "give it 1..1 GPUs" in message


def test_fewer_gpus_than_min_gpus_is_refused(cluster: ClusterSpec) -> None:
    job = JobSpec(0, 0.0, "a", 1, 100.0, 4, min_gpus=2)
    with pytest.raises(InvalidAllocationError, match=r"job 0: 1 GPUs given but the job needs at least min_gpus=2"):
        _run(cluster, job, lambda v: Allocation.from_counts({0: {"v100": 1}}), toy_model())


def test_counts_within_the_bounds_run(cluster: ClusterSpec) -> None:
    job = JobSpec(0, 0.0, "a", 1, 100.0, 2, min_gpus=2, max_gpus=4)
    sim = Simulator(cluster, [job], config=SimConfig(restart_penalty_s=0.0), throughput=toy_model())
    result = sim.run(Scripted(lambda v: Allocation.from_counts({0: {"v100": 4}} if v.waiting else {})))
    assert result.metrics["num_completed"] == 1


@pytest.mark.parametrize(
    ("count", "why"),
    [
        (math.nan, "is not finite"),
        (math.inf, "is not finite"),
        (1.5, "is not a whole number"),
        (True, "is a bool, not a number"),
        ("2", "is a str, not a number"),
        (np.float64("nan"), "is not finite"),
    ],
)
def test_bad_counts_name_the_policy_job_and_value(cluster: ClusterSpec, count: Any, why: str) -> None:
    job = JobSpec(7, 0.0, "a", 1, 100.0, 1)
    with pytest.raises(InvalidAllocationError) as info:
        _run(cluster, job, lambda v: Allocation.from_counts({7: {"v100": count}}), toy_model())
    message = str(info.value)
    assert message.startswith("policy 'scripted' at t=0.0s: job 7: GPU count")
    assert f"{count!r} for 'v100' {why}" in message and "give a whole number of GPUs >= 0" in message


def test_whole_floats_and_numpy_integers_are_counts() -> None:
    assert JobAllocation({"v100": 2.0, "k80": np.int64(3)}).as_dict() == {"v100": 2, "k80": 3}


def test_the_builder_names_the_job(cluster: ClusterSpec) -> None:
    sim = Simulator(cluster, [JobSpec(3, 0.0, "a", 1, 100.0, 1)], throughput=toy_model())
    view = sim.reset()
    assert view is not None
    with pytest.raises(InvalidAllocationError, match=r"job 3: GPU count inf for 'v100' is not finite"):
        AllocationBuilder(view).assign(3, {"v100": math.inf})
    # The rejected decision changed nothing: a valid one is still accepted.
    assert sim.step(Allocation.from_counts({3: {"v100": 1}})) is None
    assert sim.result().metrics["num_completed"] == 1


@pytest.mark.parametrize("scenario", ["tiny", "default"])
def test_every_registered_policy_respects_the_bounds(scenario: str) -> None:
    # Each policy runs to the end under the checks (a violation raises InvalidAllocationError).
    sc = get_scenario(scenario).with_overrides(workload={"num_jobs": 12})
    jobs = sc.workload.build(sc.cluster, seed=0).jobs
    assert any(j.max_gpus is not None for j in jobs)
    for name in list_policies():
        result = Simulator(sc.cluster, jobs, config=sc.sim).run(make_policy(name))
        assert result.metrics["num_jobs"] == len(jobs), name
