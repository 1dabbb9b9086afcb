"""scripts/bench/bench_flatten_memory.py on one Tiny workload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import load_script

BENCH = load_script("bench/bench_flatten_memory")


@pytest.mark.slow  # 16 s: two fresh processes per mode
def test_both_modes_are_measured_in_fresh_processes(tmp_path: Path) -> None:
    out = tmp_path / "bench" / "flatten_memory.json"
    argv = ["--env-id", "HetCluster-Tiny-v1", "--workloads", "1", "--repeats", "1", "--out", str(out)]
    assert BENCH.main(argv) == 0
    result = json.loads(out.read_text())
    kept, released, by_index, by_copy, half = result["results"]
    assert [(r["release"], r["fit"], r["obs_dtype"]) for r in result["results"]] == [
        (False, "none", "float32"),
        (True, "none", "float32"),
        (True, "index", "float32"),
        (True, "copy", "float32"),
        (True, "index", "float16"),
    ]
    # float16 stores the same states in half the bytes (0.1 MB of rounding in the reported figures).
    assert half["observations_mb"] == pytest.approx(kept["observations_mb"] / 2, abs=0.1)
    for row in result["results"]:
        assert row["states"] == kept["states"] > 0 and row["observations_mb"] > 0
        assert row["peak_rss_after_flattening_mb"] >= row["peak_rss_after_collecting_mb"] > 0
    for row in (by_index, by_copy, half):
        assert row["peak_rss_after_fit_mb"] >= row["peak_rss_after_flattening_mb"]
        assert row["fit_added_mb"] == pytest.approx(
            row["peak_rss_after_fit_mb"] - row["peak_rss_after_flattening_mb"], abs=0.2
        )
    assert "fit_added_mb" not in kept and "fit_added_mb" not in released
    assert [p.name for p in out.parent.iterdir()] == ["flatten_memory.json"]


def test_bad_counts_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        BENCH.main(["--workloads", "0", "--out", str(tmp_path / "f.json")])
    assert not (tmp_path / "f.json").exists()
