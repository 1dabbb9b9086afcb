"""The job-at-a-time codec: bounded epochs, masks, and the exact inverse map for one-type allocations."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import hetgym  # noqa: F401  (registers the ids)
from hetgym.envs.codecs import CODECS, JobwiseCodec
from hetgym.experts import ExpertAgent, expert_env_kwargs
from hetgym.sim import Simulator, make_policy


def test_jobwise_is_registered_and_passes_the_checkers() -> None:
    assert CODECS.get("jobwise") is JobwiseCodec
    for env_id in ("HetCluster-Tiny-v0", "HetCluster-v0"):
        env = gym.make(env_id, codec="jobwise")
        check_env(env.unwrapped, skip_render_check=True)
        sb3_check_env(env.unwrapped, warn=False)


def test_an_epoch_takes_at_most_k_plus_one_steps_whatever_the_agent_does() -> None:
    env = gym.make("HetCluster-Tiny-v0", codec="jobwise")
    k = env.unwrapped.config.queue_slots
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=1)
    per_epoch, longest, invalid_seen = 0, 0, False
    for _ in range(3000):
        # Half the time a valid action, half the time any action (masked-out ones count as 'keep').
        choices = np.flatnonzero(info["action_mask"]) if rng.random() < 0.5 else np.arange(env.action_space.n)
        _, _, term, trunc, info = env.step(int(rng.choice(choices)))
        invalid_seen |= info["invalid_action"]
        per_epoch += 1
        if info["committed"]:
            longest, per_epoch = max(longest, per_epoch), 0
        if term or trunc:
            _, info = env.reset()
    assert 1 <= longest <= k + 1
    assert invalid_seen


def test_the_done_action_commits_and_keep_leaves_a_running_job_alone() -> None:
    env = gym.make("HetCluster-Tiny-v0", codec="jobwise")
    codec = env.unwrapped.codec
    env.reset(seed=0)
    _, _, _, _, info = env.step(codec.done)
    assert info["committed"] and info["num_actions"] == 0
    assert codec.decode(codec.done)[0] == "done" and codec.decode(codec.keep)[0] == "keep"
    with pytest.raises(ValueError, match="jobwise action"):
        env.step(codec.n)


@pytest.mark.parametrize("policy", ["edf", "srtf", "dancer", "elasticflow", "tiresias", "gavel-mmf"])
def test_one_type_experts_act_exactly_through_jobwise(policy: str) -> None:
    env = gym.make("HetCluster-Tiny-v0", **{**expert_env_kwargs(policy), "codec": "jobwise"})
    agent = ExpertAgent(policy, env)
    obs, _ = env.reset(seed=2)
    k = env.unwrapped.config.queue_slots
    per_epoch = 0
    while True:
        action, _ = agent.predict(obs)
        obs, _, term, trunc, info = env.step(action)
        per_epoch += 1
        if info["committed"]:
            assert info["target_exact"], info["target_reasons"]
            assert per_epoch <= k + 1
            per_epoch = 0
        if term or trunc:
            break
    u = env.unwrapped
    direct = Simulator(u.cluster, u.jobs, config=u.sim_config).run(make_policy(policy))
    np.testing.assert_allclose(
        u.result().jobs.sort_values("job_id")["finish_s"],
        direct.jobs.sort_values("job_id")["finish_s"],
        atol=1e-6,
        equal_nan=True,
    )


def test_a_job_spread_over_types_is_reported_inexact() -> None:
    # HadarE forks copies over every idle node, across types: one type per job cannot express that.
    env = gym.make("HetCluster-Tiny-v0", **{**expert_env_kwargs("hadare"), "codec": "jobwise"})
    agent = ExpertAgent("hadare", env)
    obs, _ = env.reset(seed=0)
    reasons: list[str] = []
    for _ in range(400):
        action, _ = agent.predict(obs)
        obs, _, term, trunc, info = env.step(action)
        if info["committed"] and not info["target_exact"]:
            reasons += info["target_reasons"]
        if term or trunc:
            break
    assert any("one type" in r for r in reasons)


@pytest.mark.parametrize("observation", ["window", "window-levels"])
def test_slot_cursor_marks_the_job_being_decided_and_only_jobwise_has_it(observation: str) -> None:
    assert "slot_cursor" not in gym.make("HetCluster-Tiny-v0", observation=observation).observation_space.spaces
    env = gym.make("HetCluster-Tiny-v0", codec="jobwise", observation=observation)
    assert env.observation_space["slot_cursor"].shape == (env.unwrapped.config.queue_slots,)
    codec = env.unwrapped.codec
    obs, _ = env.reset(seed=0)
    seen = set()
    for _ in range(300):
        jobs = int(obs["slot_used"].sum())
        slot = codec.current_slot(env.unwrapped.state)
        expected = np.zeros_like(obs["slot_cursor"])
        if slot < jobs:
            expected[slot] = 1.0
        np.testing.assert_array_equal(obs["slot_cursor"], expected)
        seen.add(slot)
        obs, _, term, trunc, _ = env.step(codec.keep)
        assert not (term or trunc)
    assert {0, 1, 2} <= seen  # the cursor moved through several jobs of an epoch
