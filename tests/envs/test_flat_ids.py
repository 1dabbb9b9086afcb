"""The flat-observation ids (``HetCluster-v2``, ``HetClusterEvents-v2`` and their Tiny twins) and the layout.

A ``-v2`` id is its ``-v1`` MDP with the encoder's flat vector as the observation: the checkers pass on it, its
vector holds exactly the ``-v1`` ``Dict``'s values where ``env.unwrapped.layout`` says, ``DictObservation`` gives
that ``Dict`` back, and the vector env and bad input behave.
"""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import FlattenObservation
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import hetgym  # noqa: F401  (registers the ids)
from hetgym.envs.config import EnvConfigError
from hetgym.envs.flat import DictObservation, FlatObservation
from hetgym.envs.observations_base import ObservationEncoder
from hetgym.envs.observations_layout import LayoutEntry, ObservationLayout
from hetgym.sim.errors import HetgymError

FLAT_IDS = ("HetCluster-v2", "HetCluster-Tiny-v2", "HetClusterEvents-v2", "HetClusterEvents-Tiny-v2")
#: Each flat id and the id whose MDP and Dict observation it shares.
DICT_TWIN = {
    "HetCluster-Tiny-v2": "HetCluster-Tiny-v1",
    "HetCluster-v2": "HetCluster-v1",
    "HetClusterEvents-Tiny-v2": "HetClusterEvents-Tiny-v1",
    "HetClusterEvents-v2": "HetClusterEvents-v1",
}


def _masked(rng: np.random.Generator, info: dict[str, Any]) -> int:
    return int(rng.choice(np.flatnonzero(info["action_mask"])))


@pytest.mark.parametrize("env_id", FLAT_IDS)
def test_checkers_pass_without_warnings_and_the_space_is_a_box(env_id: str) -> None:
    env = gym.make(env_id)
    layout = env.unwrapped.layout  # type: ignore[attr-defined]
    assert isinstance(env.observation_space, spaces.Box)
    assert env.observation_space.shape == (layout.size,) and env.observation_space.dtype == np.float32
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
        sb3_check_env(env.unwrapped)
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize(
    ("env_id", "steps"), [("HetCluster-Tiny-v2", 300), ("HetClusterEvents-Tiny-v2", 100), ("HetClusterEvents-v2", 30)]
)
def test_the_vector_holds_the_dict_ids_values_where_the_layout_says(env_id: str, steps: int) -> None:
    flat, twin = gym.make(env_id), gym.make(DICT_TWIN[env_id])
    layout = flat.unwrapped.layout  # type: ignore[attr-defined]
    assert flat.observation_space == layout.box and twin.observation_space == layout.dict_space
    rng = np.random.default_rng(3)
    vec, info = flat.reset(seed=3)
    obs, twin_info = twin.reset(seed=3)
    for step in range(steps):
        assert isinstance(vec, np.ndarray) and vec.shape == (layout.size,)
        assert set(obs) == set(layout)
        for name, (start, stop, shape) in layout.items():
            np.testing.assert_array_equal(vec[start:stop].reshape(shape), obs[name], err_msg=f"step {step}: {name}")
        np.testing.assert_array_equal(info["action_mask"], twin_info["action_mask"])
        action = _masked(rng, info)
        vec, reward, terminated, truncated, info = flat.step(action)
        obs, twin_reward, twin_terminated, twin_truncated, twin_info = twin.step(action)
        assert (reward, terminated, truncated) == (twin_reward, twin_terminated, twin_truncated)
        if terminated or truncated:
            vec, info = flat.reset()
            obs, twin_info = twin.reset()


def test_the_events_vector_is_the_flatten_wrappers_of_the_dict_id() -> None:
    flat, wrapped = gym.make("HetClusterEvents-Tiny-v2"), FlattenObservation(gym.make("HetClusterEvents-Tiny-v1"))
    assert flat.observation_space == wrapped.observation_space
    rng = np.random.default_rng(5)
    a, info = flat.reset(seed=5)
    b, _ = wrapped.reset(seed=5)
    for _ in range(100):
        np.testing.assert_array_equal(a, b)
        action = _masked(rng, info)
        a, _, terminated, truncated, info = flat.step(action)
        b, *_ = wrapped.step(action)
        if terminated or truncated:
            a, info = flat.reset()
            b, _ = wrapped.reset()


def test_the_layout_tiles_the_vector_in_order() -> None:
    for env_id in FLAT_IDS:
        layout = gym.make(env_id).unwrapped.layout  # type: ignore[attr-defined]
        assert isinstance(layout, ObservationLayout)
        offset = 0
        for name, entry in layout.items():
            assert isinstance(entry, LayoutEntry) and entry.start == offset, name
            assert entry.stop - entry.start == int(np.prod(entry.shape)), name
            offset = entry.stop
        assert offset == layout.size
    window = gym.make("HetCluster-Tiny-v2").unwrapped.layout  # type: ignore[attr-defined]
    assert list(window)[:2] == ["slot_used", "job_request"]  # the encoder's buffer order, not the sorted keys
    events = gym.make("HetClusterEvents-Tiny-v2").unwrapped.layout  # type: ignore[attr-defined]
    assert list(events) == sorted(events)  # gymnasium.spaces.flatten's order


@pytest.mark.parametrize("env_id", ["HetCluster-Tiny-v2", "HetClusterEvents-Tiny-v2"])
def test_dict_observation_gives_the_dict_ids_observation(env_id: str) -> None:
    wrapped, twin = DictObservation(gym.make(env_id)), gym.make(DICT_TWIN[env_id])
    assert wrapped.observation_space == twin.observation_space
    rng = np.random.default_rng(8)
    a, info = wrapped.reset(seed=8)
    b, _ = twin.reset(seed=8)
    for _ in range(60):
        assert list(a) == list(b)  # the same keys in the same order
        for key in b:
            assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
        assert wrapped.observation_space.contains(a)
        action = _masked(rng, info)
        a, _, terminated, truncated, info = wrapped.step(action)
        b, *_ = twin.step(action)
        if terminated or truncated:
            break


def test_the_vector_env_of_a_flat_id_batches_the_vectors() -> None:
    num_envs = 6  # the batched encoding (observe_batch) is used from 6 sub-envs on
    envs = gym.make_vec("HetCluster-Tiny-v2", num_envs=num_envs)
    singles = [gym.make("HetCluster-Tiny-v2") for _ in range(num_envs)]
    obs, _ = envs.reset(seed=20)
    outs = [env.reset(seed=20 + i) for i, env in enumerate(singles)]
    rng = np.random.default_rng(20)
    for _ in range(120):
        assert isinstance(obs, np.ndarray) and obs.shape == (num_envs, singles[0].unwrapped.layout.size)  # type: ignore[attr-defined]
        np.testing.assert_array_equal(obs, np.stack([o for o, _ in outs]))
        actions = np.array([_masked(rng, i) for _, i in outs])
        obs, _, terminated, truncated, _ = envs.step(actions)
        outs = []
        for k, env in enumerate(singles):
            o, _, te, tr, i = env.step(int(actions[k]))
            assert (te, tr) == (bool(terminated[k]), bool(truncated[k]))
            outs.append(env.reset() if te or tr else (o, i))  # NEXT_STEP: compare the ended rows next step
        if terminated.any() or truncated.any():
            break
    envs.close()


def test_bad_input_is_refused_with_the_fix() -> None:
    with pytest.raises(EnvConfigError, match="flatten"):
        gym.make("HetCluster-Tiny-v1", flatten="yes")
    with pytest.raises(HetgymError, match="already a Box"):
        FlatObservation(gym.make("HetCluster-Tiny-v2"))
    with pytest.raises(HetgymError, match="flatten=True"):
        DictObservation(gym.make("HetCluster-Tiny-v1"))
    with pytest.raises(HetgymError, match="exactly once"):
        ObservationLayout({"a": ((2,), 0.0, 1.0), "b": ((1,), 0.0, 1.0)}, dict_order=["a"])
    with pytest.raises(HetgymError, match="low bound has shape"):
        ObservationLayout({"a": ((2,), np.zeros(3, dtype=np.float32), 1.0)})
    with pytest.raises(HetgymError, match="above its high"):
        ObservationLayout({"a": ((2,), 1.0, 0.0)})

    class Empty(ObservationEncoder):
        name = "empty"

    with pytest.raises(HetgymError, match="implement one of them"):
        Empty(None, None)  # type: ignore[arg-type]


def test_the_dict_form_is_views_of_a_fresh_vector() -> None:
    layout = ObservationLayout({"a": ((2,), 0.0, 1.0), "b": ((2, 3), -1.0, 1.0)}, dict_order=["b", "a"])
    vec = np.arange(8, dtype=np.float32) / 10
    obs = layout.as_dict(vec)
    assert list(obs) == ["b", "a"] and obs["b"].shape == (2, 3)
    assert np.shares_memory(obs["a"], vec) and np.shares_memory(obs["b"], vec)
    np.testing.assert_array_equal(layout.from_dict(obs), vec)
    assert layout.dict_space["b"].low.shape == (2, 3) and float(layout.box.low[2]) == -1.0


def test_maskable_ppo_trains_on_a_flat_id_without_wrappers() -> None:
    import torch
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.vec_env import DummyVecEnv

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a small network on a shared machine: threads only add contention
    try:
        venv = DummyVecEnv([lambda: gym.make("HetCluster-Tiny-v2")])
        model = MaskablePPO("MlpPolicy", venv, n_steps=128, batch_size=64, n_epochs=1, seed=0, device="cpu")
        model.learn(total_timesteps=256)
        assert model.num_timesteps >= 256
        assert all(np.isfinite(v) for k, v in model.logger.name_to_value.items() if "loss" in k)
        obs = venv.reset()
        assert obs.shape == (1, *venv.observation_space.shape)  # the vector as the env wrote it, no flattening
        for _ in range(50):
            masks = get_action_masks(venv)
            action, _ = model.predict(obs, action_masks=masks)
            assert masks[0][action[0]]
            obs, _, _, infos = venv.step(action)
            assert not infos[0]["invalid_action"]
    finally:
        torch.set_num_threads(threads)
