"""Smoke tests of the JPS reproduction script and the JPS benchmark (``--quick`` settings)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from helpers import load_script


def test_reproduce_quick_writes_every_table_and_figure(tmp_path: Path) -> None:
    script = load_script("reproduce/reproduce_jps")
    assert script.main(["--quick", "--out", str(tmp_path), "--workers", "1"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "jps_gap.csv",
        "jps_gap.png",
        "jps_gap_summary.csv",
        "jps_runtime.csv",
        "jps_runtime.png",
    ]  # only this paper's files: the A-SRPT script writes the others
    for name in ("jps_gap.png", "jps_runtime.png"):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"
    gaps = pd.read_csv(tmp_path / "jps_gap.csv")
    assert (gaps["ratio_to_optimum"] >= 1.0 - 1e-9).all()  # nothing beats the exact optimum
    runtime = pd.read_csv(tmp_path / "jps_runtime.csv")
    assert (runtime["jps_s"] > 0).all() and len(runtime) == 2
    assert not list(tmp_path.glob(".*.tmp"))


def test_gap_study_rows_do_not_depend_on_the_worker_count() -> None:
    script = load_script("reproduce/reproduce_jps")
    settings = replace(script.settings_for(True, None), gap_sizes=((3, 6), (3, 8)))
    one, two = script.gap_study(settings, 1), script.gap_study(settings, 2)
    pd.testing.assert_frame_equal(one, two)
    assert one[["num_workers", "instance"]].drop_duplicates().values.tolist() == [[6, 0], [6, 1], [8, 0], [8, 1]]


def test_reproduce_gap_study_alone(tmp_path: Path) -> None:
    script = load_script("reproduce/reproduce_jps")
    assert script.main(["--quick", "--out", str(tmp_path), "--only", "gap", "--workers", "1"]) == 0
    summary = pd.read_csv(tmp_path / "jps_gap_summary.csv")
    assert "JPS (Hungarian, JCT valuation, local search)" in set(summary["method"])
    assert not (tmp_path / "jps_runtime.csv").exists()


def test_reproduce_rejects_bad_arguments(tmp_path: Path) -> None:
    script = load_script("reproduce/reproduce_jps")
    for argv in (["--workers", "0"], ["--exhaustive-budget-s", "0"], ["--only", "asrpt"]):
        with pytest.raises(SystemExit):
            script.main([*argv, "--out", str(tmp_path)])
    assert not any(tmp_path.iterdir())


def test_bench_quick_writes_json(tmp_path: Path) -> None:
    bench = load_script("bench/bench_jps")
    out = tmp_path / "jps.json"
    assert bench.main(["--quick", "--out", str(out)]) == 0
    payload = json.loads(out.read_text())
    assert payload["machine"]["cpus"] >= 1 and payload["results"]
    assert all(r["median_s"] > 0 for r in payload["results"])
