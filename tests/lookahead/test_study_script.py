"""``scripts/studies/lookahead.py``: a one-seed run on Tiny with few futures, resumed, and its paired summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import load_script


@pytest.mark.slow
def test_run_resumes_and_summarises(tmp_path: Path, capsys) -> None:
    script = load_script("studies/lookahead")
    run = tmp_path / "run"
    args = ["run", "--seeds", "1000", "--base", "force", "--checkpoint", str(run), "--k-initial", "2"]
    args += ["--k-max", "2", "--horizon-h", "2"]
    assert script.main(args) == 0
    row = json.loads((run / "seed-1000.json").read_text())
    assert row["teacher"]["label"] == "lookahead (sampled futures)" and row["oracle"]["label"] == "oracle (hindsight)"
    assert row["teacher"]["decisions"] == 12 == len(row["teacher"]["decision_cpu_s"])
    assert script.main(args) == 0  # resumed: nothing left to run
    assert "1 of 1 seeds done" in capsys.readouterr().out
    assert script.main([*args[:-2], "--horizon-h", "3"]) == 2  # other settings in the same folder: refused
    out = tmp_path / "probe.json"
    assert script.main(["summary", str(run), "--out", str(out)]) == 0
    entry = json.loads(out.read_text())["runs"][0]
    assert entry["seeds"] == [1000] and set(entry["dsr"]) == {"teacher", "elasticflow", "force", "oracle (hindsight)"}
    paired = entry["teacher_minus"]["force"]
    assert paired["wins"] + paired["ties"] + paired["losses"] == 1
    assert paired["per_seed_jobs"][0] == round((row["teacher"]["dsr"] - row["rule_force"]["dsr"]) * 12, 6)
