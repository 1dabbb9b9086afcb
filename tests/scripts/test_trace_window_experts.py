"""``scripts/trace_window_experts.py`` on a hand-made raw ElasticFlow trace: one window, every row and summary key."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import load_script


def test_one_seed_on_a_small_raw_trace(tmp_path: Path) -> None:
    rows = [(0, 600, 1), (120, 1800, 2), (300, 900, 1), (900, 3600, 4), (1500, 1200, 1), (2400, 2400, 2)]
    folder = tmp_path / "raw"
    folder.mkdir()
    lines = ["job_id,submission_time,duration,num_gpu"] + [f"j{i},{s},{d},{g}" for i, (s, d, g) in enumerate(rows)]
    (folder / "cluster01.csv").write_text("\n".join(lines) + "\n")
    mod = load_script("trace_window_experts")
    out = tmp_path / "o.json"
    argv = ["--source", str(folder), "--trace", "cluster01", "--cluster", "elasticflow-n1g8-het"]
    assert mod.main([*argv, "--num-jobs", "4", "--seeds", "3", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["seeds"] == [3] and result["rows"][0]["num_jobs"] == 4
    keys = {"env_elasticflow_dsr", "env_force_dsr"} | {f"sim_{p}_dsr" for p in mod.SIMULATOR_POLICIES}
    assert keys <= set(result["summary"])
    assert result["gym_make"]["workload"]["trace_window"] is True
    # Action 0 replays ElasticFlow's own run.
    row = result["rows"][0]
    assert row["env_elasticflow_dsr"] == row["sim_elasticflow_dsr"]
