"""Smoke test of scripts/bench/bench_latency.py: a quick run writes a JSON row and a markdown line per policy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import load_script


def test_quick_run_writes_json_and_table(tmp_path: Path) -> None:
    script = load_script("bench/bench_latency")
    out = tmp_path / "latency.json"
    assert script.main(["--quick", "--policies", "fifo", "tiresias", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [row["policy"] for row in doc["results"]] == ["fifo", "tiresias"]
    assert doc["active_jobs"] == 100 and doc["repeats"] == 1 and len(doc["loadavg_start"]) == 3
    for row in doc["results"]:
        run = row["runs"][0]
        assert run["decisions"] > 0 and run["active_jobs_min"] >= 100  # the burst stays in the system
        assert 0 < row["wall_p50_ms"] <= row["wall_max_ms"]
        assert row["cpu_p50_ms"] > 0
    table = out.with_suffix(".md").read_text()
    assert table.count("\n| fifo |") == 1 and table.count("\n| tiresias |") == 1


def test_unknown_policy_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = load_script("bench/bench_latency")
    with pytest.raises(SystemExit):
        script.main(["--policies", "no-such-policy", "--out", str(tmp_path / "x.json")])
    assert "no-such-policy" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
