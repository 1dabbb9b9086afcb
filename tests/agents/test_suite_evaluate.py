"""``hetgym evaluate --suite``: a saved agent, policies and rules scored on suite scenarios, one row each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hetgym.suite as s
from agents.args import AgentError
from agents.bc import new_model
from agents.common import AgentMeta, make_env, save_agent
from agents.leaderboard import suite_env_kwargs
from hetgym.cli import main

EVENTS = "HetClusterEvents-v0"


def _saved_agent(folder: Path) -> Path:
    env_kwargs = {**s.get("tiny").kwargs(EVENTS), "probe": False}
    model = new_model("maskable-ppo", make_env(EVENTS, env_kwargs), "mlp", 16, 0, 0)
    save_agent(model, AgentMeta(EVENTS, env_kwargs, None, "events-ppo", "maskable-ppo", "mlp", 7), folder)
    return folder


def test_a_saved_agent_policies_and_rules_each_get_one_row_per_scenario(tmp_path: Path) -> None:
    run = _saved_agent(tmp_path / "run")
    board, md = tmp_path / "board.json", tmp_path / "board.md"
    argv = ["evaluate", str(run), "--suite", "tiny", "--policies", "edf", "--rules", "always-force"]
    argv += ["--seeds", "1000-1001", "--board", str(board), "--page", str(md), "--no-progress"]
    assert main(argv) == 0
    rows = {r["agent"]: r for r in json.loads(board.read_text())}
    assert set(rows) == {"events-ppo-s7", "edf", "always-force"}
    learned = rows["events-ppo-s7"]
    assert learned["kind"] == "learned" and learned["interface"] == EVENTS and learned["seeds"] == [1000, 1001]
    assert learned["detail"]["env_kwargs"]["probe"] is False and 0.0 <= learned["dsr"] <= 1.0
    assert rows["edf"]["kind"] == "expert" and rows["always-force"]["kind"] == "rule"
    assert "events-ppo-s7" in md.read_text()


def test_an_agent_of_another_interface_or_a_bad_combination_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    meta = AgentMeta("HetCluster-Tiny-v1", {}, None, "bc", "maskable-ppo", "mlp", 0)
    with pytest.raises(AgentError, match="HetClusterEvents-v0"):
        suite_env_kwargs(meta, s.get("tiny"))
    board = tmp_path / "b.json"
    assert main(["evaluate", "--suite", "tiny", "--random", "--rules", "all", "--board", str(board)]) == 2
    assert "does not combine with --random" in capsys.readouterr().err
    assert main(["evaluate", "--suite", "tiny", "--board", str(board)]) == 2
    assert "nothing to score" in capsys.readouterr().err
    assert main(["evaluate", "--policies", "edf"]) == 2
    assert "give --suite" in capsys.readouterr().err
    assert main(["evaluate", "--suite", "tiny", "--policies", "edf-nope", "--board", str(board)]) == 2
    assert "edf" in capsys.readouterr().err
    assert not board.exists()
