"""The ``window-levels`` observation: the window's keys unchanged, plus speeds and slacks per (type, level)."""

from __future__ import annotations

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import hetgym  # noqa: F401
from hetgym.sim import UnknownNameError


@pytest.mark.parametrize("codec", ["sequential", "multidiscrete", "score"])
def test_checkers_pass_and_the_window_keys_are_unchanged(codec: str) -> None:
    plain = gym.make("HetCluster-Tiny-v0", codec=codec)
    env = gym.make("HetCluster-Tiny-v0", codec=codec, observation="window-levels")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
        sb3_check_env(env.unwrapped)
    assert [str(w.message) for w in caught] == []
    extra = set(env.observation_space.spaces) - set(plain.observation_space.spaces)
    assert extra == {"job_level_rate", "job_level_slack"}
    o1, _ = plain.reset(seed=3)
    o2, _ = env.reset(seed=3)
    for _ in range(40):
        for key in plain.observation_space.spaces:
            np.testing.assert_array_equal(o1[key], o2[key])
        assert env.observation_space.contains(o2)
        action = plain.unwrapped.noop_action()
        o1, _, t1, _, _ = plain.step(action)
        o2, _, t2, _, _ = env.step(action)
        assert t1 == t2
        if t1:
            break


def test_values_follow_the_throughput_model() -> None:
    env = gym.make("HetCluster-v0", observation="window-levels", queue_slots=8)
    base = env.unwrapped
    obs, _ = env.reset(seed=1)
    for _ in range(30):  # a few epochs in, so jobs have progress and some run
        obs, *_ = env.step(base.noop_action())
    k, t, c = base.config.queue_slots, len(base.cluster.gpu_types), len(base.levels)
    rate = obs["job_level_rate"].reshape(k, t, c)
    slack = obs["job_level_slack"].reshape(k, t, c)
    view = base.view
    assert view is not None
    now = view.now_s
    tp = base.throughput
    for slot, job in enumerate(base.state.jobs):
        raw = np.zeros((t, c))
        for ti, gpu in enumerate(base.cluster.gpu_types):
            for ci, n in enumerate(base.levels):
                if n == 0 or not base.state.allowed[slot, ti]:
                    continue
                r = tp.rate(job.job_type, job.batch_size, gpu, n)
                if n > base.cluster.max_gpus_per_server[gpu]:
                    r *= tp.consolidation_factor(job.job_type, job.batch_size, gpu, n)
                raw[ti, ci] = r
        np.testing.assert_allclose(rate[slot], raw / raw.max(), rtol=1e-5, atol=1e-6)
        for ti in range(t):
            for ci in range(c):
                if raw[ti, ci] == 0:
                    assert slack[slot, ti, ci] == -1.0
                elif math.isfinite(job.deadline_s):
                    want = math.tanh((job.deadline_s - now - job.remaining_iters / raw[ti, ci]) / 3600.0)
                    assert slack[slot, ti, ci] == pytest.approx(want, abs=1e-5)
    for slot in range(len(base.state.jobs), k):  # empty slots are 0 everywhere
        assert not rate[slot].any() and not slack[slot].any()


def test_unknown_observation_names_the_nearest() -> None:
    with pytest.raises(UnknownNameError, match="window-levels"):
        gym.make("HetCluster-Tiny-v0", observation="window_levels")
