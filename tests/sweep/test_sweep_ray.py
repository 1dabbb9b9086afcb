"""The Ray backend on a local Ray instance with 2 CPUs: same results as in-process, resume, failures recorded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from hetgym.sweep import NONDETERMINISTIC_COLUMNS, ResultsStore, SweepSpec, init_ray, load_results, run_sweep

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'hetgym[ray]'); the Ray backend is optional")

FLAKY = str(Path(__file__).with_name("sweep_policies.py"))
GRID: dict[str, Any] = {
    "name": "ray-grid",
    "policies": ["fifo", "srtf", {"name": "sweep-test-flaky", "grid": {"fail": [False, True]}}],
    "scenarios": ["tiny"],
    "loads": [0.5, 0.9],
    "seeds": [0, 1],
    "workload": {"num_jobs": 8},
    "imports": [FLAKY],
}


@pytest.fixture(scope="module")
def ray_session() -> Iterator[None]:
    started = init_ray(num_cpus=2)
    yield
    if started:
        ray.shutdown()


def deterministic(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns=[c for c in NONDETERMINISTIC_COLUMNS if c in df.columns]).set_index("run_id").sort_index()


class Interrupt(Exception):
    pass


@pytest.mark.slow  # about 45 s with Ray's start-up; the slow run (.ci/run) keeps it
def test_ray_backend_resumes_records_failures_and_matches_sequential(ray_session: None, tmp_path: Path) -> None:
    spec = SweepSpec.from_dict(GRID)
    seen: list[str] = []

    def stop_after_five(row: dict[str, Any]) -> None:
        seen.append(row["run_id"])
        if len(seen) == 5:
            raise Interrupt

    with pytest.raises(Interrupt):
        run_sweep(spec, tmp_path / "ray", backend="ray", workers=2, on_result=stop_after_five)
    assert set(ResultsStore(tmp_path / "ray").finished()) == set(seen)
    assert ray.is_initialized()  # a Ray session this sweep did not start is left running

    outcome = run_sweep(spec, tmp_path / "ray", backend="ray", workers=2)
    assert (outcome.total, outcome.skipped, outcome.ran) == (16, 5, 11)
    assert outcome.failed == 4  # the fail=true variant, 2 loads x 2 seeds
    on_ray = load_results(tmp_path / "ray")
    failed = on_ray[on_ray["status"] == "failed"]
    assert set(failed["policy"]) == {"sweep-test-flaky[fail=true]"}
    assert failed["error"].str.contains("deliberate failure").all()
    assert failed["traceback"].str.contains("in schedule").all()
    assert on_ray.loc[on_ray["status"] == "ok", "worker"].nunique() >= 1

    run_sweep(spec, tmp_path / "seq", backend="sequential")
    in_process = load_results(tmp_path / "seq")
    pd.testing.assert_frame_equal(deterministic(on_ray), deterministic(in_process))
