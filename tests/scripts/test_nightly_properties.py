"""Smoke test of ``scripts/bench/nightly_properties.py``: it runs the selected property tests under the chosen
hypothesis profile and writes a summary that matches what pytest ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import load_script


@pytest.mark.slow  # a nested pytest run: over 10 s on a loaded machine
def test_nightly_script_runs_the_selected_tests_and_writes_a_summary(tmp_path: Path) -> None:
    script = load_script("bench/nightly_properties")
    out = tmp_path / "summary.json"
    select = "test_the_work_conservation_check_catches_strict_fifo or test_the_policies_declared_work_conserving"
    rc = script.main(["--profile", "default", "--marker", "not slow", "--select", select, "--out", str(out)])
    assert rc == 0
    report = json.loads(out.read_text())
    assert report["profile"] == "default" and report["examples_per_test"] == 10
    assert report["counts"] == {"passed": 2, "failed": 0, "error": 0, "skipped": 0}
    assert sorted(t["test"].rsplit("::", 1)[1] for t in report["tests"]) == [
        "test_the_policies_declared_work_conserving",
        "test_the_work_conservation_check_catches_strict_fifo",
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]  # no temporary file left behind


def test_nightly_script_refuses_an_unknown_profile(tmp_path: Path) -> None:
    script = load_script("bench/nightly_properties")
    with pytest.raises(SystemExit, match="unknown --profile 'weekly'; use one of"):
        script.main(["--profile", "weekly", "--out", str(tmp_path / "s.json")])
    assert not list(tmp_path.iterdir())
