"""Frozen snapshots of the simulator state: the only thing policies and encoders see.

A :class:`ClusterView` is built at each decision epoch. It holds the active jobs (arrived, not
ended) as :class:`JobView` records, the free capacity before the policy decides, what triggered the
epoch, and read-only access to the throughput model. The job records are built when first read
(:class:`EpochJobs`), so an epoch costs the engine nothing per job the policy does not look at.
Views never expose the simulator's mutable state and future arrivals are invisible (the scheduling
problem is online).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from hetgym.sim.allocation import JobAllocation
from hetgym.sim.job import JobSpec, JobStatus
from hetgym.sim.rates import RateTable
from hetgym.sim.throughput import ServerGroup, ThroughputModel

if TYPE_CHECKING:
    from hetgym.sim.cluster import ClusterSpec
    from hetgym.sim.config import SimConfig


class JobView(NamedTuple):
    """An active job at one epoch (an immutable record).

    Static attributes mirror :class:`~hetgym.sim.job.JobSpec` (the full spec is ``spec``).

    Attributes:
        status: ``WAITING`` (no GPUs) or ``RUNNING``.
        remaining_iters: Iterations still to do at the epoch.
        allocation: Current GPUs (with servers), or ``None`` while waiting.
        groups: Current placement, one :class:`ServerGroup` per server.
        rate_iters_per_s: Current progress rate (0 while waiting; the rate after any penalty).
        penalty_left_s: Reconfiguration time still to pay before progress resumes.
        attained_gpu_s: GPU-seconds held so far (Tiresias' attained service).
        executed_s: Wall time spent holding GPUs.
        first_start_s: When the job first got GPUs, or ``None``.
        last_change_s: When its allocation last changed (start, resize, preemption), or ``None``.
        last_run_s: Length of its latest uninterrupted run (the current one while running).
        num_reconfigs: Allocation changes after the first start.
    """

    spec: JobSpec
    job_id: int
    submit_s: float
    job_type: str
    batch_size: int
    total_iters: float
    num_gpus: int
    deadline_s: float
    status: JobStatus
    remaining_iters: float
    allocation: JobAllocation | None
    groups: tuple[ServerGroup, ...]
    rate_iters_per_s: float
    penalty_left_s: float
    attained_gpu_s: float
    executed_s: float
    first_start_s: float | None
    last_change_s: float | None
    last_run_s: float
    num_reconfigs: int
    gpu_s_base: Mapping[str, float]  # per-type GPU-seconds up to the last allocation change
    since_change_s: float  # time held on the current groups since that change

    @property
    def gpu_s_by_type(self) -> dict[str, float]:
        """GPU-seconds held so far, per GPU type (Gavel's time received per type)."""
        out = dict(self.gpu_s_base)
        for g in self.groups:
            out[g.gpu_type] = out.get(g.gpu_type, 0.0) + g.num_gpus * self.since_change_s
        return out

    @property
    def is_running(self) -> bool:
        """Whether the job holds GPUs."""
        return self.status == JobStatus.RUNNING

    @property
    def done_iters(self) -> float:
        """Iterations completed."""
        return self.total_iters - self.remaining_iters

    @property
    def num_servers(self) -> int:
        """Servers the job spans."""
        return len(self.groups)


def _submission_order(job: JobView) -> tuple[float, int]:
    return (job.submit_s, job.job_id)


_SUBMISSION_KEY = operator.attrgetter("submit_s", "job_id")  # _submission_order, in C


class EpochJobs:
    """The active jobs of one decision epoch, as the engine hands them to a :class:`ClusterView`.

    Built in constant time: until :meth:`seal` it reads the engine's own (live) mappings of the running
    jobs' records, the waiting jobs' views and the running jobs' allocations, and builds the tuples of
    views only when they are first read. The engine changes those mappings only in its next step, and
    before it does it seals every snapshot still referenced (a view kept past its epoch), which copies
    what it shows. So a policy that reads only what it needs (``running_allocations``,
    :meth:`ClusterView.iter_waiting`) costs nothing per job it does not look at. Simulator-internal.
    """

    __slots__ = ("__weakref__", "_allocs", "_records", "_running", "_waiting", "_waiting_src", "now_s", "token")

    def __init__(
        self,
        now_s: float,
        records: Mapping[int, _Record],
        waiting: Mapping[int, JobView],
        allocations: dict[int, JobAllocation],
    ) -> None:
        self.now_s = now_s
        self._records: Mapping[int, _Record] | None = records
        self._waiting_src: Mapping[int, JobView] | None = waiting
        self._allocs = allocations
        self._running: tuple[JobView, ...] | None = None
        self._waiting: tuple[JobView, ...] | None = None
        #: Identifies the epoch to the engine (an allocation built from it carries the token, not the
        #: snapshot, so a finished decision does not keep the snapshot alive).
        self.token = object()

    @classmethod
    def of_views(cls, now_s: float, running: tuple[JobView, ...], waiting: tuple[JobView, ...]) -> EpochJobs:
        """A sealed snapshot of ready-made views (tests, hand-built views)."""
        out = cls(now_s, {}, {}, {j.job_id: j.allocation for j in running if j.allocation})
        out._running, out._waiting = running, waiting
        out._records = out._waiting_src = None
        return out

    def running(self) -> tuple[JobView, ...]:
        """The running jobs' views at the epoch's time (built once)."""
        if self._running is None:
            assert self._records is not None
            now = self.now_s
            self._running = tuple([r.make_view(now) for r in self._records.values()])
        return self._running

    def waiting(self) -> tuple[JobView, ...]:
        """The waiting jobs' views, in submission order (built once)."""
        if self._waiting is None:
            assert self._waiting_src is not None
            self._waiting = tuple(self._waiting_src.values())
        return self._waiting

    def iter_waiting(self) -> Iterator[JobView]:
        """The waiting jobs' views in submission order, without building :meth:`waiting`."""
        if self._waiting is not None or self._waiting_src is None:
            return iter(self.waiting())
        return iter(self._waiting_src.values())

    def view_of(self, job_id: int) -> JobView:
        """The view of the active job ``job_id`` (``KeyError`` if not active), without building the others."""
        records = self._records
        if records is not None:
            record = records.get(job_id)
            if record is not None:
                return record.make_view(self.now_s)
            assert self._waiting_src is not None
            return self._waiting_src[job_id]
        for job in self.running():
            if job.job_id == job_id:
                return job
        for job in self.waiting():
            if job.job_id == job_id:
                return job
        raise KeyError(job_id)

    def has(self, job_id: int) -> bool:
        """Whether ``job_id`` is active at the epoch, without building any view."""
        records = self._records
        if records is not None:
            assert self._waiting_src is not None
            return job_id in records or job_id in self._waiting_src
        return any(job.job_id == job_id for job in self.running()) or any(
            job.job_id == job_id for job in self.waiting()
        )

    def remaining_of(self, job_id: int) -> float:
        """``view_of(job_id).remaining_iters`` without building the view (``KeyError`` if not active)."""
        records = self._records
        if records is not None:
            record = records.get(job_id)
            if record is not None:
                return record.remaining_at_view(self.now_s)
            assert self._waiting_src is not None
            return self._waiting_src[job_id].remaining_iters
        return self.view_of(job_id).remaining_iters

    @property
    def allocations(self) -> Mapping[int, JobAllocation]:
        """``{job_id: JobAllocation}`` of the running jobs, in submission order (read-only)."""
        return MappingProxyType(self._allocs)

    def allocations_copy(self) -> dict[int, JobAllocation]:
        """A new dict of :attr:`allocations`."""
        return self._allocs.copy()

    @property
    def sealed(self) -> bool:
        """Whether the snapshot no longer reads the engine's mappings."""
        return self._records is None

    def seal(self) -> None:
        """Copy what the snapshot shows out of the engine's mappings, which are about to change."""
        if self._records is not None:
            self.running()
            self.waiting()
            self._allocs = self._allocs.copy()
            self._records = self._waiting_src = None

    _STATE = ("_allocs", "_running", "_waiting", "now_s", "token")

    def __getstate__(self) -> dict[str, object]:
        # Always pickled sealed, so a pickle does not depend on which views were read.
        self.seal()
        return {name: getattr(self, name) for name in self._STATE}

    def __setstate__(self, state: dict[str, object]) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self._records = self._waiting_src = None


class _Record(Protocol):
    @property
    def spec(self) -> JobSpec: ...

    def make_view(self, now: float) -> JobView: ...

    def remaining_at_view(self, now: float) -> float: ...


@dataclass(frozen=True)
class ClusterView:
    """The cluster at one decision epoch.

    Attributes:
        now_s: Simulated time.
        epoch: Index of this decision epoch (0-based).
        cluster: The cluster specification.
        running: Active jobs holding GPUs, in submission order (ties by id).
        waiting: Active jobs holding no GPUs, in submission order.
        running_allocations: ``{job_id: JobAllocation}`` of the running jobs, in submission order (read
            without building their views: what a policy that keeps running jobs as they are needs).
        free_gpus: Free GPUs per type under the current allocation (before this decision).
        free_by_server: Free GPUs per server id under the current allocation.
        arrived: Ids of jobs that arrived at this epoch.
        completed: Ids of jobs that completed at this epoch.
        is_tick: Whether a round boundary falls on this epoch.
        round_s: Round length.
        throughput: The throughput model (read-only).
        config: The simulator configuration (read-only).
        rate_table: Each job's rates per GPU type, kept for the whole run (:class:`~hetgym.sim.rates.RateTable`).
        num_pending: Jobs not yet submitted (their count only; their content is unknown).
        num_ended: Jobs completed or rejected so far.
        changed: Ids of the jobs whose GPUs the previous step changed (started, moved, resized,
            preempted or rejected), in the order it changed them.
        previous_token: The token (``active.token``) of the epoch this one directly follows, or ``None``
            when there is none (the first epoch, or the cluster fell empty in between): a policy that
            keeps state across epochs updates it from ``arrived``, ``completed`` and ``changed`` only
            when this is the token of the last view it saw.

    ``running`` and ``waiting`` are built on first use (:class:`EpochJobs`), so a policy that reads
    only ``running_allocations`` and walks :meth:`iter_waiting` costs nothing per job it does not reach.
    """

    now_s: float
    epoch: int
    cluster: ClusterSpec
    active: EpochJobs = field(repr=False, compare=False)
    free_gpus: Mapping[str, int]
    free_servers: np.ndarray = field(repr=False, compare=False)
    arrived: tuple[int, ...]
    completed: tuple[int, ...]
    is_tick: bool
    round_s: float
    throughput: ThroughputModel = field(repr=False)
    config: SimConfig = field(repr=False)
    rate_table: RateTable = field(repr=False)
    num_pending: int = 0
    num_ended: int = 0
    changed: tuple[int, ...] = ()
    previous_token: object | None = field(default=None, repr=False, compare=False)

    @classmethod
    def _of_fields(cls, **fields: Any) -> ClusterView:
        """The view whose fields are ``fields`` (every field, by name): the value ``ClusterView(**fields)`` gives,
        without the frozen dataclass's ``object.__setattr__`` per field (simulator-internal: the engine makes a
        view at every epoch, where those calls cost more than the rest of the view)."""
        out = object.__new__(cls)
        out.__dict__.update(fields)
        return out

    @property
    def running(self) -> tuple[JobView, ...]:
        """Active jobs holding GPUs, in submission order (ties by id)."""
        return self.active.running()

    @property
    def waiting(self) -> tuple[JobView, ...]:
        """Active jobs holding no GPUs, in submission order."""
        return self.active.waiting()

    def iter_waiting(self) -> Iterator[JobView]:
        """The waiting jobs in submission order, one by one: for a walk that may stop early, it costs
        only the jobs it reaches (``waiting`` builds the whole tuple). Use it within the decision."""
        return self.active.iter_waiting()

    @property
    def running_allocations(self) -> Mapping[int, JobAllocation]:
        """``{job_id: JobAllocation}`` of the running jobs, in submission order (read-only)."""
        return self.active.allocations

    @cached_property
    def free_by_server(self) -> tuple[int, ...]:
        """Free GPUs per server id under the current allocation."""
        return tuple(self.free_servers.tolist())

    @cached_property
    def jobs(self) -> tuple[JobView, ...]:
        """All active jobs, in submission order (ties by id)."""
        if not self.running:
            return self.waiting
        if not self.waiting:
            return self.running
        # Both are in submission order: sorting their concatenation merges two runs (C-level keys).
        return tuple(sorted(self.running + self.waiting, key=_SUBMISSION_KEY))

    @cached_property
    def job_index(self) -> Mapping[int, JobView]:
        """``{job_id: JobView}`` of the active jobs."""
        return MappingProxyType({j.job_id: j for j in self.jobs})

    def job(self, job_id: int) -> JobView:
        """The active job ``job_id`` (``KeyError`` if not active)."""
        index = self.__dict__.get("job_index")
        return self.active.view_of(job_id) if index is None else index[job_id]

    def is_active(self, job_id: int) -> bool:
        """Whether ``job_id`` is an active job (arrived, not ended) at this epoch, without building its view."""
        index = self.__dict__.get("job_index")
        return self.active.has(job_id) if index is None else job_id in index

    def remaining_iters(self, job_id: int) -> float:
        """``job(job_id).remaining_iters``, without building the job's view (``KeyError`` if not active)."""
        index = self.__dict__.get("job_index")
        return self.active.remaining_of(job_id) if index is None else index[job_id].remaining_iters

    def allowed_types(self, job: JobView) -> tuple[str, ...]:
        """GPU types of this cluster the job may use, in the cluster's order."""
        return self.rate_table.allowed_types(job)

    def rate(self, job: JobView | JobSpec, gpu_type: str, num_gpus: int) -> float:
        """Iterations/s of ``job`` on ``num_gpus`` GPUs of ``gpu_type`` on one server."""
        return self.throughput.rate(job.job_type, job.batch_size, gpu_type, num_gpus)

    def restart_penalty_s(self, job: JobView | JobSpec) -> float:
        """Reconfiguration cost the simulator charges this job."""
        return self.config.restart_penalty_for(job.job_type)


def shift_time(view: ClusterView, delta_s: float) -> ClusterView:
    """The same epoch with every absolute time moved ``delta_s`` seconds later.

    The clock, each job's submission, deadline, first start and last change (in its view and its spec)
    move together, so every duration a policy can read (slack, age, time waited, time run) is unchanged;
    only where the epoch falls on absolute-time grids, such as a policy's slots of ``round_s`` seconds,
    differs. A diagnostic of whether a policy's decision depends on more than those durations
    (``scripts/studies/teacher_invariance.py``), and how a policy plans on a grid anchored at the decision time
    (Dancer's ``slot_origin="decision"``). The result is sealed (its job views are built now) and follows
    no epoch (``previous_token`` is ``None``), so a policy that keeps state across epochs rebuilds it.

    Raises:
        ValueError: ``delta_s`` is not finite and >= 0 (a job submitted at 0 cannot move earlier).
    """
    if not (math.isfinite(delta_s) and delta_s >= 0):
        raise ValueError(f"shift_time: delta_s={delta_s!r}; give a finite shift >= 0 seconds")
    if delta_s == 0:
        return view

    def moved(job: JobView) -> JobView:
        spec = replace(job.spec, submit_s=job.spec.submit_s + delta_s, deadline_s=job.spec.deadline_s + delta_s)
        return job._replace(
            spec=spec,
            submit_s=job.submit_s + delta_s,
            deadline_s=job.deadline_s + delta_s,
            first_start_s=None if job.first_start_s is None else job.first_start_s + delta_s,
            last_change_s=None if job.last_change_s is None else job.last_change_s + delta_s,
        )

    now = view.now_s + delta_s
    jobs = EpochJobs.of_views(now, tuple(map(moved, view.running)), tuple(map(moved, view.waiting)))
    return replace(view, now_s=now, active=jobs, previous_token=None)
