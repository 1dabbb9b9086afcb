"""A run stopped during its final evaluation, or during training after a checkpoint, leaves a usable agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agents import bc, ppo
from agents.args import BCArgs, PPOArgs
from agents.callbacks import EpisodeMetricsCallback
from agents.common import META_FILE, MODEL_FILE, load_agent

TINY = "HetCluster-Tiny-v1"


def _interrupt(*_args: Any, **_kwargs: Any) -> Any:
    raise KeyboardInterrupt


def test_bc_saves_the_clone_before_evaluating_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = BCArgs(
        env_id=TINY,
        teacher="edf",
        train_seeds="0",
        val_seeds="100",
        eval_seeds="1000",
        epochs=1,
        hidden=16,
        out_dir=str(tmp_path),
        run_name="clone",
        track=False,
    )
    monkeypatch.setattr(bc, "evaluate_against_teacher", _interrupt)
    with pytest.raises(KeyboardInterrupt):
        bc.train(args)
    folder = tmp_path / "clone"
    names = {p.name for p in folder.iterdir()}
    assert {META_FILE, MODEL_FILE} <= names and not any(n.startswith(".") for n in names)  # no temporary files
    _model, meta = load_agent(folder)
    assert meta.results["stage"] == "trained" and "evaluation" not in meta.results
    assert meta.teacher == meta.reference == "edf" and 0.0 <= meta.results["agreement"]["agreement"] <= 1.0
    monkeypatch.undo()
    run = bc.train(args)  # uninterrupted: the evaluation joins agent.json
    saved = json.loads((run.path / META_FILE).read_text())
    assert saved["results"]["stage"] == "evaluated" and saved["results"]["evaluation"]["seeds"] == [1000]


class _StopAt(EpisodeMetricsCallback):
    """Stops training (as a kill would) once ``steps`` environment steps are done."""

    steps = 200

    def _on_step(self) -> bool:
        if self.num_timesteps >= self.steps:
            raise KeyboardInterrupt
        return super()._on_step()


def test_ppo_leaves_its_latest_checkpoint_and_saves_before_evaluating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    common: dict[str, Any] = {
        "env_id": TINY,
        "reference": "edf",
        "n_steps": 64,
        "batch_size": 32,
        "n_epochs": 1,
        "hidden": 16,
        "eval_seeds": "1000",
        "checkpoint_every": 128,
        "out_dir": str(tmp_path),
        "track": False,
    }
    monkeypatch.setattr(ppo, "EpisodeMetricsCallback", _StopAt)
    with pytest.raises(KeyboardInterrupt):
        ppo.train(PPOArgs(**common, total_timesteps=512, run_name="killed"))
    model, meta = load_agent(tmp_path / "killed")
    assert meta.results == {"stage": "checkpoint", "timesteps": 128} and model.num_timesteps == 128
    assert (tmp_path / "killed" / "model_128.pt").is_file()
    assert meta.teacher is None and meta.reference == "edf"

    monkeypatch.undo()
    monkeypatch.setattr(ppo, "evaluate_against_teacher", _interrupt)
    with pytest.raises(KeyboardInterrupt):
        ppo.train(PPOArgs(**common, total_timesteps=256, run_name="in-evaluation"))
    model, meta = load_agent(tmp_path / "in-evaluation")
    assert meta.results["stage"] == "trained" and meta.results["timesteps"] == 256 and model.num_timesteps == 256
