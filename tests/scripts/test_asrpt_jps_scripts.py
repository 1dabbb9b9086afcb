"""Smoke tests of the A-SRPT/JPS reproduction script and the JPS benchmark (tiny settings)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from helpers import load_script


@pytest.mark.slow
def test_reproduce_quick_writes_every_table_and_figure(tmp_path: Path) -> None:
    script = load_script("reproduce/reproduce_asrpt_jps")
    assert script.main(["--quick", "--out", str(tmp_path), "--workers", "1"]) == 0
    for name in ("predictor.csv", "asrpt_runs.csv", "asrpt_summary.csv", "jps_gap.csv", "jps_runtime.csv"):
        assert (tmp_path / name).stat().st_size > 0
    for name in ("asrpt_jct.png", "jps_gap.png", "jps_runtime.png"):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"
    runs = pd.read_csv(tmp_path / "asrpt_runs.csv")
    assert set(runs["policy"]) == set(script.ASRPT_LABELS)
    assert (runs["num_completed"] > 0).all()
    gaps = pd.read_csv(tmp_path / "jps_gap.csv")
    assert (gaps["ratio_to_optimum"] >= 1.0 - 1e-9).all()  # nothing beats the exact optimum
    assert not list(tmp_path.glob(".*.tmp"))


def test_reproduce_gap_study_alone(tmp_path: Path) -> None:
    script = load_script("reproduce/reproduce_asrpt_jps")
    assert script.main(["--quick", "--out", str(tmp_path), "--only", "gap"]) == 0
    summary = pd.read_csv(tmp_path / "jps_gap_summary.csv")
    assert "JPS (Hungarian, JCT valuation, local search)" in set(summary["method"])


def test_reproduce_rejects_bad_arguments(tmp_path: Path) -> None:
    script = load_script("reproduce/reproduce_asrpt_jps")
    with pytest.raises(SystemExit):
        script.main(["--workers", "0", "--out", str(tmp_path)])
    assert not any(tmp_path.iterdir())


def test_bench_quick_writes_json(tmp_path: Path) -> None:
    bench = load_script("bench/bench_jps")
    out = tmp_path / "jps.json"
    assert bench.main(["--quick", "--out", str(out)]) == 0
    payload = json.loads(out.read_text())
    assert payload["machine"]["cpus"] >= 1 and payload["results"]
    assert all(r["median_s"] > 0 for r in payload["results"])
