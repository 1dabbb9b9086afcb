"""``HetClusterVectorEnv``: ``gym.make_vec``'s default for the hetgym ids, equal to ``SyncVectorEnv`` step by step."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import hetgym  # noqa: F401  (registers the ids)
from hetgym.envs.vector import BATCH_MIN_ENVS, HetClusterVectorEnv
from hetgym.sim.errors import HetgymError

ENV_ID = "HetCluster-Tiny-v1"


def _assert_tree_equal(a: Any, b: Any, path: str = "") -> None:
    if isinstance(a, dict):
        assert isinstance(b, dict), path
        assert set(a) == set(b), f"{path}: keys {sorted(set(a) ^ set(b))} differ"
        for key in a:
            _assert_tree_equal(a[key], b[key], f"{path}.{key}")
        return
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    assert a_arr.shape == b_arr.shape, path
    if a_arr.dtype == object and any(isinstance(v, dict) for v in a_arr.tolist()):
        for i, (x, y) in enumerate(zip(a_arr.tolist(), b_arr.tolist(), strict=True)):  # final_obs: a Dict each
            assert (x is None) == (y is None), f"{path}[{i}]"
            if x is not None:
                _assert_tree_equal(x, y, f"{path}[{i}]")
    elif a_arr.dtype == object:
        assert a_arr.tolist() == b_arr.tolist(), path
    else:
        assert a_arr.dtype == b_arr.dtype, f"{path}: {a_arr.dtype} != {b_arr.dtype}"
        np.testing.assert_array_equal(a_arr, b_arr, err_msg=path)


def _masked_actions(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    return np.array([int(rng.choice(np.flatnonzero(m))) for m in masks])


def test_make_vec_builds_the_batched_env_by_default_and_sync_on_request() -> None:
    venv = gym.make_vec(ENV_ID, num_envs=2)
    assert isinstance(venv, HetClusterVectorEnv)
    assert venv.num_envs == 2 and venv.single_action_space == gym.make(ENV_ID).action_space
    assert isinstance(gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="sync"), SyncVectorEnv)


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        (ENV_ID, {}),
        ("HetCluster-Tiny-v0", {}),
        ("HetCluster-Tiny-v0", {"observation": "window-levels"}),
        ("HetCluster-Tiny-v1", {"modes": ("sync", "fork")}),
        ("HetCluster-v1", {}),
        ("HetCluster-v1", {"observation": "window-nodes", "codec": "jobwise-types"}),
    ],
)
@pytest.mark.parametrize("num_envs", [3, BATCH_MIN_ENVS])  # a row per sub-env, then batched encoding
def test_steps_equal_sync_vector_env_including_autoresets(env_id: str, kwargs: dict[str, Any], num_envs: int) -> None:
    limit = 25  # a short time limit so that every sub-env autoresets several times
    ours = gym.make_vec(env_id, num_envs=num_envs, max_episode_steps=limit, **kwargs)
    assert ours.unwrapped._batched == (num_envs >= BATCH_MIN_ENVS)
    ref = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync", max_episode_steps=limit, **kwargs)
    obs_a, info_a = ours.reset(seed=7)
    obs_b, info_b = ref.reset(seed=7)
    _assert_tree_equal(obs_a, obs_b, "reset obs")
    _assert_tree_equal(info_a, info_b, "reset info")
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(120):
        actions = _masked_actions(rng, info_a["action_mask"])
        obs_a, rew_a, term_a, trunc_a, info_a = ours.step(actions)
        obs_b, rew_b, term_b, trunc_b, info_b = ref.step(actions)
        _assert_tree_equal(obs_a, obs_b, "obs")
        np.testing.assert_array_equal(rew_a, rew_b)
        np.testing.assert_array_equal(term_a, term_b)
        np.testing.assert_array_equal(trunc_a, trunc_b)
        _assert_tree_equal(info_a, info_b, "info")
        ended += int((term_a | trunc_a).sum())
    assert ended >= num_envs  # autoreset was exercised


@pytest.mark.parametrize("num_envs", [3, BATCH_MIN_ENVS])
def test_same_step_autoreset_equals_sync_vector_env(num_envs: int) -> None:
    """``autoreset_mode=SAME_STEP``: the same observations, flags and ``final_obs`` / ``final_info`` infos."""
    mode = AutoresetMode.SAME_STEP
    ours = gym.make_vec(ENV_ID, num_envs=num_envs, max_episode_steps=25, autoreset_mode=mode)
    ref = gym.make_vec(
        ENV_ID,
        num_envs=num_envs,
        vectorization_mode="sync",
        max_episode_steps=25,
        vector_kwargs={"autoreset_mode": mode},
    )
    assert ours.metadata["autoreset_mode"] is ref.metadata["autoreset_mode"] is mode
    obs_a, info_a = ours.reset(seed=7)
    obs_b, info_b = ref.reset(seed=7)
    _assert_tree_equal(obs_a, obs_b, "reset obs")
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(80):
        actions = _masked_actions(rng, info_a["action_mask"])
        obs_a, rew_a, term_a, trunc_a, info_a = ours.step(actions)
        obs_b, rew_b, term_b, trunc_b, info_b = ref.step(actions)
        _assert_tree_equal(obs_a, obs_b, "obs")
        np.testing.assert_array_equal(rew_a, rew_b)
        np.testing.assert_array_equal(term_a | trunc_a, term_b | trunc_b)
        _assert_tree_equal(info_a, info_b, "info")
        ended += int((term_a | trunc_a).sum())
    assert ended >= num_envs


def test_observations_do_not_share_memory_across_steps() -> None:
    venv = gym.make_vec(ENV_ID, num_envs=2)
    obs0, info = venv.reset(seed=0)
    before = {key: value.copy() for key, value in obs0.items()}
    venv.step(_masked_actions(np.random.default_rng(0), info["action_mask"]))
    for key, value in obs0.items():
        np.testing.assert_array_equal(value, before[key], err_msg=key)


def test_per_key_fallback_gives_the_same_observation() -> None:
    """Encoders without a flat layout (user-registered ones may have none) are batched key by key."""
    fast = gym.make_vec(ENV_ID, num_envs=2)
    slow = gym.make_vec(ENV_ID, num_envs=2)
    obs_fast, _ = fast.reset(seed=3)
    slow.unwrapped._layout = None  # what an encoder whose layout is None leaves
    obs_slow, info = slow.reset(seed=3)
    _assert_tree_equal(obs_fast, obs_slow)
    assert obs_slow.keys() == obs_fast.keys()
    rng = np.random.default_rng(3)
    for _ in range(30):
        actions = _masked_actions(rng, info["action_mask"])
        obs_fast, *_ = fast.step(actions)
        obs_slow, *_, info = slow.step(actions)
        _assert_tree_equal(obs_fast, obs_slow)


def test_partial_reset_with_reset_mask() -> None:
    venv = gym.make_vec(ENV_ID, num_envs=2)
    venv.reset(seed=0)
    obs, _ = venv.reset(seed=[None, 5], options={"reset_mask": np.array([False, True])})
    single, _ = gym.make(ENV_ID).reset(seed=5)
    for key, value in single.items():
        np.testing.assert_array_equal(obs[key][1], value, err_msg=key)


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="num_envs must be an integer >= 1"):
        HetClusterVectorEnv(0, scenario="tiny")
    with pytest.raises(ValueError, match="max_episode_steps"):
        HetClusterVectorEnv(1, max_episode_steps=0, scenario="tiny")
    venv = gym.make_vec(ENV_ID, num_envs=2)
    with pytest.raises(HetgymError, match="call reset"):
        venv.step(np.zeros(2, dtype=int))
    venv.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions must have shape \(2,\)"):
        venv.step(np.zeros(3, dtype=int))
    with pytest.raises(ValueError, match="one seed per sub-env"):
        venv.reset(seed=[1, 2, 3])
    with pytest.raises(ValueError, match="reset_mask"):
        venv.reset(options={"reset_mask": np.array([1, 0])})


def test_call_get_and_set_attr() -> None:
    venv = gym.make_vec(ENV_ID, num_envs=2)
    venv.reset(seed=0)
    masks = venv.call("action_masks")
    assert len(masks) == 2
    np.testing.assert_array_equal(venv.action_masks(), np.stack(masks))
    venv.set_attr("note", [1, 2])
    assert venv.get_attr("note") == (1, 2)
