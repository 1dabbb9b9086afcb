"""Dancer: deadline-aware online allocation of GPU counts and types by primal-dual admission and a DP.

Zhang, Luo, Sun, Yu and Li, "Deadline-Aware Online Job Scheduling for Distributed Training in
Heterogeneous Clusters", IEEE Transactions on Cloud Computing 13(2):590-604, 2025. User guide:
``docs/deadline-policies.md``.

How it works (each part tagged with its provenance, as explained in ``docs/provenance.md``):

* **Slots and allocation** [C: decoupling; I: details]. Time is cut into slots of ``round_s`` seconds
  (default 60 s, ElasticFlow's scheduling slot). An *allocation* gives a job, in each slot, a number of
  GPUs of one type (or, with ``allow_type_mix_in_slot``, of two types running synchronously); the
  mapping onto servers is a separate step (*placement*), done per slot by the simulator's default
  placer: keep a job on its previous servers when they have room (sticky), else the best-fitting single
  server, else the fewest servers (largest free first). Counts are powers of two (see
  :mod:`baselines._deadline`).
* **Prices** [I]. Each GPU type ``k`` and slot ``t`` has a price that rises with the GPUs already
  committed there, ``P_k(g) = L (U/L)^(g / C_k)`` (``price_mode="exp"``) or ``L + (U-L) g / C_k``
  (``"linear"``). A configuration of ``n`` GPUs costs ``n P_k(g)`` (``price_increment="marginal"``) or
  the exact integral ``sum_{m<n} P_k(g+m)`` (``"exact"``), weighted by the fraction of the slot used.
* **Dual subroutine** [I]. :func:`dual_dp` finds a job's cheapest schedule that finishes its
  remaining work by its deadline, within the GPUs not reserved by other jobs: a multiple-choice
  knapsack over slots with the work quantised into ``dp_quanta`` units, vectorised over the work axis
  and the options. Long windows are cut into at most ``dp_max_blocks`` blocks of whole slots (one
  configuration per block). With ``switch_cost_in_dp`` (the default) the state also holds the
  configuration in force, so each change pays the restart penalty inside the DP. Every schedule is then
  checked exactly (penalties included) after backtracking, extended into adjacent idle blocks if the
  rounding left it short, and otherwise re-planned with the shortfall added.
* **Online admission** [C: primal-dual; I: rule]. At arrival (EDF order within an epoch) a job is
  admitted iff its cheapest schedule exists and costs at most its value ``v`` (its ``priority_weight``,
  1 by default). Its schedule is then *reserved*: later jobs never take those GPUs (hard reservations),
  which is how the prices rise. Rejected jobs leave (``rejected_jobs="drop"``, they count as
  misses) or run best-effort on GPUs nobody reserved (``"best_effort"``).
* **Executor** [I]. Every epoch runs each admitted job's reserved configuration for the current slot.
  With ``work_conserving_extra`` the GPUs nobody reserved go to admitted jobs in EDF order (a larger
  count of the reserved type, or any type for a job idle in this slot), then to late and best-effort
  jobs, choosing for each job the configuration with the most progress over the rest of the slot plus
  ``extra_lookahead_s`` after the restart penalty any change costs.
* **Re-planning** [I]. At every slot boundary each admitted job's remaining reservations are compared
  with its remaining work. A job ahead of its plan (it got extra GPUs) gives back the reserved slots it
  no longer needs (the tail of its plan). A job behind (restart penalties, a fragmented placement that
  runs slower than planned) is re-planned by the DP over its remaining window; it keeps priority
  whatever the cost. If no schedule is left it runs best-effort as a *late* job.
* **Memory** [I: teacher mode]. ``memory="history"`` (default) keeps all of the above between epochs, as
  the paper's online algorithm does. ``"observed"`` forgets it at every call and plans from the view
  alone, so the allocation is a function of the view (what an imitation-learning teacher labelling
  states it did not reach needs): the ledger is empty; with ``price_auto``, ``L`` and ``U`` are
  calibrated on the active deadline jobs (work left, window from now); every active job except the
  ones :func:`~baselines._deadline.new_arrivals` names (arrived at this epoch, never ran) counts as
  admitted and is planned by the DP in EDF order, whatever the cost, late when no schedule is left
  (never refused); then the new arrivals go through the admission rule on what is left. The
  executor is unchanged. Jobs that ``rejected_jobs="best_effort"`` kept are indistinguishable from
  admitted ones after their arrival epoch. The cost: one DP per active job per epoch.
* **Slot origin** [I: teacher mode]. Slots are absolute (``slot_origin="absolute"``, default), so a
  decision between two slot boundaries depends on where it falls in its slot (how much of the current
  slot is left). With ``memory="observed"``, ``"decision"`` plans as if the decision fell on a boundary:
  every absolute time of the view is moved forward to the next one (:mod:`baselines._deadline`).

Reconstructions, each a constructor knob with its default: the slot length, the price function
(``price_mode``, ``price_increment``) and its constants (``price_L``/``price_U``, or ``price_auto``: a
running calibration over the jobs seen, ``U = max v / (min GPU-slots of any feasible single-config
schedule)`` and ``L = min v / (max GPU-slots of such a schedule)``, so an empty cluster admits any
feasible job), ``dp_quanta``, ``dp_max_blocks``, ``switch_cost_in_dp``, ``allow_type_mix_in_slot``,
``work_conserving_extra``, ``extra_lookahead_s``, ``rejected_jobs``, ``arrival_order``,
``deadline_margin_s``, ``max_count``, ``max_replans_per_epoch``, ``tie_break``, ``price_scale``,
``memory`` and ``slot_origin``.
Dancer's own price function, constants, DP state and tie-breaking remain to be checked against the
full paper (``docs/provenance.md``).

Layout, following the parts above: this module holds the online admission, the re-planning schedule
and the executor; the planning step they call (prices in force, a job's options, the per-job DP on the
unreserved GPUs) is :mod:`baselines.dancer.planning`, the price function and the DP
:mod:`baselines.dancer.dp`, the reservations (plans, the slot ledger) :mod:`baselines.dancer.reservations`.
"""

from __future__ import annotations

import numpy as np

from baselines._deadline import (
    JobOptions,
    at_slot_start,
    new_arrivals,
    slot_of,
)
from baselines.dancer.knobs import DancerKnobs
from baselines.dancer.planning import DancerPlanning
from baselines.dancer.reservations import JobState, SlotLedger, best_extra_option
from hetgym.sim.allocation import Allocation, AllocationBuilder
from hetgym.sim.job import JobSpec
from hetgym.sim.policy import register_policy
from hetgym.sim.view import ClusterView, JobView


@register_policy()
class Dancer(DancerPlanning):
    """Dancer (Zhang et al., IEEE TCC 2025): primal-dual admission with exponential per-type prices and a DP.

    Paper: "Deadline-Aware Online Job Scheduling for Distributed Training in Heterogeneous Clusters",
    IEEE Transactions on Cloud Computing 13(2), 2025. Implemented as described in the module docstring
    and ``docs/deadline-policies.md``: decoupled allocation (per-type GPU counts per slot) and placement,
    admission by the online primal-dual rule, the DP dual subroutine, hard reservations, the
    work-conserving extra and the re-plan on drift. The objective, decomposition and technique are the
    paper's; every knob below is a reconstruction, with its default.
    """

    name = "dancer"
    knobs = DancerKnobs
    round_s = 60.0

    def _configure(self) -> None:
        self.round_s = float(self.knob_values.round_s)

    # ----------------------------------------------------------------------------------------
    # State

    def _reset(self) -> None:
        assert self.cluster is not None
        self._types = self.cluster.gpu_types
        self._cap = np.array([self.cluster.capacity[t] for t in self._types], dtype=np.int64)
        self._slot_s = self.round_s
        self._type_weight = np.ones(len(self._types))
        self._ledger = SlotLedger(len(self._types), self._slot_s)
        self._jobs: dict[int, JobState] = {}
        self._seen_L: float | None = None
        self._seen_U: float | None = None
        self._memo: dict[int, tuple[JobSpec, JobOptions]] = {}  # options by job (a function of its spec)
        counters = ("admitted", "rejected", "rejected_no_room", "rejected_price", "replans", "late", "trims")
        self.stats: dict[str, int] = dict.fromkeys((*counters, "dp_calls", "dp_retries"), 0)

    def committed(self, slot: int) -> dict[str, int]:
        """GPUs reserved per type in absolute slot ``slot`` (for tests and analysis)."""
        col = self._ledger.column(slot)
        if col is None:
            return dict.fromkeys(self._types, 0)
        return {t: int(col[i]) for i, t in enumerate(self._types)}

    def committed_window(self, first_slot: int, last_slot: int) -> np.ndarray:
        """``(K, n)`` reserved GPUs per type over absolute slots ``first_slot..last_slot``."""
        return self._ledger.window(first_slot, last_slot).copy()

    def plan_of(self, job_id: int) -> list[tuple[float, float, dict[str, int]]]:
        """The reserved schedule of an admitted job as ``(start_s, end_s, counts)`` segments."""
        st = self._jobs.get(job_id)
        if st is None or st.plan is None:
            return []
        return [
            (s, e, st.options.as_dict(o)) for s, e, o in zip(st.plan.starts, st.plan.ends, st.plan.options, strict=True)
        ]

    # ----------------------------------------------------------------------------------------
    # Decision

    def _order(self, view: ClusterView, ids: list[int]) -> list[int]:
        if self.knob_values.arrival_order == "fifo":
            return sorted(ids, key=lambda j: (view.job(j).submit_s, j))
        return sorted(ids, key=lambda j: (view.job(j).deadline_s, view.job(j).submit_s, j))

    def _admit(self, view: ClusterView, rejected: set[int], arrivals: list[int]) -> None:
        for jid in self._order(view, arrivals):
            job = view.job(jid)
            opts = self._options(view, job)
            value = float(job.spec.priority_weight)
            if not job.spec.has_deadline:
                self._jobs[jid] = JobState(opts, job.deadline_s, value, kind="best_effort")
                continue
            if len(opts) == 0:
                rejected.add(jid)
                self.stats["rejected"] += 1
                self.stats["rejected_no_room"] += 1
                continue
            if self.knob_values.price_auto:
                self._calibrate(view, job, opts, value)
            cost, plan = self.plan_job(view, job, opts)
            if plan is not None and cost <= value * (1.0 + 1e-9):
                st = JobState(opts, job.deadline_s, value, plan=plan)
                st.meta["admission_cost"] = cost
                self._jobs[jid] = st
                self._ledger.book(st, +1, view.now_s)
                self.stats["admitted"] += 1
            else:
                self.stats["rejected"] += 1
                self.stats["rejected_no_room" if plan is None else "rejected_price"] += 1
                if self.knob_values.rejected_jobs == "drop":
                    rejected.add(jid)
                else:
                    self._jobs[jid] = JobState(opts, job.deadline_s, value, kind="best_effort")

    def _rebuild(self, view: ClusterView, rejected: set[int]) -> None:
        """``memory="observed"``: plan every active job afresh from the view (see the module docstring)."""
        now_s = view.now_s
        self._ledger = SlotLedger(len(self._types), self._slot_s, slot_of(now_s, self._slot_s))
        self._jobs = {}
        active = view.job_index
        self._memo = {jid: hit for jid, hit in self._memo.items() if jid in active}
        if self.knob_values.price_auto:
            self._seen_L = self._seen_U = None
            for job in view.jobs:
                if job.spec.has_deadline:
                    self._calibrate(view, job, self._options(view, job), float(job.spec.priority_weight))
        new = new_arrivals(view)
        fresh = set(new)
        for jid in self._order(view, [j.job_id for j in view.jobs if j.job_id not in fresh]):
            job = view.job(jid)
            opts = self._options(view, job)
            value = float(job.spec.priority_weight)
            if not job.spec.has_deadline:
                self._jobs[jid] = JobState(opts, job.deadline_s, value, kind="best_effort")
                continue
            # Admitted before (it is still here): it keeps priority whatever its plan costs.
            _, plan = self.plan_job(view, job, opts)
            st = self._jobs[jid] = JobState(opts, job.deadline_s, value, plan=plan, kind="admitted" if plan else "late")
            self._ledger.book(st, +1, now_s)
        self._admit(view, rejected, new)

    def _replan_drifted(self, view: ClusterView) -> None:
        """At a slot boundary: trim plans that are ahead, re-plan those that are behind."""
        behind: list[tuple[float, int]] = []
        for job in view.jobs:
            st = self._jobs.get(job.job_id)
            if st is None or st.kind != "admitted" or st.plan is None:
                continue
            remaining = self._plan_remaining(view, job, st)
            gap = remaining - job.remaining_iters
            quantum = job.remaining_iters / self.knob_values.dp_quanta
            if gap < -1e-6 * max(job.remaining_iters, 1.0):
                behind.append((job.deadline_s, job.job_id))
            elif gap > 2.0 * quantum and self.knob_values.work_conserving_extra:
                self._trim(view, job, st, gap - quantum)
        for _, jid in sorted(behind)[: self.knob_values.max_replans_per_epoch]:
            job = view.job(jid)
            st = self._jobs[jid]
            self._ledger.book(st, -1, view.now_s)
            _, plan = self.plan_job(view, job, st.options)
            self.stats["replans"] += 1
            st.plan = plan
            if plan is None:
                st.kind = "late"
                self.stats["late"] += 1
            else:
                self._ledger.book(st, +1, view.now_s)

    def _best_extra(
        self,
        view: ClusterView,
        job: JobView,
        st: JobState,
        base: int,
        free: list[int],
        horizon_s: float,
    ) -> int:
        """The option (``base`` or a superset of it fitting in ``free`` more GPUs) with the most progress."""
        current = self._current_option(job, st.options)
        penalty = view.restart_penalty_s(job) if current >= 0 else self._start_penalty_s(view, job)
        return best_extra_option(
            job, st, base, free, horizon_s, current, penalty, not self.knob_values.allow_type_mix_in_slot
        )

    def schedule(self, view: ClusterView) -> Allocation:
        if self.knob_values.slot_origin == "decision":
            view = at_slot_start(view, view.round_s)  # slots follow the simulator's round, as below
        observed = self.knob_values.memory == "observed"
        if view.epoch == 0 or observed:
            # The simulator may fix another round length: slots follow it.
            self._slot_s = self._ledger.slot_s = float(view.round_s)
            if self.knob_values.price_scale == "speed":
                speed = np.array([view.throughput.speed_index.get(t, 1.0) for t in self._types])
                self._type_weight = speed / speed.max()
        now_slot = slot_of(view.now_s, self._slot_s)
        rejected: set[int] = set()
        if observed:
            self._rebuild(view, rejected)
        else:
            self._ledger.advance(now_slot)
            active = view.job_index
            for jid in [j for j in self._jobs if j not in active]:
                self._ledger.book(self._jobs.pop(jid), -1, view.now_s)
            self._admit(view, rejected, list(view.arrived))
            if view.is_tick:
                self._replan_drifted(view)

        builder = AllocationBuilder(view)
        for jid in rejected:
            builder.reject(jid)
        base: dict[int, int] = {}
        edf = sorted(
            (j for j in view.jobs if j.job_id in self._jobs),
            key=lambda j: (j.deadline_s, j.submit_s, j.job_id),
        )
        for job in edf:
            st = self._jobs[job.job_id]
            if st.kind == "admitted" and st.plan is not None:
                o = st.plan.option_at(view.now_s)
                base[job.job_id] = o
                if o >= 0:
                    builder.assign(job.job_id, st.allocation(o))
        if not self.knob_values.work_conserving_extra:
            edf = [j for j in edf if self._jobs[j.job_id].kind != "admitted"]
        free = [builder.free[t] for t in self._types]
        slot_end = (now_slot + 1) * self._slot_s
        horizon = slot_end - view.now_s + self.knob_values.extra_lookahead_s
        for rank in ("admitted", "late", "best_effort"):
            for job in edf:
                st = self._jobs[job.job_id]
                if st.kind != rank or not any(free):
                    continue
                b = base.get(job.job_id, -1)
                o = self._best_extra(view, job, st, b, free, horizon)
                if o == b:
                    continue
                old_row = st.rows[b] if b >= 0 else (0,) * len(free)
                free = [f + n_old - n for f, n_old, n in zip(free, old_row, st.rows[o], strict=True)]
                builder.assign(job.job_id, st.allocation(o))
        return builder.build()


__all__ = ["Dancer"]
