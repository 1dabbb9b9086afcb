"""scripts/bench/bench_startup.py: its Gavel trace is one the Gavel reader reads whole, and one repeat of
every task writes the figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import load_script

BENCH = load_script("bench/bench_startup")


def test_the_generated_gavel_trace_converts_whole(tmp_path: Path) -> None:
    from hetgym.workloads.traces import load_trace

    trace = tmp_path / "g.trace"
    BENCH.write_gavel_trace(trace, 3_100)
    workload = load_trace(trace, "gavel")
    assert len(workload) == 3_100
    assert workload.metadata["report"]["read"] == 3_100
    assert [j.submit_s for j in workload.jobs[:3]] == [0.0, 200.0, 400.0]


@pytest.mark.slow
def test_one_repeat_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "startup.json"
    assert BENCH.main(["--repeats", "1", "--out", str(out)]) == 0
    head = json.loads(out.read_text())["head"]
    for task in ("help", "import", "simulate_tiny_fifo", "convert_gavel_10k"):
        assert head[f"{task}_wall_s"] > 0
    assert head["convert_gavel_10k_convert_s"] > 0
