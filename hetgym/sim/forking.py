"""Forks: independent copies of a simulation, and of the policies that run it, at one decision epoch.

A rollout (a lookahead teacher scoring an action by simulating what follows it) starts from a copy of the
present. Deep-copying a simulator copies everything, the cluster, the throughput tables and the job specs
included; a fork copies only what a step can change and shares the rest:

* :meth:`Simulator.fork <hetgym.sim.engine.Simulator.fork>`: the clock, counters, job records, placements,
  free GPUs, event queue, watchdog counters, placer, logs and deadline book copied (each of those objects
  copies its own state); the cluster, configuration, throughput model, specs and the caches that are pure
  functions of their keys shared. ``Simulator.rebind_view(view)`` gives the fork its own view of the
  current epoch.
* :func:`fork_object` is the generic protocol for a policy (or any stateful helper): the attributes its
  class names in ``fork_shared`` are shared, those in ``fork_shallow`` copied one level (a cache whose values
  are immutable), every other attribute deep-copied with the shared objects kept as they are.
  :meth:`Policy.copy_state <hetgym.sim.policy.Policy.copy_state>` uses it; :func:`fork_policy` forks any
  policy, falling back to :func:`copy.deepcopy` for an object without ``copy_state``.

A fork continued with the same decisions gives the original's continuation, bit for bit
(``tests/sim/test_fork.py``). A pickle of a simulator (its ``__getstate__``) is a copy too: it seals the
views still referenced, whose weak references do not pickle.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, TypeVar

_T = TypeVar("_T")


def fork_object(
    obj: _T, shared: Iterable[str] = (), shallow: Iterable[str] = (), memo: dict[int, Any] | None = None
) -> _T:
    """An independent copy of ``obj`` (an object with a ``__dict__``): its attributes named in ``shared``
    are the same objects, those in ``shallow`` are copied one level, every other one is deep-copied.

    Objects in ``memo`` (``{id(x): x}``) and the shared attributes' values are kept as they are wherever the
    deep copies meet them (a cluster a cache refers to, say).
    """
    shared, shallow = frozenset(shared), frozenset(shallow)
    memo = {} if memo is None else dict(memo)
    state = obj.__dict__
    for name in shared:
        if name in state:
            memo[id(state[name])] = state[name]
    out = copy.copy(obj)
    new = out.__dict__
    for name, value in state.items():
        if name in shared:
            continue
        new[name] = copy.copy(value) if name in shallow else copy.deepcopy(value, memo)
    return out


def fork_policy(policy: _T, memo: dict[int, Any] | None = None) -> _T:
    """``policy.copy_state()`` where it has one (:meth:`Policy.copy_state <hetgym.sim.policy.Policy.copy_state>`,
    or a placer's), else a deep copy (``memo`` as in :func:`copy.deepcopy`: objects to keep as they are)."""
    copy_state = getattr(policy, "copy_state", None)
    if callable(copy_state):
        return copy_state()
    return copy.deepcopy(policy, {} if memo is None else dict(memo))
