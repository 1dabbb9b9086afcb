"""Malformed actions raise a clear ``ValueError`` naming the codec and the expected form, and leave the
environment exactly as it was: the valid steps that follow behave as if the bad one never happened."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import hetgym  # noqa: F401  (registers the ids)
from hetgym.sim.errors import HetgymError

BAD_DISCRETE: list[Any] = [
    math.nan,
    math.inf,
    -math.inf,
    np.float64("nan"),
    1e30,
    1.5,
    -1,
    True,
    "3",
    None,
    object(),
    np.array(["3"]),
]


def _make(env_id: str, **kwargs: Any) -> gym.Env:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gym.make(env_id, disable_env_checker=True, **kwargs)


def _valid_actions(env: gym.Env, info: dict[str, Any], steps: int, seed: int) -> list[Any]:
    rng = np.random.default_rng(seed)
    space = env.action_space
    actions = []
    for _ in range(steps):
        if isinstance(space, gym.spaces.Discrete):
            actions.append(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        else:
            actions.append(space.sample())
    return actions


def _replay(env_id: str, actions: list[Any], bad: Any = None, **kwargs: Any) -> list[tuple[Any, ...]]:
    """Run ``actions`` from a fresh reset, trying ``bad`` (which must raise) before each one."""
    env = _make(env_id, **kwargs)
    env.reset(seed=3)
    trace = []
    for action in actions:
        if bad is not None:
            with pytest.raises(ValueError):
                env.step(bad)
        obs, reward, terminated, truncated, info = env.step(action)
        trace.append(
            (
                {k: np.asarray(v).copy() for k, v in obs.items()},
                reward,
                terminated,
                truncated,
                info["now_s"],
                info["epoch"],
                info["num_actions"],
                info["action_mask"].copy(),
            )
        )
        if terminated or truncated:
            break
    return trace


def _same(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x[0].keys() != y[0].keys() or not all(np.array_equal(x[0][k], y[0][k]) for k in x[0]):
            return False
        if x[1:7] != y[1:7] or not np.array_equal(x[7], y[7]):
            return False
    return True


@pytest.mark.parametrize("action", BAD_DISCRETE, ids=repr)
@pytest.mark.parametrize("env_id", ["HetCluster-Tiny-v0", "HetCluster-Tiny-v1"])
def test_bad_discrete_actions_name_the_codec_and_the_range(env_id: str, action: Any) -> None:
    env = _make(env_id)
    env.reset(seed=0)
    codec = "sequential" if env_id.endswith("v0") else "jobwise"
    with pytest.raises(ValueError) as info:
        env.step(action)
    message = str(info.value)
    assert f"a {codec} action is an integer in [0, {env.action_space.n})" in message
    assert "action mask" in message


def test_a_wrong_shape_names_the_expected_one() -> None:
    env = _make("HetCluster-Tiny-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"a sequential action is one integer in \[0, \d+\), got an array of shape"):
        env.step(np.array([1, 2]))


@pytest.mark.parametrize(
    ("make_action", "expected"),
    [
        (lambda n: np.full(n, np.nan), r"entry 0 is nan, not a finite whole number"),
        (lambda n: np.full(n, np.inf), r"entry 0 is inf, not a finite whole number"),
        (lambda n: np.full(n, 1.5), r"entry 0 is 1.5, not a finite whole number"),
        (lambda n: np.array(["1"] * n), r"got an array of shape \(\d+,\) and dtype <U1"),
        (lambda n: np.array([object()] * n), r"got an array of shape \(\d+,\) and dtype object"),
        (lambda n: np.zeros(n + 1, dtype=np.int64), r"got an array of shape \(\d+,\) and dtype int64"),
        (lambda n: [[1, 2], [3]], r"got a ragged sequence list"),
        (lambda n: "a", r"got 'a'"),
        (lambda n: np.full(n, 10**6), r"entry 0 is 1000000, allowed 0\.\.\d+"),
    ],
)
@pytest.mark.parametrize("codec", ["multidiscrete", "score"])
def test_bad_multidiscrete_actions_are_clear_errors(codec: str, make_action: Any, expected: str) -> None:
    env = _make("HetCluster-Tiny-v0", codec=codec)
    env.reset(seed=0)
    n = int(env.action_space.shape[0])
    with pytest.raises(ValueError, match=rf"a {codec} action is") as info:
        env.step(make_action(n))
    assert info.match(expected)


@pytest.mark.parametrize(
    ("env_id", "kwargs", "bad"),
    [
        ("HetCluster-Tiny-v0", {}, math.nan),
        ("HetCluster-Tiny-v0", {}, "7"),
        ("HetCluster-Tiny-v1", {}, math.inf),
        ("HetCluster-Tiny-v0", {"codec": "multidiscrete"}, np.array(["x"])),
        ("HetCluster-Tiny-v0", {"codec": "score"}, None),
    ],
)
def test_a_rejected_action_leaves_the_env_unchanged(env_id: str, kwargs: dict[str, Any], bad: Any) -> None:
    env = _make(env_id, **kwargs)
    _, info = env.reset(seed=3)
    actions = _valid_actions(env, info, 40, seed=1)
    clean = _replay(env_id, actions, **kwargs)
    assert len(clean) > 1
    assert _same(_replay(env_id, actions, bad=bad, **kwargs), clean)


def test_a_huge_job_id_in_a_trace_is_a_clear_error(tmp_path: Path) -> None:
    trace = tmp_path / "ids.csv"
    header = "job_id,submit_s,job_type,batch_size,total_iters,num_gpus\n"
    trace.write_text(header + "0,0,resnet50,64,1000,1\n1e30,10,resnet50,64,1000,1\n")
    with pytest.raises(ValueError) as info:
        env = _make("HetCluster-Tiny-v0", trace=str(trace))
        env.reset(seed=0)
    message = str(info.value)
    assert "field 'job_id'" in message and "[0, 2**63 - 1]" in message and "renumber the jobs" in message


def test_a_job_larger_than_the_cluster_is_refused_at_reset(tmp_path: Path) -> None:
    trace = tmp_path / "big.csv"
    header = "job_id,submit_s,job_type,batch_size,total_iters,num_gpus\n"
    trace.write_text(header + "0,0,resnet50,64,1000,1\n1,10,resnet50,64,1000,9\n")
    with pytest.raises(HetgymError, match=r"job 1: field 'num_gpus' is 9 but cluster 'tiny' has 8 GPUs"):
        env = _make("HetCluster-Tiny-v0", trace=str(trace))
        env.reset(seed=0)
    # Admitted on request: the job is rejected at arrival and the episode runs to the end.
    env = _make("HetCluster-Tiny-v0", trace=str(trace), sim={"oversize_jobs": "reject"})
    env.reset(seed=0)
    for _ in range(10_000):
        _, _, terminated, truncated, info = env.step(env.action_space.n - 1)
        if terminated or truncated:
            break
    assert info["metrics"]["num_oversize"] == 1


@pytest.mark.parametrize("codec", ["sequential", "multidiscrete"])
def test_a_bad_action_in_a_vector_env_steps_no_sub_env(codec: str) -> None:
    def make() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return gym.make_vec("HetCluster-Tiny-v0", num_envs=3, codec=codec)

    clean, dirty = make(), make()
    clean.reset(seed=5)
    dirty.reset(seed=5)
    rng = np.random.default_rng(0)
    space = clean.single_action_space
    space.seed(0)
    ended = np.zeros(3, dtype=bool)  # sub-envs that reset at the next step (their action is not used)
    for _ in range(15):
        # The bad entry goes to a sub-env that steps: the last one that did not just end its episode.
        i = int(np.flatnonzero(~ended)[-1])
        if isinstance(space, gym.spaces.Discrete):
            good = np.array([rng.integers(space.n) for _ in range(3)])
            bad = good.astype(float)
            bad[i] = np.nan
            expected = rf"sub-env {i}: a sequential action is an integer"
        else:
            good = np.stack([space.sample() for _ in range(3)])
            bad = good.astype(float)
            bad[i, 0] = np.inf
            expected = rf"sub-env {i}: a multidiscrete action is an integer array .*: entry 0 is inf"
        with pytest.raises(ValueError, match=expected):
            dirty.step(bad)
        a = clean.step(good)
        b = dirty.step(good)
        ended = np.asarray(a[2]) | np.asarray(a[3])
        assert all(np.array_equal(a[0][k], b[0][k]) for k in a[0])
        assert np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2]) and np.array_equal(a[3], b[3])
