"""Registration of the environment ids with Gymnasium (run on ``import hetgym``; idempotent).

Only the entry point string is registered, so importing :mod:`hetgym` stays light and the
environment module is imported when an env is first made. Because registration happens on
``import hetgym``, ``gym.make("hetgym:HetCluster-v0")`` works in any fresh process, including
spawned ``SubprocVecEnv`` / ``AsyncVectorEnv`` workers.
"""

from __future__ import annotations

from typing import Any

ENTRY_POINT = "hetgym.envs.env:HetClusterEnv"
#: The event-driven interface's class (the ``HetClusterEvents`` ids).
EVENT_ENTRY_POINT = "hetgym.envs.events.env:HetClusterEventEnv"
#: ``gym.make_vec(id, num_envs=N)`` builds this batched vector env (``vectorization_mode="sync"`` still gives
#: Gymnasium's ``SyncVectorEnv``).
VECTOR_ENTRY_POINT = "hetgym.envs.vector:make_vector_env"
#: The same for the event-driven ids: a ``SyncVectorEnv`` of ``HetClusterEventEnv`` with ``action_masks()``.
EVENT_VECTOR_ENTRY_POINT = "hetgym.envs.vector:make_event_vector_env"

#: Registered ids and the keyword arguments they add (presets are kwargs, not subclasses). The ``-v1`` ids
#: take the decision interface built for learning (``interface="v1"``: see ``HetClusterConfig``); the ``-v2``
#: ids the same MDP with the flat observation (``flatten=True``: one float32 ``Box``, the encoder's vector); the
#: ``-v0`` ids stay registered, unchanged, for comparison with results obtained on them.
ENV_IDS: dict[str, dict[str, Any]] = {
    "HetCluster-v0": {"scenario": "default"},
    "HetCluster-Tiny-v0": {"scenario": "tiny"},
    "HetCluster-v1": {"scenario": "default", "interface": "v1"},
    "HetCluster-Tiny-v1": {"scenario": "tiny", "interface": "v1"},
    "HetCluster-v2": {"scenario": "default", "interface": "v1", "flatten": True},
    "HetCluster-Tiny-v2": {"scenario": "tiny", "interface": "v1", "flatten": True},
}

#: The ids of the event-driven interface (:mod:`hetgym.envs.events`): one decision per job arrival, a guided
#: ElasticFlow allocating between them. A different class, so its options are not those of :data:`ENV_IDS`.
#: The ``-v1`` ids add sharing options to the actions (``action_set="share"``); ``-v0`` stays unchanged. The ``-v2``
#: ids are ``-v1`` with the flat observation (one float32 ``Box``; ``env.unwrapped.layout`` names its slices).
EVENT_ENV_IDS: dict[str, dict[str, Any]] = {
    "HetClusterEvents-v0": {"scenario": "default"},
    "HetClusterEvents-Tiny-v0": {"scenario": "tiny"},
    "HetClusterEvents-v1": {"scenario": "default", "action_set": "share"},
    "HetClusterEvents-Tiny-v1": {"scenario": "tiny", "action_set": "share"},
    "HetClusterEvents-v2": {"scenario": "default", "action_set": "share", "flatten": True},
    "HetClusterEvents-Tiny-v2": {"scenario": "tiny", "action_set": "share", "flatten": True},
}


def register_envs() -> list[str]:
    """Register every id in :data:`ENV_IDS` and :data:`EVENT_ENV_IDS` not registered yet; return them all."""
    import gymnasium

    for env_id, kwargs in ENV_IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(
                id=env_id, entry_point=ENTRY_POINT, vector_entry_point=VECTOR_ENTRY_POINT, kwargs=dict(kwargs)
            )
    for env_id, kwargs in EVENT_ENV_IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(
                id=env_id,
                entry_point=EVENT_ENTRY_POINT,
                vector_entry_point=EVENT_VECTOR_ENTRY_POINT,
                kwargs=dict(kwargs),
            )
    return [*ENV_IDS, *EVENT_ENV_IDS]
