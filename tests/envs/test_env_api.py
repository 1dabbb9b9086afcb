"""The Gymnasium contract of HetCluster-v0: checkers, seeding, pickling, specs, spawned workers, config."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.registration import EnvSpec
from gymnasium.utils.env_checker import check_env, data_equivalence
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import hetgym
from hetgym.envs import ENV_IDS, HetClusterConfig, HetClusterEnv
from hetgym.sim import UnknownNameError
from hetgym.workloads import get_scenario, write_trace

ROOT = Path(__file__).resolve().parents[2]
CODECS = ("sequential", "multidiscrete", "score")


def random_masked_action(env: gym.Env, info: dict[str, Any], rng: np.random.Generator) -> Any:
    """A uniformly random valid action (per dimension for the one-shot codec)."""
    mask = info["action_mask"]
    space = env.action_space
    if isinstance(space, gym.spaces.Discrete):
        return int(rng.choice(np.flatnonzero(mask)))
    out, offset = [], 0
    for n in space.nvec:
        out.append(int(rng.choice(np.flatnonzero(mask[offset : offset + n]))))
        offset += n
    return np.array(out, dtype=np.int64)


def test_registration_is_idempotent_and_covers_every_id() -> None:
    assert set(ENV_IDS) == {
        *("HetCluster-v0", "HetCluster-Tiny-v0", "HetCluster-v1", "HetCluster-Tiny-v1"),
        *("HetCluster-v2", "HetCluster-Tiny-v2"),
    }
    hetgym.envs.register_envs()
    hetgym.envs.register_envs()
    for env_id in ENV_IDS:
        assert env_id in gym.registry
    assert gym.spec("HetCluster-Tiny-v0").kwargs == {"scenario": "tiny"}
    assert gym.spec("HetCluster-Tiny-v1").kwargs == {"scenario": "tiny", "interface": "v1"}


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_checkers_pass_without_warnings(env_id: str, codec: str) -> None:
    env = gym.make(env_id, codec=codec)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
        sb3_check_env(env.unwrapped)
    assert [str(w.message) for w in caught] == []


def test_checkers_pass_with_modes_and_without_rejection() -> None:
    env = gym.make("HetCluster-Tiny-v0", modes=["sync", "proportional", "fork"], allow_reject=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
        sb3_check_env(env.unwrapped)
    assert [str(w.message) for w in caught] == []
    assert "job_mode" in env.observation_space.spaces and "job_rejected" not in env.observation_space.spaces


def rollout(env: gym.Env, seed: int, steps: int) -> list[Any]:
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    trace: list[Any] = [obs]
    for _ in range(steps):
        action = random_masked_action(env, info, rng)
        obs, reward, terminated, truncated, info = env.step(action)
        trace.append((obs, reward, terminated, truncated, info["reward_components"], info["action_mask"]))
        if terminated or truncated:
            obs, info = env.reset()
            trace.append(obs)
    return trace


@pytest.mark.parametrize("codec", CODECS)
def test_seeded_rollout_is_bit_identical_across_two_envs(codec: str) -> None:
    a = rollout(gym.make("HetCluster-v0", codec=codec), seed=11, steps=200)
    b = rollout(gym.make("HetCluster-v0", codec=codec), seed=11, steps=200)
    assert data_equivalence(a, b, exact=True)
    c = rollout(gym.make("HetCluster-v0", codec=codec), seed=12, steps=200)
    assert not data_equivalence(a, c)


def test_reset_draws_the_workload_from_np_random() -> None:
    env = HetClusterEnv(scenario="tiny")
    env.reset(seed=5)
    first = env.jobs
    env.reset()
    assert env.jobs != first  # the stream continues
    env.reset(seed=5)
    assert env.jobs == first
    sc = get_scenario("tiny")
    env.reset(seed=5, options={"workload_seed": 42})
    assert env.jobs == sc.workload.build(sc.cluster, seed=42).jobs
    env.reset(options={"jobs": list(first[:3])})
    assert env.jobs == first[:3] and env.workload_seed is None
    with pytest.raises(UnknownNameError, match="workload_seed"):
        env.reset(options={"workload_sed": 1})


@pytest.mark.parametrize("codec", CODECS)
def test_pickle_round_trip_continues_identically(codec: str) -> None:
    env = gym.make("HetCluster-v0", codec=codec, render_mode="ansi")
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=3)
    for _ in range(60):
        _obs, _, term, trunc, info = env.step(random_masked_action(env, info, rng))
        assert not (term or trunc)
    clone = pickle.loads(pickle.dumps(env))
    assert clone.spec == env.spec
    assert clone.unwrapped.episode_id == env.unwrapped.episode_id
    assert clone.render() == env.render()
    for _ in range(60):
        action = random_masked_action(env, info, rng)
        out_a = env.step(action)
        out_b = clone.step(action)
        assert data_equivalence(out_a, out_b, exact=True)
        info = out_a[4]
    # A fresh (never reset) env pickles too, and the reset stream continues identically.
    fresh = pickle.loads(pickle.dumps(gym.make("HetCluster-Tiny-v0")))
    assert data_equivalence(fresh.reset(seed=1), gym.make("HetCluster-Tiny-v0").reset(seed=1), exact=True)
    env.reset()
    clone.reset()
    assert env.unwrapped.jobs == clone.unwrapped.jobs


def test_spec_json_round_trip() -> None:
    env = gym.make(
        "HetCluster-v0",
        queue_slots=8,
        codec="multidiscrete",
        reward="jct",
        workload={"num_jobs": 30},
        sim={"round_s": 60.0},
        count_levels=[0, 1, 2, 4, 8],
    )
    text = env.spec.to_json()
    spec = EnvSpec.from_json(text)
    assert spec == env.spec
    again = gym.make(spec)
    assert again.observation_space == env.observation_space
    assert again.action_space == env.action_space
    assert again.unwrapped.config == env.unwrapped.config
    assert json.loads(text)["kwargs"]["workload"] == {"num_jobs": 30}


def test_make_in_a_spawned_process() -> None:
    code = textwrap.dedent(
        """
        import gymnasium as gym
        import numpy as np
        env = gym.make("hetgym:HetCluster-v0")
        obs, info = env.reset(seed=0)
        obs, r, term, trunc, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
        print("ok", info["committed"], env.unwrapped.config.scenario)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "ok True default"


def test_async_vector_env_with_spawned_workers() -> None:
    envs = gym.make_vec(
        "hetgym:HetCluster-Tiny-v0",
        num_envs=2,
        vectorization_mode="async",
        vector_kwargs={"context": "spawn"},
    )
    try:
        obs, infos = envs.reset(seed=[1, 2])
        assert obs["slot_used"].shape == (2, 16)
        commit = envs.single_action_space.n - 1
        obs, _rewards, _term, _trunc, infos = envs.step(np.array([commit, commit]))
        assert infos["committed"].all()
    finally:
        envs.close()


def test_sim_and_baselines_import_without_gymnasium() -> None:
    code = textwrap.dedent(
        """
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "gymnasium" or name.startswith("gymnasium."):
                    raise ModuleNotFoundError("No module named 'gymnasium' (hidden)")
                return None
        sys.meta_path.insert(0, Block())
        import hetgym.sim, baselines
        from hetgym.sim import Simulator, make_policy
        from hetgym.workloads import get_scenario
        sc = get_scenario("tiny")
        r = Simulator(sc.cluster, sc.workload.build(sc.cluster, seed=0)).run(make_policy("fifo"))
        assert "gymnasium" not in sys.modules
        print("ok", int(r.metrics["num_completed"]))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "ok 12"


# ------------------------------------------------------------------------------------------------
# Configuration


def test_overrides_reach_the_spaces_and_the_simulator(tmp_path: Path) -> None:
    env = gym.make(
        "HetCluster-v0", queue_slots=32, cluster="gavel-108", workload={"num_jobs": 20}, sim={"round_s": 60.0}
    )
    u = env.unwrapped
    assert u.cluster.name == "gavel-108" and u.sim_config.round_s == 60.0
    assert env.observation_space["slot_used"].shape == (32,)
    assert env.observation_space["job_speed"].shape == (32 * 3,)
    levels = 7  # 0 and the powers of two up to 36 GPUs per type
    assert env.action_space.n == 32 * 3 * levels + 32 + 1
    env.reset(seed=0)
    assert len(u.jobs) == 20
    # A trace is replayed whole, every episode.
    sc = get_scenario("tiny")
    path = tmp_path / "t.csv"
    write_trace(sc.workload.build(sc.cluster, seed=9), path)
    traced = gym.make("HetCluster-Tiny-v0", trace=str(path))
    traced.reset(seed=0)
    first = traced.unwrapped.jobs
    traced.reset(seed=1)
    assert traced.unwrapped.jobs == first and len(first) == 12
    five = gym.make("HetCluster-Tiny-v0", trace=str(path), workload={"num_jobs": 5})
    five.reset(seed=0)
    assert five.unwrapped.jobs == first[:5]


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"queue_slot": 8}, "did you mean 'queue_slots'"),
        ({"workload": {"num_job": 5}}, "did you mean 'num_jobs'"),
        ({"sim": {"round": 60}}, "did you mean 'round_s'"),
        ({"cluster": "gavel108"}, "did you mean 'gavel-108'"),
        ({"codec": "sequental"}, "did you mean 'sequential'"),
        ({"reward": "deadlines"}, "did you mean 'deadline'"),
        ({"scenario": "tinny"}, "did you mean 'tiny'"),
    ],
)
def test_unknown_keys_name_the_nearest_valid_one(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(UnknownNameError, match=needle):
        gym.make("HetCluster-v0", **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"queue_slots": 0}, "queue_slots"),
        ({"count_levels": [1, 2]}, "including 0"),
        ({"max_actions_per_epoch": 0}, "max_actions_per_epoch"),
        ({"trace": "/no/such/file.csv"}, "no such file"),
        ({"workload": 3}, "mapping"),
        ({"time_scale_s": -1.0}, "time_scale_s"),
        ({"reward": "jct", "allow_reject": True}, "reject every job"),
    ],
)
def test_bad_values_are_explained(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        gym.make("HetCluster-v0", **kwargs)


def test_rejection_is_offered_with_the_deadline_reward_only() -> None:
    assert gym.make("HetCluster-Tiny-v0").unwrapped.config.allow_reject is True
    for reward in ("jct", "makespan", "utilisation"):
        env = gym.make("HetCluster-Tiny-v0", reward=reward)
        assert env.unwrapped.config.allow_reject is False
        assert "job_rejected" not in env.observation_space.spaces
        assert env.action_space.n == 16 * 2 * 4 + 1  # K*T*C + commit, no reject actions


def test_config_is_a_frozen_preset_with_a_round_trip() -> None:
    cfg = HetClusterConfig.preset("tiny", queue_slots=4, reward="makespan")
    assert cfg.cluster == "tiny" and cfg.queue_slots == 4 and cfg.workload.num_jobs == 12
    with pytest.raises(AttributeError):
        cfg.queue_slots = 3  # type: ignore[misc]
    assert HetClusterConfig.make(**cfg.to_kwargs()) == cfg
    env = HetClusterEnv(config=cfg)
    assert env.observation_space["slot_used"].shape == (4,)
    with pytest.raises(hetgym.sim.HetgymError, match="not both"):
        HetClusterEnv(config=cfg, queue_slots=3)
