"""Smoke test of scripts/bench/bench_fork.py: quick runs on the tiny scenario write their JSON (no speed asserted)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import load_script


def test_quick_fork_and_tick_runs_write_their_figures(tmp_path: Path) -> None:
    script = load_script("bench/bench_fork")
    out = tmp_path / "fork.json"
    assert script.main(["--quick", "--scenario", "tiny", "--samples", "6", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["scenario"] == "tiny" and len(doc["loadavg_start"]) == 3
    rows = doc["results"]
    assert rows and rows[0]["decision"] == 0
    for row in rows:
        assert row["env_fork_us"] > 0 and row["env_deepcopy_us"] > 0 and row["sim_fork_us"] > 0
    ticks = tmp_path / "ticks.json"
    assert script.main(["--quick", "--scenario", "tiny", "--elasticflow-ticks", "--out", str(ticks)]) == 0
    res = json.loads(ticks.read_text())["results"]
    assert res["identical_per_job_results"] is True
    # The replay asks at every epoch; the fast-forward fewer times, over the same epochs.
    assert res["run_off"]["consultations"] == res["run_off"]["epochs"] == res["run_on"]["epochs"]
    assert res["run_on"]["consultations"] < res["run_off"]["consultations"]
    assert res["env_on"]["consultations"] < res["env_off"]["consultations"] == res["env_off"]["epochs"]
