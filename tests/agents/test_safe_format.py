"""The safe agent format: weights + JSON load without unpickling; SB3 archives only when trusted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from robustness_api import MARKER, crafted_sb3_zip

import hetgym  # noqa: F401  (registers the ids)
from agents.bc import new_model
from agents.common import (
    META_FILE,
    MODEL_FILE,
    PICKLE_MODEL_FILE,
    AgentError,
    AgentMeta,
    agent_env_kwargs,
    load_agent,
    make_env,
    save_agent,
)
from agents.convert import main as convert_main
from agents.weights import FORMAT, model_spec, rebuild_model, resolve_class, space_from_json, space_to_json
from hetgym.cli import main

TINY = "HetCluster-Tiny-v1"


def _meta(env_kwargs: dict[str, Any], arch: str = "mlp", algo: str = "maskable-ppo") -> AgentMeta:
    return AgentMeta(TINY, env_kwargs, "edf", "bc", algo, arch, 0)


def _actions(model: Any, env_kwargs: dict[str, Any], maskable: bool = True) -> list[Any]:
    env = make_env(TINY, env_kwargs)
    obs, info = env.reset(seed=3)
    out = []
    for _ in range(5):
        kwargs = {"action_masks": info["action_mask"]} if maskable else {}
        action, _ = model.predict(obs, deterministic=True, **kwargs)
        out.append(np.asarray(action).tolist())
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    return out


@pytest.mark.parametrize(
    ("algo", "arch", "overrides"),
    [
        ("maskable-ppo", "mlp", {}),
        ("maskable-ppo", "set", {"codec": "jobwise"}),
        ("ppo", "slot", {"codec": "sequential"}),
        ("maskable-ppo", "slot-flat", {"codec": "multidiscrete"}),
    ],
)
def test_every_network_round_trips_through_weights_and_json(
    algo: str, arch: str, overrides: dict[str, Any], tmp_path: Path
) -> None:
    env_kwargs = agent_env_kwargs("edf", overrides, TINY)
    model = new_model(algo, make_env(TINY, env_kwargs), arch, 16, 1 if arch != "mlp" else 0, 0)
    save_agent(model, _meta(env_kwargs, arch, algo), tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [META_FILE, MODEL_FILE]  # no SB3 archive
    saved = json.loads((tmp_path / META_FILE).read_text())["model"]
    assert saved["format"] == FORMAT and set(saved) >= {"policy_class", "policy_kwargs", "observation_space"}
    again, meta = load_agent(tmp_path)
    assert type(again.policy) is type(model.policy) and meta.model == saved
    assert _actions(again, env_kwargs, algo == "maskable-ppo") == _actions(model, env_kwargs, algo == "maskable-ppo")
    for key, value in model.policy.state_dict().items():
        assert th.equal(again.policy.state_dict()[key], value)


@pytest.fixture
def archive_run(tmp_path: Path) -> Path:
    """A run folder as earlier versions wrote it: an SB3 model.zip (crafted: its pickle writes the marker)."""
    from sb3_contrib import MaskablePPO

    run = tmp_path / "run"
    run.mkdir()
    env_kwargs = agent_env_kwargs(None, {}, TINY)
    model = MaskablePPO("MultiInputPolicy", make_env(TINY, env_kwargs), n_steps=64, batch_size=32, device="cpu")
    model.save(tmp_path / "plain.zip")
    marker = tmp_path / MARKER
    code = f"open({str(marker)!r}, 'w').write('ran')"
    (run / PICKLE_MODEL_FILE).write_bytes(crafted_sb3_zip(code, (tmp_path / "plain.zip").read_bytes()))
    (run / META_FILE).write_text(_meta(env_kwargs).to_json())
    return run


def _evaluate(run: Path, out: Path, *extra: str) -> int:
    argv = ["evaluate", str(run), "--experts", "none", "--seeds", "1000", "--no-plots", "--no-progress"]
    return main([*argv, "--out", str(out), *extra])


def test_evaluate_refuses_a_crafted_archive_before_it_runs(
    archive_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _evaluate(archive_run, tmp_path / "ev") == 2
    err = capsys.readouterr().err
    assert "pickle" in err and "--trust-pickle" in err and "agents.convert" in err
    assert not (tmp_path / MARKER).exists() and not (tmp_path / "ev").exists()
    with pytest.raises(AgentError, match="trust_pickle=True"):
        load_agent(archive_run / PICKLE_MODEL_FILE)
    assert not (tmp_path / MARKER).exists()


def test_the_same_archive_loads_with_trust_pickle(archive_run: Path, tmp_path: Path) -> None:
    assert _evaluate(archive_run, tmp_path / "ev", "--trust-pickle") == 0
    assert (tmp_path / "ev" / "evaluation_runs.csv").is_file()
    assert (tmp_path / MARKER).read_text() == "ran"  # trusting the file ran the code it carries


def test_convert_refuses_without_trust_then_writes_the_safe_format(
    archive_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert convert_main([str(archive_run)]) == 2
    assert "--trust-pickle" in capsys.readouterr().err and not (archive_run / MODEL_FILE).exists()
    assert not (tmp_path / MARKER).exists()
    trusted, _ = load_agent(archive_run, trust_pickle=True)
    assert convert_main([str(archive_run), "--trust-pickle"]) == 0
    (tmp_path / MARKER).unlink()
    model, meta = load_agent(archive_run)  # the .pt now wins over the archive: nothing is unpickled
    assert not (tmp_path / MARKER).exists() and meta.model is not None
    env_kwargs = dict(meta.env_kwargs)
    assert _actions(model, env_kwargs) == _actions(trusted, env_kwargs)


def test_weights_that_are_not_tensors_are_refused(tmp_path: Path) -> None:
    env_kwargs = agent_env_kwargs(None, {}, TINY)
    model = new_model("maskable-ppo", make_env(TINY, env_kwargs), "mlp", 16, 0, 0)
    save_agent(model, _meta(env_kwargs), tmp_path)
    th.save({"step": np.int64(3)}, tmp_path / MODEL_FILE)  # a numpy scalar is a pickled object, not a tensor
    with pytest.raises(AgentError, match="not a file of weights"):
        load_agent(tmp_path)
    th.save({"policy.extra": th.zeros(1)}, tmp_path / MODEL_FILE)
    with pytest.raises(AgentError, match="do not fit"):
        load_agent(tmp_path)


def test_the_description_names_only_allowed_classes() -> None:
    from stable_baselines3.common.policies import BasePolicy

    for name in ("os:system", "builtins:exec", "subprocess:Popen", "torch:load", "agents"):
        with pytest.raises(AgentError, match="only classes of"):
            resolve_class(name)
    with pytest.raises(AgentError, match="not a BasePolicy"):
        resolve_class("torch.nn.modules.activation:ReLU", BasePolicy)
    with pytest.raises(AgentError, match="not a class"):
        resolve_class("agents.weights:save_weights")
    assert resolve_class("torch.nn.modules.activation:ReLU") is th.nn.ReLU


def test_policy_kwargs_classes_and_spaces_round_trip() -> None:
    from stable_baselines3 import PPO

    env = gym.make("CartPole-v1")
    model = PPO("MlpPolicy", env, policy_kwargs={"activation_fn": th.nn.ReLU, "net_arch": [8]}, device="cpu")
    spec = json.loads(json.dumps(model_spec(model)))
    assert spec["policy_kwargs"]["activation_fn"] == {"class": "torch.nn.modules.activation:ReLU"}
    again = rebuild_model(PPO, spec, model.policy.state_dict())
    assert again.policy.activation_fn is th.nn.ReLU
    box = spaces.Box(np.array([0.0, -np.inf]), np.array([1.0, np.inf]), dtype=np.float64)
    nested = spaces.Dict(
        {"a": box, "b": spaces.Discrete(5, start=1), "c": spaces.MultiDiscrete([2, 3]), "d": spaces.MultiBinary(4)}
    )
    assert space_from_json(json.loads(json.dumps(space_to_json(nested)))) == nested
    with pytest.raises(AgentError, match="unknown space type"):
        space_from_json({"type": "Graph"})
