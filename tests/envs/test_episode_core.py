"""The episode core both decision interfaces compose (:mod:`hetgym.envs.episode`).

Both envs hold an :class:`EpisodeCore` as a member (no base class besides ``gym.Env``), and the rules it owns
(reset options, stop reasons, final metrics, the reward of a step's components) read the same through both.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import hetgym  # noqa: F401  (registers the ids)
from hetgym.envs.env import HetClusterEnv
from hetgym.envs.episode import STOP_REASONS, WALL_CLOCK_METRICS, EpisodeCore
from hetgym.envs.events.env import HetClusterEventEnv
from hetgym.envs.quiet import QuietEpochs
from hetgym.envs.rewards import RewardComponents
from hetgym.sim.allocation import Allocation
from hetgym.sim.cluster import get_cluster
from hetgym.sim.config import SimConfig
from hetgym.sim.errors import UnknownNameError
from hetgym.sim.guidance import GuidedPolicy, LateReportingPolicy, SharingPolicy
from hetgym.sim.policy import make_policy
from hetgym.workloads.scenario import get_scenario


def _window_env(**overrides: object) -> HetClusterEnv:
    return HetClusterEnv(**{**gym.spec("HetCluster-Tiny-v1").kwargs, **overrides})


def _event_env(**overrides: object) -> HetClusterEventEnv:
    return HetClusterEventEnv(**{**gym.spec("HetClusterEvents-Tiny-v0").kwargs, **overrides})


def _play_to_end(env: gym.Env, seed: int) -> dict:
    _, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(100_000):
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return {"terminated": terminated, "truncated": truncated, **info}
    raise AssertionError("the episode did not end")


def test_both_envs_compose_the_core_and_inherit_no_helper() -> None:
    window, events = _window_env(), _event_env()
    assert isinstance(window.core, EpisodeCore) and isinstance(events.core, EpisodeCore)
    assert isinstance(window.quiet, QuietEpochs)
    for env in (window, events):
        assert type(env).__bases__ == (gym.Env,)
        assert not [c for c in type(env).__mro__ if c.__name__.endswith("Mixin")]
        # The episode's state is the core's: the env's public names read it.
        env.reset(seed=3)
        assert env.sim is env.core.sim and env.jobs is env.core.jobs
        assert env.workload_seed == env.core.workload_seed and env.episode_id == env.core.episode_id == 1


@pytest.mark.parametrize("make", [_window_env, _event_env])
def test_a_decision_cap_stops_both_envs_the_same_way(make) -> None:
    env = make(sim={"max_epochs": 12})
    last = _play_to_end(env, seed=4)
    assert last["stop_reason"] == "max_decisions" and last["truncated"] and not last["terminated"]
    assert last["metrics"]["num_unfinished"] > 0


@pytest.mark.parametrize("make", [_window_env, _event_env])
def test_a_complete_run_terminates_with_final_metrics_and_no_wall_clock(make) -> None:
    env = make()
    last = _play_to_end(env, seed=5)
    assert last["stop_reason"] == "done" and last["terminated"] and not last["truncated"]
    assert last["stop_reason"] in STOP_REASONS
    metrics = last["metrics"]
    assert not set(WALL_CLOCK_METRICS) & set(metrics)
    assert metrics["num_unfinished"] == 0 and "num_decisions" in metrics
    assert last["workload_seed"] == env.workload_seed
    # The met/lost counts the steps reported are the run's (the core reads the simulator's deadline log once).
    result = env.result()
    assert env.core.done and result is env.core.result


@pytest.mark.parametrize("make", [_window_env, _event_env])
def test_bad_reset_options_change_nothing(make) -> None:
    env = make()
    env.reset(seed=1)
    sim, jobs, episode = env.sim, env.jobs, env.episode_id
    with pytest.raises(UnknownNameError, match="workload_sed"):
        env.reset(options={"workload_sed": 3})
    with pytest.raises(ValueError, match="workload_seed"):
        env.reset(options={"workload_seed": -1})
    assert env.sim is sim and env.jobs is jobs and env.episode_id == episode


def test_the_step_rewards_sum_to_the_core_counts_of_the_run() -> None:
    env = _event_env()
    _, info = env.reset(seed=6)
    met = missed = 0
    total = 0.0
    while True:
        _, reward, terminated, truncated, info = env.step(0)
        comps = info["reward_components"]
        met, missed, total = met + comps["met"], missed + comps["missed"], total + float(reward)
        if terminated or truncated:
            break
    m = info["metrics"]
    assert total == met - missed
    assert met == round(m["dsr"] * m["num_with_deadline"])


def test_the_core_alone_runs_an_episode_from_options_to_stop() -> None:
    scenario = get_scenario("tiny")
    cluster = get_cluster(scenario.cluster)

    def draw(seed: int) -> tuple:
        return tuple(scenario.workload.build(scenario.cluster, seed=seed).jobs)

    core = EpisodeCore(cluster, SimConfig(), draw, reward="jct", time_scale_s=60.0)
    assert core.done and not core.started and core.sim is None
    view = core.start({"workload_seed": 7}, np.random.default_rng(0))
    assert view is not None and core.workload_seed == 7 and core.jobs == draw(7) and not core.done
    comps = RewardComponents()
    sim = core.sim
    assert sim is not None
    while view is not None:  # rejects every job: each deadline is lost at its rejection
        view = sim.step(Allocation(reject=frozenset(j.job_id for j in view.jobs)))
        core.account(comps)
    result = core.end()
    assert core.stop_reason == "done" and core.terminated
    assert comps.rejected == len(core.jobs) and comps.completed == 0
    assert comps.missed == result.metrics["num_with_deadline"] and comps.met == 0
    comps.job_s = 120.0
    assert core.reward(comps) == -2.0  # jct: minus job-time in time_scale_s units
    assert core.final_metrics(3)["num_decisions"] == 3.0


def test_the_event_allocator_protocols_name_what_the_env_calls() -> None:
    guided = make_policy("elasticflow-guided")
    assert isinstance(guided, GuidedPolicy) and isinstance(guided, SharingPolicy)
    assert isinstance(guided, LateReportingPolicy)
    assert not isinstance(make_policy("elasticflow"), LateReportingPolicy)
    env = _event_env(events=("arrival", "late"))
    assert env.allocator is not guided and isinstance(env.allocator, LateReportingPolicy)


def test_a_vector_env_refuses_a_bool_seed_by_name() -> None:
    venv = gym.make_vec("HetCluster-Tiny-v1", num_envs=2)
    with pytest.raises(TypeError, match=r"seed=True.*integer seed"):
        venv.reset(seed=True)
    obs, _ = venv.reset(seed=[1, 2])  # a list of one seed per sub-env still works
    assert len(next(iter(obs.values()))) == 2
