"""Pickling and copying HetCluster by state: a restored env continues exactly like the original, for every
codec, and a pickle's size follows the workload, not the number of steps taken."""

from __future__ import annotations

import copy
import math
import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import hetgym  # noqa: F401  (registers the ids)
from hetgym.envs import HetClusterEnv
from hetgym.envs.codecs import CODECS

CASES = [
    # (codec, observation, reward, interface)
    ("sequential", "window", "jct", "v0"),
    ("multidiscrete", "window", "deadline", "v0"),
    ("score", "window-levels", "makespan", "v0"),
    ("jobwise", "window-cursor", "utilisation", "v1"),
    ("jobwise-types", "window-cursor", "deadline", "v1"),
    ("jobwise-types", "window-nodes", "deadline", "v1"),
]


def masked_action(env: gym.Env, rng: np.random.Generator, commit_p: float = 0.0) -> Any:
    """A uniformly random valid action (per dimension for the multi-discrete codecs), or with probability
    ``commit_p`` the action that keeps every allocation and commits (so episodes end in fewer steps)."""
    if commit_p and rng.random() < commit_p:
        return env.unwrapped.noop_action()
    mask = env.unwrapped.action_masks()
    space = env.action_space
    if isinstance(space, gym.spaces.Discrete):
        return int(rng.choice(np.flatnonzero(mask)))
    out, offset = [], 0
    for n in space.nvec:
        out.append(int(rng.choice(np.flatnonzero(mask[offset : offset + n]))))
        offset += n
    return np.array(out, dtype=np.int64)


def same(a: Any, b: Any) -> bool:
    """Exact equality of step outputs, NaN equal to NaN (final metrics such as an empty JCT are NaN)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return bool(type(a) is type(b) and a == b)


def test_the_cases_cover_every_registered_codec() -> None:
    assert {c[0] for c in CASES} == set(CODECS.names())


@pytest.mark.parametrize(("codec", "observation", "reward", "interface"), CASES)
def test_pickle_and_deepcopy_continue_exactly_to_the_episode_end(
    codec: str, observation: str, reward: str, interface: str
) -> None:
    env = gym.make(
        "HetCluster-Tiny-v0",
        codec=codec,
        observation=observation,
        reward=reward,
        interface=interface,
        max_decisions=60,  # random agents rarely finish a workload: truncate, to reach an episode end
        render_mode="rgb_array",
    )
    rng = np.random.default_rng(1)
    env.reset(seed=4)
    for _ in range(20):
        _, _, terminated, truncated, _ = env.step(masked_action(env, rng))
        if terminated or truncated:
            env.reset()
    clones = [pickle.loads(pickle.dumps(env)), copy.deepcopy(env)]
    for clone in clones:
        assert clone.unwrapped.decision_key == env.unwrapped.decision_key
        assert np.array_equal(clone.render(), env.render())
    ended = False
    for _ in range(3000):
        action = masked_action(env, rng, commit_p=0.3)
        out = env.step(action)
        for clone in clones:
            assert same(clone.step(action), out)
        if out[2] or out[3]:
            ended = True
            break
    assert ended, "the episode should end within the step budget"
    assert "metrics" in out[4]
    # The random stream goes on identically: the next episodes draw the same workloads.
    first = env.reset()
    for clone in clones:
        assert same(clone.reset(), first)
        assert clone.unwrapped.jobs == env.unwrapped.jobs


def test_a_pickle_holds_no_per_step_record() -> None:
    # Under the one-shot codec every step commits, so 2,000 steps are 2,000 decision epochs; with the
    # jct reward and random actions the episode is still running at the end (asserted below).
    env = HetClusterEnv(codec="multidiscrete", reward="jct")
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    sizes: dict[int, int] = {}
    rows: dict[int, int] = {}
    for step in range(1, 2001):
        _, _, terminated, truncated, _ = env.step(masked_action(env, rng))
        assert not (terminated or truncated)
        if step in (200, 2000):
            sizes[step] = len(pickle.dumps(env))
            assert env.sim is not None
            rows[step] = len(env.result().timeline)
    num_jobs = len(env.jobs)
    assert env.decision_key[1] > 1900
    # What may grow: jobs that arrived in between (their records and views), and the simulator's GPU-usage
    # timeline (one row per change of GPUs in use, part of the run's result). Nothing per step.
    bound_bytes = 300 * num_jobs + 40 * (rows[2000] - rows[200])
    assert sizes[2000] - sizes[200] < bound_bytes, (sizes, rows, num_jobs)


def test_edits_within_an_epoch_leave_the_pickle_size_unchanged() -> None:
    # The sequential codec's edits do not advance the simulator; a replay log would grow with each one.
    env = HetClusterEnv(scenario="tiny")
    env.reset(seed=0)
    size = len(pickle.dumps(env))
    sizes = []
    for _ in range(40):
        mask = env.action_masks()
        edits = np.flatnonzero(mask[:-1])
        assert edits.size
        env.step(int(edits[0]))
        sizes.append(len(pickle.dumps(env)))
    assert env.state.num_actions == 40
    # Counters may take a byte more; a log would take at least two bytes per action (80 here).
    assert max(abs(s - size) for s in sizes) <= 8
