"""Experts inside the env: the same metrics as on the raw simulator, SB3's evaluate_policy, labels in workers.

The equivalence test iterates over every registered policy, so policies added later are covered
without touching this file. When a codec cannot express a policy's allocation (a count off the
levels, an execution mode or explicit placement the codec does not offer), the env executes the
nearest expressible allocation and flags the epoch in ``info``; the test then checks the flags and
marks the comparison as an expected failure with the codec's reason, so it stays visible.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from hetgym.envs.env import WALL_CLOCK_METRICS
from hetgym.experts import ExpertAgent, ExpertLabelWrapper, expert_env_kwargs, labelled_env
from hetgym.sim import Simulator, list_policies, make_policy
from hetgym.workloads import get_scenario

POLICIES = sorted(list_policies())
SLOW_SEEDS = (2, 3, 4)


def same_metrics(a: dict[str, float], b: dict[str, float]) -> list[str]:
    keys = set(a) | set(b)
    return sorted(
        k for k in keys if not (a.get(k) == b.get(k) or (math.isnan(a.get(k, 0.0)) and math.isnan(b.get(k, 0.0))))
    )


def run_through_env(
    policy: str, seed: int, codec: str, **env_kwargs: Any
) -> tuple[dict[str, Any], gym.Env, list[dict[str, Any]]]:
    env = gym.make("HetCluster-Tiny-v0", codec=codec, **expert_env_kwargs(policy), **env_kwargs)
    agent = ExpertAgent(policy, env)
    obs, info = env.reset(seed=seed)
    infos = []
    while True:
        action, _ = agent.predict(obs, episode_start=np.array([not infos]), deterministic=True)
        obs, _, terminated, truncated, info = env.step(action)
        infos.append(info)
        if terminated or truncated:
            return info, env, infos


def check_equivalence(policy: str, seed: int, codec: str) -> None:
    final, env, infos = run_through_env(policy, seed, codec)
    u = env.unwrapped
    direct = Simulator(u.cluster, u.jobs, config=u.sim_config).run(make_policy(policy), ticks=True)
    direct_metrics = {k: v for k, v in direct.metrics.items() if k not in WALL_CLOCK_METRICS}
    flagged = [i for i in infos if i.get("target_exact") is False]
    committed = [i for i in infos if i["committed"]]
    assert all("target_exact" in i for i in committed), "every decision of an expert carries its exactness"
    if flagged:
        assert all(i["target_reasons"] for i in flagged)
        differ = same_metrics(direct_metrics, final["metrics"])
        pytest.xfail(
            f"{policy}: {len(flagged)} of {len(committed)} decisions not expressible by the {codec} codec "
            f"(e.g. {flagged[0]['target_reasons'][0]}); metrics differing: {differ}"
        )
    assert final["stop_reason"] == ("done" if not direct.stalled else "stalled")
    assert same_metrics(direct_metrics, final["metrics"]) == []
    assert final["metrics"]["num_decisions"] == direct.num_epochs


# Every policy on two seeds in the quick suite (one per codec), and on three more with both codecs
# in the slow one: a Tiny episode is some 2,500 decision epochs, mostly round ticks.
@pytest.mark.parametrize(("codec", "seed"), [("sequential", 0), ("multidiscrete", 1)])
@pytest.mark.parametrize("policy", POLICIES)
def test_expert_through_the_env_matches_the_simulator(policy: str, codec: str, seed: int) -> None:
    check_equivalence(policy, seed, codec)


@pytest.mark.slow
@pytest.mark.parametrize("codec", ["sequential", "multidiscrete"])
@pytest.mark.parametrize("seed", SLOW_SEEDS)
@pytest.mark.parametrize("policy", POLICIES)
def test_expert_matches_the_simulator_on_more_seeds(policy: str, seed: int, codec: str) -> None:
    check_equivalence(policy, seed, codec)


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
    epochs = {env.unwrapped.decision_key}
    for _ in range(300):
        assert info["action_mask"][info["expert_action"]]
        expert = rng.random() < 0.5
        action = info["expert_action"] if expert else int(rng.choice(np.flatnonzero(info["action_mask"])))
        _, _, term, trunc, info = env.step(action)
        if term or trunc:
            break
        epochs.add(env.unwrapped.decision_key)
    assert calls == len(epochs) > 10


def test_agent_reads_labels_from_spawned_workers() -> None:
    make = functools.partial(labelled_env, "hetgym:HetCluster-Tiny-v0", "srtf")
    envs = gym.vector.AsyncVectorEnv([make, make], context="spawn")
    try:
        agent = ExpertAgent("srtf", envs)
        obs, infos = envs.reset(seed=[0, 1])
        local = [gym.make("HetCluster-Tiny-v0"), gym.make("HetCluster-Tiny-v0")]
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
