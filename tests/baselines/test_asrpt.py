"""A-SRPT (Luo et al., INFOCOM 2025): a lone job starts at once, virtual SRPT order, TP groups never split,
predictors, both modes."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baselines.asrpt import (
    ASRPT,
    NoisyPredictor,
    OraclePredictor,
    RandomForestPredictor,
    VirtualSRPT,
)
from hetgym.sim import ClusterSpec, JobSpec, Server, SimConfig, Simulator, ThroughputModel, make_policy
from hetgym.sim.comm import cut_bytes, layout
from hetgym.sim.placement import PlacementRequest, comm_aware_place, make_placer, placement_units
from hetgym.sim.throughput import ServerGroup
from hetgym.workloads import recurring

FREE_START = SimConfig(restart_penalty_s=0.0, charge_first_start=False)


def srpt_reference(jobs: list[tuple[float, float]]) -> list[float]:
    """Completion times of preemptive SRPT on one unit-speed machine; ``jobs`` = (release, size)."""
    remaining = {i: size for i, (_, size) in enumerate(jobs)}
    done = [math.nan] * len(jobs)
    t = 0.0
    while remaining:
        released = [i for i in remaining if jobs[i][0] <= t + 1e-12]
        future = [jobs[i][0] for i in remaining if jobs[i][0] > t + 1e-12]
        if not released:
            t = min(future)
            continue
        i = min(released, key=lambda j: (remaining[j], jobs[j][0], j))
        horizon = min([t + remaining[i], *future])
        remaining[i] -= horizon - t
        t = horizon
        if remaining[i] <= 1e-9:
            done[i] = t
            del remaining[i]
    return done


ONE_GPU = ClusterSpec("one-gpu", (Server(0, "v100", 1),))
SRPT_JOBS = [(0.0, 500.0), (100.0, 120.0), (150.0, 40.0), (400.0, 900.0), (420.0, 10.0), (1000.0, 60.0)]


def one_gpu_jobs(pairs: list[tuple[float, float]]) -> list[JobSpec]:
    # Toy type "a": 1 it/s on one V100, so a job's size in seconds is its iteration count.
    return [JobSpec(i, release, "a", 1, size, 1) for i, (release, size) in enumerate(pairs)]


def test_virtual_machine_is_preemptive_srpt() -> None:
    rng = np.random.default_rng(5)
    pairs = [(float(r), float(s)) for r, s in zip(np.sort(rng.uniform(0, 50, 12)), rng.uniform(1, 30, 12), strict=True)]
    vm = VirtualSRPT()
    for i, (release, size) in enumerate(pairs):
        vm.advance(release)
        vm.add(i, size, release)
    vm.advance(1e9)
    expected = srpt_reference(pairs)
    assert [vm.completed_at[i] for i in range(len(pairs))] == pytest.approx(expected)


def test_mode_b_with_oracle_is_srpt_on_one_machine(toy: ThroughputModel) -> None:
    policy = ASRPT(mode="preemptive", predictor="oracle", min_run_s=0.0)
    result = Simulator(ONE_GPU, one_gpu_jobs(SRPT_JOBS), config=FREE_START, throughput=toy).run(policy)
    expected = srpt_reference(SRPT_JOBS)
    finish = result.jobs.set_index("job_id")["finish_s"]
    assert [finish[i] for i in range(len(SRPT_JOBS))] == pytest.approx(expected)
    assert list(finish.sort_values().index) == sorted(range(len(SRPT_JOBS)), key=lambda i: expected[i])
    optimum = float(np.mean([c - r for c, (r, _) in zip(expected, SRPT_JOBS, strict=True)]))
    assert result.metrics["jct_mean_s"] == pytest.approx(optimum)


@pytest.mark.parametrize("mode", ["guided", "preemptive"])
def test_static_batch_runs_shortest_first_at_the_optimum(mode: str, toy: ThroughputModel) -> None:
    sizes = [300.0, 50.0, 700.0, 20.0, 150.0]
    policy = ASRPT(mode=mode, predictor="oracle", min_run_s=0.0)  # type: ignore[arg-type]
    result = Simulator(ONE_GPU, one_gpu_jobs([(0.0, s) for s in sizes]), config=FREE_START, throughput=toy).run(policy)
    order = list(result.jobs.sort_values("finish_s")["job_id"])
    assert order == sorted(range(len(sizes)), key=lambda i: sizes[i])
    spt = np.cumsum(sorted(sizes))
    assert result.metrics["jct_mean_s"] == pytest.approx(float(spt.mean()))
    assert result.metrics["num_reconfigs"] == 0


def test_without_early_release_a_job_waits_for_its_virtual_completion(toy: ThroughputModel) -> None:
    policy = ASRPT(predictor="oracle", early_release=False)
    result = Simulator(ONE_GPU, one_gpu_jobs(SRPT_JOBS), config=FREE_START, throughput=toy).run(policy)
    virtual = srpt_reference(SRPT_JOBS)  # the virtual machine runs at the cluster's speed here
    start = result.jobs.set_index("job_id")["start_s"]
    assert all(start[i] >= virtual[i] - 1e-6 for i in range(len(SRPT_JOBS)))
    assert result.metrics["num_completed"] == len(SRPT_JOBS)


def test_a_single_job_starts_at_once_on_the_fewest_servers() -> None:
    cluster = ClusterSpec.from_inventory("a100-4x8", {"a100": (4, 8)})
    spec = JobSpec(0, 5.0, "gpt2", 128, 500.0, 16, parallelism=(1, 2, 8), model_bytes=5e8)
    view = Simulator(cluster, [spec], config=SimConfig(comm="bandwidth")).reset()
    assert view is not None
    policy = make_policy("asrpt", predictor="oracle")
    policy.reset(cluster, rng=np.random.default_rng(0))
    ja = policy.schedule(view).jobs[0]
    assert ja.total_gpus == 16 and ja.servers is None  # counts only: the declared placer chooses servers
    assert policy.placer == "comm-aware"
    free = np.array([s.num_gpus for s in cluster.servers])
    placed = make_placer(policy.placer).place(cluster, free, [PlacementRequest(0, spec, ja.counts, ja.mode)])
    assert [g.num_gpus for g in placed[0]] == [8, 8]


# --------------------------------------------------------------------------------------------
# Placement: TP groups kept whole, no inter-server cut for a job that fits one server

EIGHT_BY_SIX = ClusterSpec.from_inventory("a100-6x8", {"a100": (6, 8)})


@settings(max_examples=300, deadline=None)
@given(
    free=st.lists(st.integers(0, 8), min_size=6, max_size=6),
    tp=st.sampled_from([1, 2, 4, 8]),
    pp=st.sampled_from([1, 2, 4]),
    dp=st.integers(1, 6),
)
def test_tp_groups_are_never_split_and_servers_are_fewest(free: list[int], tp: int, pp: int, dp: int) -> None:
    g = dp * pp * tp
    spec = JobSpec(0, 0.0, "gpt2", 128, 10.0, g, parallelism=(dp, pp, tp), model_bytes=1e9)
    free_arr = np.array(free, dtype=np.int64)
    groups = comm_aware_place(spec, free_arr, EIGHT_BY_SIX, ["a100"])
    assert free_arr.tolist() == free  # not modified
    usable = sorted(((f // tp) * tp for f in free), reverse=True)
    if groups is None:
        assert sum(usable) < g  # no placement keeps every TP group whole
        return
    assert sum(gr.num_gpus for gr in groups) == g
    assert all(gr.num_gpus <= free[gr.server_id] for gr in groups)
    server_of_rank = layout(groups)
    for first in range(0, g, tp):
        assert len(set(server_of_rank[first : first + tp].tolist())) == 1
    if max(free) >= g:
        assert len(groups) == 1 and cut_bytes(spec, groups) == 0.0
    else:
        fewest = next(k for k in range(1, 7) if sum(usable[:k]) >= g)
        assert len(groups) == fewest


def test_pipeline_replicas_stay_whole_when_that_costs_no_extra_server() -> None:
    spec = JobSpec(0, 0.0, "gpt2", 128, 10.0, 16, parallelism=(2, 4, 2), model_bytes=1e9)
    assert placement_units(spec, 8) == (8, 2)
    groups = comm_aware_place(spec, np.array([8, 6, 8, 2, 0, 0]), EIGHT_BY_SIX, ["a100"])
    assert groups is not None and sorted(g.num_gpus for g in groups) == [8, 8]
    server_of_rank = layout(groups)
    assert len(set(server_of_rank[:8].tolist())) == 1 and len(set(server_of_rank[8:].tolist())) == 1
    # Whole replicas: only the DP ring crosses servers, less than a layout that cuts through a pipeline.
    split = [ServerGroup(1, "a100", 6), ServerGroup(2, "a100", 8), ServerGroup(3, "a100", 2)]
    assert cut_bytes(spec, groups) < cut_bytes(spec, split)


def test_a_job_larger_than_any_type_pools_the_types() -> None:
    cluster = ClusterSpec.from_inventory("mix", {"v100": (2, 4), "k80": (2, 4)})
    spec = JobSpec(0, 0.0, "resnet50", 256, 10.0, 12, parallelism=(3, 1, 4), model_bytes=1e8)
    groups = comm_aware_place(spec, np.array([4, 4, 4, 2]), cluster, ["v100", "k80"])
    assert groups is not None and sum(g.num_gpus for g in groups) == 12
    assert {g.gpu_type for g in groups} == {"v100", "k80"} and all(g.num_gpus == 4 for g in groups)
    assert comm_aware_place(spec, np.array([4, 4, 2, 2]), cluster, ["v100", "k80"]) is None


def test_mode_b_preempts_a_lower_ranked_job_for_a_wide_one(toy: ThroughputModel) -> None:
    cluster = ClusterSpec.from_inventory("2x2", {"v100": (2, 2)})
    # A long 1-GPU job on each server, then a short 4-GPU job that needs both servers.
    jobs = [JobSpec(0, 0.0, "a", 1, 5000.0, 1), JobSpec(1, 0.0, "a", 1, 6000.0, 1), JobSpec(2, 10.0, "a", 1, 40.0, 4)]
    policy = ASRPT(mode="preemptive", predictor="oracle", min_run_s=0.0)
    result = Simulator(cluster, jobs, config=FREE_START, throughput=toy).run(policy)
    finish = result.jobs.set_index("job_id")["finish_s"]
    # 4 V100 on two servers: 4 it/s times the toy model's multi-server factor 0.5, no penalty.
    assert finish[2] == pytest.approx(10.0 + 40.0 / 2.0)
    assert result.metrics["num_reconfigs"] >= 2


def test_policy_keeps_tp_groups_whole_in_every_decision() -> None:
    cluster = ClusterSpec.from_inventory("a100-4x8", {"a100": (4, 8)})
    jobs = list(recurring(60, seed=2, cluster=cluster, max_gpus_per_job=16))
    policy = make_policy("asrpt", predictor="rf", history=jobs[:30])
    original = policy.schedule
    checked = 0

    def checking(view):  # type: ignore[no-untyped-def]
        # The servers are the simulator's comm-aware placer's: check every running job's layout.
        nonlocal checked
        for job in view.running:
            tp = job.spec.parallelism[2]
            ranks = np.repeat([g.server_id for g in job.groups], [g.num_gpus for g in job.groups])
            for first in range(0, job.spec.num_gpus, tp):
                assert len(set(ranks[first : first + tp].tolist())) == 1
            checked += 1
        return original(view)

    policy.schedule = checking  # type: ignore[method-assign]
    result = Simulator(cluster, jobs[30:], config=SimConfig(comm="bandwidth")).run(policy)
    assert result.metrics["num_completed"] == 30
    assert result.metrics["num_reconfigs"] == 0  # mode A never preempts
    assert checked > 0


# --------------------------------------------------------------------------------------------
# Predictors


@pytest.fixture(scope="module")
def trace():  # type: ignore[no-untyped-def]
    return list(recurring(500, seed=11))


def _median_abs_log_error(pred: list[float], jobs: list[JobSpec]) -> float:
    return float(np.median([abs(math.log(p / j.total_iters)) for p, j in zip(pred, jobs, strict=True)]))


def test_random_forest_beats_the_global_median_on_held_out_recurring_jobs(trace) -> None:  # type: ignore[no-untyped-def]
    history, held_out = trace[:350], trace[350:]
    recurring_jobs = [j for j in held_out if j.template_id.startswith("t")]
    for unseen in ("median", "rf"):
        rf = RandomForestPredictor(unseen=unseen)  # type: ignore[arg-type]
        rf.fit(history)
        err = _median_abs_log_error(rf.predict_many(recurring_jobs), recurring_jobs)
        median = float(np.median([j.total_iters for j in history]))
        baseline = _median_abs_log_error([median] * len(recurring_jobs), recurring_jobs)
        assert err < 0.5 * baseline
        assert err < 0.6  # recurrences are log-normal with sigma 0.2-0.5 around their template


def test_forest_prediction_equals_sklearn_and_ignores_the_true_count(trace) -> None:  # type: ignore[no-untyped-def]
    rf = RandomForestPredictor(unseen="rf")
    rf.fit(trace[:200])
    job = trace[250]
    assert rf.predict(dataclasses.replace(job, total_iters=1.0)) == rf.predict(job)
    row = np.array([rf._row(job, rf._history_stats(job), grow=False)])
    assert rf._model is not None
    assert math.log(rf.predict(job)) == pytest.approx(float(rf._model.predict(row)[0]), rel=1e-6)


def test_refit_schedule_and_fallbacks(trace) -> None:  # type: ignore[no-untyped-def]
    rf = RandomForestPredictor(refit_every=5, min_train=10, prior_iters=123.0)
    assert rf.predict(trace[0]) == 123.0  # nothing learned yet
    for job in trace[:9]:
        rf.observe(job, job.total_iters)
    assert rf.num_fits == 0
    unseen = dataclasses.replace(trace[0], template_id="never-seen", user="nobody")
    assert rf.predict(unseen) == pytest.approx(float(np.exp(np.median(np.log([j.total_iters for j in trace[:9]])))))
    rf.observe(trace[9], trace[9].total_iters)
    assert rf.num_fits == 1
    for job in trace[10:15]:
        rf.observe(job, job.total_iters)
    assert rf.num_fits == 2
    assert rf.predict(unseen) == pytest.approx(rf.median_iters())


def test_oracle_and_noisy_predictors(trace) -> None:  # type: ignore[no-untyped-def]
    assert OraclePredictor().predict(trace[3]) == trace[3].total_iters
    noisy = NoisyPredictor(sigma=0.4, seed=1)
    ratios = np.log([noisy.predict(j) / j.total_iters for j in trace])
    assert ratios.std() == pytest.approx(0.4, rel=0.15)
    assert noisy.predict(trace[7]) == noisy.predict(trace[7])  # one draw per job


def test_predicted_srtf_with_the_oracle_is_srtf() -> None:
    cluster = ClusterSpec.from_inventory("a100-4x8", {"a100": (4, 8)})
    jobs = list(recurring(40, seed=5, cluster=cluster, max_gpus_per_job=8))
    a = Simulator(cluster, jobs).run(make_policy("srtf-pred", predictor="oracle"))
    b = Simulator(cluster, jobs).run(make_policy("srtf"))
    assert a.metrics["jct_mean_s"] == pytest.approx(b.metrics["jct_mean_s"])


@pytest.mark.parametrize("placement", ["comm_aware", "default", "random"])
@pytest.mark.parametrize("mode", ["guided", "preemptive"])
def test_both_modes_and_placements_complete_a_recurring_workload(mode: str, placement: str) -> None:
    cluster = ClusterSpec.from_inventory("a100-4x8", {"a100": (4, 8)})
    jobs = list(recurring(30, seed=9, cluster=cluster, max_gpus_per_job=16))
    policy = make_policy("asrpt", mode=mode, placement=placement, predictor="noisy", predictor_params={"sigma": 0.3})
    result = Simulator(cluster, jobs, config=SimConfig(comm="bandwidth")).run(policy)
    assert result.metrics["num_completed"] == 30
    if mode == "guided":
        assert result.metrics["num_reconfigs"] == 0


def test_bad_knobs_are_named() -> None:
    with pytest.raises(ValueError, match="mode="):
        ASRPT(mode="fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="placement="):
        ASRPT(placement="spread")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown predictor"):
        ASRPT(predictor="gbm")


def test_loading_the_policies_leaves_scikit_learn_unimported() -> None:
    """scikit-learn takes about a second to import: only A-SRPT's forest, on its first fit, needs it."""
    code = (
        "import sys; from hetgym.sim import list_policies, make_policy; "
        "[make_policy(n) for n in list_policies()]; print('sklearn' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False"
