"""Smoke test of scripts/bench/soak.py: a short soak writes its memory and pickle-size figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import load_script


def test_a_short_soak_writes_rss_and_pickle_figures(tmp_path: Path) -> None:
    script = load_script("bench/soak")
    out = tmp_path / "soak.json"
    # Every step commits; episodes are truncated at 100 decisions, so 600 steps make several.
    argv = ["--env-id", "HetCluster-Tiny-v0", "-e", "codec=multidiscrete", "-e", "max_decisions=100", "--steps", "600"]
    assert script.main([*argv, "--rewards", "jct", "deadline", "--sample-every", "50", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["steps_per_reward"] == 600 and report["env_options"]["codec"] == "multidiscrete"
    assert set(report["rewards"]) == {"jct", "deadline"}
    for figures in report["rewards"].values():
        assert figures["steps"] == 600
        assert figures["episodes"] >= 6
        rss = figures["rss_mib"]
        assert 0 < rss["first"] <= rss["max"] and rss["last"] <= rss["max"]
        ends = figures["pickle_bytes_at_episode_end"]
        assert 0 < ends["min"] <= ends["last"] <= ends["max"]
    assert not list(tmp_path.glob(".*.tmp"))


def test_unknown_reward_is_refused_before_any_work(tmp_path: Path) -> None:
    script = load_script("bench/soak")
    out = tmp_path / "soak.json"
    with pytest.raises(SystemExit):
        script.main(["--steps", "10", "--rewards", "jtc", "--out", str(out)])
    assert not out.exists()
