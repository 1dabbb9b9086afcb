"""The ``window-cursor`` observation: the cursor job's rows, what it may take, per-type pressure."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env

import hetgym  # noqa: F401

KEYS = ("cursor_job", "cursor_type", "cursor_level_rate", "cursor_level_slack", "cursor_avail", "later_held")


def test_checker_passes_and_the_cursor_rows_are_the_cursor_slots() -> None:
    env = gym.make("HetCluster-Tiny-v1")
    check_env(env.unwrapped, skip_render_check=True)
    u = env.unwrapped
    t = len(u.state.types)
    obs, info = env.reset(seed=3)
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(200):
        cursor = np.flatnonzero(obs["slot_cursor"])
        if cursor.size:
            k = int(cursor[0])
            assert k == u.state.num_actions
            tc = obs["cursor_level_rate"].size
            np.testing.assert_array_equal(obs["cursor_level_rate"], obs["job_level_rate"][k * tc : (k + 1) * tc])
            np.testing.assert_array_equal(obs["cursor_level_slack"], obs["job_level_slack"][k * tc : (k + 1) * tc])
            np.testing.assert_array_equal(obs["cursor_type"][:t], obs["job_speed"][k * t : (k + 1) * t])
            assert obs["cursor_job"][0] == 1.0  # slot_used of the cursor's slot
            n = len(u.state.jobs)
            avail = u.state.free + u.state.draft[k] + u.state.draft[k + 1 : n].sum(axis=0)
            np.testing.assert_allclose(obs["cursor_avail"], np.minimum(1, avail / u.state.capacity), rtol=1e-6)
            assert obs["later_jobs"][0] == (n - k - 1) / u.config.queue_slots
            checked += 1
        for key, box in env.observation_space.spaces.items():
            assert box.contains(obs[key]), key
        obs, _, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        if term or trunc:
            obs, info = env.reset(seed=4)
    assert checked > 20


def test_type_pressure_counts_requested_gpus_on_each_jobs_fastest_type() -> None:
    env = gym.make("HetCluster-Tiny-v1")
    obs, _ = env.reset(seed=0)
    u = env.unwrapped
    demand = np.zeros(len(u.state.types))
    for job in (*u.state.jobs, *u.state.outside):
        demand[int(np.argmax(u._statics.get(job).speed))] += job.num_gpus
    np.testing.assert_allclose(obs["type_pressure"], demand / (u.state.capacity + demand), rtol=1e-6)


def test_without_a_cursor_the_cursor_keys_are_empty() -> None:
    env = gym.make("HetCluster-Tiny-v1", codec="sequential")
    obs, _ = env.reset(seed=0)
    assert "slot_cursor" not in obs
    for key in KEYS:
        assert not obs[key].any(), key
    assert obs["later_jobs"].tolist() == [0.0, 1.0]
