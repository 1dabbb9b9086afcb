"""Frozen snapshots of the simulator state: the only thing policies and encoders see.

A :class:`ClusterView` is built at each decision epoch. It holds the active jobs (arrived, not
ended) as :class:`JobView` records, the free capacity before the policy decides, what triggered the
epoch, and read-only access to the throughput model. Views never expose the simulator's mutable
state and future arrivals are invisible (the scheduling problem is online).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING

from hetgym.sim.job import JobSpec, JobStatus
from hetgym.sim.throughput import ServerGroup, ThroughputModel

if TYPE_CHECKING:
    from hetgym.sim.allocation import JobAllocation
    from hetgym.sim.cluster import ClusterSpec
    from hetgym.sim.engine import SimConfig


@dataclass(frozen=True, slots=True)
class JobView:
    """An active job at one epoch.

    Static attributes mirror :class:`~hetgym.sim.job.JobSpec` (the full spec is ``spec``).

    Attributes:
        status: ``WAITING`` (no GPUs) or ``RUNNING``.
        remaining_iters: Iterations still to do at ``now_s``.
        allocation: Current GPUs (with servers), or ``None`` while waiting.
        groups: Current placement, one :class:`ServerGroup` per server.
        rate_iters_per_s: Current progress rate (0 while waiting; the rate after any penalty).
        penalty_left_s: Reconfiguration time still to pay before progress resumes.
        attained_gpu_s: GPU-seconds held so far (Tiresias' attained service).
        gpu_s_by_type: The same, per GPU type.
        executed_s: Wall time spent holding GPUs.
        first_start_s: When the job first got GPUs, or ``None``.
        last_change_s: When its allocation last changed (start, resize, preemption), or ``None``.
        last_run_s: Length of its latest uninterrupted run (for starvation guards).
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
    gpu_s_by_type: Mapping[str, float]
    executed_s: float
    first_start_s: float | None
    last_change_s: float | None
    last_run_s: float
    num_reconfigs: int

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


@dataclass(frozen=True)
class ClusterView:
    """The cluster at one decision epoch.

    Attributes:
        now_s: Simulated time.
        epoch: Index of this decision epoch (0-based).
        cluster: The cluster specification.
        jobs: Active jobs, in submission order (ties by id).
        free_gpus: Free GPUs per type under the current allocation (before this decision).
        free_by_server: Free GPUs per server id under the current allocation.
        arrived: Ids of jobs that arrived at this epoch.
        completed: Ids of jobs that completed at this epoch.
        is_tick: Whether a round boundary falls on this epoch.
        round_s: Round length.
        throughput: The throughput model (read-only).
        config: The simulator configuration (read-only).
        num_pending: Jobs not yet submitted (their count only; their content is unknown).
        num_ended: Jobs completed or rejected so far.
    """

    now_s: float
    epoch: int
    cluster: ClusterSpec
    jobs: tuple[JobView, ...]
    free_gpus: Mapping[str, int]
    free_by_server: tuple[int, ...]
    arrived: tuple[int, ...]
    completed: tuple[int, ...]
    is_tick: bool
    round_s: float
    throughput: ThroughputModel = field(repr=False)
    config: SimConfig = field(repr=False)
    num_pending: int = 0
    num_ended: int = 0

    @cached_property
    def job_index(self) -> Mapping[int, JobView]:
        """``{job_id: JobView}`` of the active jobs."""
        return MappingProxyType({j.job_id: j for j in self.jobs})

    def job(self, job_id: int) -> JobView:
        """The active job ``job_id`` (``KeyError`` if not active)."""
        return self.job_index[job_id]

    @property
    def running(self) -> tuple[JobView, ...]:
        """Jobs holding GPUs."""
        return tuple(j for j in self.jobs if j.status == JobStatus.RUNNING)

    @property
    def waiting(self) -> tuple[JobView, ...]:
        """Jobs holding no GPUs."""
        return tuple(j for j in self.jobs if j.status == JobStatus.WAITING)

    def allowed_types(self, job: JobView) -> tuple[str, ...]:
        """GPU types of this cluster the job may use, in the cluster's order."""
        allowed = job.spec.gpu_types
        if allowed is None:
            return self.cluster.gpu_types
        return tuple(t for t in self.cluster.gpu_types if t in allowed)

    def rate(self, job: JobView | JobSpec, gpu_type: str, num_gpus: int) -> float:
        """Iterations/s of ``job`` on ``num_gpus`` GPUs of ``gpu_type`` on one server."""
        return self.throughput.rate(job.job_type, job.batch_size, gpu_type, num_gpus)

    def restart_penalty_s(self, job: JobView | JobSpec) -> float:
        """Reconfiguration cost the simulator charges this job."""
        return self.config.restart_penalty_for(job.job_type)
