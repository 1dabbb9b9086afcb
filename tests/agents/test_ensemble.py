"""EnsembleAgent: the mean of its members' masked action distributions, SB3's predict protocol, and
``hetgym evaluate --ensemble``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
import torch as th

import hetgym  # noqa: F401
from agents.args import BCArgs
from agents.bc import new_model
from agents.bc import train as bc_train
from agents.common import AgentError
from agents.ensemble import EnsembleAgent
from agents.set_policy import kind_first_argmax
from hetgym.cli import main

TINY = "HetCluster-Tiny-v1"


def _randomised(seed: int, arch: str = "set", env_id: str = TINY, decoding: str | None = None) -> Any:
    env = gym.make(env_id)
    model = new_model("maskable-ppo", env, arch, 16, 0, seed=seed, decoding=decoding)
    gen = th.Generator().manual_seed(seed)
    with th.no_grad():
        for p in model.policy.parameters():
            p.copy_(th.randn(p.shape, generator=gen) * 0.3)
    return model


def _member_probs(model: Any, obs: dict[str, np.ndarray], mask: np.ndarray) -> np.ndarray:
    obs_t, _ = model.policy.obs_to_tensor(obs)
    with th.no_grad():
        dist = model.policy.get_distribution(obs_t, action_masks=mask[None])
    return dist.distribution.probs[0].numpy()


def _states(n: int = 25) -> list[tuple[dict[str, np.ndarray], np.ndarray]]:
    env = gym.make(TINY)
    obs, info = env.reset(seed=2)
    out = []
    keep = env.unwrapped.codec.keep  # type: ignore[attr-defined]
    for _ in range(n):
        mask = np.asarray(info["action_mask"], dtype=bool)
        out.append((obs, mask))
        obs, _, term, trunc, info = env.step(keep if mask[keep] else int(np.flatnonzero(mask)[0]))
        assert not (term or trunc)
    return out


def test_the_ensemble_acts_on_the_mean_of_its_members_masked_probabilities() -> None:
    a, b = _randomised(0), _randomised(1)
    ens = EnsembleAgent([a, b])
    for obs, mask in _states():
        mean = (_member_probs(a, obs, mask) + _member_probs(b, obs, mask)) / 2
        probs = ens.action_probabilities(obs, mask)[0]
        np.testing.assert_allclose(probs, mean, atol=1e-6)
        assert probs[~mask].sum() == 0 and probs.sum() == pytest.approx(1.0)
        action, state = ens.predict(obs, deterministic=True, action_masks=mask)
        assert state is None and action == int(np.argmax(mean)) and mask[action]
        sampled, _ = ens.predict(obs, deterministic=False, action_masks=mask)
        assert mask[sampled]
    # A batch of observations gives a batch of actions.
    (o1, m1), (o2, m2) = _states(2)
    batch = {k: np.stack([o1[k], o2[k]]) for k in o1}
    actions, _ = ens.predict(batch, deterministic=True, action_masks=np.stack([m1, m2]))
    assert actions.tolist() == [ens.predict(o, deterministic=True, action_masks=m)[0] for o, m in ((o1, m1), (o2, m2))]


def test_an_ensemble_of_one_model_twice_acts_as_the_model_and_kind_first_decodes_the_mean() -> None:
    a = _randomised(3)
    twice = EnsembleAgent([a, a])
    kind_first = EnsembleAgent([a, _randomised(4)], decoding="kind-first")
    layout = a.policy.slot_layout
    num_set = layout.num_types * (layout.num_levels - 1) * layout.num_modes
    for obs, mask in _states():
        own, _ = a.predict(obs, deterministic=True, action_masks=mask)
        assert twice.predict(obs, deterministic=True, action_masks=mask)[0] == int(own)
        logits = th.as_tensor(np.log(np.maximum(kind_first.action_probabilities(obs, mask), 1e-300)))
        expected = int(kind_first_argmax(logits.masked_fill(~th.as_tensor(mask[None]), -1e8), num_set)[0])
        assert kind_first.predict(obs, deterministic=True, action_masks=mask)[0] == expected


def test_bad_ensembles_and_calls_are_refused() -> None:
    a = _randomised(0)
    with pytest.raises(AgentError, match="at least two"):
        EnsembleAgent([a])
    with pytest.raises(AgentError, match="another space"):
        EnsembleAgent([a, _randomised(1, env_id="HetCluster-Tiny-v0", arch="mlp")])
    with pytest.raises(AgentError, match="decode differently"):
        EnsembleAgent([a, _randomised(1, decoding="kind-first")])
    mlp = _randomised(1, arch="mlp")
    with pytest.raises(AgentError, match="set-network members"):
        EnsembleAgent([mlp, _randomised(2, arch="mlp")], decoding="kind-first")
    with pytest.raises(AgentError, match="unknown decoding"):
        EnsembleAgent([a, _randomised(1)], decoding="vote")
    ens = EnsembleAgent([a, _randomised(1)])
    ((obs, mask),) = _states(1)
    with pytest.raises(AgentError, match="needs action_masks"):
        ens.predict(obs)
    with pytest.raises(AgentError, match="action mask of shape"):
        ens.predict(obs, action_masks=mask[:-1])
    with pytest.raises(AgentError, match="allows no action"):
        ens.predict(obs, action_masks=np.zeros_like(mask))


def test_evaluate_ensemble_scores_the_members_as_one_agent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = []
    for seed in (0, 1):
        args = BCArgs(
            env_id=TINY,
            teacher="edf",
            train_seeds="0-1",
            val_seeds="100",
            eval_seeds="",
            epochs=1,
            hidden=16,
            seed=seed,
            out_dir=str(tmp_path / "runs"),
            run_name=f"clone{seed}",
        )
        runs.append(str(bc_train(args).path))
    out = tmp_path / "ev"
    argv = ["evaluate", *runs, "--ensemble", "--experts", "none", "--seeds", "1000", "--no-plots", "--no-progress"]
    assert main([*argv, "--out", str(out)]) == 0
    table = pd.read_csv(out / "evaluation_runs.csv")
    assert table["policy"].tolist() == ["ensemble of bc(edf) + bc(edf)'"] and table["steps"].iloc[0] > 0
    assert main([*argv, "--labels", "pair", "--out", str(tmp_path / "ev2")]) == 0
    assert pd.read_csv(tmp_path / "ev2" / "evaluation_runs.csv")["policy"].tolist() == ["pair"]
    capsys.readouterr()
    assert main(["evaluate", runs[0], "--ensemble", "--experts", "none"]) == 2
    assert "--ensemble needs at least two MODELs" in capsys.readouterr().err
