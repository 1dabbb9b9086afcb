"""Digests of the envs' output streams on fixed seeded random episodes, to prove speed work changes no result.

Each case makes one env configuration (a ``HetCluster`` or a ``HetClusterEvents`` id, the env itself without
``gym.make``'s wrappers), resets it with a seed and steps it with a random masked agent
(its own seeded generator; for ``MultiDiscrete`` codecs a uniform sample of the action space) for a
fixed number of steps, resetting when an episode ends. Every observation (each key's name, dtype and
bytes, in key order, or the flat vector's), action mask, reward component (``info["reward_components"]``), reward,
termination and truncation flag is hashed. The committed
digests live in ``tests/data/env_digests.json``; ``tests/envs/test_observation_stream.py`` recomputes
them. A change that alters any entry of any observation, mask or reward, by even one bit, fails there.

Regenerate the file only for a deliberate change of behaviour (never for a speed change)::

    python tests/env_digests.py --write
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

DIGESTS_PATH = Path(__file__).resolve().parent / "data" / "env_digests.json"


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
    """The fixed set: the v1 interface (default and tiny), the v0 defaults and the other built-in
    observations and codecs (each window feature group, both job-at-a-time rules), two seeds each for
    the v1 default; and the event-driven ids (both action sets, the ``Dict`` and the flattened observation,
    late events, no probe)."""
    return [
        Case("v1", "HetCluster-v1", 0, 1500),
        Case("v1", "HetCluster-v1", 1, 1500),
        Case("v1-tiny", "HetCluster-Tiny-v1", 2, 800),
        Case("v0", "HetCluster-v0", 3, 1500),
        Case("v0-levels", "HetCluster-v0", 4, 800, {"observation": "window-levels"}),
        Case("v1-arrival-modes", "HetCluster-v1", 5, 800, {"window_order": "arrival", "modes": ("sync", "fork")}),
        Case("v1-every-epoch", "HetCluster-v1", 6, 600, {"decisions": "every-epoch", "queue_slots": 8}),
        Case("multidiscrete", "HetCluster-v0", 7, 200, {"codec": "multidiscrete"}),
        Case("v1-jct", "HetCluster-v1", 8, 800, {"reward": "jct"}),
        Case("v1-tiny-utilisation", "HetCluster-Tiny-v1", 9, 600, {"reward": "utilisation"}),
        Case("v1-types-nodes", "HetCluster-v1", 10, 600, {"codec": "jobwise-types", "observation": "window-nodes"}),
        Case("tiny-types-modes", "HetCluster-Tiny-v1", 11, 600, {"codec": "jobwise-types", "modes": ("sync", "fork")}),
        Case("v0-nodes", "HetCluster-v0", 12, 400, {"observation": "window-nodes"}),
        Case("v0-cursor", "HetCluster-v0", 13, 300, {"observation": "window-cursor"}),
        Case("events-tiny-v0", "HetClusterEvents-Tiny-v0", 0, 120),
        Case("events-tiny-v1", "HetClusterEvents-Tiny-v1", 1, 120),
        Case("events-v1", "HetClusterEvents-v1", 2, 60),
        Case("events-v1-flat", "HetClusterEvents-v1", 3, 60, {"flatten": True}),
        Case("events-tiny-late", "HetClusterEvents-Tiny-v0", 4, 120, {"events": ("arrival", "late")}),
        Case("events-tiny-no-probe-flat", "HetClusterEvents-Tiny-v0", 5, 120, {"probe": False, "flatten": True}),
    ]


def _actions(env: Any, mask: np.ndarray, rng: np.random.Generator) -> Any:
    space = env.action_space
    if hasattr(space, "n"):
        return int(rng.choice(np.flatnonzero(mask)))
    return rng.integers(0, space.nvec)


def stream(case: Case) -> Iterator[tuple[Any, dict[str, Any], float, bool, bool]]:
    """``(obs, info, reward, terminated, truncated)`` for the reset and every step of ``case``."""
    import gymnasium as gym

    import hetgym  # noqa: F401  (registers the ids)
    from hetgym.envs.env import HetClusterEnv
    from hetgym.envs.events.env import HetClusterEventEnv

    # The env itself, without gym.make's wrappers (and the earlier ids' deprecation warning).
    cls = HetClusterEventEnv if case.env_id.startswith("HetClusterEvents") else HetClusterEnv
    env = cls(**{**gym.spec(case.env_id).kwargs, **case.overrides})
    rng = np.random.default_rng(case.seed)
    obs, info = env.reset(seed=case.seed)
    yield obs, info, 0.0, False, False
    for _ in range(case.steps):
        obs, reward, terminated, truncated, info = env.step(_actions(env, info["action_mask"], rng))
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
        for key, value in obs.items() if isinstance(obs, dict) else [("", obs)]:
            h.update(f"{key}:{value.dtype}:{value.shape}".encode())
            h.update(np.ascontiguousarray(value).tobytes())
        h.update(np.ascontiguousarray(info["action_mask"]).tobytes())
        for key, number in sorted(info["reward_components"].items()):
            h.update(struct.pack("<d", number) + key.encode())
        h.update(struct.pack("<d??", reward, terminated, truncated))
        steps += 1
        episodes += int(terminated or truncated)
        reward_sum += reward
    # The reward's sum says how far a changed stream moved (the hash only that it did).
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
