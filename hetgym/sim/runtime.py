"""The simulator's mutable per-job runtime record and the :class:`~hetgym.sim.view.JobView` it builds.

A :class:`JobRecord` holds what the engine tracks for one job between events (status, allocation,
placement, rate, accounted progress and service); :meth:`JobRecord.make_view` turns it into the
frozen snapshot policies see. Records are simulator-internal: policies only ever get views.
"""

from __future__ import annotations

from hetgym.sim.allocation import JobAllocation
from hetgym.sim.job import JobSpec, JobStatus
from hetgym.sim.throughput import ServerGroup
from hetgym.sim.view import JobView

_RUNNING = JobStatus.RUNNING


class JobRecord:
    """Mutable runtime record of one job (simulator-internal).

    Progress is accounted lazily: ``remaining``, ``attained_gpu_s``, ``executed_s`` and
    ``gpu_s_by_type`` hold their values at ``last_update_s`` (the last allocation change), and the
    values at any later time follow from the current rate and GPUs (:meth:`flush` brings them up to
    date when the allocation changes or the job ends).
    """

    __slots__ = (
        "alloc",
        "attained_gpu_s",
        "executed_s",
        "finish_s",
        "first_start_s",
        "gpu_s_by_type",
        "groups",
        "last_change_s",
        "last_run_s",
        "last_update_s",
        "num_gpus_now",
        "num_reconfigs",
        "penalty_until_s",
        "placed_rate",
        "rank",
        "rate",
        "remaining",
        "run_start_s",
        "spec",
        "status",
        "version",
        "view",
    )

    def __init__(self, spec: JobSpec) -> None:
        self.spec = spec
        self.status = JobStatus.PENDING
        self.remaining = float(spec.total_iters)
        self.alloc: JobAllocation | None = None
        self.groups: tuple[ServerGroup, ...] = ()
        self.num_gpus_now = 0
        self.rate = 0.0
        #: The rate of the job's current placement (``rate`` once a restart penalty is paid, unless Gavel's
        #: micro-tasks under ``compat="gavel"`` set ``rate`` round by round from it); 0 while waiting.
        self.placed_rate = 0.0
        self.penalty_until_s = 0.0
        self.last_update_s = spec.submit_s
        self.attained_gpu_s = 0.0
        self.gpu_s_by_type: dict[str, float] = {}
        self.executed_s = 0.0
        self.first_start_s: float | None = None
        self.last_change_s: float | None = None
        self.run_start_s = 0.0
        self.last_run_s = 0.0
        self.finish_s: float | None = None
        self.num_reconfigs = 0
        self.version = 0
        self.view: JobView | None = None
        self.rank = 0  # the job's place in submission order (set by the engine)

    @property
    def allocation(self) -> JobAllocation | None:
        return self.alloc

    def copy(self) -> JobRecord:
        """An independent record in the same state (for a fork of the simulator).

        One level is enough: every field holds an immutable value (the spec, the allocation, the groups, the
        cached view) or a mapping replaced rather than changed (``gpu_s_by_type``, copied on write by
        :meth:`flush`).
        """
        out = JobRecord.__new__(JobRecord)
        for name in JobRecord.__slots__:
            setattr(out, name, getattr(self, name))
        return out

    def remaining_at(self, now: float) -> float:
        """Iterations left at ``now`` under the current allocation."""
        if self.status != JobStatus.RUNNING or self.rate <= 0:
            return self.remaining
        effective = now - max(self.last_update_s, self.penalty_until_s)
        return max(0.0, self.remaining - self.rate * effective) if effective > 0 else self.remaining

    def flush(self, now: float) -> None:
        """Bring the accounted progress and service up to ``now``."""
        dt = now - self.last_update_s
        if dt > 0 and self.status is _RUNNING:
            rate = self.rate
            if rate > 0:  # remaining_at(now), inlined (the same arithmetic)
                last, until = self.last_update_s, self.penalty_until_s
                effective = now - (until if until > last else last)
                if effective > 0:
                    left = self.remaining - rate * effective
                    self.remaining = left if left > 0.0 else 0.0
            self.attained_gpu_s += self.num_gpus_now * dt
            self.executed_s += dt
            per_type = dict(self.gpu_s_by_type)  # copy on write: views keep the old mapping
            for g in self.groups:
                per_type[g.gpu_type] = per_type.get(g.gpu_type, 0.0) + g.num_gpus * dt
            self.gpu_s_by_type = per_type
        self.last_update_s = now

    def complete(self, now: float) -> None:
        """The job completes at ``now``: its progress is brought up to it, and nothing remains."""
        self.flush(now)
        self.remaining = 0.0
        self.status = JobStatus.COMPLETED
        self.finish_s = now
        self.last_run_s = now - self.run_start_s
        self.view = None

    def remaining_at_view(self, now: float) -> float:
        """The ``remaining_iters`` of :meth:`make_view` at ``now``, without building the view."""
        view = self.view
        if view is not None:
            return view.remaining_iters
        remaining = self.remaining
        if self.status == JobStatus.RUNNING and self.rate > 0:
            last, until = self.last_update_s, self.penalty_until_s
            effective = now - (last if last > until else until)
            if effective > 0:
                remaining = remaining - self.rate * effective
                if not remaining > 0.0:
                    remaining = 0.0
        return remaining

    def make_view(self, now: float) -> JobView:
        view = self.view
        if view is not None:
            return view
        s = self.spec
        if self.status == JobStatus.RUNNING:
            dt = now - self.last_update_s
            # remaining_at_view(now), inlined: this runs for every running job a policy looks at.
            remaining = self.remaining
            if self.rate > 0:
                effective = now - (
                    self.last_update_s if self.last_update_s > self.penalty_until_s else self.penalty_until_s
                )
                if effective > 0:
                    remaining = remaining - self.rate * effective
                    if not remaining > 0.0:
                        remaining = 0.0
            penalty_left = self.penalty_until_s - now
            return JobView(
                s,
                s.job_id,
                s.submit_s,
                s.job_type,
                s.batch_size,
                s.total_iters,
                s.num_gpus,
                s.deadline_s,
                self.status,
                remaining,
                self.alloc,
                self.groups,
                self.rate,
                penalty_left if penalty_left > 0.0 else 0.0,
                self.attained_gpu_s + self.num_gpus_now * dt,
                self.executed_s + dt,
                self.first_start_s,
                self.last_change_s,
                now - self.run_start_s,
                self.num_reconfigs,
                self.gpu_s_by_type,
                dt,
            )
        # A waiting job's snapshot stays valid until its state changes.
        view = JobView(
            s,
            s.job_id,
            s.submit_s,
            s.job_type,
            s.batch_size,
            s.total_iters,
            s.num_gpus,
            s.deadline_s,
            self.status,
            self.remaining,
            None,
            (),
            0.0,
            0.0,
            self.attained_gpu_s,
            self.executed_s,
            self.first_start_s,
            self.last_change_s,
            self.last_run_s,
            self.num_reconfigs,
            self.gpu_s_by_type,
            0.0,
        )
        self.view = view
        return view


def job_order(job: JobRecord) -> tuple[float, int]:
    """Submission order (ties by job id): the order the engine keeps its running jobs in."""
    return (job.spec.submit_s, job.spec.job_id)
