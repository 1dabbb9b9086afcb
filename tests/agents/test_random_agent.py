"""``RandomMaskedAgent`` and ``hetgym evaluate --random`` / ``--algo --env-id`` (any SB3 model, no agent.json)."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import hetgym  # noqa: F401  (registers the ids)
from agents.common import AgentError
from agents.random_agent import RandomMaskedAgent
from hetgym.cli import main


def test_discrete_actions_are_drawn_among_the_valid_ones_only() -> None:
    agent = RandomMaskedAgent(gym.spaces.Discrete(5), seed=0)
    mask = np.array([False, True, False, True, False])
    drawn = {agent.predict(None, action_masks=mask)[0] for _ in range(200)}
    assert drawn == {1, 3}  # both valid actions come up, nothing else does


def test_multidiscrete_and_batched_masks() -> None:
    agent = RandomMaskedAgent(gym.spaces.MultiDiscrete([2, 3]), seed=1)
    mask = np.array([False, True, True, False, True])  # dim 0: {1}; dim 1: {0, 2}
    for _ in range(50):
        action, state = agent.predict(None, action_masks=mask)
        assert state is None and action[0] == 1 and action[1] in (0, 2)
    batch, _ = agent.predict(None, action_masks=np.stack([mask, mask]))
    assert batch.shape == (2, 2)


def test_same_seed_same_choices_and_clear_errors() -> None:
    mask = np.ones(7, dtype=bool)
    a, b = RandomMaskedAgent(gym.spaces.Discrete(7), seed=3), RandomMaskedAgent(gym.spaces.Discrete(7), seed=3)
    assert [a.predict(None, action_masks=mask)[0] for _ in range(20)] == [
        b.predict(None, action_masks=mask)[0] for _ in range(20)
    ]
    with pytest.raises(AgentError, match="needs action_masks"):
        a.predict(None)
    with pytest.raises(AgentError, match="shape"):
        a.predict(None, action_masks=np.ones(3, dtype=bool))
    with pytest.raises(AgentError, match="Discrete or MultiDiscrete"):
        RandomMaskedAgent(gym.spaces.Box(0, 1, (2,)))


def test_evaluate_random_beside_an_expert(tmp_path: Path) -> None:
    out = tmp_path / "ev"
    argv = ["evaluate", "--random", "--experts", "edf", "--preset", "tiny", "--seeds", "1000", "--out", str(out)]
    assert main([*argv, "--no-plots", "--no-progress"]) == 0
    runs = pd.read_csv(out / "evaluation_runs.csv")
    assert set(runs["policy"]) == {"random", "edf"}
    assert int(runs.loc[runs["policy"] == "random", "steps"].iloc[0]) > 0


def test_evaluate_any_sb3_model_with_algo_and_env(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sb3_contrib import MaskablePPO

    env = gym.make("HetCluster-Tiny-v1")
    model_path = tmp_path / "external.zip"
    MaskablePPO("MultiInputPolicy", env, n_steps=64, batch_size=32, seed=0, device="cpu").save(model_path)
    out = tmp_path / "ev"
    argv = ["evaluate", str(model_path), "--algo", "maskable-ppo", "--env-id", "HetCluster-Tiny-v1"]
    # An SB3 archive is unpickled when loaded: refused unless trusted.
    assert main([*argv, "--experts", "none", "--no-progress", "--out", str(tmp_path / "refused")]) == 2
    assert "--trust-pickle" in capsys.readouterr().err and not (tmp_path / "refused").exists()
    argv.append("--trust-pickle")
    code = main([*argv, "--env", "reward=deadline", "--experts", "none", "--seeds", "1000", "--out", str(out),
                 "--no-plots", "--no-progress", "--labels", "mine"])  # fmt: skip
    assert code == 0
    runs = pd.read_csv(out / "evaluation_runs.csv")
    assert list(runs["policy"]) == ["mine"] and runs["steps"].iloc[0] > 0
    # Without --algo the missing agent.json is named, with the fix.
    assert main(["evaluate", str(model_path), "--experts", "none", "--no-progress", "--out", str(tmp_path / "x")]) == 2
    assert "--algo ppo --env-id" in capsys.readouterr().err
    assert main(["evaluate", "--env-id", "HetCluster-Tiny-v1", "--experts", "edf", "--no-progress"]) == 2
    assert "give its --algo too" in capsys.readouterr().err
