"""The sample traces in ``traces/`` are canonical, reproducible from the project's generators, and run."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script

from hetgym.sim import Simulator, ThroughputModel, make_policy
from hetgym.workloads.schema import read_trace

ROOT = Path(__file__).resolve().parents[2]


SCRIPT = load_script("make_sample_traces")


@pytest.mark.parametrize("name", sorted(SCRIPT.SAMPLES))
def test_sample_trace_matches_its_generator_and_runs(name: str) -> None:
    path = ROOT / "traces" / name
    stored = read_trace(path, throughput=ThroughputModel.default())
    fresh, meta = SCRIPT.build(name)
    assert len(stored) == len(fresh)
    for a, b in zip(stored, fresh, strict=True):
        assert (a.job_id, a.job_type, a.batch_size, a.num_gpus, a.max_gpus) == (
            b.job_id,
            b.job_type,
            b.batch_size,
            b.num_gpus,
            b.max_gpus,
        )
        assert (a.submit_s, a.total_iters, a.deadline_s, a.duration_s) == pytest.approx(
            (b.submit_s, b.total_iters, b.deadline_s, b.duration_s), rel=1e-9
        )
    assert stored.metadata["generator"] == fresh.metadata["generator"]
    assert stored.metadata["description"] == meta["description"]
    cluster = SCRIPT.SAMPLES[name][0]
    result = Simulator(cluster, stored).run(make_policy("edf"))
    assert result.metrics["num_completed"] == len(stored)


def test_readme_lists_every_sample() -> None:
    text = (ROOT / "traces" / "README.md").read_text()
    for name in SCRIPT.SAMPLES:
        assert name in text
