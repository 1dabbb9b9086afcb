"""Digests of the event-driven env's output stream on fixed seeded random episodes (``HetClusterEvents-*``).

The counterpart of ``tests/env_digests.py`` for :class:`~hetgym.envs.events.HetClusterEventEnv`: each case
makes the env (without ``gym.make``'s wrappers), resets it with a seed and steps it with a random masked
agent (its own seeded generator) for a fixed number of steps, resetting when an episode ends. Every
observation (each key's name, dtype, shape and bytes in key order, or the flat vector's), action mask,
reward component, reward, termination and truncation flag is hashed. The committed digests live in
``tests/data/event_env_digests.json``; ``tests/envs/test_event_observation_stream.py`` recomputes them, so a
change of any observation entry, mask or reward, by even one bit, fails there.

Regenerate the file only for a deliberate change of behaviour (never for a refactoring or a speed change)::

    python tests/event_env_digests.py --write
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from helpers import write_digests_cli

DIGESTS_PATH = Path(__file__).resolve().parent / "data" / "event_env_digests.json"


@dataclass(frozen=True)
class Case:
    """``steps`` random masked steps of ``env_id`` with ``overrides``, reset with ``seed``."""

    name: str
    env_id: str
    seed: int
    steps: int
    overrides: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.name}#s{self.seed}"


def cases() -> list[Case]:
    """The fixed set: both action sets, the ``Dict`` and the flattened observation, late events, no probe."""
    return [
        Case("events-tiny-v0", "HetClusterEvents-Tiny-v0", 0, 120),
        Case("events-tiny-v1", "HetClusterEvents-Tiny-v1", 1, 120),
        Case("events-v1", "HetClusterEvents-v1", 2, 60),
        Case("events-v1-flat", "HetClusterEvents-v1", 3, 60, {"flatten": True}),
        Case("events-tiny-late", "HetClusterEvents-Tiny-v0", 4, 120, {"events": ("arrival", "late")}),
        Case("events-tiny-no-probe-flat", "HetClusterEvents-Tiny-v0", 5, 120, {"probe": False, "flatten": True}),
    ]


def stream(case: Case) -> Iterator[tuple[Any, dict[str, Any], float, bool, bool]]:
    """``(obs, info, reward, terminated, truncated)`` for the reset and every step of ``case``."""
    import gymnasium as gym

    import hetgym  # noqa: F401  (registers the ids)
    from hetgym.envs.events.env import HetClusterEventEnv

    env = HetClusterEventEnv(**{**gym.spec(case.env_id).kwargs, **case.overrides})
    rng = np.random.default_rng(case.seed)
    obs, info = env.reset(seed=case.seed)
    yield obs, info, 0.0, False, False
    for _ in range(case.steps):
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, reward, terminated, truncated, info = env.step(action)
        yield obs, info, float(reward), bool(terminated), bool(truncated)
        if terminated or truncated:
            obs, info = env.reset()
            yield obs, info, 0.0, False, False


def digest(case: Case) -> dict[str, object]:
    """Run ``case`` and return its digest and counts."""
    h = hashlib.sha256()
    steps = episodes = 0
    reward_sum = 0.0
    for obs, info, reward, terminated, truncated in stream(case):
        items = obs.items() if isinstance(obs, dict) else [("", obs)]
        for key, value in items:
            h.update(f"{key}:{value.dtype}:{value.shape}".encode())
            h.update(np.ascontiguousarray(value).tobytes())
        h.update(np.ascontiguousarray(info["action_mask"]).tobytes())
        for key, number in sorted(info["reward_components"].items()):
            h.update(struct.pack("<d", number) + key.encode())
        h.update(struct.pack("<d??", reward, terminated, truncated))
        steps += 1
        episodes += int(terminated or truncated)
        reward_sum += reward
    return {
        "sha256": h.hexdigest(),
        "records": steps,
        "episodes_ended": episodes,
        "metrics": {"reward_sum": reward_sum},
    }


def main() -> int:
    return write_digests_cli(__doc__, DIGESTS_PATH, cases(), digest, str, indent=2)


if __name__ == "__main__":
    raise SystemExit(main())
