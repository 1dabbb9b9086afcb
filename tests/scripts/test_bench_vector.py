"""Smoke test of scripts/bench/bench_vector.py's processes section: DummyVecEnv and SubprocVecEnv rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import load_script


@pytest.mark.slow
def test_processes_section_writes_a_row_per_mode(tmp_path: Path) -> None:
    script = load_script("bench/bench_vector")
    out = tmp_path / "vector.json"
    argv = ["--sections", "processes", "--process-num-envs", "1", "--repeats", "1", "--steps-per-env", "200"]
    assert script.main([*argv, "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["results"] == [] and doc["cartpole_v1_steps_per_cpu_s"] is None  # the pinned section was not run
    rows = {row["mode"]: row for row in doc["processes"]["results"]}
    assert set(rows) == {"dummy", "subproc"} and all(row["num_envs"] == 1 for row in rows.values())
    # The worker did the steps: 200 of them span several of /proc's 10 ms clock ticks.
    assert rows["dummy"]["workers_cpu_s"] == 0 and rows["subproc"]["workers_cpu_s"] > 0
    for row in rows.values():
        assert row["steps_per_wall_s"] > 0 and row["steps_per_cpu_s"] > 0 and row["main_cpu_s"] > 0
    assert len(doc["load_average_at_start"]) == 3
