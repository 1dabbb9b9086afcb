"""Jobs: the immutable :class:`JobSpec` read from a trace, and the simulator's runtime record."""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from hetgym.sim.errors import InvalidJobError

_EMPTY: Mapping[str, Any] = MappingProxyType({})
#: Largest job id: ids are stored as 64-bit integers (the environment's arrays, parquet files).
MAX_JOB_ID = 2**63 - 1


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One deep-learning training job as submitted (the canonical trace schema, one row).

    Attributes:
        job_id: Unique integer id in [0, 2**63 - 1].
        submit_s: Arrival time in seconds from the start of the trace.
        job_type: Model name, a key of the throughput table (e.g. ``"resnet50"``).
        batch_size: Global batch size (samples per iteration summed over GPUs).
        total_iters: Work in iterations at that batch size.
        num_gpus: GPUs requested (the gang size of rigid policies).
        deadline_s: Absolute deadline in seconds, or ``inf`` for none.
        user: Submitting user or group, if known.
        min_gpus: Smallest allocation an elastic policy may give (default 1).
        max_gpus: Largest allocation an elastic policy may give (default: no limit).
        parallelism: ``(dp, pp, tp)`` for mixed-parallel jobs, or ``None`` (pure data parallel).
        model_bytes: Model (gradient) size in bytes, for communication models.
        priority_weight: Weight for fairness policies (default 1).
        best_effort: ``True`` for jobs without a guarantee even when a deadline is given.
        duration_s: Reference run time on the trace's reference GPU, if known (informative).
        gpu_types: GPU types the job may run on, or ``None`` for any.
        template_id: Recurring-job template, for iteration predictors.
        features: Further per-job attributes (learning rate, dataset, ...) for predictors.
    """

    job_id: int
    submit_s: float
    job_type: str
    batch_size: int
    total_iters: float
    num_gpus: int
    deadline_s: float = math.inf
    user: str | None = None
    min_gpus: int = 1
    max_gpus: int | None = None
    parallelism: tuple[int, int, int] | None = None
    model_bytes: float | None = None
    priority_weight: float = 1.0
    best_effort: bool = False
    duration_s: float | None = None
    gpu_types: tuple[str, ...] | None = None
    template_id: str | None = None
    features: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, hash=False, compare=False)

    def __post_init__(self) -> None:
        bad = self._bad
        if not 0 <= self.job_id <= MAX_JOB_ID:
            raise bad("job_id", f"is {self.job_id}; it must be an integer in [0, 2**63 - 1]: renumber the jobs")
        if not (math.isfinite(self.submit_s) and self.submit_s >= 0):
            raise bad("submit_s", f"is {self.submit_s}; it must be a finite time >= 0")
        if not self.job_type:
            raise bad("job_type", "is empty; give a model name from the throughput table")
        if self.batch_size < 1:
            raise bad("batch_size", f"is {self.batch_size}; it must be >= 1")
        if not (math.isfinite(self.total_iters) and self.total_iters > 0):
            raise bad("total_iters", f"is {self.total_iters}; it must be a finite number > 0")
        if self.num_gpus < 1:
            raise bad("num_gpus", f"is {self.num_gpus}; it must be >= 1")
        if math.isnan(self.deadline_s) or self.deadline_s <= self.submit_s:
            raise bad("deadline_s", f"is {self.deadline_s}; it must be after submit_s={self.submit_s} (or inf)")
        if self.min_gpus < 1 or self.min_gpus > self.num_gpus:
            raise bad("min_gpus", f"is {self.min_gpus}; it must be in 1..num_gpus={self.num_gpus}")
        if self.max_gpus is not None and self.max_gpus < self.num_gpus:
            raise bad("max_gpus", f"is {self.max_gpus}; it must be >= num_gpus={self.num_gpus}")
        if self.parallelism is not None:
            if len(self.parallelism) != 3 or min(self.parallelism) < 1:
                raise bad("parallelism", f"is {self.parallelism}; give (dp, pp, tp) with each >= 1")
            dp, pp, tp = self.parallelism
            if dp * pp * tp != self.num_gpus:
                raise bad(
                    "parallelism",
                    f"{self.parallelism} uses {dp * pp * tp} GPUs, not num_gpus={self.num_gpus}",
                )
        if self.model_bytes is not None and not self.model_bytes >= 0:
            raise bad("model_bytes", f"is {self.model_bytes}; it must be >= 0")
        if not self.priority_weight > 0:
            raise bad("priority_weight", f"is {self.priority_weight}; it must be > 0")

    def _bad(self, field_name: str, why: str) -> InvalidJobError:
        return InvalidJobError(f"job {self.job_id}: field {field_name!r} {why}")

    @property
    def has_deadline(self) -> bool:
        """Whether the job counts towards the deadline satisfactory ratio."""
        return math.isfinite(self.deadline_s) and not self.best_effort


class JobStatus(enum.IntEnum):
    """Life cycle of a job in the simulator."""

    PENDING = 0  #: not yet submitted
    WAITING = 1  #: submitted, holds no GPUs
    RUNNING = 2  #: holds GPUs (possibly paying a reconfiguration penalty)
    COMPLETED = 3
    REJECTED = 4  #: refused by the policy; counts as a deadline miss
    UNFINISHED = 5  #: still active when the simulation stopped (time or decision cap)

    @property
    def is_active(self) -> bool:
        return self in (JobStatus.WAITING, JobStatus.RUNNING)

    @property
    def is_final(self) -> bool:
        return self >= JobStatus.COMPLETED
