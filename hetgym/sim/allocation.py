"""Allocations: what a policy returns at a decision epoch, and their validation.

An :class:`Allocation` is the *complete* desired state of the cluster after the epoch: every active
job it names gets exactly the GPUs given (per-type counts and, optionally, the servers); every active
job it does not name holds no GPUs (it waits, or is preempted); the jobs in ``reject`` leave the
cluster and count as deadline misses. Keeping a running job as it is therefore means repeating its
current :class:`JobAllocation` (``view.job(i).allocation``), which :class:`AllocationBuilder` does
with :meth:`AllocationBuilder.keep`. The simulator turns an allocation into the rows it changes
(:func:`~hetgym.sim.decision.decision_of`) and checks those once (:func:`~hetgym.sim.decision.check_decision`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

import numpy as np

from hetgym.sim.errors import InvalidAllocationError
from hetgym.sim.throughput import EXECUTION_MODES, ExecutionMode


def _gpu_count(key: object, n: object) -> int:
    """``n`` as an ``int`` when it is a finite whole number (not a bool, not a string), else raise."""
    if isinstance(n, bool | np.bool_) or not isinstance(n, int | float | np.integer | np.floating):
        why = f"is a {type(n).__name__}, not a number"
    elif not math.isfinite(float(n)):
        why = "is not finite"
    elif float(n) != int(n):
        why = "is not a whole number"
    else:
        return int(n)
    raise InvalidAllocationError(f"GPU count {n!r} for {key!r} {why}; give a whole number of GPUs >= 0")


def _as_pairs(mapping: Mapping[str, int] | Iterable[tuple[str, int]]) -> tuple[tuple[str, int], ...]:
    items = mapping.items() if isinstance(mapping, Mapping) else mapping
    merged: dict[str, int] = {}
    for key, n in items:
        merged[key] = merged.get(key, 0) + _gpu_count(key, n)
    for key, n in merged.items():
        if n < 0:
            raise InvalidAllocationError(f"GPU count for {key!r} is {n}; counts must be >= 0")
    return tuple(sorted((k, n) for k, n in merged.items() if n > 0))


@dataclass(frozen=True, slots=True, init=False)
class JobAllocation:
    """The GPUs of one job: counts per type, optional server placement, and an execution mode.

    Args:
        counts: ``{gpu_type: num_gpus}``.
        servers: Optional ``{server_id: num_gpus}``; when given it must match ``counts`` type by type.
            When omitted the simulator places the job with the default placer (sticky, best fit on one
            server, fewest servers).
        mode: How a job spanning GPU types runs (``sync``, ``proportional``, ``fork``); see
            :func:`hetgym.sim.throughput.allocation_rate`. Irrelevant for a single type unless ``fork``.
    """

    counts: tuple[tuple[str, int], ...]
    servers: tuple[tuple[int, int], ...] | None
    mode: ExecutionMode

    def __init__(
        self,
        counts: Mapping[str, int] | Iterable[tuple[str, int]],
        servers: Mapping[int, int] | Iterable[tuple[int, int]] | None = None,
        mode: ExecutionMode = "sync",
    ) -> None:
        if mode not in EXECUTION_MODES:
            raise InvalidAllocationError(f"unknown execution mode {mode!r}; use one of {EXECUTION_MODES}")
        object.__setattr__(self, "counts", _as_pairs(counts))
        srv = (
            None
            if servers is None
            else tuple(
                (int(s), n)
                for s, n in _as_pairs(
                    (str(s), n) for s, n in (servers.items() if isinstance(servers, Mapping) else servers)
                )
            )
        )
        if srv is not None:
            srv = tuple(sorted(srv))
        object.__setattr__(self, "servers", srv)
        object.__setattr__(self, "mode", mode)

    @classmethod
    def _placed(
        cls, counts: tuple[tuple[str, int], ...], servers: tuple[tuple[int, int], ...], mode: ExecutionMode
    ) -> JobAllocation:
        """A checked allocation's ``counts`` and ``mode`` with the servers the engine placed it on
        (simulator-internal: skips the checks those passed; the same value as the constructor's)."""
        srv = tuple(sorted((int(s), int(n)) for s, n in servers))
        if len({s for s, _ in srv}) != len(srv) or any(n <= 0 for _, n in srv):
            return cls(counts, srv, mode)  # merged or dropped by the constructor
        out = object.__new__(cls)
        object.__setattr__(out, "counts", counts)
        object.__setattr__(out, "servers", srv)
        object.__setattr__(out, "mode", mode)
        return out

    @classmethod
    def _of_counts(cls, counts: tuple[tuple[str, int], ...], mode: ExecutionMode) -> JobAllocation:
        """The allocation of checked ``counts`` (sorted by type, positive ints) and ``mode``, no servers
        (simulator-internal: the same value as the constructor's)."""
        out = object.__new__(cls)
        object.__setattr__(out, "counts", counts)
        object.__setattr__(out, "servers", None)
        object.__setattr__(out, "mode", mode)
        return out

    @property
    def total_gpus(self) -> int:
        """GPUs over all types."""
        return sum(n for _, n in self.counts)

    def count(self, gpu_type: str) -> int:
        """GPUs of ``gpu_type`` (0 if none)."""
        for t, n in self.counts:
            if t == gpu_type:
                return n
        return 0

    @property
    def gpu_types(self) -> tuple[str, ...]:
        """Types used, sorted by name."""
        return tuple(t for t, _ in self.counts)

    def as_dict(self) -> dict[str, int]:
        """``{gpu_type: num_gpus}``."""
        return dict(self.counts)

    def same_resources(self, other: JobAllocation | None) -> bool:
        """Same counts and mode (servers ignored)."""
        return other is not None and self.counts == other.counts and self.mode == other.mode

    def __bool__(self) -> bool:
        return bool(self.counts)


@dataclass(frozen=True, slots=True)
class AllocationDelta:
    """What an :class:`Allocation` changes against the running allocations of the epoch it was built at.

    An allocation carrying one equals the epoch's running allocations (``view.active.allocations``)
    except for the jobs in ``touched``, and the simulator checks and applies only those jobs (an epoch
    costs what changes, not the number of active jobs). :class:`AllocationBuilder`'s ``keeping_running``
    and ``replacing`` builders attach one; a policy building an :class:`Allocation` by hand may too.

    Attributes:
        epoch: The epoch's identity, ``view.active.token``. A delta of another epoch is ignored: the
            allocation is then checked and applied in full.
        touched: The only jobs whose GPUs (counts, mode or servers) may differ from their current ones,
            rejected jobs included, in the order of their last assignment. The simulator trusts it: a
            job left out keeps its current allocation whatever ``jobs`` says.
    """

    epoch: object
    touched: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Allocation:
    """A policy's decision at one epoch: GPUs per job, plus jobs rejected.

    Attributes:
        jobs: ``{job_id: JobAllocation}``; active jobs not named hold no GPUs afterwards.
        reject: Jobs refused for good (they count as deadline misses).
        delta: Optionally, which jobs this decision changes against the epoch's running allocations
            (:class:`AllocationDelta`), so that the simulator checks and applies only those. Not part of
            the value (ignored by ``==``).
    """

    jobs: Mapping[int, JobAllocation] = field(default_factory=lambda: MappingProxyType({}))
    reject: frozenset[int] = frozenset()
    delta: AllocationDelta | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        jobs = {int(k): v for k, v in self.jobs.items()}
        for jid, ja in jobs.items():
            if not isinstance(ja, JobAllocation):
                raise InvalidAllocationError(
                    f"job {jid}: expected a JobAllocation, got {type(ja).__name__}; "
                    "build one with JobAllocation({'v100': 2})"
                )
        object.__setattr__(self, "jobs", MappingProxyType(jobs))
        object.__setattr__(self, "reject", frozenset(int(j) for j in self.reject))
        if self.delta is not None and not isinstance(self.delta, AllocationDelta):
            raise InvalidAllocationError(f"delta must be an AllocationDelta or None, got {type(self.delta).__name__}")

    @classmethod
    def _built(
        cls, jobs: dict[int, JobAllocation], reject: frozenset[int], delta: AllocationDelta | None
    ) -> Allocation:
        """An allocation from :class:`AllocationBuilder` (its ids are ints and its values JobAllocations)."""
        out = object.__new__(cls)
        object.__setattr__(out, "jobs", MappingProxyType(jobs))
        object.__setattr__(out, "reject", reject)
        object.__setattr__(out, "delta", delta)
        return out

    @classmethod
    def from_counts(
        cls,
        counts: Mapping[int, Mapping[str, int]],
        *,
        reject: Iterable[int] = (),
        mode: ExecutionMode = "sync",
    ) -> Allocation:
        """Build from ``{job_id: {gpu_type: n}}`` (no explicit placement)."""
        jobs: dict[int, JobAllocation] = {}
        for j, c in counts.items():
            if c:
                try:
                    jobs[j] = JobAllocation(c, mode=mode)
                except InvalidAllocationError as err:
                    raise InvalidAllocationError(f"job {j}: {err}") from None
        return cls(jobs, frozenset(reject))

    @property
    def touched(self) -> tuple[int, ...] | None:
        """For an allocation built from an epoch's running allocations (with a :attr:`delta`, as
        :class:`AllocationBuilder`'s ``keeping_running`` and ``replacing`` give): the only jobs whose GPUs
        it may change; else ``None``."""
        return None if self.delta is None else self.delta.touched

    def gpus_by_type(self) -> dict[str, int]:
        """Total GPUs allocated per type."""
        out: dict[str, int] = {}
        for ja in self.jobs.values():
            for t, n in ja.counts:
                out[t] = out.get(t, 0) + n
        return out


class _EpochLike(Protocol):
    """What a builder reads of an epoch's jobs (:class:`~hetgym.sim.view.EpochJobs`)."""

    @property
    def token(self) -> object: ...

    @property
    def allocations(self) -> Mapping[int, JobAllocation]: ...

    def allocations_copy(self) -> dict[int, JobAllocation]: ...


class _ClusterLike(Protocol):
    @property
    def capacity(self) -> Mapping[str, int]: ...


class _ViewLike(Protocol):
    """What a builder reads of an epoch's view (:class:`~hetgym.sim.view.ClusterView`)."""

    @property
    def cluster(self) -> _ClusterLike: ...

    @property
    def free_gpus(self) -> Mapping[str, int]: ...

    @property
    def active(self) -> _EpochLike: ...


class _JobViewLike(Protocol):
    """What :meth:`AllocationBuilder.keep` reads of a job's view (:class:`~hetgym.sim.view.JobView`)."""

    @property
    def job_id(self) -> int: ...

    @property
    def allocation(self) -> JobAllocation | None: ...


class AllocationBuilder:
    """Incrementally build an :class:`Allocation` within the cluster's per-type capacity.

    Starts from an empty cluster (every GPU free): call :meth:`keep` for the jobs whose current
    GPUs should stay, and :meth:`assign` for new decisions.
    """

    def __init__(self, view: _ViewLike) -> None:
        self.view = view
        self.free: dict[str, int] = dict(view.cluster.capacity)
        self._jobs: dict[int, JobAllocation] = {}
        self._reject: set[int] = set()
        # With keeping_running: the epoch's running allocations it started from, and the ids changed
        # since (in the order of their last assignment), so only those are checked and applied.
        self._base: object | None = None
        self._touched: dict[int, None] = {}
        # With replacing: the epoch's running allocations, to tell a kept job from a changed one.
        self._current: Mapping[int, JobAllocation] | None = None

    @classmethod
    def keeping_running(cls, view: _ViewLike) -> AllocationBuilder:
        """A builder that already keeps every running job's current allocation (no preemption)."""
        builder = cls(view)
        builder.free = dict(view.free_gpus)
        builder._jobs = view.active.allocations_copy()
        builder._base = view.active.token
        return builder

    @classmethod
    def replacing(cls, view: _ViewLike) -> AllocationBuilder:
        """A builder from an empty cluster, like ``AllocationBuilder(view)``, that records which jobs end
        up with other GPUs than they hold now, so that the engine checks and applies only those: a
        running job given back its current allocation (the very object, as :meth:`take` or :meth:`keep`
        does) is no change, a running job left out is one."""
        builder = cls(view)
        builder._base = view.active.token
        builder._current = view.active.allocations
        return builder

    def can_fit(self, counts: Mapping[str, int]) -> bool:
        """Whether ``counts`` fit in the GPUs still free."""
        return all(self.free.get(t, 0) >= n for t, n in counts.items())

    def assign(self, job_id: int, counts: Mapping[str, int] | JobAllocation, mode: ExecutionMode = "sync") -> None:
        """Give ``job_id`` the GPUs in ``counts`` (replacing any earlier assignment in this builder)."""
        try:
            ja = counts if isinstance(counts, JobAllocation) else JobAllocation(counts, mode=mode)
        except InvalidAllocationError as err:
            raise InvalidAllocationError(f"job {job_id}: {err}") from None
        self.release(job_id)
        for t, n in ja.counts:
            if self.free.get(t, 0) < n:
                raise InvalidAllocationError(
                    f"job {job_id}: {n} x {t} requested but only {self.free.get(t, 0)} free in this builder"
                )
        for t, n in ja.counts:
            self.free[t] -= n
        if ja:
            self._jobs[job_id] = ja
        touched = self._touched
        touched.pop(job_id, None)
        touched[job_id] = None

    def take(self, job_id: int, ja: JobAllocation) -> None:
        """:meth:`assign` of a non-empty ``ja`` to a job not assigned in this builder, when the caller
        has checked that it fits (a fast path for walks that keep many jobs)."""
        free = self.free
        for t, n in ja.counts:
            free[t] -= n
        self._jobs[job_id] = ja
        current = self._current
        if current is not None and current.get(job_id) is ja and job_id not in self._touched:
            return  # replacing: a running job keeps its GPUs, no change
        touched = self._touched
        touched.pop(job_id, None)
        touched[job_id] = None

    def keep_current(self, job_ids: Sequence[int], free_after: Mapping[str, int] | None = None) -> None:
        """Keep each of these running jobs' current allocation, in order, without checking that it fits:
        for a caller that knows they all do (running jobs walked while no other job took GPUs).

        ``free_after``, when the caller knows it, is what stays free afterwards (the count is skipped).
        """
        replacing = self._current is not None
        current = self._current if self._current is not None else self.view.active.allocations
        free, jobs, touched = self.free, self._jobs, self._touched
        if replacing and free_after is not None and not touched.keys() & job_ids:
            jobs.update(zip(job_ids, map(current.__getitem__, job_ids), strict=True))
            free.clear()
            free.update(free_after)
            return
        for job_id in job_ids:
            ja = current[job_id]
            for t, n in ja.counts:
                free[t] -= n
            jobs[job_id] = ja
            if not replacing or job_id in touched:
                touched.pop(job_id, None)
                touched[job_id] = None

    def take_if_fits(self, job_id: int, ja: JobAllocation) -> bool:
        """:meth:`take` of a non-empty ``ja`` if it fits in the GPUs still free; whether it did."""
        free = self.free
        counts = ja.counts
        if len(counts) == 1:
            t, n = counts[0]
            left = free.get(t, 0) - n
            if left < 0:
                return False
            free[t] = left
        else:
            for t, n in counts:
                if free.get(t, 0) < n:
                    return False
            for t, n in counts:
                free[t] -= n
        self._jobs[job_id] = ja
        current = self._current
        if current is not None and current.get(job_id) is ja and job_id not in self._touched:
            return True  # replacing: a running job keeps its GPUs, no change
        touched = self._touched
        touched.pop(job_id, None)
        touched[job_id] = None
        return True

    def keep(self, job: _JobViewLike) -> None:
        """Keep a running job's current allocation (servers included)."""
        if job.allocation:
            self.assign(job.job_id, job.allocation)

    def release(self, job_id: int) -> None:
        """Undo an assignment made in this builder."""
        old = self._jobs.pop(job_id, None)
        if old is not None:
            self._touched.setdefault(job_id, None)
            for t, n in old.counts:
                self.free[t] += n

    def reject(self, job_id: int) -> None:
        """Refuse ``job_id`` for good."""
        self.release(job_id)
        self._reject.add(job_id)

    @property
    def assignments(self) -> Mapping[int, JobAllocation]:
        """``{job_id: JobAllocation}`` assigned so far (a live read-only view)."""
        return MappingProxyType(self._jobs)

    def assigned(self, job_id: int) -> JobAllocation | None:
        """The assignment made so far for ``job_id``."""
        return self._jobs.get(job_id)

    def build(self) -> Allocation:
        """The finished allocation."""
        delta = None if self._base is None else AllocationDelta(self._base, tuple(self._touched))
        current = self._current
        if delta is not None and current is not None:
            # Running jobs this builder left out lose their GPUs: changes too.
            gone = current.keys() - self._jobs.keys() - self._touched.keys()
            delta = AllocationDelta(self._base, (*self._touched, *sorted(gone)))
        return Allocation._built(dict(self._jobs), frozenset(self._reject), delta)
