"""``HetClusterEventEnv.fork()``: an independent env at the same decision.

A reference episode is played with a seeded action sequence; a second env replays its first ``k`` actions and
forks. One fork plays other actions to the end (it must not disturb the original); another fork and then the
original play the reference's remaining actions: both must give the reference's observations, rewards,
flags, infos, masks and per-job results, bit for bit.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence

from hetgym.envs.events import HetClusterEventEnv

SHORT = {"workload": {"num_jobs": 30}}


def chooser(kind: str, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    if kind == "random":
        return lambda mask: int(rng.choice(np.flatnonzero(mask)))
    # Mostly the allocator's own choice, now and then another valid one.
    return lambda mask: 0 if rng.random() < 0.7 else int(rng.choice(np.flatnonzero(mask)))


def play(env: HetClusterEventEnv, actions: list[int] | None, choose: Any = None) -> tuple[list[Any], list[int]]:
    """Step to the end with ``actions`` (then ``choose(mask)``); the trace and the actions taken."""
    trace: list[Any] = []
    taken: list[int] = []
    done = False
    while not done:
        a = actions[len(taken)] if actions is not None and len(taken) < len(actions) else choose(env.action_masks())
        obs, reward, terminated, truncated, info = env.step(a)
        taken.append(a)
        trace.append((obs, reward, terminated, truncated, info, env.action_masks()))
        done = terminated or truncated
    return trace, taken


@pytest.mark.parametrize(
    ("env_id", "kwargs", "seed", "kind"),
    [
        ("HetClusterEvents-Tiny-v0", {}, 0, "random"),
        ("HetClusterEvents-Tiny-v0", {}, 4, "auto"),
        ("HetClusterEvents-Tiny-v0", {"events": ("arrival", "late")}, 2, "random"),
        ("HetClusterEvents-v0", SHORT, 3, "random"),
        ("HetClusterEvents-v0", SHORT, 5, "auto"),
        ("HetClusterEvents-Tiny-v1", {}, 6, "random"),  # the sharing options
    ],
)
def test_a_fork_continues_exactly_as_the_original(env_id: str, kwargs: dict[str, Any], seed: int, kind: str) -> None:
    reference: HetClusterEventEnv = gym.make(env_id, **kwargs).unwrapped
    reference.reset(seed=seed)
    want, actions = play(reference, None, chooser(kind, seed))
    want_jobs = reference.result().jobs
    n = len(actions)
    for k in sorted({0, n // 2, n - 1}):
        env: HetClusterEventEnv = gym.make(env_id, **kwargs).unwrapped
        env.reset(seed=seed)
        got_head, _ = play_prefix(env, actions[:k])
        assert data_equivalence(got_head, want[:k], exact=True)
        stray, twin = env.fork(), env.fork()
        assert data_equivalence(twin.action_masks(), env.action_masks(), exact=True)
        assert twin.view is not None and twin.view.now_s == env.view.now_s  # type: ignore[union-attr]
        # A fork that goes its own way leaves the original (and the other fork) as they were.
        play(stray, None, chooser("random", seed + 100))
        twin_tail, _ = play(twin, actions[k:])
        assert data_equivalence(twin_tail, want[k:], exact=True), f"fork at decision {k} diverged"
        assert twin.result().jobs.equals(want_jobs)
        tail, _ = play(env, actions[k:])
        assert data_equivalence(tail, want[k:], exact=True), f"original after a fork at decision {k} diverged"
        assert env.result().jobs.equals(want_jobs)


def play_prefix(env: HetClusterEventEnv, actions: list[int]) -> tuple[list[Any], None]:
    trace = []
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
        trace.append((obs, reward, terminated, truncated, info, env.action_masks()))
    return trace, None


def test_a_fork_copies_the_random_stream_and_shares_the_immutable_parts() -> None:
    env: HetClusterEventEnv = gym.make("HetClusterEvents-Tiny-v0").unwrapped
    env.reset(seed=1)
    twin = env.fork()
    for name in ("config", "cluster", "actions", "encoder", "observation_space", "jobs"):
        assert getattr(twin, name) is getattr(env, name)
    assert twin.sim is not env.sim and twin.sim.cluster is env.sim.cluster  # type: ignore[union-attr]
    assert twin.allocator is not env.allocator
    assert twin.np_random is not env.np_random
    assert twin.np_random.integers(1 << 30) == env.np_random.integers(1 << 30)
    # The next episode of each is the same (its workload seed is drawn from np_random).
    a, _ = twin.reset()
    b, _ = env.reset()
    assert twin.workload_seed == env.workload_seed
    assert data_equivalence(a, b, exact=True)
    # A finished episode forks too.
    play(env, None, chooser("random", 0))
    done = env.fork()
    assert done.view is None and done.result().jobs.equals(env.result().jobs)
