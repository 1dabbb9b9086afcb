"""Hadar: heterogeneity preference (a job faster on P100 than on V100 gets the P100s), prices, the dual
subroutine and the greedy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baselines.hadar import Hadar
from hetgym.sim import (
    Allocation,
    ClusterSpec,
    ClusterView,
    JobSpec,
    SimConfig,
    Simulator,
    make_policy,
    validate_allocation,
)
from hetgym.sim.placement import NodePool, PlacementRequest, make_placer
from hetgym.workloads import WorkloadConfig

VPK = {"v100": (1, 4), "p100": (1, 4), "k80": (1, 4)}


def first_view(cluster: ClusterSpec, jobs: list[JobSpec], **cfg: float) -> tuple[Simulator, ClusterView]:
    sim = Simulator(cluster, jobs, config=SimConfig(**cfg))  # type: ignore[arg-type]
    view = sim.reset(round_s=360.0)
    assert view is not None
    return sim, view


def decide(policy: Hadar, cluster: ClusterSpec, view: ClusterView) -> Allocation:
    policy.reset(cluster, rng=np.random.default_rng(0))
    alloc = policy.schedule(view)
    validate_allocation(alloc, view)
    return alloc


# ---------------------------------------------------------------------------------------------
# The job's own speed per type decides (not a global type order); a lone job gets its fastest GPUs


def test_prefers_p100_for_a_job_faster_on_p100() -> None:
    cluster = ClusterSpec.from_inventory("vpk", VPK)
    # Recommendation, batch 2048: 16.6 it/s on P100, 10.4 on K80, 7.5 on V100; everything is free.
    _, view = first_view(cluster, [JobSpec(0, 0.0, "recommendation", 2048, 1e5, 1)])
    for mode in ("round", "plan"):
        alloc = decide(make_policy("hadar", mode=mode), cluster, view)  # type: ignore[arg-type]
        assert alloc.jobs[0].as_dict() == {"p100": 1}, mode


def test_single_job_on_empty_cluster_gets_its_fastest_gpus_on_one_node() -> None:
    cluster = ClusterSpec.from_inventory("vpk", VPK)
    _, view = first_view(cluster, [JobSpec(0, 0.0, "resnet50", 256, 1e5, 4)])
    alloc = decide(make_policy("hadar"), cluster, view)  # type: ignore[arg-type]
    ja = alloc.jobs[0]
    fastest = max(cluster.gpu_types, key=lambda t: view.rate(view.job(0), t, 4))
    assert fastest == "p100"  # the table's quirk: ResNet-50, global batch 256 on 4 GPUs (NOTICE.md)
    assert ja.as_dict() == {fastest: 4}
    assert ja.servers is None and ja.mode == "sync"  # counts only: the declared priced placer places them
    placed = make_placer("priced").place(
        cluster,
        np.array([s.num_gpus for s in cluster.servers]),
        [PlacementRequest(0, view.job(0).spec, ja.counts, "sync")],
    )
    assert len(placed[0]) == 1  # one node


# ---------------------------------------------------------------------------------------------
# Prices and the node pool


def test_node_prices_hand_checked() -> None:
    cluster = ClusterSpec.from_inventory("two", {"v100": (2, 4)})
    pool = NodePool(cluster, [0, 2], price_l=1.0, price_u=16.0)
    # P(g) = 16 ** (g / 4) = 2 ** g: the first two GPUs of an empty node cost 1 + 2 = 3.
    assert pool.cost(0, 2) == pytest.approx(3.0)
    assert pool.price(1) == pytest.approx(4.0)
    assert pool.cost(1, 2) == pytest.approx(4.0 + 8.0)
    groups, cost = pool.cheapest([0], 3)  # type: ignore[misc]
    assert groups == [(0, 3)] and cost == pytest.approx(1 + 2 + 4)
    # 6 GPUs: the empty node first (cheapest), then 2 on the half-full node.
    groups, cost = pool.cheapest([0], 6)  # type: ignore[misc]
    assert groups == [(0, 4), (1, 2)] and cost == pytest.approx(15 + 12)
    assert pool.cheapest([0], 7) is None
    pool.take(0, 4)
    assert pool.free_by_type[0] == 2 and pool.free(0) == 0


def test_auto_prices_are_bounded_and_ordered() -> None:
    cluster = ClusterSpec.from_inventory("vpk", VPK)
    jobs = [JobSpec(0, 0.0, "resnet50", 64, 1e5, 1), JobSpec(1, 0.0, "lm", 80, 1e6, 4)]
    _, view = first_view(cluster, jobs)
    pol = make_policy("hadar")
    pol.reset(cluster, rng=np.random.default_rng(0))
    low, high = pol.prices(view)  # type: ignore[attr-defined]
    assert high == pytest.approx(1.0)  # max theta / W over the jobs = 1 / 1
    assert 1e-3 * high <= low <= high


# ---------------------------------------------------------------------------------------------
# The dual subroutine


def test_task_level_mixing_when_no_single_type_has_room() -> None:
    # Two V100 and two P100: a 4-GPU job must span types, and the slowest type bounds its rate.
    cluster = ClusterSpec.from_inventory("vp", {"v100": (1, 2), "p100": (1, 2)})
    sim, view = first_view(cluster, [JobSpec(0, 0.0, "resnet50", 256, 1e5, 4)], restart_penalty_s=0.0)
    alloc = decide(make_policy("hadar"), cluster, view)  # type: ignore[arg-type]
    assert alloc.jobs[0].as_dict() == {"v100": 2, "p100": 2}
    assert alloc.jobs[0].mode == "sync" and alloc.jobs[0].servers is None
    sim.reset(round_s=360.0, placer="priced")
    after = sim.step(alloc)
    assert after is not None
    job = after.job(0)
    assert [(g.server_id, g.num_gpus) for g in job.groups] == [(0, 2), (1, 2)]
    slowest = min(("v100", "p100"), key=lambda t: view.rate(job, t, 4))
    kappa = view.throughput.consolidation_factor("resnet50", 256, slowest, 4)
    assert job.rate_iters_per_s == pytest.approx(view.rate(job, slowest, 4) * kappa)
    none = decide(make_policy("hadar", task_level_mixing=False), cluster, view)  # type: ignore[arg-type]
    assert 0 not in none.jobs  # four GPUs of one type do not exist


# ---------------------------------------------------------------------------------------------
# Greedy admission


def _naive_greedy(pol: Hadar, view: ClusterView, pool: NodePool, fill: bool) -> dict[int, list[tuple[int, int]]]:
    out: dict[int, list[tuple[int, int]]] = {}
    left = list(view.jobs)
    while left:
        offers = [(o, j) for j in left if (o := pol.offer(view, j, pool)) is not None]
        if not offers:
            break
        o, j = max(offers, key=lambda oj: (oj[0].payoff, -oj[1].submit_s, -oj[1].job_id))
        if o.payoff <= 0 and not fill:
            break
        for h, n in o.groups:
            pool.take(h, n)
        out[j.job_id] = o.groups
        left.remove(j)
    return out


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 12), st.booleans())
def test_lazy_greedy_equals_naive_greedy(seed: int, num_jobs: int, fill: bool) -> None:
    rng = np.random.default_rng(seed)
    cluster = ClusterSpec.from_inventory("vpk", {"v100": (2, 4), "p100": (2, 4), "k80": (1, 4)})
    types = [("resnet50", 64), ("recommendation", 2048), ("lm", 20), ("transformer", 64), ("resnet18", 128)]
    jobs = []
    for i in range(num_jobs):
        jt, b = types[int(rng.integers(0, len(types)))]
        n = int(rng.choice([1, 2, 4, 8])) if jt != "recommendation" else 1
        jobs.append(JobSpec(i, 0.0, jt, b * n, float(rng.uniform(1e3, 1e6)), n))
    _, view = first_view(cluster, jobs)
    pol = make_policy("hadar", work_conserving=fill)
    pol.reset(cluster, rng=np.random.default_rng(0))
    assert isinstance(pol, Hadar)
    low, high = pol.prices(view)
    lazy = pol.decide(view)
    naive = _naive_greedy(pol, view, NodePool(cluster, [0] * len(cluster.servers), low, high), fill)
    assert {j: sorted(g) for j, g in lazy.groups.items()} == {j: sorted(g) for j, g in naive.items()}


def test_work_conserving_fill_leaves_no_fitting_job_waiting() -> None:
    jobs = WorkloadConfig(recipe="gavel-philly", num_jobs=60, static=True).build("gavel-108", seed=3)
    sim = Simulator("gavel-108", jobs, config=SimConfig(max_time_s=360.0 * 20))
    pol = make_policy("hadar")
    pol.reset(sim.cluster, rng=np.random.default_rng(0))
    view = sim.reset(round_s=360.0)
    checked = 0
    while view is not None:
        alloc = pol.schedule(view)
        if view.is_tick or view.epoch == 0:
            free = dict(view.cluster.capacity)
            for ja in alloc.jobs.values():
                for t, n in ja.counts:
                    free[t] -= n
            for job in view.jobs:
                if job.job_id in alloc.jobs:
                    continue
                rates = pol.job_rates(view, job)  # type: ignore[attr-defined]
                usable = sum(free[t] for i, t in enumerate(view.cluster.gpu_types) if rates[i] > 0)
                assert usable < job.num_gpus, f"job {job.job_id} waits although {usable} usable GPUs are free"
            checked += 1
        view = sim.step(alloc)
    assert checked >= 10


def test_without_work_conserving_only_positive_payoffs_run() -> None:
    cluster = ClusterSpec.from_inventory("one", {"v100": (1, 4)})
    jobs = [JobSpec(i, 0.0, "resnet50", 64, 1e5, 1) for i in range(4)]
    _, view = first_view(cluster, jobs)
    pol = make_policy("hadar", work_conserving=False, price_auto=False, price_L=0.5, price_U=8.0)
    assert isinstance(pol, Hadar)
    pol.reset(cluster, rng=np.random.default_rng(0))
    decision = pol.decide(view)
    # Marginal prices 0.5, 0.5*16**0.25 = 1.0, 2.0, 4.0; utility <= 1, so at most two jobs pay off
    # (payoff 1 - 0.5 > 0, then u - 1.0 <= 0 stops admission).
    assert len(decision.groups) == 1
    assert all(o.payoff > 0 for o in decision.offers.values())
    pol2 = make_policy("hadar", work_conserving=True, price_auto=False, price_L=0.5, price_U=8.0)
    pol2.reset(cluster, rng=np.random.default_rng(0))
    assert len(pol2.decide(view).groups) == 4  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------
# Utilities and knobs


def test_utilities() -> None:
    cluster = ClusterSpec.from_inventory("vpk", VPK)
    _, view = first_view(cluster, [JobSpec(0, 0.0, "resnet50", 64, 4394.77, 1)])  # T_min = 1000 s on V100
    job = view.job(0)
    inv = make_policy("hadar")
    inv.reset(cluster, rng=np.random.default_rng(0))
    assert inv.t_min_s(view, job) == pytest.approx(1000.0, rel=1e-4)  # type: ignore[attr-defined]
    assert inv.utility_of(view, job, 2000.0) == pytest.approx(0.5, rel=1e-4)  # type: ignore[attr-defined]
    lin = make_policy("hadar", utility="linear", utility_horizon=10.0)
    lin.reset(cluster, rng=np.random.default_rng(0))
    assert lin.utility_of(view, job, 5000.0) == pytest.approx(0.5, rel=1e-4)  # type: ignore[attr-defined]
    sig = make_policy("hadar", utility="sigmoid", sigmoid_slack=2.0)
    sig.reset(cluster, rng=np.random.default_rng(0))
    assert sig.utility_of(view, job, 2000.0) == pytest.approx(0.5, rel=1e-3)  # type: ignore[attr-defined]
    custom = make_policy("hadar", utility=lambda j, t, tmin: math.exp(-t / tmin))
    custom.reset(cluster, rng=np.random.default_rng(0))
    assert custom.utility_of(view, job, 1000.0) == pytest.approx(math.exp(-1), rel=1e-3)  # type: ignore[attr-defined]
    for u in (inv, lin, sig):
        us = [u.utility_of(view, job, t) for t in (1000.0, 3000.0, 9000.0)]  # type: ignore[attr-defined]
        assert us[0] >= us[1] >= us[2]


def test_avg_jct_utility_is_linear_in_the_jct_with_one_horizon_for_all_jobs() -> None:
    cluster = ClusterSpec.from_inventory("vpk", VPK)
    # T_min = 1000 s and 3000 s on V100: H = 10 x 3000 s for both jobs.
    jobs = [JobSpec(0, 0.0, "resnet50", 64, 4394.77, 1), JobSpec(1, 0.0, "resnet50", 64, 3 * 4394.77, 1)]
    _, view = first_view(cluster, jobs)
    pol = make_policy("hadar", utility="avg_jct", utility_horizon=10.0)
    pol.reset(cluster, rng=np.random.default_rng(0))
    assert pol.common_horizon_s(view) == pytest.approx(30_000.0, rel=1e-4)  # type: ignore[attr-defined]
    for job_id in (0, 1):
        job = view.job(job_id)
        assert pol.utility_of(view, job, 6000.0) == pytest.approx(0.8, rel=1e-4)  # type: ignore[attr-defined]
        assert pol.utility_of(view, job, 40_000.0) == 0.0  # type: ignore[attr-defined]


def test_avg_jct_utility_runs_the_short_job_first_and_lowers_the_average_jct() -> None:
    # One GPU, two jobs at t = 0 (1,000 s and 10,000 s alone on it). The relative utility values the long
    # job's start more (the 30 s penalty is a smaller share of it); the average-JCT objective starts the
    # short one: JCTs 1,030 and 11,060 s (mean 6,045 s) against 10,030 and 11,060 s.
    cluster = ClusterSpec.from_inventory("one", {"v100": (1, 1)})
    jobs = [JobSpec(0, 0.0, "resnet50", 64, 4394.77, 1), JobSpec(1, 0.0, "resnet50", 64, 10 * 4394.77, 1)]
    means = {}
    for utility in ("normalized_inverse_jct", "avg_jct"):
        result = Simulator(cluster, jobs).run(make_policy("hadar", utility=utility))
        jct = result.jobs.set_index("job_id")["jct_s"]
        means[utility] = float(jct.mean())
        if utility == "avg_jct":
            assert jct[0] == pytest.approx(1030.0, rel=1e-3)
            assert jct[1] == pytest.approx(11_060.0, rel=1e-3)
    assert means["avg_jct"] == pytest.approx(6045.0, rel=1e-3)
    assert means["normalized_inverse_jct"] == pytest.approx(10_545.0, rel=1e-3)


def test_bad_knobs_raise_clear_errors() -> None:
    with pytest.raises(ValueError, match="utility"):
        make_policy("hadar", utility="quadratic")
    with pytest.raises(ValueError, match="mode"):
        make_policy("hadar", mode="oracle")
    with pytest.raises(ValueError, match="price_L"):
        make_policy("hadar", price_L=2.0, price_U=1.0)


# ---------------------------------------------------------------------------------------------
# Whole runs


@pytest.mark.parametrize(
    "kwargs", [{}, {"mode": "plan"}, {"utility": "linear"}, {"utility": "sigmoid"}, {"utility": "avg_jct"}]
)
def test_completes_a_small_online_workload(kwargs: dict[str, object]) -> None:
    jobs = WorkloadConfig(recipe="gavel-philly", num_jobs=20, arrival_rate_per_h=10.0).build("gavel-108", seed=2)
    result = Simulator("gavel-108", jobs).run(make_policy("hadar", **kwargs))
    assert result.metrics["num_completed"] == 20
    assert not result.stalled


def test_plan_mode_reservations_never_exceed_capacity() -> None:
    jobs = WorkloadConfig(recipe="gavel-philly", num_jobs=40, static=True).build("gavel-108", seed=4)
    sim = Simulator("gavel-108", jobs, config=SimConfig(max_time_s=360.0 * 30))
    pol = make_policy("hadar", mode="plan")
    assert isinstance(pol, Hadar)
    pol.reset(sim.cluster, rng=np.random.default_rng(0))
    view = sim.reset(round_s=360.0)
    cap = np.array([sim.cluster.capacity[t] for t in sim.cluster.gpu_types])
    planned = 0
    while view is not None:
        alloc = pol.schedule(view)
        res = pol._planner.reservations(pol._planner.base, 400)
        assert np.all(res >= 0) and np.all(res <= cap[:, None])
        planned = max(planned, len(pol.plans()))
        view = sim.step(alloc)
    assert planned > 0
