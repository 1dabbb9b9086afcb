"""The episode core both decision interfaces compose (:mod:`hetgym.envs.episode`).

Both envs hold an :class:`EpisodeCore` as a member (no base class besides ``gym.Env``), and the rules it owns
(reset options, stop reasons, final metrics, the reward of a step's components) read the same through both.
"""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

import hetgym  # noqa: F401  (registers the ids)
from hetgym.envs.env import HetClusterEnv
from hetgym.envs.episode import STOP_REASONS, WALL_CLOCK_METRICS, CoreAttribute, EpisodeCore
from hetgym.envs.events.env import HetClusterEventEnv
from hetgym.envs.quiet import QuietEpochs
from hetgym.envs.rewards import RewardComponents
from hetgym.sim.allocation import Allocation
from hetgym.sim.cluster import get_cluster
from hetgym.sim.config import SimConfig
from hetgym.sim.decision import decision_of
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
        allocation = Allocation(reject=frozenset(j.job_id for j in view.jobs))
        report = sim.step(decision_of(allocation, cluster, view.active.token, view.active.allocations))
        lost = core.account(report, comps)
        assert lost == any(not outcome.met for outcome in report.deadlines)
        view = report.view
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


def _summed_components(env: gym.Env, seed: int, options: dict | None = None) -> tuple[dict[str, int], dict]:
    """The reward components of reset and every step of a random masked episode, summed; and the last info."""
    _, info = env.reset(seed=seed, options=options)
    total = dict.fromkeys(("met", "missed", "rejected", "completed"), 0)
    rng = np.random.default_rng(seed)
    while True:
        for key in total:
            total[key] += info["reward_components"][key]
        if "metrics" in info:
            return total, info
        _, _, _, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))


@pytest.mark.parametrize("make", [_window_env, _event_env])
@pytest.mark.parametrize(("seed", "sim"), [(0, {}), (1, {}), (2, {"max_time_s": 4 * 3600.0}), (3, {"max_epochs": 20})])
def test_an_episodes_reports_sum_to_its_metrics(make, seed: int, sim: dict) -> None:
    # Every job's end and every deadline outcome is in exactly one step's report: the reset's advance in the
    # first one, the quiet ticks passed over in their step's, the jobs left unfinished at a stop in the last.
    env = make(sim=sim)
    total, info = _summed_components(env, seed)
    m = info["metrics"]
    assert total["completed"] == m["num_completed"] and total["rejected"] == m["num_rejected"]
    assert total["met"] == round(m["dsr"] * m["num_with_deadline"])
    outcomes = env.sim.deadline_log()  # the simulator's own record, read once here to check the sums
    assert total["met"] + total["missed"] == len(outcomes) and total["missed"] == sum(not o.met for o in outcomes)
    if sim:
        assert info["stop_reason"] in ("max_time", "max_decisions") and m["num_unfinished"] > 0


@pytest.mark.parametrize("make", [_window_env, _event_env])
def test_jobs_rejected_at_arrival_are_reported_once(make) -> None:
    # Jobs that never fit are rejected when they arrive, inside the reset's advance when they arrive at once;
    # a workload of only such jobs ends at reset. Either way each rejection is counted once.
    env = make(sim={"oversize_jobs": "reject"})
    env.reset(seed=0)
    jobs = env.jobs
    one_type = env.cluster.gpu_types[:1]  # a job that asks for every GPU but may use one type never fits
    huge = [
        dataclasses.replace(j, num_gpus=env.cluster.total_gpus, min_gpus=1, max_gpus=None, gpu_types=one_type)
        for j in jobs[:3]
    ]
    for workload in ([*huge, *jobs[3:]], huge):
        total, info = _summed_components(env, 0, options={"jobs": workload})
        m = info["metrics"]
        assert m["num_oversize"] == 3 and total["rejected"] == m["num_rejected"] >= 3
        assert total["completed"] == m["num_completed"]
        assert total["met"] + total["missed"] == len(env.sim.deadline_log())


def test_the_envs_names_for_the_episode_are_the_cores_declared_once() -> None:
    window, events = _window_env(), _event_env()
    for cls in (HetClusterEnv, HetClusterEventEnv):
        for name in ("sim", "jobs", "workload_seed", "episode_id"):
            attribute = cls.__dict__[name]
            assert isinstance(attribute, CoreAttribute) and attribute.name == name and attribute.__doc__
    assert window.sim is None and window.episode_id == 0
    with pytest.raises(AttributeError, match="read-only"):
        window.jobs = ()
    events.reset(seed=2)
    later = events.jobs[1:]
    events.jobs = later  # a lookahead's fork replaces the jobs still to arrive
    assert events.core.jobs is later and events.jobs is later
