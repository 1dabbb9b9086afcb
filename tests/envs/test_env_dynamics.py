"""Episode mechanics of HetCluster-v0: draft edits, commits, the action cap, rewards, episode end, rendering."""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from hetgym.envs import HetClusterEnv
from hetgym.envs.env import WALL_CLOCK_METRICS
from hetgym.envs.state import slack_s
from hetgym.experts import ExpertAgent
from hetgym.sim import Simulator, make_policy


def run_expert(env: gym.Env, policy: str, seed: int) -> tuple[list[float], list[dict[str, Any]]]:
    agent = ExpertAgent(policy, env)
    obs, info = env.reset(seed=seed)
    rewards, infos = [], []
    while True:
        action, _ = agent.predict(obs)
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(float(reward))
        infos.append(info)
        if terminated or truncated:
            return rewards, infos


def test_edits_do_not_advance_time_and_commit_does() -> None:
    env = HetClusterEnv(scenario="tiny")
    obs, info = env.reset(seed=0)
    codec = env.codec
    now, epoch = info["now_s"], info["epoch"]
    view = env.view
    assert view is not None and len(view.jobs) == 1
    # Slot 0 gets 1 V100 (type 0), then 2; nothing moves in simulated time.
    level_1, level_2 = env.levels.index(1), env.levels.index(2)
    for level in (level_1, level_2):
        action = codec.set_action(0, 0, level)
        assert info["action_mask"][action]
        obs, reward, _, _, info = env.step(action)
        assert (info["now_s"], info["epoch"], info["committed"], reward) == (now, epoch, False, 0.0)
        assert info["reward_components"]["dt_s"] == 0.0
    assert obs["job_alloc"][0] == pytest.approx(2 / 4)
    assert obs["cluster_free"][0] == pytest.approx(2 / 4)
    assert env.draft_allocation().jobs[view.jobs[0].job_id].as_dict() == {"v100": 2}
    obs, reward, _term, _trunc, info = env.step(codec.commit)
    assert info["committed"] and info["now_s"] > now and info["epoch"] == epoch + 1
    assert info["reward_components"]["dt_s"] == pytest.approx(info["now_s"] - now)
    job = env.view.job(view.jobs[0].job_id) if view.jobs[0].job_id in env.view.job_index else None
    if job is not None:
        assert job.allocation.as_dict() == {"v100": 2}


def test_masked_actions_are_ignored_and_flagged() -> None:
    env = HetClusterEnv(scenario="tiny", invalid_action_penalty=0.5)
    _, info = env.reset(seed=0)
    bad = int(np.flatnonzero(~info["action_mask"])[0])
    before = env.draft_allocation()
    _obs, reward, _term, _trunc, info = env.step(bad)
    assert info["invalid_action"] and not info["committed"] and reward == -0.5
    assert info["reward_components"]["invalid"] == 1.0
    assert env.draft_allocation() == before
    with pytest.raises(ValueError, match="integer in"):
        env.step(env.action_space.n)


def test_the_per_epoch_cap_commits() -> None:
    env = HetClusterEnv(scenario="tiny", max_actions_per_epoch=3)
    _, info = env.reset(seed=0)
    epoch = info["epoch"]
    rng = np.random.default_rng(0)
    for i in range(3):
        valid = np.flatnonzero(info["action_mask"][:-1])
        _obs, _reward, _term, _trunc, info = env.step(int(rng.choice(valid)))
        assert info["committed"] == (i == 2)
    assert info["epoch"] == epoch + 1 and info["num_actions"] == 0
    # The default cap leaves room for any allocation of the window: K*(T+2)+1.
    assert HetClusterEnv(scenario="tiny").max_actions == 16 * (2 + 2) + 1


def test_random_agent_never_exceeds_the_cap() -> None:
    env = gym.make("HetCluster-v0", queue_slots=4)
    cap = env.unwrapped.max_actions
    rng = np.random.default_rng(1)
    obs, info = env.reset(seed=1)
    in_epoch = 0
    for _ in range(600):
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, _reward, _term, _trunc, info = env.step(action)
        in_epoch = 0 if info["committed"] else in_epoch + 1
        assert in_epoch < cap
        assert obs in env.observation_space


def test_window_is_most_urgent_first_with_the_rest_as_aggregates() -> None:
    env = HetClusterEnv(scenario="default", queue_slots=2)
    obs, _ = env.reset(seed=0)
    for _ in range(400):
        if len(env.state.outside) >= 2:
            break
        obs, *_ = env.step(env.codec.commit)  # commit at once: jobs pile up while nothing runs
    state = env.state
    assert len(state.jobs) == 2 and len(state.outside) >= 2
    slacks = state.slacks_s
    assert slacks == sorted(slacks)
    outside = [slack_s(j, env._statics.get(j).best_rate, env.view.now_s) for j in state.outside]
    assert min(outside) >= max(slacks)
    assert obs["queue"][1] == pytest.approx(len(state.outside) / (len(state.outside) + 2))
    assert obs["queue"][2] > 0  # their requested GPUs


def test_termination_and_final_metrics_match_the_simulator() -> None:
    env = gym.make("HetCluster-Tiny-v0")
    _rewards, infos = run_expert(env, "srtf", seed=4)
    last = infos[-1]
    assert last["stop_reason"] == "done"
    assert not any(k in last["metrics"] for k in WALL_CLOCK_METRICS)
    u = env.unwrapped
    direct = Simulator(u.cluster, u.jobs, config=u.sim_config).run(make_policy("srtf"), ticks=True).metrics
    for key, value in last["metrics"].items():
        assert value == direct[key] or (math.isnan(value) and math.isnan(direct[key])), key
    with pytest.raises(Exception, match="reset"):
        env.step(0)


@pytest.mark.parametrize("reward", ["deadline", "jct", "makespan", "utilisation"])
def test_episode_returns_match_the_metrics(reward: str) -> None:
    env = gym.make("HetCluster-v0", reward=reward, workload={"num_jobs": 40, "tightness": 0.5})
    rewards, infos = run_expert(env, "edf", seed=2)
    m = infos[-1]["metrics"]
    total = sum(rewards)
    comps = [i["reward_components"] for i in infos]
    assert m["num_unfinished"] == 0 and m["num_rejected"] == 0
    if reward == "deadline":
        met = sum(c["met"] for c in comps)
        missed = sum(c["missed"] for c in comps)
        assert met + missed == m["num_with_deadline"]
        assert met == pytest.approx(m["dsr"] * m["num_with_deadline"])
        assert total == met - missed
        assert 0 < met < m["num_with_deadline"]  # both kinds of events happen in this scenario
    elif reward == "jct":
        assert total == pytest.approx(-m["jct_mean_s"] * m["num_completed"] / 3600.0, rel=1e-9)
    elif reward == "makespan":
        assert total == pytest.approx(-m["makespan_s"] / 3600.0, rel=1e-9)
    else:
        expected = -(1.0 - m["utilisation"]) * m["makespan_s"] / 3600.0
        assert total == pytest.approx(expected, rel=1e-6)


def test_rejections_and_deadline_misses_cost_once() -> None:
    env = gym.make("HetCluster-Tiny-v0")
    rewards, infos = run_expert(env, "edf-admission", seed=0)
    m = infos[-1]["metrics"]
    assert m["num_rejected"] > 0
    # +1 per deadline met, -1 per deadline lost: the sum is (2 x DSR - 1) x jobs with deadlines.
    assert sum(rewards) == pytest.approx((2 * m["dsr"] - 1) * m["num_with_deadline"])
    assert sum(i["reward_components"]["rejected"] for i in infos) == m["num_rejected"]


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [({"max_time_s": 3 * 3600.0}, "max_time"), ({"max_decisions": 25}, "max_decisions")],
)
def test_caps_truncate(kwargs: dict[str, Any], reason: str) -> None:
    env = gym.make("HetCluster-Tiny-v0", **kwargs)
    _rewards, infos = run_expert(env, "fifo", seed=0)
    last = infos[-1]
    assert last["stop_reason"] == reason
    assert last["metrics"]["num_unfinished"] + last["metrics"]["num_not_arrived"] > 0
    assert (last["reward_components"]["unfinished_s"] > 0) == (last["metrics"]["num_unfinished"] > 0)
    if reason == "max_decisions":
        assert last["metrics"]["num_decisions"] == 25


def test_an_agent_that_never_allocates_ends_stalled_and_pays_for_it() -> None:
    env = gym.make("HetCluster-Tiny-v0", reward="jct", sim={"stall_epochs": 5})
    _, info = env.reset(seed=0)
    commit = env.action_space.n - 1
    total, infos = 0.0, []
    for _ in range(10_000):
        _, reward, terminated, truncated, info = env.step(commit)
        total += float(reward)
        infos.append(info)
        if terminated or truncated:
            break
    assert terminated and not truncated and info["stop_reason"] == "stalled"
    assert info["metrics"]["num_unfinished"] == 12
    comps = info["reward_components"]
    assert comps["unfinished_s"] > 0 and comps["unfinished_max_s"] <= comps["unfinished_s"]
    job_s = sum(i["reward_components"]["job_s"] for i in infos)
    assert total == pytest.approx(-(job_s + comps["unfinished_s"]) / 3600.0)
    # Doing nothing costs more than a plain scheduler on the same workload.
    srtf_rewards, _ = run_expert(gym.make("HetCluster-Tiny-v0", reward="jct"), "srtf", seed=0)
    assert total < sum(srtf_rewards)


def test_render_modes() -> None:
    env = gym.make("HetCluster-Tiny-v0", render_mode="ansi")
    env.reset(seed=0)
    agent = ExpertAgent("srtf", env)
    obs, _ = env.reset(seed=0)
    for _ in range(30):
        obs, *_ = env.step(agent.predict(obs)[0])
    text = env.render()
    assert isinstance(text, str) and "v100" in text and "k80" in text and "slot" in text
    pic_env = gym.make("HetCluster-Tiny-v0", render_mode="rgb_array")
    agent = ExpertAgent("srtf", pic_env)
    obs, _info = pic_env.reset(seed=0)
    blank = pic_env.render()
    for _ in range(200):
        obs, _, term, trunc, _ = pic_env.step(agent.predict(obs)[0])
        if term or trunc:
            break
    img = pic_env.render()
    assert isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    assert img.shape == blank.shape
    coloured = (img != 255).any(axis=2) & (img != 60).any(axis=2)
    assert coloured.mean() > 0.05  # jobs occupy GPUs in the picture
    with pytest.raises(Exception, match="render mode"):
        HetClusterEnv(render_mode="human", scenario="tiny")
