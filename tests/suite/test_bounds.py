"""``hetgym.suite.bounds``: the alone and capacity bounds are upper bounds, and bind where they should."""

from __future__ import annotations

import math

import pytest

import hetgym.suite as s
from hetgym.sim import ClusterSpec, JobSpec, SimConfig, Simulator, ThroughputModel, make_policy
from hetgym.suite.bounds import _upper_hull, capacity_bound, job_limits, rate_envelope, workload_bounds
from hetgym.suite.scores import EXPERTS, episode_inputs


def test_the_hull_lies_above_every_point_and_through_the_origin() -> None:
    points = [(0.0, 0.0), (1.0, 1.0), (2.0, 1.8), (3.0, 2.1), (4.0, 3.0), (8.0, 4.0)]
    lines = _upper_hull(points)
    assert lines[0] == pytest.approx((1.0, 0.0))
    for x, y in points:
        assert min(a * x + b for a, b in lines) >= y - 1e-12
    assert all(b >= -1e-12 for _, b in lines)


def test_the_envelope_bounds_the_rate_of_every_count(toy: ThroughputModel) -> None:
    job = JobSpec(0, 0.0, "a", 1, 1000.0, 2, deadline_s=100.0)
    lines = rate_envelope(job, ("v100", "k80"), toy, 8)
    for n in range(1, 9):
        best = max(toy.rate("a", 1, t, n) for t in ("v100", "k80"))
        assert min(a * n + b for a, b in lines) >= best - 1e-9


def _two_jobs(work_iters: float, deadline_s: float) -> list[JobSpec]:
    return [JobSpec(i, 0.0, "a", 1, work_iters, 4, deadline_s=deadline_s) for i in range(2)]


def test_two_jobs_that_each_need_the_whole_cluster_bound_the_dsr_at_one_half(
    toy: ThroughputModel, two_by_two: ClusterSpec
) -> None:
    sim = SimConfig(restart_penalty_s=0.0)
    cap = dict(two_by_two.capacity)
    limits = job_limits(_two_jobs(1.0, 1.0), two_by_two, toy, sim)
    full_rate = sum(cap[t] * limits[0].per_gpu_rate[t] for t in cap)
    # Each job needs 90% of the cluster's whole capacity over its window: alone both could, together one.
    jobs = _two_jobs(0.9 * full_rate * 3600.0, 3600.0)
    bounds = workload_bounds(jobs, two_by_two, sim, throughput=toy, num_slots=6)
    assert bounds.alone_mixed == 1.0 and bounds.num_deadline_jobs == 2
    assert bounds.capacity == 0.5 and bounds.status["capacity"] == "optimal"
    assert bounds.capacity_lp == pytest.approx(1 / 0.9 / 2)
    assert bounds.capacity_nofork <= bounds.capacity


def test_a_charged_first_start_is_part_of_the_window(toy: ThroughputModel, two_by_two: ClusterSpec) -> None:
    jobs = [JobSpec(0, 0.0, "a", 1, 1.0, 1, deadline_s=20.0)]
    assert workload_bounds(jobs, two_by_two, SimConfig(restart_penalty_s=30.0), throughput=toy).alone_mixed == 0.0
    free = SimConfig(restart_penalty_s=30.0, charge_first_start=False)
    assert workload_bounds(jobs, two_by_two, free, throughput=toy).alone_mixed == 1.0


def test_no_deadline_no_bound(toy: ThroughputModel, two_by_two: ClusterSpec) -> None:
    jobs = [JobSpec(0, 0.0, "a", 1, 1.0, 1)]
    bounds = workload_bounds(jobs, two_by_two, SimConfig(), throughput=toy)
    assert bounds.num_deadline_jobs == 0 and math.isnan(bounds.alone_mixed) and math.isnan(bounds.capacity)
    assert capacity_bound([], {"v100": 4})[2] == "no job with a deadline"


@pytest.mark.parametrize("seed", [1000, 1001, 1002, 1003])
def test_on_tiny_the_bounds_are_at_least_every_expert(seed: int) -> None:
    cluster, jobs, sim = episode_inputs(s.get("tiny"), seed)
    bounds = workload_bounds(jobs, cluster, sim)
    assert bounds.capacity <= bounds.alone_mixed + 1e-12
    assert bounds.capacity <= bounds.capacity_lp + 1e-9
    assert bounds.capacity_nofork <= bounds.capacity + 1e-12
    for name in EXPERTS:
        policy = make_policy(name)
        dsr = Simulator(cluster, jobs, config=sim).run(policy).metrics["dsr"]
        assert dsr <= bounds.capacity + 1e-9, name
        if name != "hadare":  # the only expert that forks jobs into copies
            assert dsr <= bounds.capacity_nofork + 1e-9, name
