"""``hetgym evaluate`` on an event-interface agent (``HetClusterEvents-Tiny-v0``) with ``--beat-the-experts``:
the run folder reads as those of ``hetgym train`` do, and the row written pairs it with the best expert."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.common import AgentMeta, save_agent
from agents.events import ENV_KWARGS, make_env
from hetgym.cli import main


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sb3_contrib = pytest.importorskip("sb3_contrib")
    model = sb3_contrib.MaskablePPO(
        "MlpPolicy", make_env("HetClusterEvents-Tiny-v0"), n_steps=32, batch_size=16, n_epochs=1, seed=0, device="cpu"
    )
    model.learn(32)
    meta = AgentMeta(
        "HetClusterEvents-Tiny-v0",
        dict(ENV_KWARGS),
        None,
        "events-ppo",
        "maskable-ppo",
        "mlp",
        7,
        results={"cpu_hours": 0.01},
    )
    folder = tmp_path_factory.mktemp("run")
    save_agent(model, meta, folder)
    return folder


@pytest.mark.slow
def test_beat_the_experts_rows_are_written_and_merged(run_folder: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "beat.json"
    argv = ["evaluate", str(run_folder), "--experts", "edf-admission,elasticflow", "--seeds", "1000-1001"]
    argv += ["--beat-the-experts", str(out), "--out", str(tmp_path / "ev"), "--no-plots", "--no-progress"]
    assert main(argv) == 0
    (row,) = json.loads(out.read_text())
    assert row["env_id"] == "HetClusterEvents-Tiny-v0" and row["scenario"] == "tiny"
    assert row["recipe"] == "events-ppo" and row["train_seed"] == 7 and row["best_expert"] == "elasticflow"
    assert row["seeds"] == [1000, 1001] and row["cpu_hours"] == 0.01
    assert row["diff_ci_low"] <= row["diff_mean"] <= row["diff_ci_high"]
    assert "| tiny |" in capsys.readouterr().out
    assert main(argv) == 0  # the same key again: replaced, not added
    assert len(json.loads(out.read_text())) == 1


def test_beat_the_experts_needs_experts_and_two_seeds(run_folder: Path, tmp_path: Path, capsys) -> None:
    base = ["evaluate", str(run_folder), "--beat-the-experts", str(tmp_path / "b.json"), "--no-progress"]
    assert main([*base, "--experts", "none"]) != 0
    assert "--experts" in capsys.readouterr().err
    assert main([*base, "--experts", "elasticflow", "--seeds", "1000"]) != 0
    assert "at least 2" in capsys.readouterr().err
    assert not (tmp_path / "b.json").exists()
