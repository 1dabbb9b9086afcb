"""Smoke test of the event-driven interface's measurement script (tiny settings); its training recipes are
``hetgym train`` choices, tested in ``tests/agents/test_event_recipes.py``."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import load_script


def test_event_interface_measures_exactness_and_gaps(tmp_path: Path) -> None:
    script = load_script("studies/event_interface")
    out = tmp_path / "events.json"
    assert script.main(["--env-id", "HetClusterEvents-Tiny-v0", "--seeds", "1000-1001", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    summary = data["summary"]
    assert summary["elasticflow_identical_all"] and summary["elasticflow_closest_identical_all"]
    assert summary["random_decisions_per_job"]["mean"] == 1.0
    assert "gap_dancer_closest_any" in summary and len(data["rows"]) == 2
