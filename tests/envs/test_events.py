"""HetClusterEvents-v0, the event-driven interface: the Gymnasium contract, one decision per job, masks, and the
allocator's expert through the env giving the same per-job results as on the raw simulator."""

from __future__ import annotations

import math
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env, data_equivalence
from gymnasium.wrappers import FlattenObservation
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import hetgym
from hetgym.envs import ENV_IDS, EVENT_ENV_IDS
from hetgym.envs.config import EnvConfigError
from hetgym.envs.events import AUTO_ACTION, REJECT_ACTION, HetClusterEventEnv
from hetgym.envs.events.experts import EventExpertAgent
from hetgym.sim import Simulator, UnknownNameError, make_policy
from hetgym.sim.guidance import Directive
from hetgym.workloads import get_scenario

#: The default scenario cut to 30 jobs keeps the quick suite quick.
SHORT = {"workload": {"num_jobs": 30}}


def play(env: gym.Env, choose: Any, seed: int, options: dict[str, Any] | None = None) -> tuple[list[Any], dict]:
    """One episode; ``choose(env, info)`` gives each action. Returns the trace and the last info."""
    obs, info = env.reset(seed=seed, options=options)
    trace: list[Any] = [obs]
    while True:
        obs, reward, terminated, truncated, info = env.step(choose(env, info))
        trace.append((obs, reward, terminated, truncated, info["reward_components"], info["action_mask"]))
        if terminated or truncated:
            return trace, info


def random_masked(seed: int) -> Any:
    rng = np.random.default_rng(seed)
    return lambda env, info: int(rng.choice(np.flatnonzero(info["action_mask"])))


def test_the_v2_ids_are_registered_beside_v0_and_v1() -> None:
    hetgym.envs.register_envs()
    events = {
        *("HetClusterEvents-v0", "HetClusterEvents-Tiny-v0", "HetClusterEvents-v1", "HetClusterEvents-Tiny-v1"),
        *("HetClusterEvents-v2", "HetClusterEvents-Tiny-v2"),
    }
    assert set(EVENT_ENV_IDS) == events
    for env_id in ("HetCluster-v0", "HetCluster-v1", *sorted(events)):
        assert env_id in gym.registry
    assert gym.spec("HetClusterEvents-Tiny-v0").kwargs == {"scenario": "tiny"}
    assert gym.spec("HetClusterEvents-Tiny-v1").kwargs == {"scenario": "tiny", "action_set": "share"}
    assert isinstance(gym.make("hetgym:HetClusterEvents-Tiny-v0").unwrapped, HetClusterEventEnv)
    ours = {env_id for env_id in gym.registry if env_id.startswith("HetCluster")}
    assert ours == set(ENV_IDS) | set(EVENT_ENV_IDS)  # every id is checked, here or in test_env_api


@pytest.mark.parametrize("env_id", sorted(EVENT_ENV_IDS))
def test_checkers_pass_without_warnings(env_id: str) -> None:
    env = gym.make(env_id)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
        sb3_check_env(env.unwrapped)
    assert [str(w.message) for w in caught] == []
    assert FlattenObservation(env).observation_space.shape is not None


def test_seeded_rollouts_are_bit_identical() -> None:
    a, _ = play(gym.make("HetClusterEvents-Tiny-v0"), random_masked(0), seed=7)
    b, _ = play(gym.make("HetClusterEvents-Tiny-v0"), random_masked(0), seed=7)
    assert data_equivalence(a, b, exact=True)
    c, _ = play(gym.make("HetClusterEvents-Tiny-v0"), random_masked(0), seed=8)
    assert not data_equivalence(a, c)


@pytest.mark.parametrize(
    ("env_id", "seeds", "kwargs"), [("HetClusterEvents-Tiny-v0", (0, 1, 2), {}), ("HetClusterEvents-v0", (3,), SHORT)]
)
@pytest.mark.parametrize("mode", ["auto", "closest"])
def test_elasticflow_through_the_env_is_elasticflow_on_the_simulator(
    env_id: str, seeds: tuple[int, ...], kwargs: dict[str, Any], mode: str
) -> None:
    env = gym.make(env_id, **kwargs)
    u = env.unwrapped
    agent = EventExpertAgent("elasticflow", env, mode=mode)
    for seed in seeds:
        _, info = play(env, lambda e, i: agent.predict(None)[0], seed=seed)
        direct = Simulator(u.cluster, u.jobs, config=u.config.sim).run(make_policy("elasticflow"))
        assert info["stop_reason"] == "done"
        assert u.result().jobs.equals(direct.jobs), f"seed {seed}: per-job results differ"
        assert u.result().num_epochs == direct.num_epochs
        assert info["metrics"]["dsr"] == direct.metrics["dsr"]
        assert info["metrics"]["decisions_per_job"] == 1.0


def test_closest_choices_of_elasticflow_name_its_rejections() -> None:
    env = gym.make("HetClusterEvents-v0", **SHORT)
    agent = EventExpertAgent("elasticflow", env)
    actions: list[int] = []

    def choose(e: gym.Env, info: dict[str, Any]) -> int:
        actions.append(int(agent.predict(None)[0]))
        return actions[-1]

    play(env, choose, seed=3)
    result = agent.expert_result[0]
    assert result is not None
    assert actions.count(REJECT_ACTION) == int((result.jobs["status"] == "rejected").sum()) > 0
    assert set(actions) == {REJECT_ACTION, env.unwrapped.actions.index(Directive("force"))}


def test_one_decision_per_job_and_rewards_count_deadlines() -> None:
    env = gym.make("HetClusterEvents-v0", **SHORT)
    steps = 0
    total = 0.0
    obs, info = env.reset(seed=1)
    rng = np.random.default_rng(1)
    while True:
        assert env.observation_space.contains(obs)
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        steps += 1
        total += float(reward)
        if terminated or truncated:
            break
    m = info["metrics"]
    assert steps == len(env.unwrapped.jobs) == m["num_decisions"] and m["decisions_per_job"] == 1.0
    met = round(m["dsr"] * m["num_jobs"])
    assert total == met - (m["num_jobs"] - met)  # every job of this recipe has a deadline


def test_masks_follow_the_usable_types_and_a_masked_action_runs_on_any_type() -> None:
    env = HetClusterEventEnv(scenario="tiny", workload={"num_jobs": 12})
    _, info = env.reset(seed=0)
    n_types = len(env.gpu_types)
    seen_partial = False
    while True:
        mask = info["action_mask"]
        assert np.array_equal(mask, env.action_masks())
        usable = env.usable_types()
        for a in range(env.actions.n):
            d = env.actions.directive(a)
            assert mask[a] == (d.gpu_type is None or d.gpu_type in usable)
        assert mask[AUTO_ACTION] and mask[REJECT_ACTION]
        blocked = np.flatnonzero(~mask)
        seen_partial |= len(usable) < n_types
        action = int(blocked[0]) if len(blocked) else AUTO_ACTION
        _, _, terminated, truncated, info = env.step(action)
        assert info["invalid_action"] == bool(len(blocked))
        if terminated or truncated:
            break
    assert env.action_masks()[AUTO_ACTION]  # the final mask still names an action
    del seen_partial  # whether a job with fewer usable types occurred depends on the draw


def test_reject_everything_gives_dsr_zero_and_force_everything_rejects_nothing() -> None:
    env = gym.make("HetClusterEvents-Tiny-v0")
    _, info = play(env, lambda e, i: REJECT_ACTION, seed=4)
    assert info["metrics"]["dsr"] == 0.0 and info["metrics"]["num_rejected"] == len(env.unwrapped.jobs)
    force = env.unwrapped.actions.index(Directive("force"))
    _, info = play(env, lambda e, i: force, seed=4)
    assert info["metrics"]["num_rejected"] == 0


def test_reset_options_and_workload_seed() -> None:
    env = HetClusterEventEnv(scenario="tiny")
    env.reset(seed=5, options={"workload_seed": 42})
    sc = get_scenario("tiny")
    assert env.jobs == tuple(sc.workload.build(sc.cluster, seed=42).jobs)
    env.reset(options={"jobs": list(env.jobs[:3])})
    assert len(env.jobs) == 3 and env.workload_seed is None
    with pytest.raises(UnknownNameError, match="workload_seed"):
        env.reset(options={"workload_sed": 1})


def test_bad_configuration_is_named() -> None:
    with pytest.raises(UnknownNameError, match="allocator"):
        gym.make("HetClusterEvents-v0", alocator="elasticflow-guided")
    with pytest.raises(UnknownNameError, match="elasticflow"):
        gym.make("HetClusterEvents-v0", allocator="elasticflw")
    with pytest.raises(EnvConfigError, match="takes no per-job guidance"):
        gym.make("HetClusterEvents-v0", allocator="edf")
    with pytest.raises(UnknownNameError, match="leftover_rule"):
        gym.make("HetClusterEvents-v0", allocator_knobs={"leftover_rul": "gputime"})
    with pytest.raises(EnvConfigError, match="time_scale_s"):
        gym.make("HetClusterEvents-v0", time_scale_s=0)
    env = gym.make("HetClusterEvents-Tiny-v0")
    env.reset(seed=0)
    with pytest.raises(hetgym.sim.errors.HetgymError, match="outside Discrete"):
        env.step(99)


def test_probe_off_zeroes_the_admission_features() -> None:
    on = HetClusterEventEnv(scenario="tiny")
    off = HetClusterEventEnv(scenario="tiny", probe=False)
    a, _ = on.reset(seed=2)
    b, _ = off.reset(seed=2)
    assert not b["job_admissible"].any() and b["job"][3] == 0.0
    for key in a:
        if key not in ("job_admissible", "job"):
            assert np.array_equal(a[key], b[key]), key


def test_maskable_ppo_learns_a_few_steps() -> None:
    sb3_contrib = pytest.importorskip("sb3_contrib")
    env = FlattenObservation(gym.make("HetClusterEvents-Tiny-v0"))
    model = sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=32, batch_size=16, n_epochs=1, seed=0, device="cpu")
    model.learn(64)
    obs, _ = env.reset(seed=0)
    action, _ = model.predict(obs, action_masks=env.unwrapped.action_masks(), deterministic=True)
    assert env.action_space.contains(int(action))


def test_render_ansi() -> None:
    env = gym.make("HetClusterEvents-Tiny-v0", render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert isinstance(text, str) and "job" in text
    assert math.isfinite(env.unwrapped.view.now_s)


def test_late_events_leave_elasticflow_exact() -> None:
    # ElasticFlow's admitted jobs keep their shares, so it meets no late event; asking changes nothing.
    env = gym.make("HetClusterEvents-Tiny-v0", events=["arrival", "late"])
    u = env.unwrapped
    for seed in (0, 1):
        play(env, lambda e, i: AUTO_ACTION, seed=seed)
        direct = Simulator(u.cluster, u.jobs, config=u.config.sim).run(make_policy("elasticflow"))
        assert u.result().jobs.equals(direct.jobs)


@pytest.mark.parametrize("drop", [False, True])
def test_late_events_follow_forced_jobs_and_a_drop_rejects(drop: bool) -> None:
    env = gym.make("HetClusterEvents-v0", events=["arrival", "late"], probe=False, workload={"num_jobs": 60})
    force = env.unwrapped.actions.index(Directive("force"))
    late: list[int] = []

    def choose(e: gym.Env, info: dict[str, Any]) -> int:
        if info["event"] == "late":
            assert np.flatnonzero(info["action_mask"]).tolist() == [AUTO_ACTION, REJECT_ACTION]
            assert e.unwrapped.view.job(info["job_id"]).remaining_iters > 0
            late.append(info["job_id"])
            return REJECT_ACTION if drop else AUTO_ACTION
        assert info["event"] == "arrival"
        return force

    _, info = play(env, choose, seed=1000)
    m = info["metrics"]
    assert late and len(set(late)) == len(late)  # each job is asked about once
    assert m["num_decisions"] == 60 + len(late) and 1.0 < m["decisions_per_job"] <= 2.0
    assert m["num_rejected"] == (len(late) if drop else 0)


def test_events_option_is_checked() -> None:
    with pytest.raises(EnvConfigError, match="arrival"):
        gym.make("HetClusterEvents-Tiny-v0", events=["late"])
    with pytest.raises(UnknownNameError, match="late"):
        gym.make("HetClusterEvents-Tiny-v0", events=["arrival", "lat"])


def test_flatten_gives_the_flatten_wrappers_vectors_and_is_checked() -> None:
    wrapped = FlattenObservation(gym.make("HetClusterEvents-Tiny-v0"))
    flat = gym.make("HetClusterEvents-Tiny-v0", flatten=True)
    assert flat.observation_space == wrapped.observation_space
    a, _ = play(wrapped, random_masked(3), seed=5)
    b, _ = play(flat, random_masked(3), seed=5)
    assert data_equivalence(a, b, exact=True)
    check_env(flat.unwrapped)
    with pytest.raises(EnvConfigError, match="flatten"):
        gym.make("HetClusterEvents-Tiny-v0", flatten="yes")
