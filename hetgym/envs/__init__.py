"""The ``HetCluster-v0`` Gymnasium environment: observation encoders, action codecs, rewards, rendering.

Importing :mod:`hetgym` registers ``HetCluster-v0`` (the ``default`` scenario) and
``HetCluster-Tiny-v0`` (the ``tiny`` scenario), their ``-v1`` interface and its flat-observation
``-v2`` (``HetCluster-v2``, ``HetCluster-Tiny-v2``), and the event-driven ``HetClusterEvents-v0`` and
``HetClusterEvents-Tiny-v0`` with their sharing-option successors ``HetClusterEvents-v1`` and
``HetClusterEvents-Tiny-v1`` and those with the flat observation, ``HetClusterEvents-v2`` and
``HetClusterEvents-Tiny-v2`` (:mod:`hetgym.envs.events`); make them with ``gymnasium.make``. See
:class:`HetClusterEnv` for the spaces, rewards and episode rules, and ``docs/environment.md``.

The pluggable components (action codecs, observation encoders, rewards, window orders) are registries
(:class:`hetgym.sim.registry.Registry`): :data:`CODECS`, :data:`OBSERVATIONS`, :data:`REWARDS`,
:data:`WINDOW_ORDERS`, with the decorators :func:`register_codec`, :func:`register_observation`,
:func:`register_reward` and :func:`register_window_order`; a registered name is accepted by
``gym.make`` like a built-in one.

The names below are imported on first access, so that ``import hetgym`` (which registers the ids)
does not import the environment's modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hetgym.envs.registration import ENV_IDS, EVENT_ENV_IDS, register_envs

if TYPE_CHECKING:
    from hetgym.envs.codecs import CODECS, ActionCodec, CodecStep, OneShotCodec, SequentialCodec, register_codec
    from hetgym.envs.config import EnvSettings, HetClusterConfig
    from hetgym.envs.env import HetClusterEnv
    from hetgym.envs.events import EventEnvConfig, HetClusterEventEnv
    from hetgym.envs.exactness import Encoding
    from hetgym.envs.flat import DictObservation, FlatObservation
    from hetgym.envs.observations import (
        ENCODERS,
        OBSERVATIONS,
        ObservationEncoder,
        WindowObservation,
        register_observation,
    )
    from hetgym.envs.observations_layout import LayoutEntry, ObservationLayout
    from hetgym.envs.rewards import REWARDS, RewardComponents, register_reward
    from hetgym.envs.state import WINDOW_ORDERS, DecisionState, register_window_order

_LAZY = {
    "CODECS": "hetgym.envs.codecs",
    "ActionCodec": "hetgym.envs.codecs",
    "CodecStep": "hetgym.envs.codecs",
    "OneShotCodec": "hetgym.envs.codecs",
    "SequentialCodec": "hetgym.envs.codecs",
    "register_codec": "hetgym.envs.codecs",
    "EnvSettings": "hetgym.envs.config",
    "HetClusterConfig": "hetgym.envs.config",
    "HetClusterEnv": "hetgym.envs.env",
    "EventEnvConfig": "hetgym.envs.events",
    "HetClusterEventEnv": "hetgym.envs.events",
    "Encoding": "hetgym.envs.exactness",
    "DictObservation": "hetgym.envs.flat",
    "FlatObservation": "hetgym.envs.flat",
    "LayoutEntry": "hetgym.envs.observations_layout",
    "ObservationLayout": "hetgym.envs.observations_layout",
    "ENCODERS": "hetgym.envs.observations",
    "OBSERVATIONS": "hetgym.envs.observations",
    "ObservationEncoder": "hetgym.envs.observations",
    "WindowObservation": "hetgym.envs.observations",
    "register_observation": "hetgym.envs.observations",
    "REWARDS": "hetgym.envs.rewards",
    "RewardComponents": "hetgym.envs.rewards",
    "register_reward": "hetgym.envs.rewards",
    "WINDOW_ORDERS": "hetgym.envs.state",
    "DecisionState": "hetgym.envs.state",
    "register_window_order": "hetgym.envs.state",
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
    "EVENT_ENV_IDS",
    "OBSERVATIONS",
    "REWARDS",
    "WINDOW_ORDERS",
    "ActionCodec",
    "CodecStep",
    "DecisionState",
    "DictObservation",
    "Encoding",
    "EnvSettings",
    "EventEnvConfig",
    "FlatObservation",
    "HetClusterConfig",
    "HetClusterEnv",
    "HetClusterEventEnv",
    "LayoutEntry",
    "ObservationEncoder",
    "ObservationLayout",
    "OneShotCodec",
    "RewardComponents",
    "SequentialCodec",
    "WindowObservation",
    "register_codec",
    "register_envs",
    "register_observation",
    "register_reward",
    "register_window_order",
]
