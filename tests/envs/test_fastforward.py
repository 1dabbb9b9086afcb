"""The env's commits that pass over quiet ticks in one simulator step give the epoch-by-epoch replay's stream.

Each case runs the same seeded agent on the env with ``fast_forward`` on and off (off: every quiet round
tick is committed with its own simulator step, as before the fast-forward existed) and compares, step by
step, every observation, mask, reward, reward component, flag and the epoch and clock in ``info``, then
the episodes' per-job tables and usage timelines. With the fast-forward on, every commit of a random
agent under ``decisions="on-change"`` is one simulator step.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import hetgym  # noqa: F401  (registers the ids)
from hetgym.envs.env import HetClusterEnv
from hetgym.experts import ExpertAgent
from hetgym.sim.engine import Simulator


def _stream(env: HetClusterEnv, seed: int, steps: int, agent: str | None) -> Iterator[tuple[Any, ...]]:
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    expert = ExpertAgent(agent, env) if agent is not None else None
    yield obs, info, 0.0, False, False
    for _ in range(steps):
        if expert is not None:
            action, _ = expert.predict(obs)
        elif hasattr(env.action_space, "n"):
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        else:
            action = rng.integers(0, env.action_space.nvec)  # type: ignore[attr-defined]
        obs, reward, terminated, truncated, info = env.step(action)
        yield obs, info, float(reward), terminated, truncated
        if terminated or truncated:
            yield "result", env.result()
            obs, info = env.reset()
            yield obs, info, 0.0, False, False
    yield "result", env.result()  # the episode so far


def _assert_same_record(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    if a[0] == "result" or b[0] == "result":
        assert a[0] == b[0] == "result"
        assert a[1].jobs.equals(b[1].jobs)
        assert a[1].timeline.equals(b[1].timeline)
        assert (a[1].num_epochs, a[1].num_events, a[1].stalled) == (b[1].num_epochs, b[1].num_events, b[1].stalled)
        return
    (obs_a, info_a, *rest_a), (obs_b, info_b, *rest_b) = a, b
    assert rest_a == rest_b  # reward (bit for bit), terminated, truncated
    assert obs_a.keys() == obs_b.keys()
    for key in obs_a:
        np.testing.assert_array_equal(obs_a[key], obs_b[key], err_msg=key)
    np.testing.assert_array_equal(info_a["action_mask"], info_b["action_mask"])
    assert info_a["reward_components"] == info_b["reward_components"]  # exact floats
    for key in ("epoch", "now_s", "committed", "stop_reason", "metrics"):
        assert info_a.get(key) == info_b.get(key), key


CASES = [
    ("HetCluster-v1", {}, 0, 400, None),
    ("HetCluster-Tiny-v1", {}, 1, 400, None),
    ("HetCluster-Tiny-v1", {"reward": "jct"}, 2, 300, None),
    ("HetCluster-Tiny-v1", {"reward": "utilisation", "sim": {"round_s": 60.0}}, 3, 300, None),
    ("HetCluster-v1", {"reward": "makespan", "modes": ("sync", "fork"), "queue_slots": 8}, 4, 300, None),
    ("HetCluster-Tiny-v1", {"max_time_s": 30_000.0}, 5, 300, None),
    ("HetCluster-Tiny-v1", {"max_decisions": 60}, 6, 300, None),
    ("HetCluster-Tiny-v1", {"sim": {"round_s": 37.5}}, 7, 300, None),  # not whole seconds: one tick at a time
    ("HetCluster-Tiny-v1", {"sim": {"restart_penalty_s": 500.0}}, 8, 400, None),
    ("HetCluster-Tiny-v1", {"reward_baseline": "edf", "shaping": "deadline-slack"}, 9, 300, None),
    ("HetCluster-v0", {"decisions": "on-change"}, 10, 300, None),
    ("HetCluster-Tiny-v1", {}, 11, 300, "edf"),  # an expert, asked on news
    ("HetCluster-Tiny-v1", {}, 12, 300, "tiresias"),  # an expert that asks for the next epoch
]


@pytest.mark.parametrize(("env_id", "overrides", "seed", "steps", "agent"), CASES)
def test_fast_forward_gives_the_replays_stream(
    env_id: str, overrides: dict[str, Any], seed: int, steps: int, agent: str | None
) -> None:
    kwargs = {**gym.spec(env_id).kwargs, **overrides}
    fast, slow = HetClusterEnv(**kwargs), HetClusterEnv(**kwargs)
    slow.fast_forward = False
    records = 0
    for a, b in zip(_stream(fast, seed, steps, agent), _stream(slow, seed, steps, agent), strict=True):
        _assert_same_record(a, b)
        records += 1
    assert records > steps


def _steps_per_commit(env_id: str, fast: bool, seed: int, steps: int) -> float:
    env = HetClusterEnv(**gym.spec(env_id).kwargs)
    env.fast_forward = fast
    calls = [0]

    def counting(method: Any) -> Any:
        def counted(sim: Simulator, *args: Any, **kwargs: Any) -> Any:
            calls[0] += 1
            return method(sim, *args, **kwargs)

        return counted

    commits = 0
    with pytest.MonkeyPatch.context() as mp:
        # A commit hands the simulator its draft through step_counts; the replayed quiet ticks go through step.
        mp.setattr(Simulator, "step", counting(Simulator.step))
        mp.setattr(Simulator, "step_counts", counting(Simulator.step_counts))
        for record in _stream(env, seed, steps, None):
            if record[0] != "result":
                commits += int(record[1].get("committed", False))
    return calls[0] / commits


@pytest.mark.parametrize("env_id", ["HetCluster-v1", "HetCluster-Tiny-v1"])
def test_a_commit_is_one_simulator_step(env_id: str) -> None:
    # The replay steps through the quiet ticks one by one.
    assert _steps_per_commit(env_id, True, 21, 400) == 1.0 < _steps_per_commit(env_id, False, 21, 400)
