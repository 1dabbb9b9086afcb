"""Smoke test of ``scripts/studies/event_rules.py --constant`` (tiny settings): rows, paired differences, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import load_script


def test_constant_rules_of_v1_with_paired_differences_and_resume(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    script = load_script("studies/event_rules")
    out = tmp_path / "constant.json"
    # Tiny has two GPU types: action 4 is "force", 14 "force, capped at the requested GPUs".
    common = ["--constant", "--env-id", "HetClusterEvents-Tiny-v1", "--seeds", "0-1", "--out", str(out)]
    assert script.main([*common, "--actions", "14"]) == 0
    data = json.loads(out.read_text())
    assert sorted(data["rows"], key=int) == ["0", "4", "14"] and data["v0_actions"] == 8
    assert data["rows"]["14"]["directive"] == "force, capped at the requested GPUs"
    rows = {r["action"]: r for r in script.summarise(data)}
    assert rows[0]["diff_auto"] == 0.0 and rows[4]["diff_force"] == 0.0
    assert rows[4]["in_v0"] and not rows[14]["in_v0"]
    want = sum(a - b for a, b in zip(data["rows"]["14"]["per_seed"], data["rows"]["4"]["per_seed"], strict=True)) / 2
    assert rows[14]["diff_force"] == pytest.approx(want)
    # A second run with the same env and seeds keeps the rows it finds (the same CPU times, nothing re-run).
    assert script.main([*common, "--actions", "14"]) == 0
    assert json.loads(out.read_text())["rows"] == data["rows"]
    capsys.readouterr()
    assert script.main(["--table", str(out)]) == 0
    assert "| 14 | force, capped at the requested GPUs |" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="actions 0 to 27"):
        script.main([*common, "--actions", "99"])
