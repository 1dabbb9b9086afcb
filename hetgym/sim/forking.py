"""Forks: independent copies of a simulation, and of the policies that run it, at one decision epoch.

A rollout (a lookahead teacher scoring an action by simulating what follows it) starts from a copy of the
present. Deep-copying a simulator copies everything, the cluster, the throughput tables and the job specs
included; a fork copies only what a step can change and shares the rest:

* :class:`ForkMixin` (mixed into :class:`~hetgym.sim.engine.Simulator`) gives ``Simulator.fork()``: the clock,
  counters, job records, placements, free GPUs, completion heap, placer, logs and deadline book copied; the
  cluster, configuration, throughput model, specs and the caches that are pure functions of their keys
  shared. ``Simulator.rebind_view(view)`` gives the fork its own view of the current epoch.
* :func:`fork_object` is the generic protocol for a policy (or any stateful helper): the attributes its
  class names in ``fork_shared`` are shared, those in ``fork_shallow`` copied one level (a cache whose values
  are immutable), every other attribute deep-copied with the shared objects kept as they are.
  :meth:`Policy.copy_state <hetgym.sim.policy.Policy.copy_state>` uses it; :func:`fork_policy` forks any
  policy, falling back to :func:`copy.deepcopy` for an object without ``copy_state``.

A fork continued with the same decisions gives the original's continuation, bit for bit
(``tests/sim/test_fork.py``). A pickle of a simulator (``__getstate__``, also here) is a copy too: it seals the
views still referenced, whose weak references do not pickle.
"""

from __future__ import annotations

import copy
import dataclasses
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from hetgym.sim.errors import HetgymError
from hetgym.sim.job import JobStatus
from hetgym.sim.view import ClusterView, EpochJobs

if TYPE_CHECKING:
    from hetgym.sim.apply import Placements
    from hetgym.sim.cluster import ClusterSpec
    from hetgym.sim.config import SimConfig
    from hetgym.sim.deadlines import DeadlineBook
    from hetgym.sim.placement import Placer
    from hetgym.sim.runtime import JobRecord
    from hetgym.sim.throughput import ThroughputModel

_T = TypeVar("_T")
_ENDED = (JobStatus.COMPLETED, JobStatus.REJECTED)
_S = TypeVar("_S", bound="ForkMixin")


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


class ForkMixin:
    """Copies of the simulator (mixed into ``Simulator``; see the module): ``fork``, ``rebind_view``, and the
    sealing of live snapshots that a pickle (``__getstate__``) and every step start with."""

    # State owned and initialised by the simulator (its __init__ and reset()).
    cluster: ClusterSpec
    config: SimConfig
    throughput: ThroughputModel
    _placer: Placer
    _started: bool
    _done: bool
    _jobs: dict[int, JobRecord]
    _order: list[JobRecord]
    _active: dict[int, JobRecord]
    _placements: Placements
    _heap: list[tuple[float, int, int, int]]
    _timeline: list[tuple[float, tuple[int, ...]]]
    _ended_log: list[tuple[int, float, JobStatus]]
    _deadlines: DeadlineBook
    _latencies_s: list[float]
    _snapshots: list[weakref.ref[EpochJobs]]
    _epoch_token: object | None

    def _seal_snapshots(self) -> None:
        """Before the state changes: every snapshot still referenced (a view kept past its decision)
        copies what it shows out of the engine's mappings; then none is tracked any more."""
        for ref in getattr(self, "_snapshots", ()):
            jobs = ref()
            if jobs is not None:
                jobs.seal()
        self._snapshots = []

    def __getstate__(self) -> dict[str, Any]:
        # Weak references do not pickle: build the views of live snapshots, then drop the references.
        self._seal_snapshots()
        return self.__dict__.copy()

    def fork(self: _S) -> _S:
        """An independent copy of the simulation at this point: stepping one leaves the other as it was.

        The copy shares what no step changes: the cluster, the configuration, the throughput model, the
        job specs, the records of jobs that completed or were rejected, and the caches that are pure
        functions of their keys (the rate table, the placements' rate cache, the bounds on run times). It
        copies what steps change: the clock and counters, the other jobs' records, the running jobs'
        allocations and placements, the free GPUs, the completion heap, the
        placer (with any random stream of its own), the logs and the deadline book. A fork continued with
        the same decisions gives the original's continuation, bit for bit. The current epoch's view reads
        the original's state; :meth:`rebind_view` gives the fork its own.
        """
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__dict__)
        # The placer may keep state (a random stream, its last answer): copy it, sharing the immutable
        # objects it refers to.
        memo: dict[int, Any] = {id(obj): obj for obj in (self.cluster, self.config, self.throughput)}
        out._placer = fork_policy(self._placer, memo)  # its copy_state() where it has one, else a deep copy
        out._latencies_s = list(self._latencies_s)
        out._ended_log = list(self._ended_log)
        out._deadlines = self._deadlines.copy()
        out._snapshots = []
        if self._started:
            # A completed or rejected job's record never changes again: shared.
            jobs = {jid: r if r.status in _ENDED else r.copy() for jid, r in self._jobs.items()}
            out._jobs = jobs
            out._order = [jobs[record.spec.job_id] for record in self._order]
            out._active = {jid: jobs[jid] for jid in self._active}
            out._placements = self._placements.fork(out._active, out._placer)
            out._heap = out._placements.heap
            out._timeline = list(self._timeline)
        return out

    def rebind_view(self, view: ClusterView) -> ClusterView:
        """The current epoch's ``view``, taken from the simulator this one was forked from, reading this one's state.

        The epoch keeps its identity (``view.active.token``): a policy forked along with the simulator sees
        the fork's next view follow it, as the original's would.

        Raises:
            HetgymError: ``view`` is not of this simulator's current epoch.
        """
        if not self._started or self._done or view.active.token is not self._epoch_token:
            raise HetgymError(
                "rebind_view: the view is not of this simulator's current epoch; pass the view the original "
                "simulator returned last, before stepping it (fork again after every step)"
            )
        placements = self._placements
        jobs = EpochJobs(view.now_s, placements.running, placements.waiting_views, placements.allocs)
        jobs.token = view.active.token
        self._snapshots.append(weakref.ref(jobs))
        return dataclasses.replace(view, active=jobs, free_servers=placements.servers.free.copy())
