"""The shared per-job rate table: the figures match the throughput model, memoised per job, cleared per run."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import toy_model

from hetgym.sim import ClusterSpec, JobSpec, RateTable, SimConfig, Simulator
from hetgym.sim.rates import allowed_types


@pytest.fixture
def cluster() -> ClusterSpec:
    return ClusterSpec.from_inventory("toy", {"v100": (1, 2), "k80": (1, 4)})


def test_rates_allowed_fits_and_best(cluster: ClusterSpec) -> None:
    model = toy_model()
    table = RateTable(cluster, model)
    job = JobSpec(0, 0.0, "a", 1, 100.0, 4)
    r = table.get(job)
    assert r.types == ("v100", "k80") == cluster.gpu_types
    assert r.rates.tolist() == [model.rate("a", 1, t, 4) for t in r.types]
    assert r.allowed.tolist() == [True, True]
    assert r.fits.tolist() == [False, True]  # two V100s in the cluster: a 4-GPU gang does not fit one type
    assert r.fit_rates.tolist() == [0.0, model.rate("a", 1, "k80", 4)]
    assert r.best_rate == max(r.rates.tolist())
    assert r.best_type == "v100" and r.best_index == 0
    np.testing.assert_allclose(r.speed, r.rates / r.best_rate)
    assert r.speed.dtype == np.float32
    assert table.best_rate(job, 2) == max(model.rate("a", 1, t, 2) for t in r.types)
    assert table.rates_at(job, 1).tolist() == [model.rate("a", 1, t, 1) for t in r.types]
    with pytest.raises(ValueError):
        r.rates[0] = 1.0  # read-only: every user shares the arrays


def test_disallowed_types_give_zero(cluster: ClusterSpec) -> None:
    table = RateTable(cluster, toy_model())
    job = JobSpec(1, 0.0, "a", 1, 100.0, 1, gpu_types=("k80",))
    r = table.get(job)
    assert r.allowed.tolist() == [False, True]
    assert r.allowed_types == ("k80",) == allowed_types(cluster.gpu_types, job)
    assert r.rates[0] == 0.0 and r.rate("v100") == 0.0
    assert r.best_type == "k80"
    assert table.rates_at(job, 2)[0] == 0.0


def test_memoised_per_job_and_shared_by_key(cluster: ClusterSpec) -> None:
    table = RateTable(cluster, toy_model())
    a = JobSpec(0, 0.0, "a", 1, 100.0, 2)
    b = JobSpec(1, 5.0, "a", 1, 50.0, 2)
    assert table.get(a) is table.get(a) is table.get(b)  # same type, batch, count and allowed types
    assert len(table) == 2
    table.clear()
    assert len(table) == 0


def test_simulator_shares_its_table_through_views(cluster: ClusterSpec) -> None:
    jobs = [JobSpec(0, 0.0, "a", 1, 100.0, 2), JobSpec(1, 0.0, "b", 1, 100.0, 1)]
    sim = Simulator(cluster, jobs, config=SimConfig(), throughput=toy_model())
    view = sim.reset()
    assert view is not None and view.rate_table is sim.rate_table
    for job in view.jobs:
        assert view.allowed_types(job) == cluster.gpu_types
        assert sim.rate_table.get(job).rates.tolist() == [view.rate(job, t, job.num_gpus) for t in cluster.gpu_types]
    assert len(sim.rate_table) == 2
    sim.reset()
    assert len(sim.rate_table) == 0  # a new run starts from an empty table
