"""``gym.make_vec`` on every id family: batched masks, seeding per sub-env, and the declared autoreset mode.

Both interfaces (the ``HetCluster`` ids and the event-driven ``HetClusterEvents`` ids) in each vectorisation
mode Gymnasium offers (``sync``, ``async``, and the ids' own ``vector_entry_point``). The autoreset tests replay
every sub-env as a single ``gym.make`` env following the declared mode by hand, so they check what the mode
means, not only that the vector envs agree with one another.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import hetgym  # noqa: F401  (registers the ids)
from hetgym.envs.registration import ENV_IDS, EVENT_ENV_IDS
from hetgym.envs.vector import (
    HetClusterEventVectorEnv,
    HetClusterVectorEnv,
    batched_action_masks,
    make_event_vector_env,
)
from hetgym.sim.errors import HetgymError

#: One Tiny id per family (the v0 and v1 interfaces of HetCluster, the event interface).
TINY_IDS = ("HetCluster-Tiny-v0", "HetCluster-Tiny-v1", "HetClusterEvents-Tiny-v0")
MODES = ("sync", "async", "vector_entry_point")
NUM_ENVS = 2


def _make_vec(env_id: str, mode: str, **kwargs: Any) -> Any:
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*out of date.*")  # the -v0 ids' deprecation notice
        return gym.make_vec(env_id, num_envs=NUM_ENVS, vectorization_mode=mode, **kwargs)


def _make(env_id: str, **kwargs: Any) -> gym.Env[Any, Any]:
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*out of date.*")
        return gym.make(env_id, **kwargs)


def _choose(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    return np.array([int(rng.choice(np.flatnonzero(m))) for m in masks])


def _row(obs: Any, i: int) -> Any:
    """Sub-env ``i``'s observation in a batch (``info["final_obs"]`` also holds ``"_key"`` masks: skipped)."""
    if isinstance(obs, dict):
        return {key: value[i] for key, value in obs.items() if not key.startswith("_")}
    return obs[i]


def _assert_obs_equal(a: Any, b: Any, what: str) -> None:
    if isinstance(b, dict):
        assert set(a) == set(b), what
        for key in b:
            np.testing.assert_array_equal(a[key], b[key], err_msg=f"{what}: {key}")
    else:
        np.testing.assert_array_equal(a, b, err_msg=what)


def test_every_registered_id_has_a_vector_entry_point() -> None:
    for env_id in [*ENV_IDS, *EVENT_ENV_IDS]:
        assert gym.spec(env_id).vector_entry_point is not None, env_id
    assert isinstance(_make_vec("HetCluster-Tiny-v1", "vector_entry_point"), HetClusterVectorEnv)
    events = _make_vec("HetClusterEvents-Tiny-v0", "vector_entry_point")
    assert isinstance(events, HetClusterEventVectorEnv) and isinstance(events, SyncVectorEnv)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("env_id", TINY_IDS)
def test_masks_are_batched_and_seeds_follow_gymnasium(env_id: str, mode: str) -> None:
    envs = _make_vec(env_id, mode)
    try:
        assert envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
        obs, info = envs.reset(seed=11)
        singles = [_make(env_id) for _ in range(NUM_ENVS)]
        single_out = [env.reset(seed=11 + i) for i, env in enumerate(singles)]  # sub-env i is seeded 11 + i
        mask = info["action_mask"]
        n = int(envs.single_action_space.n)
        assert mask.shape == (NUM_ENVS, n) and mask.dtype == np.bool_
        np.testing.assert_array_equal(batched_action_masks(envs), mask)
        for i, (single_obs, single_info) in enumerate(single_out):
            _assert_obs_equal(_row(obs, i), single_obs, f"sub-env {i} reset")
            np.testing.assert_array_equal(mask[i], single_info["action_mask"])
        rng = np.random.default_rng(0)
        for _ in range(8):
            actions = _choose(rng, mask)
            obs, _, term, trunc, info = envs.step(actions)
            mask = info["action_mask"]
            np.testing.assert_array_equal(batched_action_masks(envs), mask)
            for i, env in enumerate(singles):
                single_obs, _, s_term, s_trunc, _ = env.step(int(actions[i]))
                _assert_obs_equal(_row(obs, i), single_obs, f"sub-env {i}")
                assert (term[i], trunc[i]) == (s_term, s_trunc)
                np.testing.assert_array_equal(mask[i], env.unwrapped.action_masks())  # type: ignore[attr-defined]
            if (term | trunc).any():
                break
    finally:
        envs.close()


@pytest.mark.parametrize("mode", ["sync", "vector_entry_point"])
@pytest.mark.parametrize("env_id", TINY_IDS)
def test_a_seeded_reset_reproduces_the_rollout(env_id: str, mode: str) -> None:
    def rollout() -> list[Any]:
        envs = _make_vec(env_id, mode)
        obs, info = envs.reset(seed=4)
        rng = np.random.default_rng(1)
        out = [obs]
        for _ in range(14):  # past the event id's first episode end (12 steps)
            obs, reward, *_, info = envs.step(_choose(rng, info["action_mask"]))
            out += [obs, reward]
        envs.close()
        return out

    first, second = rollout(), rollout()
    for a, b in zip(first, second, strict=True):
        _assert_obs_equal(a, b, "rerun")


#: ``max_episode_steps`` of the autoreset tests, per id, and the steps they take (an event step costs most).
LIMITS = {"HetCluster-Tiny-v0": 85, "HetCluster-Tiny-v1": 55, "HetClusterEvents-Tiny-v0": 30}
STEPS = {"HetCluster-Tiny-v0": 200, "HetCluster-Tiny-v1": 160, "HetClusterEvents-Tiny-v0": 27}


def _vector(env_id: str, mode: str, autoreset: AutoresetMode, limit: int) -> Any:
    if mode == "vector_entry_point":  # the ids' own vector envs take the mode as a keyword, as a make_vec kwarg
        return _make_vec(env_id, mode, max_episode_steps=limit, autoreset_mode=autoreset)
    return _make_vec(env_id, mode, max_episode_steps=limit, vector_kwargs={"autoreset_mode": autoreset})


@pytest.mark.parametrize(
    ("mode", "autoreset"),
    [
        ("vector_entry_point", AutoresetMode.NEXT_STEP),
        ("vector_entry_point", AutoresetMode.SAME_STEP),
        ("sync", AutoresetMode.NEXT_STEP),
        ("sync", AutoresetMode.SAME_STEP),
        ("async", AutoresetMode.NEXT_STEP),
    ],
)
@pytest.mark.parametrize("env_id", TINY_IDS)
def test_the_step_after_a_done_behaves_as_declared(env_id: str, mode: str, autoreset: AutoresetMode) -> None:
    # Cut where some of the random agent's episodes have ended on their own and some have not (Tiny episodes
    # last about 70-110 steps on v0 and 25-60 on v1; the event id's always 12, one per job, so none is cut).
    limit = LIMITS[env_id]
    envs = _vector(env_id, mode, autoreset, limit)
    refs = [_make(env_id, max_episode_steps=limit) for _ in range(NUM_ENVS)]
    try:
        assert envs.metadata["autoreset_mode"] is autoreset
        obs, info = envs.reset(seed=2)
        for i, ref in enumerate(refs):
            ref.reset(seed=2 + i)
        pending = [False] * NUM_ENVS  # NEXT_STEP: this sub-env resets on the coming step
        rng = np.random.default_rng(5)
        terminated_seen = truncated_seen = autoresets = 0
        for _ in range(STEPS[env_id]):
            actions = _choose(rng, info["action_mask"])
            obs, reward, term, trunc, info = envs.step(actions)
            for i, ref in enumerate(refs):
                if pending[i]:  # declared NEXT_STEP: a reset, its action ignored, reward 0, flags False
                    r_obs, r_info = ref.reset()
                    assert (reward[i], term[i], trunc[i]) == (0.0, False, False)
                    _assert_obs_equal(_row(obs, i), r_obs, f"sub-env {i}: the step after its done")
                    np.testing.assert_array_equal(info["action_mask"][i], r_info["action_mask"])
                    pending[i] = False
                    autoresets += 1
                    continue
                r_obs, r_reward, r_term, r_trunc, r_info = ref.step(int(actions[i]))
                assert (reward[i], term[i], trunc[i]) == (r_reward, r_term, r_trunc)
                terminated_seen += int(r_term)
                truncated_seen += int(r_trunc and not r_term)
                if not (r_term or r_trunc):
                    _assert_obs_equal(_row(obs, i), r_obs, f"sub-env {i}")
                elif autoreset is AutoresetMode.NEXT_STEP:
                    _assert_obs_equal(_row(obs, i), r_obs, f"sub-env {i}: its last observation")
                    pending[i] = True
                else:  # declared SAME_STEP: the new episode's first observation now, the last one in info
                    assert info["_final_obs"][i] and info["_final_info"][i]
                    _assert_obs_equal(_row(info["final_obs"], i), r_obs, f"sub-env {i}: final_obs")
                    r_obs, r_info = ref.reset()
                    _assert_obs_equal(_row(obs, i), r_obs, f"sub-env {i}: the step of its done")
                    np.testing.assert_array_equal(info["action_mask"][i], r_info["action_mask"])
                    autoresets += 1
            if autoreset is AutoresetMode.SAME_STEP and "_final_obs" in info:
                np.testing.assert_array_equal(info["_final_obs"], term | trunc)
        assert terminated_seen > 0 and autoresets >= 2
        assert truncated_seen > 0 or env_id.startswith("HetClusterEvents")
    finally:
        envs.close()


@pytest.mark.parametrize("env_id", ["HetCluster-Tiny-v1", "HetClusterEvents-Tiny-v0"])
def test_disabled_autoreset_refuses_an_ended_sub_env_until_it_is_reset(env_id: str) -> None:
    envs = _make_vec(env_id, "vector_entry_point", max_episode_steps=3, autoreset_mode="Disabled")
    assert envs.metadata["autoreset_mode"] is AutoresetMode.DISABLED
    _, info = envs.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(3):
        _, _, term, trunc, info = envs.step(_choose(rng, info["action_mask"]))
    assert (term | trunc).all()
    with pytest.raises((HetgymError, AssertionError)):  # SyncVectorEnv (the event ids') asserts
        envs.step(_choose(rng, info["action_mask"]))
    _, info = envs.reset(options={"reset_mask": np.ones(NUM_ENVS, dtype=bool)})
    _, _, term, trunc, _ = envs.step(_choose(rng, info["action_mask"]))
    assert not (term | trunc).any()


def test_disabled_autoreset_error_names_the_fix() -> None:
    envs = HetClusterVectorEnv(2, scenario="tiny", interface="v1", max_episode_steps=1, autoreset_mode="Disabled")
    _, info = envs.reset(seed=0)
    envs.step(_choose(np.random.default_rng(0), info["action_mask"]))
    with pytest.raises(HetgymError, match=r"sub-envs \[0, 1\] ended.*reset_mask"):
        envs.step(np.zeros(2, dtype=int))


def test_bad_vector_arguments_are_named() -> None:
    with pytest.raises(ValueError, match=r"autoreset_mode='later'.*'NextStep'"):
        HetClusterVectorEnv(2, scenario="tiny", autoreset_mode="later")
    with pytest.raises(ValueError, match="autoreset_mode"):
        make_event_vector_env(2, scenario="tiny", autoreset_mode="later")
    with pytest.raises(ValueError, match="num_envs must be an integer >= 1"):
        make_event_vector_env(0, scenario="tiny")
    with pytest.raises(ValueError, match="max_episode_steps"):
        make_event_vector_env(1, scenario="tiny", max_episode_steps=0)
    with pytest.raises(TypeError, match="not a vector env"):
        batched_action_masks(object())
