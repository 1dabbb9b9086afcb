"""The ``-v1`` ids: the interface built for learning as defaults, experts exact in them, v0 unchanged."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import hetgym  # noqa: F401
from hetgym.envs import HetClusterConfig
from hetgym.envs.config import INTERFACES
from hetgym.experts import ExpertAgent, expert_env_kwargs
from hetgym.sim import Simulator, make_policy
from hetgym.sim.errors import UnknownNameError


def test_v1_ids_take_the_learning_interface_and_v0_keeps_its_defaults() -> None:
    v1 = gym.make("HetCluster-Tiny-v1").unwrapped.config
    assert (v1.codec, v1.decisions, v1.observation, v1.queue_slots) == ("jobwise", "on-change", "window-cursor", 32)
    v0 = gym.make("HetCluster-Tiny-v0").unwrapped.config
    assert (v0.codec, v0.decisions, v0.observation, v0.queue_slots) == ("sequential", "every-epoch", "window", 16)
    assert INTERFACES["v0"] == {}


def test_explicit_options_win_over_the_interface_and_round_trip() -> None:
    cfg = gym.make("HetCluster-Tiny-v1", codec="sequential", queue_slots=8).unwrapped.config
    assert (cfg.codec, cfg.queue_slots, cfg.observation) == ("sequential", 8, "window-cursor")
    assert HetClusterConfig.make(**cfg.to_kwargs()) == cfg


def test_policy_compat_still_widens_the_window_on_v1() -> None:
    cfg = gym.make("HetCluster-v1", policy_compat="dancer").unwrapped.config
    assert cfg.queue_slots == cfg.workload.num_jobs
    assert cfg.codec == "jobwise"


def test_unknown_interface_names_the_valid_ones() -> None:
    with pytest.raises(UnknownNameError, match="v1"):
        gym.make("HetCluster-Tiny-v0", interface="v9")


@pytest.mark.parametrize("policy", ["dancer", "elasticflow", "edf-admission", "srtf"])
def test_single_type_experts_act_exactly_in_tiny_v1(policy: str) -> None:
    env = gym.make("HetCluster-Tiny-v1", **expert_env_kwargs(policy))
    agent = ExpertAgent(policy, env)
    obs, _ = env.reset(seed=0)
    inexact = 0
    while True:
        action, _ = agent.predict(obs, deterministic=True)
        obs, _, terminated, truncated, info = env.step(action)
        inexact += int(info["committed"] and info.get("target_exact") is False)
        if terminated or truncated:
            break
    u = env.unwrapped
    direct = Simulator("tiny", u.jobs, config=u.sim_config).run(make_policy(policy))
    assert inexact == 0 and info["stop_reason"] == "done"
    got = u.result().jobs.set_index("job_id")["finish_s"].sort_index().to_numpy(dtype=float)
    want = direct.jobs.set_index("job_id")["finish_s"].sort_index().to_numpy(dtype=float)
    np.testing.assert_allclose(got, want, atol=1e-6, equal_nan=True)
