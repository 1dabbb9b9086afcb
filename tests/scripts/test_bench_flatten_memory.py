"""scripts/bench_flatten_memory.py on one Tiny workload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import load_script

BENCH = load_script("bench_flatten_memory")


def test_both_modes_are_measured_in_fresh_processes(tmp_path: Path) -> None:
    out = tmp_path / "bench" / "flatten_memory.json"
    argv = ["--env-id", "HetCluster-Tiny-v1", "--workloads", "1", "--repeats", "1", "--out", str(out)]
    assert BENCH.main(argv) == 0
    result = json.loads(out.read_text())
    kept, released = result["results"]
    assert (kept["release"], released["release"]) == (False, True)
    for row in (kept, released):
        assert row["states"] > 0 and row["observations_mb"] > 0
        assert row["peak_rss_after_flattening_mb"] >= row["peak_rss_after_collecting_mb"] > 0
    assert kept["states"] == released["states"]
    assert [p.name for p in out.parent.iterdir()] == ["flatten_memory.json"]


def test_bad_counts_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        BENCH.main(["--workloads", "0", "--out", str(tmp_path / "f.json")])
    assert not (tmp_path / "f.json").exists()
