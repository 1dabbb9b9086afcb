"""Gandiva-style scheduling: time slicing by suspend/resume, grow-shrink, migration; heterogeneity-unaware.

Xiao et al., "Gandiva: Introspective Cluster Scheduling for Deep Learning", OSDI 2018. Gandiva's
mechanisms [R]: *time slicing* (when more jobs than GPUs, jobs are suspended and resumed at iteration
boundaries so every job gets slices), *packing* (two jobs share a GPU when their measured combined
throughput beats one alone), *migration* (jobs move to defragment and consolidate the cluster) and
*grow-shrink* (an idle cluster lets jobs grow onto more GPUs; they shrink back when jobs wait). It treats
all GPUs alike. Gavel ships a ``gandiva.py`` policy [C-code] that splits time equally among jobs, pairing
jobs of equal scale factor at random for packing only when the requests exceed the cluster; it was read
for the algorithm.

What this policy implements, on the simulator's one-job-per-GPU model:

* **Time slicing** [R; I: the order]. Round-robin in slices of ``slice_s`` seconds (the policy's round;
  default 360 s, Gavel's round). At every epoch a job whose current slice is not over keeps its place;
  the other jobs are ranked by when their latest slice began, oldest first (jobs that never ran first,
  by arrival), and given their requested gang greedily in that order with backfilling. When jobs wait, a
  job at the end of its slice is thus suspended for one that waited longer (and pays the restart penalty
  on resuming).
* **Grow-shrink** [R; I: the rule] (``grow_shrink``). Only when no job waits: each job, in the same order,
  doubles its GPUs on its type while the type has room, the doubled count stays within its ``max_gpus``
  (else ``max_grow_factor`` times its request) and the job's rate rises by at least ``grow_min_gain``
  (Gandiva's introspection, here read from the throughput table). A grown job keeps its GPUs while the
  cluster stays idle and shrinks to its request once a job waits.
* **Migration** [R; I: the mechanism] (``placement``). ``"buddy"`` (default) declares the simulator's
  re-packing placer, which moves jobs at every decision to keep servers unfragmented (a moved job pays the
  restart penalty); ``"default"`` never moves a running job.
* **Heterogeneity-unaware** [R]. A gang takes the first GPU type in the cluster's order with room
  (``type_choice="order"``); ``"fastest"`` is there for ablations.

Not implemented: **packing**. The simulator runs at most one job per GPU and has no throughput model of
co-located jobs, so the Gavel rule (pair jobs when oversubscribed) has nothing to run on; without it a
Gandiva-style scheduler time-slices where Gandiva would pack.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from baselines._common import TYPE_CHOICE_DOC, TYPE_CHOICES, TypeChoice, gang_counts
from baselines._deadline import planning_rate
from hetgym.sim.allocation import Allocation, AllocationBuilder
from hetgym.sim.knob_policy import KnobPolicy
from hetgym.sim.policy import register_policy
from hetgym.sim.registry import Knobs, knob
from hetgym.sim.view import ClusterView, JobView

PLACEMENTS = ("buddy", "default")


@dataclass(frozen=True)
class GandivaKnobs(Knobs):
    """Knobs of :class:`Gandiva`."""

    slice_s: float = knob(360.0, low=0.0, low_open=True, doc="time slice in seconds, also the policy's round")
    grow_shrink: bool = knob(True, doc="grow jobs onto idle GPUs while no job waits")
    grow_min_gain: float = knob(0.1, low=0.0, doc="smallest relative rate gain for which a job doubles its GPUs")
    max_grow_factor: int = knob(
        2, low=1, integer=True, doc="growth cap, as a multiple of the request, for jobs without max_gpus"
    )
    placement: str = knob(
        "buddy", choices=PLACEMENTS, doc="``'buddy'`` (the re-packing placer, i.e. migration) or ``'default'``"
    )
    type_choice: TypeChoice = knob("order", choices=TYPE_CHOICES, doc=TYPE_CHOICE_DOC)


@register_policy()
class Gandiva(KnobPolicy[GandivaKnobs]):
    """Gandiva-style time slicing, grow-shrink and migration, heterogeneity-unaware (Xiao et al., OSDI 2018)."""

    name = "gandiva"
    knobs = GandivaKnobs
    in_default_comparison = False  # a baseline of the papers' studies: name it in --policies
    round_s = 360.0
    placer = "buddy"
    keeps_gpus_busy = True  # requested gangs are filled greedily with backfilling at every epoch

    def _configure(self) -> None:
        self.round_s = float(self.knob_values.slice_s)
        self.placer = self.knob_values.placement

    def slice_order(self, view: ClusterView) -> list[JobView]:
        """The jobs in time-slicing order: running jobs within their slice, then oldest slice start first."""

        def key(job: JobView) -> tuple[int, float, float, int]:
            if job.is_running and job.last_change_s is not None:
                if view.now_s - job.last_change_s < self.knob_values.slice_s - 1e-9:
                    return (0, 0.0, job.submit_s, job.job_id)  # its slice is not over
                return (1, job.last_change_s, job.submit_s, job.job_id)
            if job.last_change_s is None:
                return (1, -math.inf, job.submit_s, job.job_id)  # never ran
            # Suspended: its latest slice began last_run_s before it was suspended.
            return (1, job.last_change_s - job.last_run_s, job.submit_s, job.job_id)

        return sorted(view.jobs, key=key)

    def schedule(self, view: ClusterView) -> Allocation:
        order = self.slice_order(view)
        builder = AllocationBuilder(view)
        for job in order:
            if not any(builder.free.values()):
                break
            current = job.allocation
            if current is not None and current.total_gpus == job.num_gpus and builder.can_fit(current.as_dict()):
                builder.keep(job)
                continue
            if current is not None and len(current.counts) == 1 and current.total_gpus > job.num_gpus:
                t = current.gpu_types[0]
                if builder.free.get(t, 0) >= job.num_gpus:
                    builder.assign(job.job_id, {t: job.num_gpus})  # a grown job shrinks to its request
                    continue
            counts = gang_counts(view, job, builder.free, job.num_gpus, self.knob_values.type_choice)
            if counts:
                builder.assign(job.job_id, counts)
        if self.knob_values.grow_shrink and all(builder.assigned(j.job_id) is not None for j in order):
            self._grow(view, order, builder)
        return builder.build()

    def _grow(self, view: ClusterView, order: list[JobView], builder: AllocationBuilder) -> None:
        """Double jobs' GPUs on their type while there is room and it pays (no job waits)."""
        for job in order:
            given = builder.assigned(job.job_id)
            if given is None or len(given.counts) != 1:
                continue
            t, n = given.counts[0]
            cap = (
                job.spec.max_gpus if job.spec.max_gpus is not None else job.num_gpus * self.knob_values.max_grow_factor
            )
            cap = min(cap, view.cluster.capacity[t])
            grown = n
            rate = planning_rate(view.throughput, job.spec, view.cluster, t, grown)
            room = builder.free.get(t, 0)
            while 2 * grown <= cap and room >= grown:
                doubled = planning_rate(view.throughput, job.spec, view.cluster, t, 2 * grown)
                if rate <= 0 or doubled < (1.0 + self.knob_values.grow_min_gain) * rate:
                    break
                room -= grown
                grown, rate = 2 * grown, doubled
            if grown == n:
                continue
            builder.release(job.job_id)
            current = job.allocation
            if current is not None and current.counts == ((t, grown),):
                builder.keep(job)  # still grown as before: no move, no penalty
            else:
                builder.assign(job.job_id, {t: grown})
