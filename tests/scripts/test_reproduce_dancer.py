"""Smoke test of ``scripts/reproduce/reproduce_dancer.py --quick``: it runs end to end and writes its outputs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from helpers import load_script


def test_quick_mode_writes_csv_figure_and_optimum(tmp_path: Path) -> None:
    script = load_script("reproduce/reproduce_dancer")
    assert script.main(["--quick", "--workers", "1", "--out", str(tmp_path)]) == 0
    runs = pd.read_csv(tmp_path / "dsr.csv")
    assert set(runs["policy"]) == set(script.POLICIES)
    assert set(runs["sweep"]) == {"load", "tightness"}
    assert runs["dsr"].between(0.0, 1.0).all()
    assert (runs["num_met"] <= runs["num_deadline_jobs"]).all()
    summary = pd.read_csv(tmp_path / "dsr_summary.csv")
    assert {"dsr_mean", "dsr_std", "dsr_per_seed"} <= set(summary.columns)
    assert (tmp_path / "dsr.png").stat().st_size > 10_000
    optimum = pd.read_csv(tmp_path / "optimum.csv")
    assert (optimum["opt_status"] == "optimal").all()
    # No online policy beats the offline optimum of the same slotted model on these small instances.
    assert (optimum["num_met"] <= optimum["opt_upper_bound"]).all()
    assert not list(tmp_path.glob("tmp*"))  # no temporary file left behind
