"""Dancer: admission on an empty cluster, the DP against brute force, prices and capacity, and admitted jobs
meeting their deadlines without overheads."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from helpers import toy_model
from hypothesis import given, settings
from hypothesis import strategies as st

from baselines.dancer import Dancer, PriceFunction, dual_dp, schedule_progress
from hetgym.sim import ClusterSpec, JobSpec, JobStatus, SimConfig, Simulator, make_policy
from hetgym.workloads import WorkloadConfig

NO_PENALTY = SimConfig(restart_penalty_s=0.0)


def status_of(result, job_id: int) -> JobStatus:  # type: ignore[no-untyped-def]
    return JobStatus[str(result.jobs.set_index("job_id").loc[job_id, "status"]).upper()]


# ---------------------------------------------------------------------------------------------
# A single job on an empty cluster: admitted iff its deadline is feasible


@settings(max_examples=25, deadline=None)
@given(
    work=st.floats(min_value=200.0, max_value=20_000.0),
    slack=st.one_of(st.floats(min_value=1.05, max_value=4.0), st.floats(min_value=0.3, max_value=0.95)),
    submit=st.floats(min_value=0.0, max_value=500.0),
)
def test_single_job_admitted_iff_feasible_with_fastest_config(work: float, slack: float, submit: float) -> None:
    # Toy job "a": 1 it/s per V100, linear up to 2 GPUs on one server (4 spans servers at factor 0.5),
    # so its fastest configuration runs at 2 it/s.
    cluster = ClusterSpec.from_inventory("2x2", {"v100": (2, 2), "k80": (2, 2)})
    fastest_s = work / 2.0
    job = JobSpec(0, submit, "a", 1, work, 1, deadline_s=submit + slack * fastest_s, max_gpus=4)
    result = Simulator(cluster, [job], config=NO_PENALTY, throughput=toy_model()).run(make_policy("dancer"))
    if slack > 1.0:
        assert status_of(result, 0) == JobStatus.COMPLETED
        assert bool(result.jobs.loc[0, "met_deadline"])
    else:
        assert status_of(result, 0) == JobStatus.REJECTED


def test_single_job_gets_a_plan_that_fits_the_window(two_by_two: ClusterSpec) -> None:
    job = JobSpec(0, 0.0, "a", 1, 3000.0, 1, deadline_s=3000.0, max_gpus=4)
    policy = Dancer()
    Simulator(two_by_two, [job], config=NO_PENALTY, throughput=toy_model()).run(policy)
    assert policy.stats["admitted"] == 1 and policy.stats["rejected"] == 0


# ---------------------------------------------------------------------------------------------
# The DP against brute force, and monotonicity in prices


def brute_force(
    costs: np.ndarray, same: np.ndarray, switch: np.ndarray, work: float, initial: int, switch_aware: bool
) -> float:
    """Least cost over every schedule (idle or one option per block) that completes ``work``."""
    num_opts, num_blocks = costs.shape
    best = math.inf
    for choice in itertools.product(range(-1, num_opts), repeat=num_blocks):
        arr = np.array(choice)
        if switch_aware:
            done = schedule_progress(arr, same, switch, initial)
        else:  # only the start pays: the first block run (unless it continues `initial` in block 0)
            done = 0.0
            for j, o in enumerate(choice):
                if o < 0:
                    continue
                # A start that does no work leaves the job where it was (the DP's state is the work done).
                fresh = done == 0.0 and not (j == 0 and o == initial)
                done += switch[o, j] if fresh else same[o, j]
        cost = sum(costs[o, j] for j, o in enumerate(choice) if o >= 0)
        if done >= work - 1e-9 and cost < best:
            best = cost
    return best


@st.composite
def tiny_instances(draw):  # type: ignore[no-untyped-def]
    num_blocks = draw(st.integers(1, 4))
    num_opts = 4  # 2 types x counts {1, 2}
    same = np.array(
        draw(st.lists(st.integers(1, 6), min_size=num_opts * num_blocks, max_size=num_opts * num_blocks)),
        dtype=float,
    ).reshape(num_opts, num_blocks)
    loss = np.array(
        draw(st.lists(st.integers(1, 3), min_size=num_opts * num_blocks, max_size=num_opts * num_blocks)),
        dtype=float,
    ).reshape(num_opts, num_blocks)
    switch = np.maximum(same - loss, 0.0)
    costs = np.array(
        draw(
            st.lists(
                st.one_of(st.floats(0.1, 5.0), st.just(math.inf)),
                min_size=num_opts * num_blocks,
                max_size=num_opts * num_blocks,
            )
        )
    ).reshape(num_opts, num_blocks)
    work = float(draw(st.integers(1, int(same.max(axis=0).sum()) + 2)))
    initial = draw(st.integers(-1, num_opts - 1))
    return costs, same, switch, work, initial


@settings(max_examples=80, deadline=None)
@given(inst=tiny_instances(), switch_aware=st.booleans())
def test_dp_matches_brute_force(inst, switch_aware: bool) -> None:  # type: ignore[no-untyped-def]
    costs, same, switch, work, initial = inst
    # One work unit per iteration: integer progress is represented exactly.
    res = dual_dp(costs, same, switch, work, quanta=int(work), initial_option=initial, switch_aware=switch_aware)
    expected = brute_force(costs, same, switch, work, initial, switch_aware)
    if math.isinf(expected):
        assert not res.feasible
        return
    assert res.feasible
    assert res.cost == pytest.approx(expected)
    # The returned schedule is one of the optimal ones.
    assert sum(costs[o, j] for j, o in enumerate(res.choice) if o >= 0) == pytest.approx(expected)
    if switch_aware:
        assert schedule_progress(res.choice, same, switch, initial) >= work - 1e-9


@settings(max_examples=60, deadline=None)
@given(inst=tiny_instances(), bump=st.lists(st.floats(0.0, 3.0), min_size=16, max_size=16))
def test_dp_cost_is_monotone_in_prices(inst, bump: list[float]) -> None:  # type: ignore[no-untyped-def]
    costs, same, switch, work, initial = inst
    higher = costs * (1.0 + np.array(bump[: costs.size]).reshape(costs.shape))
    low = dual_dp(costs, same, switch, work, quanta=int(work), initial_option=initial, switch_aware=True)
    high = dual_dp(higher, same, switch, work, quanta=int(work), initial_option=initial, switch_aware=True)
    assert high.cost >= low.cost - 1e-9


def test_plan_cost_rises_with_reservations(two_by_two: ClusterSpec) -> None:
    """The same job costs more when other jobs' reservations already fill part of its window."""
    throughput = toy_model()
    policy = Dancer(price_auto=False, price_L=1e-3, price_U=1.0)
    jobs = [JobSpec(i, 0.0, "a", 1, 1200.0, 1, deadline_s=3600.0, max_gpus=2) for i in range(3)]
    costs: list[float] = []
    original = policy.plan_job

    def spy(view, job, opts):  # type: ignore[no-untyped-def]
        cost, plan = original(view, job, opts)
        if job.job_id in view.arrived:
            costs.append(cost)
        return cost, plan

    policy.plan_job = spy  # type: ignore[method-assign]
    Simulator(two_by_two, jobs, config=NO_PENALTY, throughput=throughput).run(policy)
    assert len(costs) == 3
    assert costs[0] < costs[1] < costs[2]


# ---------------------------------------------------------------------------------------------
# Prices reach U as a type fills; later jobs are rejected; no slot over capacity


def test_price_function_ends() -> None:
    for mode in ("exp", "linear"):
        prices = PriceFunction(1e-3, 2.0, mode)
        assert prices.price(0, 8) == pytest.approx(1e-3)
        assert prices.price(8, 8) == pytest.approx(2.0)
        assert np.all(np.diff(prices.price(np.arange(9), 8)) > 0)
    exact = PriceFunction(1e-3, 2.0, "exp", "exact")
    a, _, _ = exact.coefficients(np.array([8.0]), 8)
    # The exact integral of 8 GPUs on an empty 8-GPU type sums the prices at 0..7 committed GPUs.
    assert a[0] * exact.phi(np.array(0.0), 8) == pytest.approx(exact.price(np.arange(8), 8).sum())


def test_filling_a_type_raises_prices_and_rejects_later_jobs() -> None:
    cluster = ClusterSpec.from_inventory("one", {"v100": (1, 4)})
    # 12 identical jobs at t=0, each 600 iterations (10 GPU-slots at 1 it/s per GPU) within 20 slots: the
    # type has 80 GPU-slots in the window, so at most 8 fit.
    jobs = [JobSpec(i, 0.0, "a", 1, 600.0, 1, deadline_s=1200.0, max_gpus=2) for i in range(12)]
    policy = Dancer(price_auto=False, price_L=1e-3, price_U=0.5)
    costs: list[float] = []
    peak: list[int] = []
    original = policy.plan_job

    def spy(view, job, opts):  # type: ignore[no-untyped-def]
        cost, plan = original(view, job, opts)
        if job.job_id in view.arrived:
            costs.append(cost)
            peak.append(int(policy.committed_window(0, 19).max()))
        return cost, plan

    policy.plan_job = spy  # type: ignore[method-assign]
    result = Simulator(cluster, jobs, config=NO_PENALTY, throughput=toy_model()).run(policy)
    admitted = [c for c in costs if c <= 1.0]
    assert 0 < policy.stats["admitted"] <= 8
    assert policy.stats["rejected"] >= 4
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(admitted))  # prices only rise
    assert max(peak) <= 4  # no slot ever holds more than the type's capacity
    # Once the type is full in the window its price is U, and the next job cannot be admitted.
    assert policy.prices.price(4, 4) == pytest.approx(0.5)
    assert (result.jobs["status"] == "rejected").sum() == policy.stats["rejected"]


def _random_jobs(seed: int, n: int) -> list[JobSpec]:
    cluster = ClusterSpec.from_inventory("single", {"v100": (1, 4), "k80": (1, 4)})
    wl = WorkloadConfig(recipe="elasticflow", num_jobs=n * 4, target_utilisation=1.5, max_gpus_per_job=4)
    return [j for j in wl.build(cluster, seed=seed).jobs if (j.duration_s or 0) <= 3 * 3600][:n]


class _CapacityCheck(Dancer):
    """Dancer that asserts after every decision that no future slot is reserved beyond capacity."""

    def schedule(self, view):  # type: ignore[no-untyped-def]
        out = super().schedule(view)
        window = self._ledger.grid
        assert (window <= self._cap[:, None]).all(), "a slot is reserved beyond a type's capacity"
        assert (window >= 0).all()
        return out


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), rejected=st.sampled_from(["drop", "best_effort"]))
def test_no_slot_over_capacity(seed: int, rejected: str) -> None:
    cluster = ClusterSpec.from_inventory("single", {"v100": (1, 4), "k80": (1, 4)})
    jobs = _random_jobs(seed, 12)
    Simulator(cluster, jobs, config=SimConfig()).run(_CapacityCheck(rejected_jobs=rejected))


# ---------------------------------------------------------------------------------------------
# Admitted jobs meet their deadlines when there are no overheads


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("switch_cost_in_dp", [True, False])
def test_admitted_jobs_meet_deadlines_without_overheads(seed: int, switch_cost_in_dp: bool) -> None:
    # One server per type: no placement can be fragmented, so nothing slows a job below its plan.
    cluster = ClusterSpec.from_inventory("single", {"v100": (1, 4), "k80": (1, 4)})
    jobs = _random_jobs(seed, 14)
    result = Simulator(cluster, jobs, config=NO_PENALTY).run(Dancer(switch_cost_in_dp=switch_cost_in_dp))
    frame = result.jobs
    admitted = frame[frame["status"] != "rejected"]
    assert len(admitted) > 0
    assert admitted["met_deadline"].all(), admitted[~admitted["met_deadline"]][["job_id", "deadline_s", "finish_s"]]


def test_rejected_best_effort_jobs_still_run() -> None:
    cluster = ClusterSpec.from_inventory("one", {"v100": (1, 4)})
    jobs = [JobSpec(i, 0.0, "a", 1, 600.0, 1, deadline_s=1200.0, max_gpus=2) for i in range(12)]
    policy = Dancer(price_auto=False, price_L=1e-3, price_U=0.5, rejected_jobs="best_effort")
    result = Simulator(cluster, jobs, config=NO_PENALTY, throughput=toy_model()).run(policy)
    assert policy.stats["rejected"] > 0
    assert (result.jobs["status"] == "completed").all()


def test_bad_knobs_are_refused() -> None:
    with pytest.raises(ValueError, match="price_mode"):
        Dancer(price_mode="cubic")
    with pytest.raises(ValueError, match="price_auto=False"):
        Dancer(price_auto=False)
    with pytest.raises(ValueError, match="rejected_jobs"):
        make_policy("dancer", rejected_jobs="queue")


def test_runs_on_the_tiny_scenario_with_type_mixing() -> None:
    from hetgym.workloads import get_scenario

    scenario = get_scenario("tiny")
    jobs = scenario.workload.build(scenario.cluster, seed=0)
    result = Simulator(scenario.cluster, jobs.jobs, config=scenario.sim).run(Dancer(allow_type_mix_in_slot=True))
    assert result.metrics["num_jobs"] == len(jobs)
    assert 0.0 <= result.metrics["dsr"] <= 1.0
