"""The ``HetCluster-v0`` Gymnasium environment: observation encoders, action codecs, rewards, rendering.

Importing :mod:`hetgym` registers ``HetCluster-v0`` (the ``default`` scenario) and
``HetCluster-Tiny-v0`` (the ``tiny`` scenario); make them with ``gymnasium.make``. See
:class:`HetClusterEnv` for the spaces, rewards and episode rules, and ``docs/environment.md``.

The names below are imported on first access, so that ``import hetgym`` (which registers the ids)
does not import the environment's modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hetgym.envs.registration import ENV_IDS, register_envs

if TYPE_CHECKING:
    from hetgym.envs.codecs import CODECS, ActionCodec, Encoding, OneShotCodec, SequentialCodec
    from hetgym.envs.config import HetClusterConfig
    from hetgym.envs.env import HetClusterEnv
    from hetgym.envs.observations import ENCODERS, ObservationEncoder, WindowObservation
    from hetgym.envs.rewards import REWARDS, RewardComponents

_LAZY = {
    "CODECS": "hetgym.envs.codecs",
    "ActionCodec": "hetgym.envs.codecs",
    "Encoding": "hetgym.envs.codecs",
    "OneShotCodec": "hetgym.envs.codecs",
    "SequentialCodec": "hetgym.envs.codecs",
    "HetClusterConfig": "hetgym.envs.config",
    "HetClusterEnv": "hetgym.envs.env",
    "ENCODERS": "hetgym.envs.observations",
    "ObservationEncoder": "hetgym.envs.observations",
    "WindowObservation": "hetgym.envs.observations",
    "REWARDS": "hetgym.envs.rewards",
    "RewardComponents": "hetgym.envs.rewards",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hetgym.envs' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "CODECS",
    "ENCODERS",
    "ENV_IDS",
    "REWARDS",
    "ActionCodec",
    "Encoding",
    "HetClusterConfig",
    "HetClusterEnv",
    "ObservationEncoder",
    "OneShotCodec",
    "RewardComponents",
    "SequentialCodec",
    "WindowObservation",
    "register_envs",
]
