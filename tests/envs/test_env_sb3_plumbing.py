"""SB3 plumbing on HetCluster-Tiny-v0: PPO and MaskablePPO train (finite losses) and act validly.

They check the plumbing (spaces, masks through ``gym.make``'s wrappers, flattening, finite losses), not
how well an agent learns in a few thousand steps.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.wrappers import FlattenObservation
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import get_action_masks
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from hetgym.experts import ExpertAgent, ExpertLabelWrapper


@pytest.fixture(autouse=True)
def one_torch_thread() -> Iterator[None]:
    """Small networks on a shared machine: threads only add contention."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_maskable_ppo_trains_with_finite_losses_and_respects_the_mask() -> None:
    venv = DummyVecEnv([lambda: gym.make("HetCluster-Tiny-v0", reward="jct")])
    model = MaskablePPO("MultiInputPolicy", venv, n_steps=512, batch_size=128, n_epochs=2, seed=0, device="cpu")
    model.learn(total_timesteps=2048)
    assert model.num_timesteps >= 2048
    losses = {k: v for k, v in model.logger.name_to_value.items() if "loss" in k}
    assert losses and all(math.isfinite(v) for v in losses.values())
    obs = venv.reset()
    for _ in range(300):
        masks = get_action_masks(venv)
        action, _ = model.predict(obs, action_masks=masks, deterministic=False)
        assert masks[0][action[0]]
        obs, _, _, infos = venv.step(action)
        assert not infos[0]["invalid_action"]


@pytest.mark.parametrize("codec", [pytest.param("multidiscrete", marks=pytest.mark.slow), "sequential"])
def test_ppo_trains_on_flattened_observations(codec: str) -> None:
    # Four slots keep SB3's MultiDiscrete distribution (one categorical per dimension) quick.
    env = FlattenObservation(gym.make("HetCluster-Tiny-v0", codec=codec, reward="jct", queue_slots=4))
    assert env.observation_space.shape is not None and len(env.observation_space.shape) == 1
    model = PPO("MlpPolicy", env, n_steps=512, batch_size=128, n_epochs=2, seed=0, device="cpu")
    model.learn(total_timesteps=2048)
    assert all(math.isfinite(v) for k, v in model.logger.name_to_value.items() if "loss" in k)
    obs, _ = env.reset(seed=0)
    for _ in range(100):
        action, _ = model.predict(obs, deterministic=True)
        assert env.action_space.contains(np.asarray(action, dtype=np.int64).reshape(env.action_space.shape))
        obs, _, term, trunc, _ = env.step(action)
        if term or trunc:
            break


@pytest.mark.slow
def test_maskable_ppo_and_expert_labels_in_spawned_subprocess_workers() -> None:
    venv = make_vec_env(
        "hetgym:HetCluster-Tiny-v0",
        n_envs=2,
        seed=0,
        vec_env_cls=SubprocVecEnv,
        vec_env_kwargs={"start_method": "spawn"},
        env_kwargs={"reward": "jct"},
        wrapper_class=ExpertLabelWrapper,
        wrapper_kwargs={"policy": "srtf"},
    )
    try:
        model = MaskablePPO("MultiInputPolicy", venv, n_steps=128, batch_size=64, n_epochs=1, seed=0, device="cpu")
        model.learn(total_timesteps=512)  # masks come from the workers through env_method("action_masks")
        agent = ExpertAgent("srtf", venv)  # reads the labels the workers computed
        obs = venv.reset()
        for _ in range(30):
            actions, _ = agent.predict(obs)
            masks = get_action_masks(venv)
            assert all(masks[i][actions[i]] for i in range(2))
            obs, _, _, infos = venv.step(actions)
            assert all(info["expert_exact"] for info in infos)
    finally:
        venv.close()
