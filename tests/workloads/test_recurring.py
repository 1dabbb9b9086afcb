"""The recurring mixed-parallel workload generator: seeding, structure, schema round trip, load, errors."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hetgym.sim.comm import NOMINAL_MODEL_BYTES
from hetgym.workloads import Load, WorkloadConfig, get_scenario, read_trace, recurring, write_trace


@pytest.fixture(scope="module")
def workload():  # type: ignore[no-untyped-def]
    return recurring(400, seed=3)


def test_same_seed_same_jobs_other_seed_other_jobs(workload) -> None:  # type: ignore[no-untyped-def]
    again = recurring(400, seed=3)
    pd.testing.assert_frame_equal(workload.to_frame(), again.to_frame())
    other = recurring(400, seed=4)
    assert not workload.to_frame()["total_iters"].equals(other.to_frame()["total_iters"])


def test_jobs_carry_parallelism_model_size_and_template(workload) -> None:  # type: ignore[no-untyped-def]
    kinds = set()
    for job in workload:
        dp, pp, tp = job.parallelism
        assert dp * pp * tp == job.num_gpus
        assert job.num_gpus in (1, 2, 4, 8, 16, 32)
        assert job.model_bytes == NOMINAL_MODEL_BYTES[job.job_type]
        assert job.template_id is not None and job.user is not None
        assert set(job.features) == {"dataset", "dataset_samples", "lr", "optimizer"}
        kinds.add("tp" if tp > 1 else "pp" if pp > 1 else "dp" if dp > 1 else "single")
    assert kinds == {"single", "dp", "pp", "tp"}  # DP-only, DPxPP and DPxPPxTP all occur


def test_recurring_jobs_vary_around_their_template(workload) -> None:  # type: ignore[no-untyped-def]
    frame = workload.to_frame()
    one_off = frame["template_id"].str.startswith("o")
    assert one_off.mean() == pytest.approx(0.4, abs=0.08)  # recurring_fraction 0.6
    assert frame.loc[one_off, "template_id"].is_unique
    logs = np.log(frame.loc[~one_off, "total_iters"])
    by_template = logs.groupby(frame.loc[~one_off, "template_id"])
    spread = by_template.std().dropna()[by_template.size() >= 8]
    assert len(spread) >= 3
    assert spread.between(0.1, 0.7).all()  # per-template sigma in U(0.2, 0.5)
    # Templates differ far more than recurrences of one template do.
    assert by_template.mean().std() > 2 * spread.mean()
    # Configuration is fixed per template.
    config = frame.loc[~one_off].groupby("template_id")[["job_type", "batch_size", "dp", "pp", "tp", "user"]].nunique()
    assert (config == 1).all().all()


def test_schema_round_trip(tmp_path: Path, workload) -> None:  # type: ignore[no-untyped-def]
    for suffix in (".csv", ".parquet"):
        path = write_trace(workload, tmp_path / f"recurring{suffix}")
        back = read_trace(path)
        assert back.metadata["generator"] == "recurring"
        for a, b in zip(workload, back, strict=True):
            assert (a.job_id, a.parallelism, a.model_bytes, a.template_id, a.user) == (
                b.job_id,
                b.parallelism,
                b.model_bytes,
                b.template_id,
                b.user,
            )
            assert a.total_iters == pytest.approx(b.total_iters, rel=1e-9)
            assert {k: str(v) for k, v in a.features.items()} == {k: str(v) for k, v in b.features.items()}


def test_load_knobs() -> None:
    by_rate = recurring(300, seed=1, load=Load(arrival_rate_per_h=30.0))
    gaps = np.diff([j.submit_s for j in by_rate])
    assert 3600.0 / gaps.mean() == pytest.approx(30.0, rel=0.2)
    static = recurring(20, seed=1, load=Load(static=True))
    assert all(j.submit_s == 0.0 for j in static)
    low = recurring(300, seed=1, load=Load(target_utilisation=0.3))
    high = recurring(300, seed=1, load=Load(target_utilisation=0.9))
    assert high.metadata["arrival_rate_per_h"] == pytest.approx(3 * low.metadata["arrival_rate_per_h"])
    capped = recurring(200, seed=2, max_gpus_per_job=4)
    assert max(j.num_gpus for j in capped) <= 4


def test_registered_as_recipe_and_scenario() -> None:
    jobs = WorkloadConfig(recipe="recurring", num_jobs=15).build("a100-128", seed=0)
    assert len(jobs) == 15 and jobs.metadata["generator"] == "recurring"
    scenario = get_scenario("recurring")
    assert scenario.sim.comm_model.is_bandwidth
    assert scenario.cluster_spec().capacity == {"a100": 128}
    assert all(math.isinf(j.deadline_s) for j in jobs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_jobs": 0}, "num_jobs"),
        ({"recurring_fraction": 1.5}, "recurring_fraction"),
        ({"num_templates": 0}, "num_templates"),
        ({"sigma_range": (0.5, 0.2)}, "sigma_range"),
        ({"zipf_s": -1.0}, "zipf_s"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict, match: str) -> None:  # type: ignore[type-arg]
    args = {"num_jobs": 10, **kwargs}
    with pytest.raises(ValueError, match=match):
        recurring(**args)
