"""Test helper: one expert episode through the env under the expert's own physics, every step recorded."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

import hetgym  # noqa: F401  (registers the ids)
from hetgym.experts import ExpertAgent, expert_env_kwargs


def expert_episode(
    policy: str, seed: int, env_id: str = "HetCluster-Tiny-v0", **env_kwargs: Any
) -> tuple[gym.Env, list[float], list[dict[str, Any]]]:
    """``ExpertAgent(policy)`` through ``gym.make(env_id, **expert_env_kwargs(policy), **env_kwargs)``.

    Returns the env (at the episode's end), each step's reward and each step's ``info``; after a commit the
    info also says whether the agent is now asked at a round tick after which nothing changed
    (``asked_at_quiet_tick``).
    """
    env = gym.make(env_id, **{**expert_env_kwargs(policy), **env_kwargs})
    agent = ExpertAgent(policy, env)
    obs, _ = env.reset(seed=seed)
    rewards: list[float] = []
    infos: list[dict[str, Any]] = []
    while True:
        action, _ = agent.predict(obs)
        obs, reward, term, trunc, info = env.step(action)
        rewards.append(float(reward))
        view = env.unwrapped.view
        if info["committed"] and view is not None:
            info["asked_at_quiet_tick"] = (
                view.is_tick and not view.arrived and not view.completed and not env.unwrapped.quiet.changed
            )
        infos.append(info)
        if term or trunc:
            return env, rewards, infos
