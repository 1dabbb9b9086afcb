"""Smoke tests of the A-SRPT reproduction script (``--quick`` settings)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from helpers import load_script


@pytest.mark.slow
def test_reproduce_quick_writes_every_table_and_figure(tmp_path: Path) -> None:
    script = load_script("reproduce/reproduce_asrpt")
    assert script.main(["--quick", "--out", str(tmp_path), "--workers", "1"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "asrpt_jct.png",
        "asrpt_runs.csv",
        "asrpt_summary.csv",
        "predictor.csv",
    ]  # only this paper's files: the JPS script writes the others
    assert (tmp_path / "asrpt_jct.png").read_bytes()[:4] == b"\x89PNG"
    runs = pd.read_csv(tmp_path / "asrpt_runs.csv")
    assert set(runs["policy"]) == set(script.ASRPT_LABELS)
    assert (runs["num_completed"] > 0).all()
    assert runs["online_median_abs_log_error"].notna().sum() == 1  # A-SRPT (RF)'s online predictions, once
    summary = pd.read_csv(tmp_path / "asrpt_summary.csv")
    assert summary.loc[summary["policy"] == "A-SRPT (RF)", "jct_mean_vs_asrpt_rf"].tolist() == [1.0]


def test_reproduce_predictor_study_alone(tmp_path: Path) -> None:
    script = load_script("reproduce/reproduce_asrpt")
    assert script.main(["--quick", "--out", str(tmp_path), "--only", "predictor"]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["predictor.csv"]
    pred = pd.read_csv(tmp_path / "predictor.csv")
    assert {"global median", "template mean (history)"} <= set(pred["predictor"])
    assert set(pred["jobs"]) == {"recurring (template seen)", "one-off or unseen template", "all"}
    assert ((pred["within_25pct"] >= 0) & (pred["within_25pct"] <= 1)).all()


def test_reproduce_rejects_bad_arguments(tmp_path: Path) -> None:
    script = load_script("reproduce/reproduce_asrpt")
    with pytest.raises(SystemExit):
        script.main(["--workers", "0", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        script.main(["--only", "gap", "--out", str(tmp_path)])  # a JPS study: not this script's
    assert not any(tmp_path.iterdir())
