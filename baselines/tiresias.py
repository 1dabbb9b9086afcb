"""Tiresias' discretised two-dimensional least-attained-service (2D-LAS) scheduler.

Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning", NSDI 2019. Attained
service is GPU-time (GPUs x time held). Jobs sit in priority queues by attained service, with
ElasticFlow's DLAS thresholds as the default: Q0 below 30 GPU-minutes, Q1 below 1 GPU-hour, Q2 below
2 GPU-hours, Q3 above. Within a queue jobs go first-come first-served; at every decision epoch GPUs are
given greedily in (queue, arrival) order with backfilling, so jobs in lower queues are preempted when
higher-priority jobs need their GPUs. Starvation guard (reconstruction of Tiresias' PROMOTE_KNOB):
a waiting job whose wait since its last run exceeds ``promote_knob`` times its last run length is put
back in Q0 (its attained service counts from zero again). Heterogeneity-agnostic by default.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from baselines._common import TYPE_CHOICE_DOC, TYPE_CHOICES, TypeChoice, greedy_fill
from hetgym.sim.allocation import Allocation
from hetgym.sim.job import JobStatus
from hetgym.sim.policy import Policy, register_policy
from hetgym.sim.registry import KnobError, Knobs, knob
from hetgym.sim.view import ClusterView, JobView

#: ElasticFlow's DLAS-GPU thresholds in GPU-seconds: 30 min, 1 h, 2 h.
DEFAULT_THRESHOLDS_GPU_S: tuple[float, ...] = (1800.0, 3600.0, 7200.0)


@dataclass(frozen=True)
class TiresiasKnobs(Knobs):
    """Knobs of :class:`TiresiasLAS`."""

    thresholds_gpu_s: tuple[float, ...] = knob(DEFAULT_THRESHOLDS_GPU_S, doc="ascending queue boundaries (GPU-s)")
    promote_knob: float = knob(8.0, low=0.0, doc="promote to Q0 after waiting this multiple of the last run")
    type_choice: str = knob("order", choices=TYPE_CHOICES, doc=TYPE_CHOICE_DOC)

    def __post_init__(self) -> None:
        super().__post_init__()
        t = self.thresholds_gpu_s
        if any(b <= a for a, b in itertools.pairwise(t)) or any(not x > 0 for x in t):
            raise KnobError(
                f"{type(self).__name__}: knob thresholds_gpu_s={t}; give positive, strictly ascending values"
            )


@register_policy()
class TiresiasLAS(Policy):
    """Tiresias discretised 2D-LAS with GPU-time attained service and starvation promotion.

    Args:
        thresholds_gpu_s: Ascending queue boundaries in GPU-seconds (default 1800, 3600, 7200).
        promote_knob: Promote a waiting job to Q0 when its wait exceeds this multiple of its last run
            time; 0 disables promotion (default 8, a reconstruction).
        type_choice: ``"order"`` (default, heterogeneity-agnostic) or ``"fastest"``.
    """

    name = "tiresias"
    knobs = TiresiasKnobs
    keeps_gpus_busy = True  # greedy fill with backfilling at every epoch

    def __init__(
        self,
        thresholds_gpu_s: Sequence[float] = DEFAULT_THRESHOLDS_GPU_S,
        promote_knob: float = 8.0,
        type_choice: TypeChoice = "order",
    ) -> None:
        super().__init__()
        thresholds = tuple(float(t) for t in thresholds_gpu_s)
        # Validate every knob first (a KnobError names the bad one).
        TiresiasKnobs(thresholds_gpu_s=thresholds, promote_knob=promote_knob, type_choice=type_choice)
        self.thresholds_gpu_s = thresholds
        self.promote_knob = promote_knob
        self.type_choice = type_choice

    def _reset(self) -> None:
        self._service_offset: dict[int, float] = {}

    def queue_of(self, job: JobView) -> int:
        """Index of the job's queue (0 = highest priority)."""
        service = job.attained_gpu_s - self._service_offset.get(job.job_id, 0.0)
        return bisect.bisect_right(self.thresholds_gpu_s, service)

    def _maybe_promote(self, view: ClusterView, job: JobView) -> None:
        if self.promote_knob <= 0 or job.status != JobStatus.WAITING or job.last_change_s is None:
            return
        waited = view.now_s - job.last_change_s
        if job.last_run_s > 0 and waited > self.promote_knob * job.last_run_s:
            self._service_offset[job.job_id] = job.attained_gpu_s

    def schedule(self, view: ClusterView) -> Allocation:
        active = view.job_index
        for jid in [j for j in self._service_offset if j not in active]:
            del self._service_offset[jid]
        for job in view.waiting:  # only waiting jobs are promoted
            self._maybe_promote(view, job)
        # view.jobs is in (submit_s, job_id) order and the sort is stable: ordering by queue alone gives
        # the (queue, submit_s, job_id) order.
        thresholds, offset = self.thresholds_gpu_s, self._service_offset
        ordered = sorted(
            view.jobs, key=lambda j: bisect.bisect_right(thresholds, j.attained_gpu_s - offset.get(j.job_id, 0.0))
        )
        return greedy_fill(view, ordered, type_choice=self.type_choice)
