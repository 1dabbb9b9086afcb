"""Smoke test of ``scripts/reproduce/reproduce_hadar.py --quick``: every policy runs and every output is written."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from helpers import load_script


def test_quick_mode_writes_runs_summary_claims_and_figure(tmp_path: Path) -> None:
    mod = load_script("reproduce/reproduce_hadar")
    assert mod.main(["--quick", "--workers", "1", "--out", str(tmp_path)]) == 0
    runs = pd.read_csv(tmp_path / "runs.csv")
    assert set(runs["policy"]) == set(mod.POLICIES)
    assert set(runs["workload"]) == {"static", "online"}
    assert (runs["num_completed"] == runs["num_jobs"]).all()
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert len(summary) == 2 * len(mod.POLICIES)
    claims = pd.read_csv(tmp_path / "claims.csv")
    assert "HadarE vs Hadar: utilisation (paper: 1.45x)" in set(claims["claim"])
    assert (tmp_path / "hadar.png").stat().st_size > 10_000
    assert not list(tmp_path.glob(".*tmp*"))  # no temporary files left behind


def test_bad_arguments_are_rejected(tmp_path: Path) -> None:
    mod = load_script("reproduce/reproduce_hadar")
    with pytest.raises(SystemExit):
        mod.main(["--policies", "no-such-policy", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        mod.main(["--seeds", "0", "--out", str(tmp_path)])
    assert not (tmp_path / "runs.csv").exists()
