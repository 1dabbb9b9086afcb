"""The slot policy network: logits laid out as the codecs number actions, the ordered head's distribution,
weights that move between PPO and MaskablePPO, and the two-stage deterministic decoding."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO

import hetgym  # noqa: F401
from agents.bc import forward_logits, new_model
from agents.policies import SlotLayout, policy_spec, two_stage_argmax


def _obs(env: gym.Env[Any, Any], steps: int = 0, seed: int = 0) -> tuple[dict[str, np.ndarray], np.ndarray]:
    obs, info = env.reset(seed=seed)
    for _ in range(steps):
        obs, _, term, trunc, info = env.step(env.unwrapped.noop_action())  # type: ignore[attr-defined]
        assert not (term or trunc)
    return obs, np.asarray(info["action_mask"], dtype=bool)


def _logits(model: Any, obs: dict[str, np.ndarray]) -> th.Tensor:
    with th.no_grad():
        logits, _ = forward_logits(model.policy, {k: th.as_tensor(v[None]) for k, v in obs.items()})
    return logits[0]


ENV_VARIANTS = [
    {"codec": "sequential"},
    {"codec": "sequential", "reward": "jct"},  # no reject actions
    {"codec": "sequential", "modes": ["sync", "fork"]},
    {"codec": "multidiscrete"},
    {"codec": "multidiscrete", "modes": ["sync", "proportional", "fork"]},
]


@pytest.mark.parametrize("arch", ["slot", "slot-flat"])
@pytest.mark.parametrize("variant", ENV_VARIANTS, ids=lambda v: "-".join(str(x) for x in v.values()))
def test_logits_cover_the_action_space_and_masked_prediction_is_valid(arch: str, variant: dict[str, Any]) -> None:
    env = gym.make("HetCluster-Tiny-v0", observation="window-levels", **variant)
    model = new_model("maskable-ppo", env, arch, 32, 0, seed=0)
    layout = SlotLayout.of_env(env)
    space = env.action_space
    n = int(space.n) if isinstance(space, gym.spaces.Discrete) else int(np.sum(space.nvec))
    assert layout.num_logits == n
    obs, mask = _obs(env, steps=3)
    logits = _logits(model, obs)
    assert logits.shape == (n,) and th.isfinite(logits).all()
    action, _ = model.predict(obs, deterministic=True, action_masks=mask)
    if isinstance(space, gym.spaces.Discrete):
        assert mask[int(action)]
    else:
        offsets = np.concatenate([[0], np.cumsum(space.nvec)[:-1]])
        assert mask[offsets + np.asarray(action)].all()


@pytest.mark.parametrize("variant", ENV_VARIANTS[:3], ids=["reject", "no-reject", "modes"])
def test_ordered_head_is_a_distribution_over_valid_actions(variant: dict[str, Any]) -> None:
    env = gym.make("HetCluster-v0", observation="window-levels", queue_slots=8, **variant)
    model = new_model("maskable-ppo", env, "slot", 32, 0, seed=1)
    # Open the gates a little so every kind of action has visible probability.
    with th.no_grad():
        model.policy.action_net.close_gates(0.0)
    obs, mask = _obs(env, steps=25, seed=2)
    logp = _logits(model, obs)
    assert float(th.logsumexp(logp, 0)) == pytest.approx(0.0, abs=1e-5)
    probs = logp.exp().numpy()
    # Every valid action has probability; invalid ones together have next to none.
    assert (probs[mask] > 0).all()
    assert probs[~mask].sum() < 1e-3 * probs.sum() + 1e-6
    # The commit's probability is the chance that no gate fires.
    assert probs[-1] == pytest.approx(np.exp(float(logp[-1])))


def test_untrained_ordered_policy_mostly_commits() -> None:
    env = gym.make("HetCluster-v0", observation="window-levels")
    model = new_model("maskable-ppo", env, "slot", 32, 0, seed=0)
    obs, _ = _obs(env, steps=10)
    assert float(_logits(model, obs)[-1].exp()) > 0.3


@pytest.mark.parametrize("arch", ["slot", "mlp"])
def test_weights_move_between_maskable_ppo_and_ppo(arch: str) -> None:
    env = gym.make("HetCluster-Tiny-v0", observation="window-levels")
    maskable = new_model("maskable-ppo", env, arch, 32, 0, seed=0)
    plain = new_model("ppo", env, arch, 32, 0, seed=5)
    assert set(maskable.policy.state_dict()) == set(plain.policy.state_dict())
    plain.policy.load_state_dict(maskable.policy.state_dict())
    obs, _ = _obs(env, steps=2)
    th.testing.assert_close(_logits(maskable, obs), _logits(plain, obs))


def test_save_and_load_keep_the_network(tmp_path: Any) -> None:
    env = gym.make("HetCluster-Tiny-v0", observation="window-levels")
    cls, kwargs = policy_spec(env, "slot", hidden=16, attention_layers=1)
    model = MaskablePPO(cls, env, policy_kwargs=kwargs, seed=0, device="cpu")
    model.save(tmp_path / "m.zip")
    again = MaskablePPO.load(tmp_path / "m.zip", device="cpu")
    obs, _ = _obs(env, steps=2)
    th.testing.assert_close(_logits(model, obs), _logits(again, obs))
    assert again.policy.slot_attention_layers == 1 and again.policy.slot_head == "ordered"
    ppo_cls, ppo_kwargs = policy_spec(env, "slot", maskable=False, hidden=16, attention_layers=1)
    assert PPO(ppo_cls, env, policy_kwargs=ppo_kwargs, device="cpu").policy.load_state_dict(model.policy.state_dict())


def test_two_stage_argmax() -> None:
    # Editing is likelier (0.6) than committing (0.4), but no single edit beats the commit.
    probs = th.tensor([[0.2, 0.15, 0.25, 0.4], [0.05, 0.05, 0.3, 0.6]])
    out = two_stage_argmax(probs.log())
    assert out.tolist() == [2, 3]
    assert probs.log().argmax(dim=1).tolist() == [3, 3]  # the flat argmax commits in both


def test_unknown_architecture_and_bad_layout_are_refused() -> None:
    env = gym.make("HetCluster-Tiny-v0")
    with pytest.raises(ValueError, match="architecture"):
        policy_spec(env, "transformer")
    with pytest.raises(ValueError, match="levels"):
        SlotLayout("sequential", 4, 2, 3, True, 1, capacity=(4, 4), levels=(0, 1))
