"""The job-at-a-time codec with several GPU types a job: bounded turns, masks, and the exact inverse map."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import hetgym  # noqa: F401  (registers the ids)
from hetgym.envs.codecs import CODECS, JobwiseCodec, JobwiseKnobs
from hetgym.envs.settings_checks import EnvConfigError
from hetgym.experts import ExpertAgent, expert_env_kwargs
from hetgym.sim import Simulator, make_policy
from hetgym.sim.registry import KnobError

TINY = "HetCluster-Tiny-v0"


def test_jobwise_types_is_registered_passes_the_checker_and_keeps_jobwise_numbering() -> None:
    assert CODECS.get("jobwise-types") is JobwiseCodec and "jobwise-types" in CODECS.names()
    assert CODECS.describe()["jobwise-types"] == "alias of 'jobwise' with several_types=True"
    env = gym.make(TINY, codec="jobwise-types")
    check_env(env.unwrapped, skip_render_check=True)
    assert env.action_space == gym.make(TINY, codec="jobwise").action_space
    assert "slot_cursor" in env.observation_space.spaces


def _rollout(env: gym.Env, seed: int, steps: int) -> list[bytes]:
    """Every observation, mask and reward of a seeded random masked rollout, as bytes."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    out: list[bytes] = []
    for _ in range(steps):
        out += [v.tobytes() for v in obs.values()] + [info["action_mask"].tobytes()]
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        out.append(np.float64(reward).tobytes())
        if terminated or truncated:
            obs, info = env.reset()
    return out


@pytest.mark.parametrize("env_id", [TINY, "HetCluster-Tiny-v1"])
def test_the_alias_is_jobwise_with_the_types_knob_bit_for_bit(env_id: str) -> None:
    alias = gym.make(env_id, codec="jobwise-types")
    knob = gym.make(env_id, codec="jobwise", codec_knobs={"several_types": True})
    assert alias.unwrapped.config.codec_knobs == knob.unwrapped.config.codec_knobs == JobwiseKnobs(several_types=True)
    assert alias.action_space == knob.action_space and alias.observation_space == knob.observation_space
    assert alias.unwrapped.codec.steps_bound() == knob.unwrapped.codec.steps_bound()
    assert _rollout(alias, 3, 300) == _rollout(knob, 3, 300)
    # Saved env kwargs name the alias with its preset knob: they build the same env again.
    again = gym.make(env_id, **alias.unwrapped.config.to_kwargs())
    assert again.unwrapped.config == alias.unwrapped.config
    assert _rollout(again, 4, 100) == _rollout(alias, 4, 100)


def test_the_alias_refuses_a_knob_that_contradicts_its_preset() -> None:
    with pytest.raises(KnobError, match="presets several_types=True"):
        gym.make(TINY, codec="jobwise-types", codec_knobs={"several_types": False})
    with pytest.raises(EnvConfigError, match="no knobs"):
        gym.make(TINY, codec="sequential", codec_knobs={"several_types": True})
    plain = gym.make(TINY, codec="jobwise").unwrapped.codec
    assert not plain.several_types and plain.steps_bound() == plain.num_slots + 1


def test_an_epoch_takes_at_most_k_times_types_plus_one_steps_whatever_the_agent_does() -> None:
    env = gym.make(TINY, codec="jobwise-types")
    u = env.unwrapped
    k, t = u.config.queue_slots, len(u.cluster.gpu_types)
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=1)
    per_epoch, beyond_jobwise, invalid_seen, multi = 0, False, False, False
    jobs = int(u.state.used.sum())
    for _ in range(4000):
        # Mostly set actions (they keep the cursor on the job), sometimes any action at all.
        mask = info["action_mask"]
        sets = np.flatnonzero(mask[: u.codec.num_set])
        if rng.random() < 0.2:
            action = int(rng.integers(env.action_space.n))
        elif len(sets) and rng.random() < 0.7:
            action = int(rng.choice(sets))
        else:
            action = int(rng.choice(np.flatnonzero(mask)))
        _, _, term, trunc, info = env.step(action)
        invalid_seen |= info["invalid_action"]
        multi |= bool((np.count_nonzero(u.state.draft, axis=1) > 1).any())
        per_epoch += 1
        if info["committed"]:
            assert per_epoch <= jobs * (t + 1) + 1 <= k * (t + 1) + 1
            beyond_jobwise |= per_epoch > jobs + 1  # more steps than one a job: several types a turn
            per_epoch = 0
        if term or trunc:
            _, info = env.reset()
        if info["committed"] or term or trunc:
            jobs = int(u.state.used.sum())
    assert beyond_jobwise and invalid_seen and multi


def test_a_turn_adds_types_once_each_in_one_mode_and_keep_ends_it() -> None:
    env = gym.make(TINY, codec="jobwise-types", modes=["sync", "fork"])
    u = env.unwrapped
    codec, state = u.codec, u.state
    _, info = env.reset(seed=3)
    while int(state.used.sum()) < 1 or state.allowed[0].sum() < 2:
        _, _, _, _, info = env.step(codec.done)
    types = np.flatnonzero(state.allowed[0])[:2]
    first = codec.set_action(int(types[0]), 1, mode_idx=1)
    _, _, _, _, info = env.step(first)
    assert not info["committed"] and codec.current_slot(state) == 0
    assert state.draft[0].tolist() == [1 if i == types[0] else 0 for i in range(len(state.types))]
    mask = info["action_mask"]
    assert not mask[first]  # a type once a turn
    assert not mask[codec.set_action(int(types[1]), 1, mode_idx=0)]  # the turn's mode only
    second = codec.set_action(int(types[1]), 1, mode_idx=1)
    assert mask[second]
    env.step(second)
    assert sorted(np.flatnonzero(state.draft[0]).tolist()) == sorted(types.tolist())
    _, _, _, _, info = env.step(codec.keep)
    assert codec.current_slot(state) == 1 or info["committed"]
    assert state.cursor_types == 0


def test_none_after_set_actions_clears_the_job_and_ends_its_turn() -> None:
    env = gym.make(TINY, codec="jobwise-types")
    u = env.unwrapped
    codec, state = u.codec, u.state
    env.reset(seed=3)
    while int(state.used.sum()) < 2:
        env.step(codec.done)
    t = int(np.flatnonzero(state.allowed[0])[0])
    env.step(codec.set_action(t, 1))
    env.step(codec.none)
    assert not state.draft[0].any() and codec.current_slot(state) == 1


@pytest.mark.parametrize("env_id", ["HetCluster-Tiny-v0", "HetCluster-Tiny-v1"])
def test_hadare_acts_exactly_through_jobwise_types(env_id: str) -> None:
    # HadarE spreads jobs over types (jobwise reports those epochs inexact); here every epoch is exact and the
    # episode is the raw simulator's.
    env = gym.make(env_id, **{**expert_env_kwargs("hadare"), "codec": "jobwise-types"})
    agent = ExpertAgent("hadare", env)
    obs, _ = env.reset(seed=0)
    u = env.unwrapped
    bound = u.config.queue_slots * (len(u.cluster.gpu_types) + 1) + 1
    per_epoch, spread = 0, 0
    while True:
        action, _ = agent.predict(obs)
        obs, _, term, trunc, info = env.step(action)
        per_epoch += 1
        spread += int((np.count_nonzero(u.state.draft, axis=1) > 1).sum())
        if info["committed"]:
            assert info["target_exact"], info["target_reasons"]
            assert per_epoch <= bound
            per_epoch = 0
        if term or trunc:
            break
    assert spread > 0  # the episode did put jobs on several types
    direct = Simulator(u.cluster, u.jobs, config=u.sim_config).run(make_policy("hadare"))
    np.testing.assert_allclose(
        u.result().jobs.sort_values("job_id")["finish_s"],
        direct.jobs.sort_values("job_id")["finish_s"],
        atol=1e-6,
        equal_nan=True,
    )


def test_a_learner_turn_with_a_wrong_count_is_finished_and_reported_inexact() -> None:
    # DAgger labels states a learner reached: a turn that gave a type too few GPUs cannot give it again.
    env = gym.make(TINY, **{**expert_env_kwargs("hadare"), "codec": "jobwise-types"})
    u = env.unwrapped
    codec, state = u.codec, u.state
    agent = ExpertAgent("hadare", env)
    obs, _ = env.reset(seed=0)
    for _ in range(2000):
        action, _ = agent.predict(obs)
        kind, t, count, m = codec.decode(action)
        if kind == "set" and count > 1 and not state.cursor_types:
            break
        obs, _, term, trunc, _ = env.step(action)
        assert not (term or trunc)
    else:  # pragma: no cover - the workload of seed 0 has such a turn
        pytest.fail("no set action with more than one GPU")
    obs, _, _, _, _ = env.step(codec.set_action(t, 1, m))  # one GPU instead of `count`
    enc = u.encode(agent.trackers[0].target)
    assert not enc.exact and any("once a turn" in r for r in enc.reasons)
    assert enc.actions[0] != action  # the same type cannot be given again
