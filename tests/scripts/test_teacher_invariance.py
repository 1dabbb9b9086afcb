"""scripts/studies/teacher_invariance.py: a smoke run (counts that add up, a report written) and its input errors.

A study (scripts/studies/): its smoke run stays in the default test run, the other tests are marked ``slow``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import load_script

mod = load_script("studies/teacher_invariance")


def test_a_short_run_writes_its_counts(tmp_path: Path) -> None:
    out = tmp_path / "inv.json"
    argv = ["--teacher", "elasticflow:memory=observed", "--scenario", "tiny", "--seeds", "1000", "--max-epochs", "60"]
    assert mod.main([*argv, "--shifts", "7,23", "--dsr-seeds", "1000", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["epochs"] == 60 and 0 <= report["changing_epochs"] <= 60
    assert [row["shift_s"] for row in report["shifts"]] == [7.0, 23.0]
    for row in report["shifts"]:
        assert 0 <= row["changing_epochs_differ"] <= row["epochs_differ"] <= report["epochs"]
    assert 0.0 <= report["dsr"]["dsr_mean"] <= 1.0 and len(report["dsr"]["runs"]) == 1


@pytest.mark.slow
def test_bad_input_is_named_and_nothing_is_written(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "inv.json"
    assert mod.main(["--teacher", "dancer:memory=observed", "--shifts", "7,x", "--out", str(out)]) == 2
    assert "--shifts" in capsys.readouterr().err
    assert mod.main(["--teacher", "nope", "--out", str(out)]) == 2
    assert mod.main(["--teacher", "edf", "--max-epochs", "0", "--out", str(out)]) == 2
    assert not out.exists()
