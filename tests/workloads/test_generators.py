"""The Gavel-Philly and ElasticFlow generators: seeding, the recipes' distributions, load, deadlines."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hetgym.sim import ClusterSpec, ThroughputModel, get_cluster
from hetgym.workloads import (
    ElasticFlowDeadline,
    GavelSLODeadline,
    Load,
    NoDeadline,
    WorkloadConfig,
    elasticflow,
    gavel_philly,
    get_scenario,
    make_deadline_model,
)
from hetgym.workloads.generators import ELASTICFLOW_MODELS, GAVEL_TEMPLATES, mean_rate


def test_same_seed_same_workload_and_different_seeds_differ() -> None:
    assert list(elasticflow(50, seed=1)) == list(elasticflow(50, seed=1))
    assert list(elasticflow(50, seed=1)) != list(elasticflow(50, seed=2))
    assert list(gavel_philly(50, seed=1)) == list(gavel_philly(50, seed=1))


def test_streams_are_independent_of_the_load() -> None:
    # Changing the load changes arrival times only; the jobs themselves stay the same.
    a = elasticflow(40, seed=5, load=Load(arrival_rate_per_h=2.0))
    b = elasticflow(40, seed=5, load=Load(arrival_rate_per_h=8.0))
    assert [(j.job_type, j.num_gpus, j.total_iters) for j in a] == [(j.job_type, j.num_gpus, j.total_iters) for j in b]
    assert b[-1].submit_s == pytest.approx(a[-1].submit_s / 4)


def test_gavel_recipe_distributions() -> None:
    w = gavel_philly(4000, seed=0)
    gpus = np.array([j.num_gpus for j in w])
    assert set(gpus) <= {1, 2, 4, 8}
    # Single-GPU-only templates (recommendation, a3c, cyclegan) keep 1 GPU; the others follow Philly.
    multi = np.array([j.num_gpus for j in w if j.job_type not in ("recommendation", "a3c", "cyclegan")])
    assert np.mean(multi == 1) == pytest.approx(0.7, abs=0.03)
    assert np.mean(multi == 8) == pytest.approx(0.05, abs=0.015)
    dur = np.array([j.duration_s for j in w])
    assert dur.min() >= 60 * 10**1.5 and dur.max() <= 60 * 10**4
    assert np.mean(dur > 60 * 10**3) == pytest.approx(0.2, abs=0.03)
    # Work = duration x the V100 rate at the job's GPU count and global batch.
    model = ThroughputModel.default()
    for j in list(w)[:50]:
        assert j.total_iters == pytest.approx(j.duration_s * model.rate(j.job_type, j.batch_size, "v100", j.num_gpus))
    templates = {(jt, b) for jt, b, _ in GAVEL_TEMPLATES}
    assert all((j.job_type, j.batch_size // j.num_gpus) in templates for j in w)
    assert all(math.isinf(j.deadline_s) for j in w)


def test_elasticflow_recipe_distributions_and_deadlines() -> None:
    w = elasticflow(4000, seed=0, load=Load(arrival_rate_per_h=10.0))
    gpus = np.array([j.num_gpus for j in w])
    assert np.mean(gpus == 1) == pytest.approx(0.83, abs=0.02)
    assert np.mean(gpus == 8) == pytest.approx(0.10, abs=0.015)
    assert {j.job_type for j in w} == set(ELASTICFLOW_MODELS)
    ratio = np.array([(j.deadline_s - j.submit_s) / j.duration_s for j in w])
    assert ratio.min() >= 0.5 and ratio.max() <= 1.5 and np.mean(ratio) == pytest.approx(1.0, abs=0.02)
    gaps = np.diff([j.submit_s for j in w])
    assert np.mean(gaps) == pytest.approx(360.0, rel=0.06)  # 10 per hour


def test_target_utilisation_sets_the_rate_from_offered_gpu_time() -> None:
    cluster = get_cluster("default")
    w = elasticflow(500, seed=0, cluster=cluster, load=Load(target_utilisation=0.5))
    model = ThroughputModel.default()
    gpu_s = [j.num_gpus * j.total_iters / mean_rate(model, cluster, j.job_type, j.batch_size, j.num_gpus) for j in w]
    rate_per_s = w.metadata["arrival_rate_per_h"] / 3600
    assert rate_per_s * np.mean(gpu_s) == pytest.approx(0.5 * cluster.total_gpus)


def test_static_load_submits_everything_at_zero() -> None:
    assert all(j.submit_s == 0 for j in gavel_philly(20, load=Load(static=True)))


def test_deadline_models_and_tightness() -> None:
    rng = np.random.default_rng(0)
    submit, duration = np.zeros(1000), np.full(1000, 100.0)
    loose = ElasticFlowDeadline()(rng, submit, duration)
    tight = ElasticFlowDeadline(tightness=2.0)(np.random.default_rng(0), submit, duration)
    assert np.allclose(tight, loose / 2)
    slo = GavelSLODeadline()(rng, submit, duration)
    assert set(np.round(slo / 100, 6)) == {1.2, 2.0, 10.0}
    assert np.isinf(NoDeadline()(rng, submit, duration)).all()
    with pytest.raises(KeyError, match="did you mean 'gavel-slo'"):
        make_deadline_model("gavel_slo")
    with pytest.raises(ValueError, match="tightness"):
        ElasticFlowDeadline(tightness=0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"arrival_rate_per_h": 1.0, "target_utilisation": 0.5}, "exactly one"),
        ({}, "exactly one"),
        ({"arrival_rate_per_h": -1.0}, "arrival_rate_per_h=-1.0 is out of range; give a finite number > 0"),
        ({"static": True, "arrival_rate_per_h": 1.0}, "static"),
    ],
)
def test_load_validation(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Load(**kwargs)  # type: ignore[arg-type]


def test_workload_config_rejects_unknown_keys_with_a_suggestion() -> None:
    with pytest.raises(KeyError, match="did you mean 'num_jobs'"):
        WorkloadConfig.from_dict({"num_job": 5})
    with pytest.raises(KeyError, match="did you mean 'elasticflow'"):
        WorkloadConfig(recipe="elasticflw")


def test_embedded_scenarios_build() -> None:
    for name in ("default", "tiny", "gavel", "gavel-static"):
        sc = get_scenario(name)
        w = sc.workload.build(sc.cluster, seed=0)
        assert len(w) == sc.workload.num_jobs
    with pytest.raises(KeyError, match="did you mean 'default'"):
        get_scenario("defaul")


def test_scenario_overrides() -> None:
    sc = get_scenario("default").with_overrides(cluster="tiny", workload={"num_jobs": 5}, sim={"round_s": 60.0})
    assert sc.cluster == "tiny" and sc.workload.num_jobs == 5 and sc.sim.round_s == 60.0
    with pytest.raises(KeyError, match="did you mean 'round_s'"):
        get_scenario("default").with_overrides(sim={"round": 60.0})


def test_durations_refer_to_the_recipes_gpu_or_the_clusters_fastest() -> None:
    model = ThroughputModel.default()
    on_default = elasticflow(20, seed=0, cluster="default")
    assert on_default.metadata["params"]["reference_gpu"] == "a100"
    on_tiny = elasticflow(20, seed=0, cluster="tiny")  # no A100: durations refer to its V100s
    assert on_tiny.metadata["params"]["reference_gpu"] == "v100"
    for j in on_tiny:
        assert j.total_iters == pytest.approx(j.duration_s * model.rate(j.job_type, j.batch_size, "v100", j.num_gpus))
    assert gavel_philly(5, seed=0, cluster="large").metadata["params"]["reference_gpu"] == "v100"
    assert gavel_philly(5, seed=0, cluster="tiny").metadata["params"]["reference_gpu"] == "v100"


def test_one_call_with_an_array_of_bounds_draws_as_a_call_per_bound() -> None:
    # elasticflow draws every job's batch size in one call; the per-job calls it replaced took the same draws.
    for seed in range(200):
        highs = [1 + (seed + i) % 3 for i in range(1 + seed % 130)]
        one_by_one, at_once = np.random.default_rng(seed), np.random.default_rng(seed)
        expected = [int(one_by_one.integers(0, h)) for h in highs]
        assert at_once.integers(0, np.array(highs, dtype=np.int64)).tolist() == expected
        assert at_once.random() == one_by_one.random()  # and the stream goes on from the same state


def test_shared_rate_memo_returns_the_uncached_values_per_model_and_cluster() -> None:
    from hetgym.workloads.generators import _rates_for

    tp = ThroughputModel.default()
    tiny, default = get_cluster("tiny"), get_cluster("default")
    rates = _rates_for(tp, tiny)
    assert _rates_for(tp, tiny) is rates
    assert _rates_for(tp, default) is not rates
    assert _rates_for(ThroughputModel(full_precision=True), tiny) is not rates
    for jt, b, g in (("resnet50", 64, 1), ("bert", 32, 4), ("gpt2", 8, 2)):
        for cluster in (tiny, default):
            memo = _rates_for(tp, cluster)
            assert memo.mean(jt, b, g) == mean_rate(tp, cluster, jt, b, g)
            assert memo.mean(jt, b, g) == mean_rate(tp, cluster, jt, b, g)  # from the memo
        assert rates.rate(jt, b, "v100", g) == tp.rate(jt, b, "v100", g)
    # A cluster equal to a preset but another object has its own memo, with the same values.
    twin = ClusterSpec.from_inventory("tiny", {"v100": (2, 2), "k80": (2, 2)})
    assert _rates_for(tp, twin) is not rates
    assert _rates_for(tp, twin).mean("bert", 32, 4) == rates.mean("bert", 32, 4)
