"""Forking an environment: one entry point for every copy the lookahead takes.

:func:`fork_env` returns an independent copy of an environment's unwrapped core, positioned at the same
pending decision: the environment's own ``fork()`` when it has one (a copy that shares the immutable
workload and cluster data), and ``copy.deepcopy`` otherwise. Stepping the copy never changes the original.
"""

from __future__ import annotations

import copy
from typing import Any


def fork_env(env: Any) -> Any:
    """An independent copy of ``env.unwrapped`` (or of ``env`` when it has no wrapper), at the same state."""
    base = env.unwrapped if hasattr(env, "unwrapped") else env
    fork = getattr(base, "fork", None)
    if callable(fork):
        return fork()
    return copy.deepcopy(base)


__all__ = ["fork_env"]
