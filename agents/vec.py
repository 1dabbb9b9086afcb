"""The training recipes' vector envs: ``n_envs`` environments in this process or one process each.

``hetgym train --n-envs N --vec dummy`` steps N environments in turn in this process (Stable-Baselines3's
``DummyVecEnv``); ``--vec subproc`` runs each in a worker process of its own (``SubprocVecEnv``), so their
steps use other cores while this process runs the network. The workers are started with ``forkserver``
(``spawn`` where the platform has no fork server), never ``fork``: a forked copy of a process that has
already imported torch and started its threads can hang. A worker builds its environment from the
registered id with the ``hetgym:`` prefix (``gym.make("hetgym:HetCluster-v1", ...)``), which imports
``hetgym`` and so registers the ids in that fresh process.

MaskablePPO reads the masks through ``env_method("action_masks")`` (sb3-contrib's ``get_action_masks``),
which a ``SubprocVecEnv`` answers from its workers.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from agents.args import check_vec_options

#: The package whose import registers the ids (the ``module:`` part of a worker's ``gym.make`` id).
ID_MODULE = "hetgym"


def worker_env_id(env_id: str) -> str:
    """``env_id`` with the ``hetgym:`` prefix that registers it in a fresh process (kept if it has a module)."""
    return env_id if ":" in env_id else f"{ID_MODULE}:{env_id}"


class EnvFactory:
    """``gym.make(env_id, **env_kwargs)`` as a picklable callable (sent to ``SubprocVecEnv`` workers).

    A module-level class rather than a closure: a worker unpickles it by reference, and its settings can
    be read back (``factory.env_id``, ``factory.env_kwargs``).
    """

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any]) -> None:
        self.env_id = worker_env_id(env_id)
        self.env_kwargs = dict(env_kwargs)

    def __call__(self) -> gym.Env[Any, Any]:
        return gym.make(self.env_id, **self.env_kwargs)

    def __repr__(self) -> str:
        return f"EnvFactory({self.env_id!r}, {self.env_kwargs!r})"


def subproc_start_method() -> str:
    """``forkserver`` where the platform offers it, else ``spawn`` (see the module docstring)."""
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def make_train_venv(env_id: str, env_kwargs: Mapping[str, Any], n_envs: int, vec: str = "dummy") -> Any:
    """``n_envs`` environments ``gym.make(env_id, **env_kwargs)`` in a ``DummyVecEnv`` or a ``SubprocVecEnv``.

    Args:
        env_id: The registered id (a worker makes it as ``hetgym:<id>``).
        env_kwargs: ``gym.make`` overrides, the same for every environment.
        n_envs: Number of environments, >= 1.
        vec: ``dummy`` (this process) or ``subproc`` (a worker process each).

    Seeds are SB3's: the model's ``seed`` gives environment ``i`` the seed ``seed + i`` at its first reset,
    in either kind, so a run's episodes do not depend on ``vec``.
    """
    check_vec_options(n_envs, vec)
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    # SB3 types its factories as callables returning gym.Env: EnvFactory is one (a picklable class).
    factories: list[Callable[[], gym.Env[Any, Any]]] = [EnvFactory(env_id, env_kwargs) for _ in range(n_envs)]
    if vec == "subproc":
        return SubprocVecEnv(factories, start_method=subproc_start_method())
    return DummyVecEnv(factories)


__all__ = ["EnvFactory", "make_train_venv", "subproc_start_method", "worker_env_id"]
