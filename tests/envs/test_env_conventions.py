"""Gymnasium habits of the env: ``render()`` without a mode warns, ``throughput=`` takes a user's table,
and :class:`~hetgym.experts.ExpertAgent` follows vector envs one sub-env at a time, idempotently."""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

from hetgym.envs.config import EnvConfigError
from hetgym.experts import ExpertAgent, expert_env_kwargs
from hetgym.sim.errors import UnknownNameError
from hetgym.sim.throughput import ThroughputModel, load_table

TINY = "HetCluster-Tiny-v0"


# ------------------------------------------------------------------------------------------------
# render()


def test_render_without_mode_warns_like_gymnasium() -> None:
    env = gym.make(TINY)
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="You are calling render method without specifying any render mode"):
        out = env.unwrapped.render()
    assert out is None


def test_render_with_a_mode_does_not_warn() -> None:
    env = gym.make(TINY, render_mode="ansi")
    env.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        out = env.render()
    assert isinstance(out, str) and out


# ------------------------------------------------------------------------------------------------
# throughput=


def _scaled_table(factor: float) -> pd.DataFrame:
    table = load_table().copy()
    table["iters_per_s"] = table["iters_per_s"] * factor
    return table


def _one_rate(model: ThroughputModel) -> float:
    return (
        model.rate("resnet50", 64, "v100", 1)
        if "resnet50" in model.job_types
        else model.rate(model.job_types[0], model.batch_sizes(model.job_types[0])[0], "v100", 1)
    )


@pytest.mark.parametrize("kind", ["csv", "parquet", "frame", "model"])
def test_user_throughput_table_reaches_the_simulator(tmp_path: Path, kind: str) -> None:
    table = _scaled_table(0.5)
    spec: Any
    if kind == "csv":
        spec = tmp_path / "mine.csv"
        table.to_csv(spec, index=False)
        spec = str(spec)
    elif kind == "parquet":
        spec = tmp_path / "mine.parquet"
        table.to_parquet(spec)
    elif kind == "frame":
        spec = table
    else:
        spec = ThroughputModel(table)
    env = gym.make(TINY, throughput=spec)
    base = env.unwrapped
    default = ThroughputModel.default()
    assert base.throughput is not default
    assert _one_rate(base.throughput) == pytest.approx(0.5 * _one_rate(default))
    # The simulator of an episode runs with the user's model.
    env.reset(seed=0)
    assert base.sim.throughput is base.throughput


def test_user_throughput_reaches_the_recipe_and_the_simulator() -> None:
    """Every rate halved: the recipe converts the same drawn durations into half the iterations (it
    reads the user's table), and the simulator runs them at half the speed (it reads it too), so the
    EDF expert's jobs complete at the same times."""
    runs = []
    for spec in (None, _scaled_table(0.5)):
        kwargs = expert_env_kwargs("edf")
        if spec is not None:
            kwargs["throughput"] = spec
        env = gym.make(TINY, **kwargs)
        agent = ExpertAgent("edf", env)
        obs, _ = env.reset(seed=0)
        while True:
            action, _ = agent.predict(obs)
            obs, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break
        runs.append((env.unwrapped.jobs, env.unwrapped.result().metrics))
    (jobs, metrics), (half_jobs, half_metrics) = runs
    assert [j.job_id for j in jobs] == [j.job_id for j in half_jobs]
    for job, half in zip(jobs, half_jobs, strict=True):
        assert half.total_iters == pytest.approx(0.5 * job.total_iters, rel=1e-6)
    assert half_metrics["num_completed"] == metrics["num_completed"] > 0
    assert half_metrics["jct_mean_s"] == pytest.approx(metrics["jct_mean_s"], rel=1e-6)


def test_env_with_a_throughput_path_pickles(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    _scaled_table(2.0).to_csv(path, index=False)
    env = gym.make(TINY, throughput=str(path)).unwrapped
    env.reset(seed=1)
    clone = pickle.loads(pickle.dumps(env))
    assert _one_rate(clone.throughput) == pytest.approx(_one_rate(env.throughput))


def test_throughput_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(EnvConfigError, match=r"no such file.*CSV or parquet"):
        gym.make(TINY, throughput=str(tmp_path / "nope.csv"))


def test_throughput_unknown_suffix(tmp_path: Path) -> None:
    path = tmp_path / "table.xlsx"
    path.write_text("x")
    with pytest.raises(EnvConfigError, match=r"unknown file type '\.xlsx'"):
        gym.make(TINY, throughput=str(path))


def test_throughput_missing_column_is_named() -> None:
    with pytest.raises(EnvConfigError, match=r"missing column\(s\) \['iters_per_s'\]"):
        gym.make(TINY, throughput=load_table().drop(columns=["iters_per_s"]))


def test_throughput_bad_row_is_named() -> None:
    table = load_table().copy()
    table.loc[3, "iters_per_s"] = -1.0
    with pytest.raises(
        EnvConfigError,
        match=r"row 3 \(0-based.*\) has iters_per_s=-1\.0; it must be a finite number >= 0",
    ):
        gym.make(TINY, throughput=table)
    table = load_table().copy()
    table["num_gpus"] = table["num_gpus"].astype(float)
    table.loc[5, "num_gpus"] = 1.5
    with pytest.raises(
        EnvConfigError,
        match=r"row 5 \(0-based.*\) has num_gpus=1\.5; it must be a positive integer",
    ):
        gym.make(TINY, throughput=table)


def test_throughput_unknown_gpu_type_is_named() -> None:
    table = load_table().copy()
    table.loc[0, "gpu_type"] = "v1000"
    with pytest.raises(UnknownNameError, match=r"unknown GPU type 'v1000'.*did you mean"):
        gym.make(TINY, throughput=table)


def test_throughput_wrong_type_is_named() -> None:
    with pytest.raises(EnvConfigError, match=r"throughput=int: give the path"):
        gym.make(TINY, throughput=3)


# ------------------------------------------------------------------------------------------------
# ExpertAgent on vector envs


def _single_env_actions(env_id: str, policy: str, seed: int) -> list[Any]:
    env = gym.make(env_id, **expert_env_kwargs(policy))
    agent = ExpertAgent(policy, env)
    obs, _ = env.reset(seed=seed)
    actions = []
    while True:
        action, _ = agent.predict(obs)
        actions.append(np.asarray(action).copy())
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return actions


@pytest.mark.parametrize(("env_id", "builder"), [(TINY, "sync"), ("HetCluster-Tiny-v1", "sync"), (TINY, "make_vec")])
def test_expert_on_vector_envs_matches_single_envs(env_id: str, builder: str) -> None:
    policy = "edf"
    seeds = (0, 1)
    expected = [_single_env_actions(env_id, policy, s) for s in seeds]
    venv: gym.vector.VectorEnv
    if builder == "sync":
        venv = gym.vector.SyncVectorEnv([lambda: gym.make(env_id, **expert_env_kwargs(policy))] * 2)
    else:  # hetgym's batched HetClusterVectorEnv
        venv = gym.make_vec(env_id, num_envs=2, **expert_env_kwargs(policy))
    # A Gymnasium vector wrapper in front must not hide the sub-envs.
    wrapped = gym.wrappers.vector.RecordEpisodeStatistics(venv)
    agent = ExpertAgent(policy, wrapped)
    assert len(agent.trackers) == 2
    obs, _ = wrapped.reset(seed=list(seeds))
    got: list[list[Any]] = [[], []]
    done = [False, False]
    while not all(done):
        actions, _ = agent.predict(obs)
        assert actions.shape[0] == 2
        for i in range(2):
            if not done[i]:
                got[i].append(np.asarray(actions[i]).copy())
        obs, _, terminated, truncated, _ = wrapped.step(actions)
        for i in range(2):
            done[i] = done[i] or bool(terminated[i] or truncated[i])
    for i in range(2):
        assert len(got[i]) == len(expected[i]) > 10
        assert all(np.array_equal(a, b) for a, b in zip(got[i], expected[i], strict=True))


@pytest.mark.parametrize("codec", ["sequential", "jobwise", "jobwise-types", "multidiscrete"])
def test_predict_twice_on_a_step_gives_the_same_action(codec: str) -> None:
    env = gym.make(TINY, codec=codec)
    agent = ExpertAgent("srtf", env)
    reference = _trajectory(codec, calls_per_step=1)
    obs, _ = env.reset(seed=0)
    actions = []
    while True:
        first, _ = agent.predict(obs)
        second, _ = agent.predict(obs)
        assert np.array_equal(first, second)
        actions.append(np.asarray(first).copy())
        obs, _, terminated, truncated, _ = env.step(first)
        if terminated or truncated:
            break
    # Calling twice leaves the policy where one call does: the whole episode is unchanged.
    assert len(actions) == len(reference) > 10
    assert all(np.array_equal(a, b) for a, b in zip(actions, reference, strict=True))


def _trajectory(codec: str, calls_per_step: int) -> list[Any]:
    env = gym.make(TINY, codec=codec)
    agent = ExpertAgent("srtf", env)
    obs, _ = env.reset(seed=0)
    actions = []
    while True:
        for _ in range(calls_per_step):
            action, _ = agent.predict(obs)
        actions.append(np.asarray(action).copy())
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return actions


# ------------------------------------------------------------------------------------------------
# the package docstring names the registered ids


def test_the_package_docstring_names_the_registered_ids() -> None:
    import re

    import hetgym.envs
    from hetgym.envs.registration import ENV_IDS, EVENT_ENV_IDS

    doc = hetgym.envs.__doc__ or ""
    named = set(re.findall(r"``([A-Za-z][\w-]*-v\d+)``", doc))
    assert named and named <= set(ENV_IDS) | set(EVENT_ENV_IDS), named - set(ENV_IDS) - set(EVENT_ENV_IDS)
    assert set(EVENT_ENV_IDS) <= named  # the event-driven ids by their names (they are HetClusterEvents-v0)
    versions = {int(v) for v in re.findall(r"-v(\d+)\b", " ".join(ENV_IDS) + " " + " ".join(EVENT_ENV_IDS))}
    assert {int(v) for v in re.findall(r"``-v(\d+)``", doc)} <= versions  # a bare suffix: a registered version
