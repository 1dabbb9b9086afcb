"""Earliest deadline first, with and without admission control.

Jobs are ranked by absolute deadline (jobs without one last, by arrival) and given their requested
gang greedily in that order at every decision epoch; with ``preemptive`` a job with an earlier
deadline takes GPUs from later ones.

The admission variant (like ElasticFlow's ``edf-accessctrl``) checks each arriving job once and
rejects it if it cannot meet its deadline. The test is a reconstruction, kept deliberately simple:

1. *alone*: it must finish by its deadline running alone on its fastest allowed type with its
   requested count, after one restart penalty;
2. *demand bound*: for every admitted deadline job ``k`` (and the newcomer), the GPU-seconds still
   needed by the admitted jobs with deadlines at or before ``d_k`` (each at its fastest per-GPU rate,
   plus a restart penalty) must fit in ``capacity_factor x total GPUs x (d_k - now)``.

Rejected jobs leave the cluster and count as deadline misses. ``capacity_factor`` (default 1.0) is
the knob to make the test more conservative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from baselines._common import TYPE_CHOICE_DOC, TYPE_CHOICES, TypeChoice, best_rate, greedy_fill, keep_running
from hetgym.sim.allocation import Allocation, AllocationBuilder
from hetgym.sim.knob_policy import KnobPolicy
from hetgym.sim.policy import register_policy
from hetgym.sim.registry import Knobs, knob
from hetgym.sim.view import ClusterView, JobView


@dataclass(frozen=True)
class EDFKnobs(Knobs):
    """Knobs of :class:`EDF`."""

    preemptive: bool = knob(True, doc="re-rank all active jobs at every epoch (else only start waiting jobs)")
    type_choice: TypeChoice = knob("fastest", choices=TYPE_CHOICES, doc=TYPE_CHOICE_DOC)


@dataclass(frozen=True)
class EDFAdmissionKnobs(EDFKnobs):
    """Knobs of :class:`EDFAdmission`."""

    capacity_factor: float = knob(
        1.0, low=0.0, low_open=True, high=1.0, doc="fraction of the cluster the demand-bound test may count on"
    )


@register_policy()
class EDF(KnobPolicy[EDFKnobs]):
    """Earliest deadline first with each job's requested GPU count, no admission control."""

    name = "edf"
    knobs = EDFKnobs
    uses_ticks = False  # decisions change only on arrivals and completions
    keeps_gpus_busy = True  # greedy fill with backfilling at every epoch (admitted jobs, for the admission variant)

    @staticmethod
    def _key(job: JobView) -> tuple[float, float, int]:
        return (job.deadline_s, job.submit_s, job.job_id)

    def _fill(self, view: ClusterView, rejected: set[int]) -> Allocation:
        if self.knob_values.preemptive:
            builder = AllocationBuilder(view)
            candidates = [j for j in view.jobs if j.job_id not in rejected]
        else:
            builder = keep_running(view)
            candidates = [j for j in view.waiting if j.job_id not in rejected]
        for jid in rejected:
            builder.reject(jid)
        return greedy_fill(
            view, sorted(candidates, key=self._key), type_choice=self.knob_values.type_choice, builder=builder
        )

    def schedule(self, view: ClusterView) -> Allocation:
        return self._fill(view, set())


@register_policy()
class EDFAdmission(EDF):
    """EDF that rejects, on arrival, jobs that cannot meet their deadline (see the module docstring)."""

    name = "edf-admission"
    knobs = EDFAdmissionKnobs
    knob_values: EDFAdmissionKnobs

    def _reset(self) -> None:
        self._admitted: set[int] = set()

    def _demand_gpu_s(self, view: ClusterView, job: JobView) -> float:
        rate = best_rate(view, job)
        if rate <= 0:
            return math.inf
        return job.num_gpus * (job.remaining_iters / rate + view.restart_penalty_s(job))

    def admits(self, view: ClusterView, job: JobView) -> bool:
        """Whether ``job`` passes the admission test against the jobs admitted so far."""
        if not job.spec.has_deadline:
            return True
        rate = best_rate(view, job)
        if rate <= 0 or view.now_s + view.restart_penalty_s(job) + job.remaining_iters / rate > job.deadline_s:
            return False
        admitted = [j for j in view.jobs if j.job_id in self._admitted and j.spec.has_deadline]
        supply_gpus = self.knob_values.capacity_factor * view.cluster.total_gpus
        cumulative = 0.0
        for other in sorted([*admitted, job], key=self._key):
            cumulative += self._demand_gpu_s(view, other)
            if cumulative > supply_gpus * max(0.0, other.deadline_s - view.now_s):
                return False
        return True

    def schedule(self, view: ClusterView) -> Allocation:
        rejected: set[int] = set()
        active = view.job_index
        self._admitted &= set(active)
        for jid in view.arrived:
            job = active[jid]
            if self.admits(view, job):
                self._admitted.add(jid)
            else:
                rejected.add(jid)
        return self._fill(view, rejected)
