"""``hetgym.suite``'s scenarios: names, frozen definitions, held-out seeds, both interfaces, ``check_env``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import hetgym.suite as s
from hetgym.sim.errors import UnknownNameError
from hetgym.suite.scores import episode_inputs

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _data(monkeypatch: pytest.MonkeyPatch) -> None:
    # The trace scenarios read the shared data folder whatever the working directory.
    monkeypatch.setenv(s.DATA_ENV, str(SHARED_DATA))


def _needs_data(name: str) -> None:
    if s.get(name).trace is not None and not SHARED_DATA.exists():
        pytest.skip(f"reference data not found at {SHARED_DATA}")


def test_the_suite_lists_its_scenarios_in_every_tier() -> None:
    names = s.names()
    assert len(names) >= 7 and names[:2] == ["default", "tiny"]
    assert {s.get(n).tier for n in names} == set(s.TIERS)
    assert sum(s.get(n).tier == "trace" for n in names) >= 2
    clusters = {s.get(n).kwargs()["cluster"] for n in names if s.get(n).tier == "trace"}
    assert len(clusters) >= 2  # windows of different traces on different clusters


def test_a_scenario_is_frozen_and_its_kwargs_are_fresh_copies() -> None:
    scenario = s.get("load-2x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        scenario.name = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        scenario.overrides["cluster"] = "tiny"  # type: ignore[index]
    kwargs = scenario.kwargs("HetCluster-v1")
    kwargs["workload"]["arrival_rate_per_h"] = 1.0
    assert scenario.kwargs("HetCluster-v1")["workload"]["arrival_rate_per_h"] == 24.0
    assert set(scenario.env_kwargs) == set(s.INTERFACES)


def test_test_seeds_are_held_out() -> None:
    for name in s.names():
        scenario = s.get(name)
        assert scenario.test_seeds == tuple(range(1000, 1020))
        assert not set(scenario.train_seeds) & set(scenario.test_seeds)


def test_unknown_names_are_refused_with_the_nearest() -> None:
    with pytest.raises(UnknownNameError, match="load-2x"):
        s.get("load-2")
    with pytest.raises(UnknownNameError, match="HetCluster-v1"):
        s.get("default").kwargs("HetCluster-v0")
    assert [x.name for x in s.resolve("tiny, default")] == ["tiny", "default"]
    assert len(s.resolve("all")) == len(s.names())


def test_a_missing_trace_names_the_file_and_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(s.DATA_ENV, str(tmp_path))
    with pytest.raises(s.SuiteDataError, match=s.DATA_ENV):
        s.get("trace-cluster09").make()


@pytest.mark.parametrize("env_id", s.INTERFACES)
def test_tiny_builds_through_both_interfaces_and_passes_both_checkers(env_id: str) -> None:
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = s.get("tiny").make(env_id)
    gym_check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(s.get("tiny").make(env_id), warn=True)


def test_both_interfaces_and_the_simulator_see_the_same_jobs() -> None:
    scenario = s.get("load-1.5x")
    _, jobs, _ = episode_inputs(scenario, 1003)
    for env_id in s.INTERFACES:
        env = scenario.make(env_id)
        env.reset(seed=0, options={"workload_seed": 1003})
        assert tuple(env.unwrapped.jobs) == tuple(jobs)  # type: ignore[attr-defined]


# In the default run: the 18 checks take about 5 CPU-seconds together (tests/suite, --durations).
@pytest.mark.parametrize("env_id", s.INTERFACES)
@pytest.mark.parametrize("name", s.names())
def test_every_scenario_passes_gymnasium_and_sb3_check_env(name: str, env_id: str) -> None:
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    _needs_data(name)
    scenario = s.get(name)
    gym_check_env(scenario.make(env_id).unwrapped, skip_render_check=True)
    sb3_check_env(scenario.make(env_id), warn=True)
    assert gym.spec(env_id) is not None
