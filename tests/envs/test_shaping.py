"""Potential-based shaping: the terms telescope, so no policy gains or loses by them over an episode."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

import hetgym  # noqa: F401  (registers the ids)
from hetgym.envs.shaping import deadline_slack_potential
from hetgym.experts import ExpertAgent, expert_env_kwargs


def episode(policy: str, seed: int, **kwargs: Any) -> tuple[list[float], list[float], float]:
    env = gym.make("HetCluster-Tiny-v0", **{**expert_env_kwargs(policy), **kwargs})
    agent = ExpertAgent(policy, env)
    obs, _ = env.reset(seed=seed)
    u = env.unwrapped
    phi0 = deadline_slack_potential(u.view, u._statics)
    rewards, shaping = [], []
    while True:
        action, _ = agent.predict(obs)
        obs, reward, term, trunc, info = env.step(action)
        rewards.append(float(reward))
        shaping.append(float(info.get("shaping", 0.0)))
        if term or trunc:
            return rewards, shaping, phi0


@pytest.mark.parametrize("policy", ["fifo", "edf", "srtf"])
def test_undiscounted_shaping_sums_to_minus_the_first_potential(policy: str) -> None:
    shaped, terms, phi0 = episode(policy, 3, shaping="deadline-slack")
    plain, _, _ = episode(policy, 3)
    assert any(t != 0.0 for t in terms)
    assert sum(terms) == pytest.approx(-phi0, abs=1e-9)
    assert sum(shaped) == pytest.approx(sum(plain) - phi0, abs=1e-9)  # the same for every policy


def test_shaping_moves_the_signal_to_the_decisions() -> None:
    # With shaping, some step before a job's deadline already reports that it can no longer be met.
    _, terms, _ = episode("fifo", 0, shaping="deadline-slack")
    assert min(terms) <= -2.0  # a job turning from can-meet (+1) to cannot (-1) in one interval


def test_bad_shaping_settings_are_refused() -> None:
    with pytest.raises(Exception, match="deadline-slack"):
        gym.make("HetCluster-Tiny-v0", shaping="slack")
    with pytest.raises(Exception, match="shaping_gamma"):
        gym.make("HetCluster-Tiny-v0", shaping="deadline-slack", shaping_gamma=1.5)
