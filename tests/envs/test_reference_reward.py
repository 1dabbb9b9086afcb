"""Rewards relative to a reference policy: an episode's return is the agent's minus the reference's."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from expert_episodes import expert_episode

import hetgym  # noqa: F401  (registers the ids)

REWARDS = ("deadline", "jct", "makespan", "utilisation")


def episode(policy: str, seed: int, **kwargs: Any) -> tuple[list[float], list[dict[str, Any]]]:
    _, rewards, infos = expert_episode(policy, seed, **kwargs)
    return rewards, infos


@pytest.mark.parametrize("reward", REWARDS)
def test_the_reference_itself_scores_zero_at_every_step(reward: str) -> None:
    rewards, infos = episode("edf", 3, reward=reward, reward_baseline="edf")
    assert any(i["reference_reward"] != 0.0 for i in infos)
    np.testing.assert_allclose(rewards, 0.0, atol=1e-9)


@pytest.mark.parametrize("reward", REWARDS)
def test_a_return_is_the_agents_minus_the_references(reward: str) -> None:
    relative, _ = episode("fifo", 7, reward=reward, reward_baseline="srtf")
    fifo, _ = episode("fifo", 7, reward=reward)
    # srtf's own return on the same workload, in its own physics (same round and placer as fifo's here).
    srtf, _ = episode("srtf", 7, reward=reward)
    assert sum(relative) == pytest.approx(sum(fifo) - sum(srtf), rel=1e-9, abs=1e-9)
    assert sum(fifo) != pytest.approx(sum(srtf))  # the two policies do differ on this workload


def test_an_unknown_reference_is_refused_naming_the_nearest() -> None:
    with pytest.raises(Exception, match="srtf"):
        gym.make("HetCluster-Tiny-v0", reward_baseline="srft")
