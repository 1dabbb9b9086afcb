"""The ``window-nodes`` observation: each server's free GPUs and the servers each window job holds."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env

import hetgym  # noqa: F401


def make(**kwargs: object) -> gym.Env:
    return gym.make("HetCluster-v1", observation="window-nodes", codec="jobwise-types", **kwargs)


def test_checker_passes_and_the_server_keys_match_the_placement() -> None:
    env = make()
    check_env(env.unwrapped, skip_render_check=True)
    u = env.unwrapped
    servers = u.state.cluster.servers
    gpus = np.array([srv.num_gpus for srv in servers], dtype=np.float64)
    of_type = np.array([u.state.type_index[srv.gpu_type] for srv in servers])
    k, s = u.config.queue_slots, len(servers)
    obs, info = env.reset(seed=5)
    rng = np.random.default_rng(0)
    held_seen = 0
    for _ in range(400):
        view = u.state.view
        if view is None:
            break
        np.testing.assert_allclose(obs["server_free"], np.asarray(view.free_servers) / gpus, rtol=1e-6)
        rows = obs["job_server"].reshape(k, s) * gpus  # GPUs held per slot and server
        for slot, job in enumerate(u.state.jobs):
            expected = np.zeros(s)
            for group in job.groups:
                expected[group.server_id] += group.num_gpus
            np.testing.assert_allclose(rows[slot], expected, atol=1e-4)
            # Summed over a type's servers, the rows give job_current's GPUs (before the decision).
            per_type = np.bincount(of_type, weights=rows[slot], minlength=len(u.state.types))
            np.testing.assert_allclose(per_type, u.state.current[slot], atol=1e-4)
            held_seen += int(expected.any())
        assert not rows[len(u.state.jobs) :].any()  # empty slots are 0
        for key, box in env.observation_space.spaces.items():
            assert box.contains(obs[key]), key
        obs, _, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        if term or trunc:
            obs, info = env.reset(seed=6)
    assert held_seen > 20


def test_the_other_keys_are_window_cursors() -> None:
    nodes, cursor = make(), gym.make("HetCluster-v1", codec="jobwise-types")
    a, _ = nodes.reset(seed=2)
    b, _ = cursor.reset(seed=2)
    assert set(a) - set(b) == {"server_free", "job_server"}
    rng = np.random.default_rng(1)
    for _ in range(50):
        for key in b:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
        action = int(rng.choice(np.flatnonzero(nodes.unwrapped.action_masks())))
        a, *_ = nodes.step(action)
        b, *_ = cursor.step(action)
