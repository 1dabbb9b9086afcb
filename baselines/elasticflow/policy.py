"""ElasticFlow: minimum-satisfactory-share admission, leftover GPUs by marginal return, buddy placement.

Gu, Zhao, Zhong, Xiong, Han, Cheng, Yang, Huang, Jin and Liu, "ElasticFlow: An Elastic Serverless
Training Platform for Distributed Deep Learning", ASPLOS 2023 (user guide: ``docs/deadline-policies.md``),
following the public simulator (``ElasticFlow/scheduler/scheduler.py``: ``ef_sim_allocation``,
``estimate_all_jobs``, ``allocate_free_gpus``), generalised to GPU types.

* **Timeline** [C-code]. The future free GPUs per type, piecewise constant between breakpoints aligned
  to the scheduling slot (``round_s``, 60 s), built by planning the admitted jobs one by one in deadline
  order on an empty cluster.
* **Minimum Satisfactory Share** [C-code; I: types]. A job's *levels* are (GPU type, count) pairs with
  power-of-two counts (ElasticFlow's throughput-table keys). Levels are tried in increasing *share*,
  ``count x speed_index(type)`` (the GPUs' worth in V100 units; ties by rate), so slow types serve loose
  deadlines and fast types are kept for tight ones. For a level ``(k, n)`` the timeline is walked back
  from the slot-aligned deadline: in each interval the job gets ``min(n, largest level of type k that is
  free)`` and accumulates ``duration x rate`` (the last interval up to the true deadline). The first level
  whose total reaches the remaining work is the job's share. Its plan, as in the code, runs from now
  forward with the next lower level of that type before the point where the backward walk succeeded and
  the share from that point on, until the work is done (end aligned to the slot); the timeline loses those
  GPUs. One restart penalty is deducted from the first interval (``overhead_aware``; the code charges
  overheads only while executing).
* **Admission** [C-code; I: per job]. Each arriving deadline job is planned with the admitted jobs (all in
  deadline order on a fresh timeline); it is admitted iff it gets a share and no admitted job that had one
  loses it. Otherwise it is declined (``rejected_jobs="drop"``, a deadline miss) or, in the best-effort
  variant (``"best_effort"``), kept without a guarantee. The planning passes share their common prefix:
  the admitted jobs ordered before the arrival plan the same with or without it, so only the jobs after
  it are planned again (same result as planning all of them afresh, bit for bit).
* **Leftover GPUs** [C-code; I: metric]. GPUs free now after every plan go, one level at a time, to the
  job with the highest marginal return: jobs without GPUs first (deadline order), then
  ``leftover_rule="speedup"`` (default: relative speed-up per extra GPU, ``(r_next / r_now - 1) / extra``,
  the paper's diminishing returns) or ``"gputime"`` (the code's literal metric: the increase of the
  remaining GPU-time per extra GPU, largest first). A job grows on the type it holds. A subclass may serve
  jobs in classes before that order and hold some at what they have (``_leftover_terms``: the guided
  policy's priority and share cap, :mod:`baselines.elasticflow.guided`).
* **Placement** [C: buddy allocation]. The policy decides counts; it declares the simulator's ``buddy``
  placer (:mod:`hetgym.sim.placement.buddy`, ``placement="buddy"``), which re-packs the cluster at every
  decision, or the ``default`` placer (``"default"``).

Re-planning happens at arrivals, completions and the next change point of any plan, as in ElasticFlow's
event loop; between them the allocation stays as it is. The timeline, the minimum satisfactory share and
the admission passes are :mod:`baselines.elasticflow.admission`; this module keeps the policy, the
leftover GPUs and the re-planning.

**Memory** [I: teacher mode]. ``memory="history"`` (default) remembers which jobs were admitted, the
last decision and the plans' next change point, as above. ``memory="observed"`` decides from the view
alone, so the allocation is a function of the view (an imitation-learning teacher labelling states it
did not reach): the jobs :func:`~baselines._deadline.new_arrivals` names (arrived at this epoch, never
ran) go through admission; every other active deadline job counts as admitted (it would have left had
it been declined) and is planned, at worst without a share (late, never declined). At epochs with an
arrival or a completion (``view.arrived``, ``view.completed``) the fresh decision is returned. Between
them the allocation in force stands, unless ElasticFlow would not have left it so: a job whose fresh
plan runs now holds no GPUs, or the fresh decision uses more GPUs than are held; then the fresh
decision is returned. Plans' change points need the plan of the last event, so they trigger nothing
(on ElasticFlow's own runs the DSR barely moves, ``docs/results/observed_teachers.md``). Jobs that
``rejected_jobs="best_effort"`` kept count as admitted after their arrival epoch.

**Slot origin** [I: teacher mode]. Slots, and the deadlines rounded up to them, lie on the absolute grid
of ``round_s`` (``slot_origin="absolute"``, default), so a decision between two boundaries depends on
where it falls in its slot. With ``memory="observed"``, ``"decision"`` plans as if the decision fell on a
boundary (every absolute time moved forward to the next one; :mod:`baselines._deadline`).
"""

from __future__ import annotations

import heapq
import math
from typing import ClassVar

import numpy as np

from baselines._deadline import (
    at_slot_start,
    new_arrivals,
)
from baselines.elasticflow.admission import (
    ElasticFlowAdmission,
    JobLevels,
    MSSPlan,
    Timeline,
)
from baselines.elasticflow.knobs import ElasticFlowKnobs
from hetgym.sim.allocation import Allocation, JobAllocation
from hetgym.sim.job import JobSpec
from hetgym.sim.policy import register_policy
from hetgym.sim.view import ClusterView, JobView

_REPLAN_TOL_S = 1e-6  # a tick this close to a plan's change point re-plans


@register_policy()
class ElasticFlow(ElasticFlowAdmission):
    """ElasticFlow (Gu et al., ASPLOS 2023): MSS admission, marginal-return leftover allocation, buddy placement.

    Paper: "ElasticFlow: An Elastic Serverless Training Platform for Distributed Deep Learning", ASPLOS
    2023. Implemented from the public simulator's ``ef_sim_allocation`` / ``allocate_free_gpus`` and
    generalised to GPU types with levels over (type, count) (see the module docstring). Reconstructions:
    the share order over types (``count x speed_index``), one type per plan, per-job admission, the
    leftover metric, the deducted restart penalty, and buddy placement as an equivalent largest-first
    single-server rule.
    """

    name = "elasticflow"
    knobs = ElasticFlowKnobs
    round_s = 60.0
    placer = "buddy"
    # A fork shares the immutable state and copies the per-job tables' index only (each job's levels are a
    # function of its spec); the last allocation is a frozen record.
    fork_shared: ClassVar[tuple[str, ...]] = (
        *ElasticFlowAdmission.fork_shared,
        "_types",
        "_cap",
        "_last",
        "_inputs_view",
    )
    fork_shallow: ClassVar[tuple[str, ...]] = ("_levels", "_inputs")

    def _configure(self) -> None:
        self.round_s = float(self.knob_values.round_s)
        self.placer = self.knob_values.placement

    def _reset(self) -> None:
        assert self.cluster is not None
        self._types = self.cluster.gpu_types
        self._cap = np.array([self.cluster.capacity[t] for t in self._types], dtype=np.int64)
        self._levels: dict[int, tuple[JobSpec, JobLevels]] = {}  # by job (a function of its spec)
        self._kind: dict[int, str] = {}  # admitted | best_effort
        self._decision: dict[int, dict[str, int]] = {}
        self._next_change_s = math.inf
        self._last: Allocation | None = None
        self.stats: dict[str, int] = dict.fromkeys(("admitted", "rejected", "replans", "late"), 0)
        # Per-view cache of each job's levels and first-interval loss (the passes of one decision share it).
        self._inputs_view: ClusterView | None = None
        self._inputs: dict[int, tuple[JobLevels, float]] = {}

    def _leftover(
        self, view: ClusterView, now_counts: dict[int, tuple[int, int]], free: np.ndarray, order: list[JobView]
    ) -> None:
        """Give the GPUs free now, one level at a time, to the jobs with the highest marginal return."""
        heap: list[tuple[int, float, int, int]] = []
        free_list = free.tolist()
        classes, fixed = self._leftover_terms()

        def push(rank: int, job: JobView) -> None:
            lv = self.levels_of(view, job)
            k, n = now_counts.get(job.job_id, (-1, 0))
            cls = classes.get(job.job_id, 0)
            if n == 0:
                heapq.heappush(heap, (cls, -math.inf, rank, job.job_id))
                return
            if job.job_id in fixed:
                return
            cur = lv.index[(k, n)]
            o = int(lv.nxt[cur])
            if o < 0:
                return
            extra = int(lv.count[o]) - n
            r_now, r_next = float(lv.options.rates[cur]), float(lv.options.rates[o])
            if self.knob_values.leftover_rule == "speedup":
                gain = (r_next / r_now - 1.0) / extra
            else:
                work = job.remaining_iters
                gain = (int(lv.count[o]) * work / r_next - n * work / r_now) / extra
            heapq.heappush(heap, (cls, -gain, rank, job.job_id))

        ranks = {}
        for rank, job in enumerate(order):
            ranks[job.job_id] = rank
            push(rank, job)
        while heap and any(free_list):
            _, _, rank, jid = heapq.heappop(heap)
            job = view.job(jid)
            lv = self.levels_of(view, job)
            k, n = now_counts.get(jid, (-1, 0))
            if n == 0:
                o = -1
                for cand in lv.order.tolist():
                    if lv.count[cand] <= free_list[lv.type_idx[cand]]:
                        o = cand
                        break
                if o < 0:
                    continue
            else:
                o = int(lv.nxt[lv.index[(k, n)]])
                if lv.count[o] - n > free_list[k]:
                    continue
            k_new = int(lv.type_idx[o])
            free_list[k_new] -= int(lv.count[o]) - n
            now_counts[jid] = (k_new, int(lv.count[o]))
            push(rank, job)
        free[:] = free_list

    def _leftover_terms(self) -> tuple[dict[int, int], frozenset[int]]:
        """Each job's class in the leftover step and the jobs that may not grow there (a subclass's hook).

        Classes are served in increasing order (a job absent from the map is class 0), ElasticFlow's order
        within a class; a job in the set gets no leftover GPUs once it holds some. ElasticFlow: one class,
        no such job, so the order is its own.
        """
        return {}, frozenset()

    def schedule(self, view: ClusterView) -> Allocation:
        if self.knob_values.slot_origin == "decision":
            view = at_slot_start(view, self.round_s)
        try:
            return self._schedule(view)
        finally:
            self._inputs_view = None  # the cache holds the view
            self._inputs.clear()

    def _schedule(self, view: ClusterView) -> Allocation:
        active = view.job_index
        for jid in [j for j in self._levels if j not in active]:
            self._levels.pop(jid)
        if self.knob_values.memory == "observed":
            # Forget the admissions and the last decision: everything below follows from the view.
            new = new_arrivals(view)
            fresh = set(new)
            kept = [j for j in view.jobs if j.job_id not in fresh]
            self._kind = {j.job_id: "admitted" if j.spec.has_deadline else "best_effort" for j in kept}
            self._decision = {}
            self._last = None
        else:
            new = list(view.arrived)
            for jid in [j for j in self._kind if j not in active]:
                del self._kind[jid]
                self._decision.pop(jid, None)
        admitted = [j for j in view.jobs if self._kind.get(j.job_id) == "admitted"]
        admitted, rejected, last = self._admit(view, admitted, new)
        if self.knob_values.memory == "observed":
            last = last if last is not None else self.plan_all(view, admitted)
            self._replan(view, admitted, rejected, last)
            if not (view.arrived or view.completed) and self._stands(view, last[1]):
                # Between events the allocation in force stands, as in ElasticFlow's event loop.
                held = {j.job_id: j.allocation.as_dict() for j in view.running if j.allocation is not None}
                return Allocation({jid: JobAllocation(c, mode="sync") for jid, c in held.items()})
        else:
            replan = bool(view.arrived or view.completed) or view.now_s >= self._next_change_s - _REPLAN_TOL_S
            if not replan and self._last is not None:
                return self._last  # nothing happened since the last decision: it stands
            self._replan(view, admitted, rejected, last)
        # Counts only: the declared placer (buddy, or the default) maps them onto servers.
        jobs = {jid: JobAllocation(c, mode="sync") for jid, c in self._decision.items() if c and jid not in rejected}
        self._last = Allocation(jobs)
        return Allocation(jobs, frozenset(rejected))

    def quiet_until_s(self) -> float:
        """With ``memory="history"``: its last decision stands at ticks before the plans' next change point.

        Between an arrival or completion and that point :meth:`schedule` re-plans nothing and returns the
        last decision, its state untouched (the simulator passes over those ticks,
        :mod:`hetgym.sim.fastforward`). ``memory="observed"`` re-plans from every view: no promise.
        """
        if self.knob_values.memory != "history" or self._last is None:
            return -math.inf
        return self._next_change_s - _REPLAN_TOL_S

    def _stands(self, view: ClusterView, plans: dict[int, MSSPlan]) -> bool:
        """``memory="observed"``, between events: whether the allocation in force is one ElasticFlow leaves as is.

        It is not when a job whose fresh plan runs now holds no GPUs, or when the fresh decision would use
        more GPUs than are held (GPUs left idle); then the fresh decision is the answer.
        """
        if any(len(p.counts) and p.counts[0] > 0 and view.job(jid).allocation is None for jid, p in plans.items()):
            return False
        held = sum(j.allocation.total_gpus for j in view.running if j.allocation is not None)
        return sum(sum(c.values()) for c in self._decision.values()) <= held

    def _replan(
        self,
        view: ClusterView,
        admitted: list[JobView],
        rejected: set[int],
        done: tuple[Timeline, dict[int, MSSPlan], set[int]] | None = None,
    ) -> None:
        self.stats["replans"] += 1
        timeline, plans, failed = done if done is not None else self.plan_all(view, admitted)
        self.stats["late"] += len(failed)
        now_counts: dict[int, tuple[int, int]] = {}
        for jid, plan in plans.items():
            if len(plan.counts) and plan.counts[0] > 0:
                now_counts[jid] = (plan.type_idx, int(plan.counts[0]))
        # Completions trigger a re-plan anyway, so plan ends are not change points.
        self._next_change_s = min((p.change_s for p in plans.values()), default=math.inf)
        free = timeline.free[:, 0].copy()
        order = sorted(
            (j for j in view.jobs if j.job_id not in rejected and j.job_id in self._kind),
            key=lambda j: (j.deadline_s, j.submit_s, j.job_id),
        )
        self._leftover(view, now_counts, free, order)
        self._decision = {jid: {self._types[k]: n} for jid, (k, n) in now_counts.items() if n > 0}


__all__ = ["ElasticFlow"]
