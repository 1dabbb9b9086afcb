"""The opt-in bandwidth communication model: job graphs, rank layout, cut cost and the engine hook."""

from __future__ import annotations

import math

import pytest
from helpers import Scripted
from hypothesis import given, settings
from hypothesis import strategies as st

from hetgym.sim import (
    Allocation,
    ClusterSpec,
    CommModel,
    HetgymError,
    JobAllocation,
    JobSpec,
    SimConfig,
    Simulator,
    ThroughputModel,
    allocation_rate,
    placement_rate,
)
from hetgym.sim.comm import (
    DP_EDGE,
    PP_EDGE,
    TP_EDGE,
    cut_bytes,
    cut_time_s,
    graph_for,
    job_graph,
    layout,
    rank_index,
)
from hetgym.sim.throughput import ServerGroup

GB = 1e9


def test_graph_edges_of_a_mixed_parallel_job() -> None:
    g = job_graph(2, 2, 2)
    assert g.num_ranks == 8
    counts = {k: int((g.kind == k).sum()) for k in (TP_EDGE, PP_EDGE, DP_EDGE)}
    # TP: one pair per (replica, stage); PP: tp edges per replica boundary; DP: one edge per shard (dp = 2).
    assert counts == {TP_EDGE: 4, PP_EDGE: 4, DP_EDGE: 4}
    tp_pairs = {(int(a), int(b)) for a, b, k in zip(g.u, g.v, g.kind, strict=True) if k == TP_EDGE}
    assert (rank_index(1, 1, 0, 2, 2), rank_index(1, 1, 1, 2, 2)) in tp_pairs
    assert rank_index(1, 1, 1, 2, 2) == 7


def test_dp_ring_volume_is_the_ring_allreduce_volume() -> None:
    for n in (2, 3, 4, 8):
        g = job_graph(n)
        w = g.weights(1.0 * GB)
        assert int((g.kind == DP_EDGE).sum()) == (n if n > 2 else 1)
        # Each ring edge carries 2 (n - 1) / n of the model, per direction.
        assert w.max() == pytest.approx(2 * (n - 1) / n * GB)


def test_tp_volume_per_rank_matches_a_ring_allreduce() -> None:
    comm = CommModel(tp_ratio=8.0)
    g = job_graph(1, 1, 4)
    w = g.weights(1.0 * GB, comm)
    v_tp = 8.0 * GB  # tp_ratio * D / (pp * dp)
    per_rank = sum(float(wt) for a, b, wt in zip(g.u, g.v, w, strict=True) if 0 in (a, b))
    assert per_rank == pytest.approx(2 * 3 / 4 * v_tp)


def test_layout_is_contiguous_in_group_order() -> None:
    groups = [ServerGroup(3, "v100", 2), ServerGroup(1, "v100", 1)]
    assert layout(groups).tolist() == [3, 3, 1]


def test_graph_for_a_resized_job() -> None:
    spec = JobSpec(0, 0.0, "a", 1, 10.0, 8, parallelism=(2, 2, 2), model_bytes=GB)
    assert (graph_for(spec).dp, graph_for(spec).pp, graph_for(spec).tp) == (2, 2, 2)
    assert (graph_for(spec, 12).dp, graph_for(spec, 12).tp) == (3, 2)
    assert (graph_for(spec, 6).dp, graph_for(spec, 6).pp, graph_for(spec, 6).tp) == (6, 1, 1)


@pytest.fixture
def four_by_four() -> ClusterSpec:
    return ClusterSpec.from_inventory("4x4", {"v100": (4, 4)})


def test_splitting_a_tp_group_costs_more_than_cutting_dp(four_by_four: ClusterSpec) -> None:
    spec = JobSpec(0, 0.0, "a", 1, 10.0, 4, parallelism=(2, 1, 2), model_bytes=GB)
    whole = [ServerGroup(0, "v100", 2), ServerGroup(1, "v100", 2)]
    split = [ServerGroup(0, "v100", 1), ServerGroup(1, "v100", 3)]
    assert cut_bytes(spec, whole) > 0
    assert cut_bytes(spec, split) > 5 * cut_bytes(spec, whole)
    assert cut_time_s(spec, split, four_by_four) > cut_time_s(spec, whole, four_by_four)
    assert cut_time_s(spec, [ServerGroup(0, "v100", 4)], four_by_four) == 0.0


def test_single_server_rate_is_the_measured_rate(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    spec = JobSpec(0, 0.0, "a", 1, 100.0, 2, model_bytes=GB)
    groups = [ServerGroup(0, "v100", 2)]
    measured = allocation_rate(toy, "a", 1, groups)
    assert placement_rate(toy, two_by_two, CommModel("bandwidth"), spec, groups) == measured
    assert placement_rate(toy, two_by_two, CommModel(), spec, groups) == measured


def _run_on_two_servers(config: SimConfig, spec: JobSpec, toy: ThroughputModel, cluster: ClusterSpec) -> float:
    policy = Scripted(lambda v: Allocation({0: JobAllocation({"v100": 4}, servers={0: 2, 1: 2})}))
    result = Simulator(cluster, [spec], config=config, throughput=toy).run(policy)
    return float(result.jobs.loc[0, "finish_s"])


def test_default_engine_keeps_the_measured_factor(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    spec = JobSpec(0, 0.0, "a", 1, 100.0, 4, model_bytes=GB)
    finish = _run_on_two_servers(SimConfig(restart_penalty_s=0.0), spec, toy, two_by_two)
    # toy: 4 it/s on 4 V100, multi-server factor 0.5 -> 2 it/s.
    assert finish == pytest.approx(50.0)


def test_bandwidth_engine_charges_the_cut_ring_edges(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    spec = JobSpec(0, 0.0, "a", 1, 100.0, 4, model_bytes=GB)
    cfg = SimConfig(restart_penalty_s=0.0, comm="bandwidth")
    finish = _run_on_two_servers(cfg, spec, toy, two_by_two)
    # Ring over ranks [s0, s0, s1, s1]: edges (1,2) and (3,0) are cut, 1.5 GB each per iteration.
    extra_s = 2 * 1.5 * GB * (1 / (12.5 * GB) - 1 / (150.0 * GB))
    assert finish == pytest.approx(100.0 * (0.25 + extra_s))
    # A job without model_bytes keeps the measured model even when the bandwidth model is on.
    plain = JobSpec(0, 0.0, "a", 1, 100.0, 4)
    assert _run_on_two_servers(cfg, plain, toy, two_by_two) == pytest.approx(50.0)


def test_config_accepts_kind_mapping_and_rejects_bad_values() -> None:
    assert SimConfig().comm_model == CommModel()
    assert SimConfig(comm="bandwidth").comm_model.is_bandwidth
    cfg = SimConfig.from_dict({"comm": {"kind": "bandwidth", "aggregation": "nic"}})
    assert cfg.comm_model.aggregation == "nic"
    with pytest.raises(HetgymError, match="kind 'bw' is unknown"):
        SimConfig(comm="bw")
    with pytest.raises(HetgymError, match="unknown"):
        SimConfig(comm={"kind": "bandwidth", "ratio": 2.0})
    with pytest.raises(HetgymError, match="tp_ratio"):
        CommModel(tp_ratio=-1.0)


@settings(max_examples=60, deadline=None)
@given(
    dp=st.integers(1, 4),
    pp=st.integers(1, 3),
    tp=st.sampled_from([1, 2, 4]),
    cuts=st.lists(st.integers(1, 47), max_size=4),
)
def test_nic_aggregation_never_exceeds_the_sum(dp: int, pp: int, tp: int, cuts: list[int]) -> None:
    cluster = ClusterSpec.from_inventory("6x8", {"a100": (6, 8)})
    n = dp * pp * tp
    bounds = sorted({c for c in cuts if c < n})
    sizes = [b - a for a, b in zip([0, *bounds], [*bounds, n], strict=True)]
    groups = [ServerGroup(s, "a100", k) for s, k in enumerate(sizes) if k <= 8]
    if sum(g.num_gpus for g in groups) != n:
        return
    spec = JobSpec(0, 0.0, "gpt2", 128, 10.0, n, parallelism=(dp, pp, tp), model_bytes=GB)
    t_sum = cut_time_s(spec, groups, cluster, CommModel("bandwidth", "sum"))
    t_nic = cut_time_s(spec, groups, cluster, CommModel("bandwidth", "nic"))
    assert 0.0 <= t_nic <= t_sum + 1e-12
    assert (t_sum == 0.0) == (len(groups) == 1 or cut_bytes(spec, groups) == 0.0)
    assert math.isfinite(t_sum)
