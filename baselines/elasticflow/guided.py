"""ElasticFlow guided per job: an outside admission, GPU type and GPU sharing at each arrival, ElasticFlow's allocation.

The allocator of the event-driven environment (``HetClusterEvents-v0`` and ``-v1``):
:class:`~baselines.elasticflow.ElasticFlow` (Gu et al., ASPLOS 2023) with the guidance contract of
:mod:`hetgym.sim.guidance`. Before the epoch at which a job arrives is scheduled,
:meth:`GuidedElasticFlow.guide` may give it a :class:`~hetgym.sim.guidance.Directive`:

* ``admission="auto"``: ElasticFlow's own test (a minimum satisfactory share exists and no admitted job
  loses its share), declined jobs dropped;
* ``"reject"``: dropped without the test;
* ``"force"``: admitted with the guarantee without the test (planned in deadline order like every
  admitted job; a job that then finds no share runs late on leftover GPUs, as ElasticFlow's admitted jobs
  do). A job without a deadline cannot be guaranteed: it is kept best-effort;
* ``"best_effort"``: kept without a guarantee (ElasticFlow's ``rejected_jobs="best_effort"`` for one job):
  it gets GPUs only from the leftover step;
* ``gpu_type``: the job's levels are restricted to that type for its whole life (planning, admission test
  and leftover GPUs alike);
* ``priority``: the job's class in the leftover step (GPUs free now once every plan is served, handed out one
  level at a time): every ``"high"`` job is served before every ``"normal"`` one, every ``"normal"`` one
  before every ``"low"`` one; within a class ElasticFlow's order holds (jobs without GPUs first, in
  deadline order, then the highest marginal return). Planning and admission are unchanged;
* ``gpu_cap="requested"``: the job's levels are restricted to at most its requested GPUs
  (``JobSpec.num_gpus``) for its whole life (planning, admission test and leftovers alike: it is admitted
  by ``auto`` only if it gets a share within the cap); ``"share"``: it gets no leftover GPUs once it holds
  some, so it runs at what its plan gives it now (its minimum satisfactory share, or the lower level the
  plan starts with), or, when the plan gives it nothing now, at the smallest level the leftovers fit.

Directed arrivals are settled first, then the ``auto`` arrivals of the same epoch go through ElasticFlow's
admission in deadline order with the forced ones counted as admitted. A job with no directive, or the
default one, is treated exactly as :class:`ElasticFlow` treats it, so this policy without directives makes
ElasticFlow's decisions, bit for bit (``tests/baselines/test_elasticflow_guided.py``).

:meth:`GuidedElasticFlow.probe` answers, without changing the policy's state, whether ElasticFlow's test
would admit a job now under each type restriction: the job planned with the jobs admitted so far. It
ignores the other arrivals of the same epoch (their directives are not known yet).

**Late jobs.** :meth:`GuidedElasticFlow.newly_late` names the jobs admitted with the guarantee that a re-plan
left without a share (projected to miss their deadline; ElasticFlow keeps them on leftover GPUs), each once.
A ``reject`` directive given to such a job (any active job that is not arriving) drops it at the next
``schedule`` call, which then re-plans without it.

Only ``memory="history"`` is supported: the directives are a history the observed-memory mode forgets.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from baselines._deadline import job_options
from baselines.elasticflow.admission import JobLevels, _order_key, job_levels
from baselines.elasticflow.knobs import GuidedElasticFlowKnobs
from baselines.elasticflow.policy import ElasticFlow
from hetgym.sim.allocation import Allocation
from hetgym.sim.errors import HetgymError
from hetgym.sim.guidance import GPU_CAPS, Directive
from hetgym.sim.job import JobSpec
from hetgym.sim.policy import register_policy
from hetgym.sim.view import ClusterView, JobView

#: The leftover step's class of each priority (served in increasing order; ElasticFlow's own jobs are 0).
_CLASS = {"high": -1, "normal": 0, "low": 1}


@register_policy()
class GuidedElasticFlow(ElasticFlow):
    """ElasticFlow (Gu et al., ASPLOS 2023) taking a per-job admission, GPU-type and GPU-sharing directive at arrival.

    See the module docstring. The knobs are :class:`~baselines.elasticflow.ElasticFlow`'s, except that
    ``memory`` must be ``"history"``.
    """

    name = "elasticflow-guided"
    knobs = GuidedElasticFlowKnobs
    in_default_comparison = False  # ElasticFlow itself when no directive is given
    fork_shallow: ClassVar[tuple[str, ...]] = (
        *ElasticFlow.fork_shallow,
        "_restricted",
    )  # restricted levels: functions of spec and type

    def _reset(self) -> None:
        super()._reset()
        self._directives: dict[int, Directive] = {}
        # Levels under a directive, by (job, GPU type or None, count cap or None).
        self._restricted: dict[tuple[int, str | None, int | None], tuple[JobSpec, JobLevels]] = {}
        self.stats.update({"forced": 0, "best_effort": 0, "directed_rejects": 0, "dropped": 0})
        self._late_reported: set[int] = set()
        self._late_new: list[int] = []
        self._drops: set[int] = set()

    # ----------------------------------------------------------------------------------------
    # The guidance contract

    def guide(self, job_id: int, directive: Directive) -> None:
        """Take ``directive`` for job ``job_id`` (before the ``schedule`` call of its arrival epoch)."""
        if self.cluster is None:
            raise HetgymError("elasticflow-guided: call reset() before guide()")
        if directive.gpu_type is not None and directive.gpu_type not in self._types:
            raise HetgymError(
                f"elasticflow-guided: directive for job {job_id} names GPU type {directive.gpu_type!r}, "
                f"not one of the cluster's {list(self._types)}"
            )
        if directive.is_default:
            self._directives.pop(job_id, None)
        else:
            self._directives[job_id] = directive

    def newly_late(self) -> tuple[int, ...]:
        """The guaranteed jobs the latest re-plans left without a share, not named before (each job once)."""
        out = tuple(self._late_new)
        self._late_new = []
        return out

    def usable_types(self, view: ClusterView, job_id: int) -> tuple[str, ...]:
        """The GPU types on which the job has at least one level (what a type directive may name)."""
        lv = ElasticFlow.levels_of(self, view, view.job(job_id))
        return tuple(self._types[k] for k in lv.types)

    def capped_types(self, view: ClusterView, job_id: int, gpu_cap: str) -> tuple[str, ...]:
        """The GPU types on which the job keeps at least one level under ``gpu_cap`` (one of ``GPU_CAPS``)."""
        if gpu_cap not in GPU_CAPS:
            raise HetgymError(f"elasticflow-guided: gpu_cap={gpu_cap!r}: give one of {list(GPU_CAPS)}")
        job = view.job(job_id)
        if gpu_cap != "requested":
            return self.usable_types(view, job_id)
        lv = self._levels_for(view, job, None, self._count_cap(job))
        return tuple(self._types[k] for k in lv.types)

    def probe(self, view: ClusterView, job_id: int, gpu_types: tuple[str | None, ...]) -> tuple[bool, ...]:
        """Whether ElasticFlow's admission test admits the job now under each restriction (``None``: any type).

        The job is planned with the jobs admitted so far, in deadline order, on a fresh timeline; it
        passes when it gets a share and every admitted job that had one keeps it. Nothing the policy
        remembers changes.
        """
        job = view.job(job_id)
        if not job.spec.has_deadline:
            return tuple(False for _ in gpu_types)
        admitted = [j for j in view.jobs if self._kind.get(j.job_id) == "admitted" and j.job_id != job_id]
        try:
            # As ElasticFlow's own trials do (_trial): the admitted jobs ordered before this one plan the same
            # with or without it, so they are planned once and each restriction goes on from a copy.
            base = self._start(view, admitted)
            self._advance(view, base, _order_key(job))
            full = base.copy()
            self._advance(view, full)
            failed0 = full.failed
            out = []
            for gpu_type in gpu_types:
                lv = self._levels_for(view, job, gpu_type)
                if not len(lv.order):
                    out.append(False)
                    continue
                if base.timeline.default_horizon:
                    state = self._start(view, [*admitted, job])
                else:
                    state = base.copy()
                    aligned = math.ceil(job.deadline_s / self.round_s - 1e-9) * self.round_s
                    if aligned > view.now_s + 1e-9:
                        state.timeline.split(aligned)
                    state.jobs.insert(state.pos, job)
                self._inputs[job_id] = (lv, self._first_loss(view, job))
                self._advance(view, state)
                out.append(job_id in state.plans and state.failed <= failed0)
                self._inputs.pop(job_id, None)
            return tuple(out)
        finally:
            self._inputs_view = None
            self._inputs.clear()

    # ----------------------------------------------------------------------------------------
    # ElasticFlow's hooks

    def levels_of(self, view: ClusterView, job: JobView) -> JobLevels:
        """ElasticFlow's levels of the job, restricted to its directive's GPU type and GPU cap when it names them."""
        directive = self._directives.get(job.job_id)
        if directive is None or (directive.gpu_type is None and directive.gpu_cap != "requested"):
            return super().levels_of(view, job)
        cap = self._count_cap(job) if directive.gpu_cap == "requested" else None
        lv = self._levels_for(view, job, directive.gpu_type, cap)
        if not len(lv.order):
            usable = self.usable_types(view, job.job_id)
            within = "" if cap is None else f" within its cap of {cap} GPUs (gpu_cap='requested')"
            raise HetgymError(
                f"elasticflow-guided: job {job.job_id} has no level on GPU type {directive.gpu_type or 'any'!r}"
                f"{within} (the type is not allowed for it or runs it at rate 0); its usable types are {usable}, "
                f"and capped_types(view, job_id, 'requested') names those a capped directive may use"
            )
        return lv

    def _count_cap(self, job: JobView) -> int:
        """The count cap of ``gpu_cap="requested"``: the job's requested GPUs (within the policy's own cap)."""
        return min(int(job.spec.num_gpus), self.knob_values.max_count or int(job.spec.num_gpus))

    def _levels_for(
        self, view: ClusterView, job: JobView, gpu_type: str | None, max_count: int | None = None
    ) -> JobLevels:
        if gpu_type is None and max_count is None:
            return ElasticFlow.levels_of(self, view, job)
        key = (job.job_id, gpu_type, max_count)
        hit = self._restricted.get(key)
        if hit is not None and (hit[0] is job.spec or hit[0] == job.spec):
            return hit[1]
        if max_count is None:
            # The job's options are those of its unrestricted levels (the same call, kept): filter them.
            opts = ElasticFlow.levels_of(self, view, job).options
        else:
            opts = job_options(view.throughput, job.spec, view.cluster, max_count=max_count)
        if gpu_type is None:
            restricted = opts
        else:
            column = self._types.index(gpu_type)
            keep = opts.counts[:, column] > 0 if len(opts) else np.zeros(0, dtype=bool)
            restricted = type(opts)(opts.counts[keep], opts.rates[keep], opts.types)
        speed = np.array([view.throughput.speed_index.get(t, 1.0) for t in self._types])
        lv = job_levels(restricted, speed, self._cap)
        self._restricted[key] = (job.spec, lv)
        return lv

    def _leftover_terms(self) -> tuple[dict[int, int], frozenset[int]]:
        """The directives' priority classes (high -1, normal 0, low 1) and the jobs capped at their share."""
        if not self._directives:
            return {}, frozenset()
        classes = {jid: _CLASS[d.priority] for jid, d in self._directives.items() if d.priority != "normal"}
        fixed = frozenset(jid for jid, d in self._directives.items() if d.gpu_cap == "share")
        return classes, fixed

    def _admit(
        self, view: ClusterView, admitted: list[JobView], arrived: list[int]
    ) -> tuple[list[JobView], set[int], Any]:
        """Settle the directed arrivals, then run ElasticFlow's admission on the others (see the module docstring)."""
        if not self._directives and not self._drops:
            return super()._admit(view, admitted, arrived)
        auto: list[int] = []
        dropped: set[int] = set()
        admitted = list(admitted)
        for jid in arrived:
            directive = self._directives.get(jid)
            if directive is None or directive.admission == "auto":
                auto.append(jid)
            elif directive.admission == "reject":
                dropped.add(jid)
                self.stats["directed_rejects"] += 1
            elif directive.admission == "force" and view.job(jid).spec.has_deadline:
                self._kind[jid] = "admitted"
                admitted.append(view.job(jid))
                self.stats["forced"] += 1
            else:
                self._kind[jid] = "best_effort"
                self.stats["best_effort"] += 1
        admitted, rejected, last = super()._admit(view, admitted, auto)
        dropped |= self._drops
        self._drops = set()
        return admitted, rejected | dropped, last

    def _replan(
        self,
        view: ClusterView,
        admitted: list[JobView],
        rejected: set[int],
        done: tuple[Any, dict[int, Any], set[int]] | None = None,
    ) -> None:
        done = done if done is not None else self.plan_all(view, admitted)
        super()._replan(view, admitted, rejected, done)
        for jid in sorted(done[2]):
            if jid not in self._late_reported and self._kind.get(jid) == "admitted":
                self._late_reported.add(jid)
                self._late_new.append(jid)

    def quiet_until_s(self) -> float:
        """ElasticFlow's promise (:meth:`ElasticFlow.quiet_until_s`), none while a drop is pending: a reject
        directive for an admitted job re-plans at the next call."""
        if self._drops or any(d.admission == "reject" for d in self._directives.values()):
            return -math.inf
        return super().quiet_until_s()

    def schedule(self, view: ClusterView) -> Allocation:
        arrived = set(view.arrived)
        for jid, directive in self._directives.items():
            if directive.admission == "reject" and jid not in arrived and jid in view.job_index:
                # A job admitted earlier is dropped: it leaves the plans, and the cluster is re-planned now.
                self._kind.pop(jid, None)
                self._decision.pop(jid, None)
                self._drops.add(jid)
                self.stats["dropped"] += 1
        if self._drops:
            self._next_change_s = -math.inf
        allocation = super().schedule(view)
        if self._directives:
            active = view.job_index
            for jid in [j for j in self._directives if j not in active or j in allocation.reject]:
                del self._directives[jid]
            for key in [k for k in self._restricted if k[0] not in self._directives]:
                del self._restricted[key]
        return allocation


__all__ = ["GuidedElasticFlow"]
