"""FlatObservation gives FlattenObservation's vector and space, step for step, and refuses wrappers it would skip."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import FlattenObservation, TransformReward

import hetgym  # noqa: F401  (registers the ids)
from hetgym.envs.env import HetClusterEnv
from hetgym.envs.flat import FlatObservation
from hetgym.sim.errors import HetgymError


@pytest.mark.parametrize(
    ("env_id", "kwargs", "steps"),
    [
        ("HetCluster-v1", {}, 400),
        ("HetCluster-Tiny-v1", {"max_decisions": 30}, 300),  # episodes end: resets are compared too
        ("HetCluster-Tiny-v1", {"modes": ("sync", "fork"), "max_decisions": 30}, 200),
        ("HetCluster-v0", {"observation": "window-nodes"}, 150),
    ],
)
def test_equals_flatten_observation(env_id: str, kwargs: dict[str, Any], steps: int) -> None:
    flat = FlatObservation(gym.make(env_id, **kwargs))
    ref = FlattenObservation(gym.make(env_id, **kwargs))
    assert flat.observation_space == ref.observation_space
    obs, info = flat.reset(seed=5)
    expected, ref_info = ref.reset(seed=5)
    rng = np.random.default_rng(5)
    resets = 0
    for i in range(steps):
        assert obs.dtype == expected.dtype == np.float32 and np.array_equal(obs, expected), i
        assert flat.observation_space.contains(obs)
        assert np.array_equal(flat.action_masks(), info["action_mask"])
        assert np.array_equal(info["action_mask"], ref_info["action_mask"])
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, reward, terminated, truncated, info = flat.step(action)
        expected, ref_reward, ref_terminated, ref_truncated, ref_info = ref.step(action)
        assert (reward, terminated, truncated) == (ref_reward, ref_terminated, ref_truncated)
        if terminated or truncated:
            resets += 1
            obs, info = flat.reset()
            expected, ref_info = ref.reset()
    if "max_decisions" in kwargs:
        assert resets > 0


def test_arrays_are_fresh_every_step() -> None:
    env = FlatObservation(gym.make("HetCluster-Tiny-v1"))
    first, info = env.reset(seed=0)
    kept = first.copy()
    second, *_ = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    assert not np.shares_memory(first, second)
    assert np.array_equal(first, kept)


def test_bare_env_is_accepted() -> None:
    env = FlatObservation(HetClusterEnv(scenario="tiny", interface="v1"))
    obs, _ = env.reset(seed=1)
    assert obs.shape == env.observation_space.shape


def test_refuses_a_wrapper_it_would_skip() -> None:
    with pytest.raises(HetgymError, match="TransformReward"):
        FlatObservation(TransformReward(gym.make("HetCluster-Tiny-v1"), lambda r: 2 * r))


def test_step_before_reset_is_refused() -> None:
    env = FlatObservation(gym.make("HetCluster-Tiny-v1"))
    with pytest.raises(HetgymError, match="reset"):
        env.step(0)
