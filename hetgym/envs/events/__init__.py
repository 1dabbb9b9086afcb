"""The event-driven interface (``HetClusterEvents-v0``): one agent decision per job event, an expert allocator between.

``HetClusterEvents-v1`` is the same with sharing options in the actions (``action_set="share"``).

* :class:`HetClusterEventEnv` (:mod:`hetgym.envs.events.env`): the environment;
* :class:`EventEnvConfig` (:mod:`hetgym.envs.events.config`): its options;
* :class:`EventActions` (:mod:`hetgym.envs.events.actions`): the action table of directives;
* :class:`EventObservation` (:mod:`hetgym.envs.events.observation`): the observation;
* :class:`EventExpertAgent` (:mod:`hetgym.envs.events.experts`): any registered policy's choices per job,
  expressed in the action table (exactly, for the allocator's own expert).
"""

from __future__ import annotations

from hetgym.envs.events.actions import AUTO_ACTION, REJECT_ACTION, EventActions
from hetgym.envs.events.config import DEFAULT_ALLOCATOR, EventEnvConfig
from hetgym.envs.events.env import HetClusterEventEnv
from hetgym.envs.events.observation import EventObservation

__all__ = [
    "AUTO_ACTION",
    "DEFAULT_ALLOCATOR",
    "REJECT_ACTION",
    "EventActions",
    "EventEnvConfig",
    "EventObservation",
    "HetClusterEventEnv",
]
