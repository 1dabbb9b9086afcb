"""Heterogeneity-agnostic ElasticFlow: the published single-type planner run on a mixed cluster.

Gu et al., "ElasticFlow: An Elastic Serverless Training Platform for Distributed Deep Learning", ASPLOS
2023. The published ElasticFlow plans for one GPU type; :mod:`baselines.elasticflow` generalises it to
types (levels over (type, count)). This variant is what running the published planner on a heterogeneous
cluster amounts to, the baseline a heterogeneity-aware deadline scheduler is compared with. It reuses
:class:`~baselines.elasticflow.ElasticFlow` unchanged (timeline, minimum satisfactory share, admission,
leftover GPUs by marginal return, buddy placement) and changes only what the planner knows about types:

* **One pool.** Every GPU of the cluster is one of a single pool: the timeline has one row whose capacity
  is the cluster's total (for a job restricted to some types, the total of those types caps its levels).
* **One speed.** A job's levels are power-of-two counts of the pool, each with the job's rate on a
  *reference type* (``reference_type``; default: the type with the most GPUs in the cluster, ties in the
  cluster's order). A job the reference type cannot run uses its first allowed type with a positive rate.
  Admission and planning therefore believe every GPU runs at the reference speed.
* **Blind placement on types.** The planned pool counts become GPUs in the cluster's type order
  (``type_choice="order"``, the default): the first type with room for the whole count, else the count
  spread over types in that order (``sync`` mode: the slowest type bounds every step). A job already
  running with the planned count keeps its GPUs. ``type_choice="fastest"`` orders the types by the job's
  rate instead (still planning at one speed).

What is agnostic, in short: admission, shares and leftover growth are computed at one speed on one pool,
and the GPUs' types are chosen without regard to the job's speed on them; a job placed on a slower type
than the reference runs late although it was admitted, and a job the reference type is too slow for is
declined although a faster type could meet its deadline. Reconstructions [I]: the reference type, the
type order and spreading a count over types.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from baselines._common import TYPE_CHOICE_DOC, TYPE_CHOICES
from baselines._deadline import JobOptions, planning_rate, power_of_two_levels
from baselines.elasticflow.admission import JobLevels, job_levels
from baselines.elasticflow.knobs import ElasticFlowKnobs
from baselines.elasticflow.policy import ElasticFlow
from hetgym.sim import rates
from hetgym.sim.allocation import Allocation, JobAllocation
from hetgym.sim.policy import register_policy
from hetgym.sim.registry import KnobError, knob
from hetgym.sim.view import ClusterView, JobView

#: The planner's single GPU "type": every GPU of the cluster.
POOL = "_pool"


@dataclass(frozen=True)
class ElasticFlowAgnosticKnobs(ElasticFlowKnobs):
    """Knobs of :class:`ElasticFlowAgnostic`."""

    reference_type: str | None = knob(
        None, optional=True, doc="the GPU type whose rates the planner uses (``None``: the type with the most GPUs)"
    )
    type_choice: str = knob("order", choices=TYPE_CHOICES, doc=TYPE_CHOICE_DOC)


@register_policy()
class ElasticFlowAgnostic(ElasticFlow):
    """ElasticFlow planning as if every GPU were one reference type (heterogeneity-agnostic baseline).

    Paper: Gu et al., ASPLOS 2023. The planner of :class:`~baselines.elasticflow.ElasticFlow` on one pool of
    all GPUs at one speed; the pool counts are mapped to types in the cluster's order (module docstring).
    """

    name = "elasticflow-agnostic"
    knobs = ElasticFlowAgnosticKnobs
    in_default_comparison = False  # a baseline of the papers' studies: name it in --policies

    knob_values: ElasticFlowAgnosticKnobs

    def _reset(self) -> None:
        super()._reset()
        assert self.cluster is not None
        capacity = self.cluster.capacity
        reference = self.knob_values.reference_type
        if reference is not None and reference not in capacity:
            raise KnobError(
                f"ElasticFlowAgnosticKnobs: knob reference_type={reference!r} is not a GPU type of "
                f"cluster {self.cluster.name!r}; give one of {list(self.cluster.gpu_types)} or None"
            )
        self._reference = reference or max(self.cluster.gpu_types, key=lambda t: capacity[t])
        self._types = (POOL,)
        self._cap = np.array([self.cluster.total_gpus], dtype=np.int64)

    def levels_of(self, view: ClusterView, job: JobView) -> JobLevels:
        """The job's levels on the pool, at the reference type's rates (cached)."""
        hit = self._levels.get(job.job_id)
        if hit is not None and (hit[0] is job.spec or hit[0] == job.spec):
            return hit[1]
        spec, cluster, throughput = job.spec, view.cluster, view.throughput
        allowed = rates.allowed_types(cluster.gpu_types, spec)
        usable = [t for t in allowed if throughput.rate(spec.job_type, spec.batch_size, t, 1) > 0]
        reference = self._reference if self._reference in usable else (usable[0] if usable else None)
        cap = sum(cluster.capacity[t] for t in usable)
        for bound in (spec.max_gpus, self.knob_values.max_count):
            if bound is not None:
                cap = min(cap, bound)
        counts: list[int] = []
        level_rates: list[float] = []
        if reference is not None:
            best = 0.0
            for n in power_of_two_levels(spec.min_gpus, cap):
                r = planning_rate(throughput, spec, cluster, reference, n)
                if r > best * (1.0 + 1e-9):
                    counts.append(n)
                    level_rates.append(r)
                    best = r
        opts = JobOptions(
            np.array(counts, dtype=np.int64).reshape(len(counts), 1), np.array(level_rates, dtype=float), (POOL,)
        )
        lv = job_levels(opts, np.ones(1), self._cap)
        self._levels[job.job_id] = (job.spec, lv)
        return lv

    def schedule(self, view: ClusterView) -> Allocation:
        planned = super().schedule(view)
        return self.on_types(view, planned)

    def on_types(self, view: ClusterView, planned: Allocation) -> Allocation:
        """Map the planner's pool counts onto GPU types (allocations already on types pass through)."""
        free = dict(view.cluster.capacity)
        out: dict[int, JobAllocation] = {}
        pooled: list[tuple[int, int]] = []
        for jid, ja in planned.jobs.items():
            if ja.gpu_types == (POOL,):
                pooled.append((jid, ja.total_gpus))
                continue
            out[jid] = ja
            for t, n in ja.counts:
                free[t] -= n
        # Jobs already holding the planned count keep their GPUs; the others go largest first.
        rest: list[tuple[int, int]] = []
        for jid, n in pooled:
            current = view.job(jid).allocation
            if current is not None and current.total_gpus == n and all(free[t] >= k for t, k in current.counts):
                out[jid] = current
                for t, k in current.counts:
                    free[t] -= k
            else:
                rest.append((jid, n))
        for jid, n in sorted(rest, key=lambda p: (-p[1], p[0])):
            counts = self._types_for(view, view.job(jid), n, free)
            if counts:
                out[jid] = JobAllocation(counts, mode="sync")
                for t, k in counts.items():
                    free[t] -= k
        return Allocation(out, planned.reject)

    def _types_for(self, view: ClusterView, job: JobView, n: int, free: dict[str, int]) -> dict[str, int] | None:
        """``n`` GPUs for ``job``: one type with room if any, else spread over types (``None``: no room)."""
        table = view.rate_table
        types = [t for t in table.allowed_types(job) if view.rate(job, t, 1) > 0]
        if self.knob_values.type_choice == "fastest":
            types.sort(key=lambda t: -view.rate(job, t, n))
        for t in types:
            if free[t] >= n:
                return {t: n}
        if sum(free[t] for t in types) < n:
            return None
        counts: dict[str, int] = {}
        left = n
        for t in types:
            take = min(left, free[t])
            if take:
                counts[t] = take
                left -= take
        return counts
