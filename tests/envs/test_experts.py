"""Experts inside the env: the same decisions and per-job results as on the raw simulator.

The equivalence test iterates over every registered policy, so policies added later are covered
without touching this file. The env runs each policy's own physics (``expert_env_kwargs``:
``policy_compat`` sets its round, declared placer and execution modes, every count level, and a window
that holds every active job), so every decision is expressible: the codec sets counts, modes and
rejections, and the simulator's placer, the same in both runs, chooses the servers. No case is
excused.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from hetgym.envs.env import WALL_CLOCK_METRICS
from hetgym.experts import (
    ExpertAgent,
    ExpertLabelWrapper,
    expert_env_kwargs,
    labelled_env,
    own_physics,
    physics_gaps,
    skips_epoch,
)
from hetgym.sim import Simulator, list_policies, make_policy, policy_class
from hetgym.sim.physics import DEFAULT_ROUND_S, Physics, resolve_physics
from hetgym.sim.placement import list_placers
from hetgym.workloads import get_scenario

POLICIES = sorted(list_policies())
SLOW_SEEDS = (2, 3, 4)
ENV_IDS = {"tiny": "HetCluster-Tiny-v0", "default": "HetCluster-v0"}
#: The default scenario with 30 jobs keeps the quick suite quick; the slow suite runs 120.
DEFAULT_JOBS = 30


def same_metrics(a: dict[str, float], b: dict[str, float]) -> list[str]:
    keys = set(a) | set(b)
    return sorted(
        k for k in keys if not (a.get(k) == b.get(k) or (math.isnan(a.get(k, 0.0)) and math.isnan(b.get(k, 0.0))))
    )


def run_through_env(
    policy: str, seed: int, codec: str, scenario: str = "tiny", **env_kwargs: Any
) -> tuple[dict[str, Any], gym.Env, list[dict[str, Any]]]:
    env = gym.make(ENV_IDS[scenario], codec=codec, **{**expert_env_kwargs(policy), **env_kwargs})
    agent = ExpertAgent(policy, env)
    obs, info = env.reset(seed=seed)
    infos = []
    while True:
        action, _ = agent.predict(obs, episode_start=np.array([not infos]), deterministic=True)
        obs, _, terminated, truncated, info = env.step(action)
        infos.append(info)
        if terminated or truncated:
            return info, env, infos


def check_equivalence(policy: str, seed: int, codec: str, scenario: str, num_jobs: int = DEFAULT_JOBS) -> None:
    kwargs: dict[str, Any] = {"workload": {"num_jobs": num_jobs}} if scenario == "default" else {}
    final, env, infos = run_through_env(policy, seed, codec, scenario, **kwargs)
    u = env.unwrapped
    direct = Simulator(u.cluster, u.jobs, config=u.sim_config).run(make_policy(policy))
    committed = [i for i in infos if i["committed"]]
    assert all("target_exact" in i for i in committed), "every decision of an expert carries its exactness"
    inexact = [i["target_reasons"] for i in committed if not i["target_exact"]]
    assert not inexact, f"{len(inexact)} of {len(committed)} decisions not expressible, e.g. {inexact[0]}"
    assert final["stop_reason"] == ("done" if not direct.stalled else "stalled")
    through_env = u.result().jobs.set_index("job_id").sort_index()
    on_sim = direct.jobs.set_index("job_id").sort_index()
    assert list(through_env.index) == list(on_sim.index)
    assert (through_env["status"] == on_sim["status"]).all()
    np.testing.assert_allclose(through_env["finish_s"], on_sim["finish_s"], rtol=0.0, atol=1e-6, equal_nan=True)
    direct_metrics = {k: v for k, v in direct.metrics.items() if k not in WALL_CLOCK_METRICS}
    # The env always has round ticks; policies that ignore them skip them on the simulator (same schedule).
    differ = [k for k in same_metrics(direct_metrics, final["metrics"]) if k not in ("num_epochs", "num_decisions")]
    assert differ == []


# Every policy, both codecs, both registered scenarios, in the quick suite; more seeds in the slow one.
@pytest.mark.parametrize(("scenario", "seed"), [("tiny", 0), ("default", 1000)])
@pytest.mark.parametrize("codec", ["sequential", "multidiscrete"])
@pytest.mark.parametrize("policy", POLICIES)
def test_expert_through_the_env_matches_the_simulator(policy: str, codec: str, scenario: str, seed: int) -> None:
    check_equivalence(policy, seed, codec, scenario)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["tiny", "default"])
@pytest.mark.parametrize("codec", ["sequential", "multidiscrete"])
@pytest.mark.parametrize("seed", SLOW_SEEDS)
@pytest.mark.parametrize("policy", POLICIES)
def test_expert_matches_the_simulator_on_more_seeds(policy: str, seed: int, codec: str, scenario: str) -> None:
    check_equivalence(policy, seed, codec, scenario, num_jobs=120)


@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_declares_a_registered_placer_and_valid_modes(policy: str) -> None:
    cls = policy_class(policy)
    assert cls.placer in list_placers()
    assert cls.modes and set(cls.modes) <= {"sync", "proportional", "fork"}
    env = gym.make("HetCluster-Tiny-v0", **expert_env_kwargs(policy))
    assert physics_gaps(make_policy(policy), env) == []


def test_a_tracker_warns_when_the_env_lacks_the_experts_physics() -> None:
    env = gym.make("HetCluster-Tiny-v0")  # sync only, default placer, 360 s rounds
    agent = ExpertAgent("hadare", env)
    obs, _ = env.reset(seed=0)
    with pytest.warns(UserWarning, match="policy_compat='hadare'"):
        agent.predict(obs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agent.predict(obs)  # once per tracker


def test_policy_compat_sets_the_physics_and_explicit_keys_win() -> None:
    cfg = gym.make("HetCluster-v0", policy_compat="hadare").unwrapped.config
    assert (cfg.sim.placer, cfg.modes, cfg.count_levels, cfg.queue_slots) == ("copies", ("sync", "fork"), "all", 120)
    assert cfg.sim.round_s == policy_class("hadare").round_s
    cfg = gym.make("HetCluster-v0", policy_compat="hadare", queue_slots=8, sim={"placer": "default"}).unwrapped.config
    assert (cfg.queue_slots, cfg.sim.placer) == (8, "default")
    with pytest.raises(Exception, match="hadare"):
        gym.make("HetCluster-v0", policy_compat="hadar-e")


def test_inexpressible_decisions_are_reported_and_executed_as_the_nearest() -> None:
    # 'fifo' asks for each job's requested count; with levels (0, 1) a 2- or 4-GPU request cannot be
    # expressed: the env runs the job on 1 GPU and says so on every affected decision.
    final, env, infos = run_through_env("fifo", 0, "sequential", count_levels=[0, 1])
    flagged = [i for i in infos if i.get("target_exact") is False]
    assert flagged and all("not on the count levels [0, 1]" in " ".join(i["target_reasons"]) for i in flagged)
    assert final["stop_reason"] == "done"
    u = env.unwrapped
    direct = Simulator(u.cluster, u.jobs, config=u.sim_config).run(make_policy("fifo")).metrics
    assert same_metrics(direct, final["metrics"])  # the runs differ, as they must


def test_evaluate_policy_scores_an_expert() -> None:
    env = Monitor(gym.make("HetCluster-Tiny-v0", reward="jct"))
    agent = ExpertAgent("srtf", env)
    venv = DummyVecEnv([lambda: env])
    venv.seed(7)
    finals: list[dict[str, Any]] = []

    def grab(local: dict[str, Any], _globals: dict[str, Any]) -> None:
        if local["done"]:
            finals.append(local["info"])

    returns, _lengths = evaluate_policy(agent, venv, n_eval_episodes=2, return_episode_rewards=True, callback=grab)
    assert len(returns) == len(finals) == 2
    sc = get_scenario("tiny")
    for ret, info in zip(returns, finals, strict=True):
        jobs = sc.workload.build(sc.cluster, seed=info["workload_seed"])
        direct = Simulator(sc.cluster, jobs, config=sc.sim).run(make_policy("srtf")).metrics
        assert ret == pytest.approx(-direct["jct_mean_s"] * direct["num_completed"] / 3600.0, rel=1e-6)
        assert info["metrics"]["dsr"] == direct["dsr"] or math.isnan(direct["dsr"])
    assert returns[0] != returns[1]


def test_label_wrapper_matches_the_agent() -> None:
    env = ExpertLabelWrapper(gym.make("HetCluster-Tiny-v0"), "tiresias")
    twin = gym.make("HetCluster-Tiny-v0")
    agent = ExpertAgent("tiresias", twin)
    obs, info = env.reset(seed=3)
    twin_obs, _ = twin.reset(seed=3)
    for _ in range(300):
        action, _ = agent.predict(twin_obs)
        assert info["expert_action"] == action and info["expert_exact"] is True
        obs, _, term, trunc, info = env.step(info["expert_action"])
        twin_obs, *_ = twin.step(action)
        assert data_equivalence(obs, twin_obs, exact=True)
        if term or trunc:
            break


def test_labels_follow_a_learner_that_deviates() -> None:
    # DAgger: the learner acts, the teacher labels every state, calling schedule once per decision epoch.
    env = ExpertLabelWrapper(gym.make("HetCluster-Tiny-v0"), "srtf")
    calls = 0
    original = env.tracker.policy.schedule

    def counted(view: Any) -> Any:
        nonlocal calls
        calls += 1
        return original(view)

    env.tracker.policy.schedule = counted  # type: ignore[method-assign]
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=0)
    u = env.unwrapped
    # SRTF runs without ticks on the simulator: at a tick without news it keeps what is in force, unasked.
    epochs = {u.decision_key: skips_epoch(env.tracker.policy, u.view)}  # type: ignore[attr-defined]
    for _ in range(300):
        assert info["action_mask"][info["expert_action"]]
        expert = rng.random() < 0.5
        action = info["expert_action"] if expert else int(rng.choice(np.flatnonzero(info["action_mask"])))
        _, _, term, trunc, info = env.step(action)
        if term or trunc:
            break
        epochs.setdefault(u.decision_key, skips_epoch(env.tracker.policy, u.view))  # type: ignore[attr-defined]
    asked = sum(not skipped for skipped in epochs.values())
    assert calls == asked > 10 and asked < len(epochs)


def test_agent_reads_labels_from_spawned_workers() -> None:
    make = functools.partial(labelled_env, "hetgym:HetCluster-Tiny-v0", "srtf")
    envs = gym.vector.AsyncVectorEnv([make, make], context="spawn")
    try:
        agent = ExpertAgent("srtf", envs)
        obs, infos = envs.reset(seed=[0, 1])
        # labelled_env runs the policy's own physics: the local twins are made the same way.
        local = [gym.make("HetCluster-Tiny-v0", **expert_env_kwargs("srtf")) for _ in range(2)]
        local_agents = [ExpertAgent("srtf", e) for e in local]
        local_obs = [e.reset(seed=s)[0] for e, s in zip(local, (0, 1), strict=True)]
        for _ in range(40):
            actions, _ = agent.predict(obs)
            assert actions.shape == (2,)
            assert (actions == infos["expert_action"]).all()
            for i in range(2):
                assert actions[i] == local_agents[i].predict(local_obs[i])[0]
                local_obs[i], *_ = local[i].step(actions[i])
            obs, _, _, _, infos = envs.step(actions)
    finally:
        envs.close()


def test_a_policy_without_ticks_keeps_its_allocation_at_a_quiet_tick() -> None:
    # SRTF (uses_ticks = False) runs on the simulator without round ticks. Asked at a tick, it re-ranks
    # two running jobs whose remaining times crossed since the last event (seed 2 of the 120-job default
    # scenario, around t = 43,000 s) and swaps their GPU types, which its simulator run never does: the
    # tracker keeps what is in force at such a tick instead of asking.
    check_equivalence("srtf", 2, "multidiscrete", "default", num_jobs=120)
    env = gym.make("HetCluster-Tiny-v0", **expert_env_kwargs("srtf"))
    env.reset(seed=0)
    view = env.unwrapped.view  # type: ignore[attr-defined]
    quiet = dataclasses.replace(view, is_tick=True, arrived=(), completed=())
    assert skips_epoch(make_policy("srtf"), quiet) and not skips_epoch(make_policy("tiresias"), quiet)
    assert not skips_epoch(make_policy("srtf"), view)  # the first epoch: arrivals


def test_the_env_config_holds_the_physics_its_simulator_runs_with() -> None:
    for env_id, kwargs in [
        ("HetCluster-Tiny-v0", {}),
        ("HetCluster-v2", {"sim": {"round_s": 60.0}}),
        ("HetCluster-Tiny-v0", expert_env_kwargs("hadare")),
    ]:
        env = gym.make(env_id, **kwargs).unwrapped
        cfg = env.config
        # No policy drives it: the configuration's round and placer (else the defaults), ticks, the codec's modes.
        assert cfg.physics == Physics(cfg.sim.round_s or DEFAULT_ROUND_S, cfg.sim.placer or "default", cfg.modes)
        env.reset(seed=0)
        assert env.sim.physics == cfg.physics
    events = gym.make("HetClusterEvents-Tiny-v1").unwrapped
    # The allocator drives the event env's simulator: its physics, as Simulator.run would resolve them.
    assert events.config.physics == resolve_physics(events.config.sim, make_policy("elasticflow-guided"))
    assert (events.config.physics.round_s, events.config.physics.placer) == (60.0, "buddy")
    events.reset(seed=0)
    assert events.sim.physics == events.config.physics


def test_physics_gaps_compare_two_physics_values_field_by_field() -> None:
    hadare = make_policy("hadare")
    assert own_physics(hadare) == Physics(360.0, "copies", ("sync", "fork"), True)
    at_60 = gym.make("HetCluster-Tiny-v0", sim={"round_s": 60.0})
    assert physics_gaps(hadare, at_60) == [
        "placer 'default' (the policy declares 'copies')",
        "execution modes ['sync'] lack ['fork']",
        "round 60.0 s (the policy's is 360.0 s)",
    ]
    default = gym.make("HetCluster-Tiny-v0")  # runs 360 s rounds: the round it names is that one
    assert physics_gaps(make_policy("elasticflow"), default) == [
        "placer 'default' (the policy declares 'buddy')",
        "round 360.0 s (the policy's is 60.0 s)",
    ]
    assert physics_gaps(make_policy("gavel-fifo"), default) == []  # Gavel's 360 s is the round it runs
    assert physics_gaps(make_policy("fifo"), at_60) == []  # a policy without a round of its own fits any
    # expert_env_kwargs is the policy's physics written as overrides: the env then has no gap.
    knobbed = make_policy("elasticflow", placement="default")
    env = gym.make("HetCluster-Tiny-v0", **expert_env_kwargs(knobbed))
    assert env.unwrapped.config.physics.placer == own_physics(knobbed).placer == knobbed.placer
    assert physics_gaps(knobbed, env) == []
