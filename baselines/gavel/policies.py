"""Gavel's heterogeneity-aware policies: max-min fairness, finish-time fairness, minimum total duration.

Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning Workloads",
OSDI 2020 (code: ``stanford-futuredata/gavel``, ``scheduler/policies/*.py`` and ``scheduler/scheduler.py``).

Each policy is an optimisation problem over the allocation matrix ``X[m, k]``: the fraction of wall
time job ``m`` should spend on GPU type ``k``. With ``T[m, k]`` the job's throughput on type ``k``,
``s_m`` its scale factor (requested GPUs) and ``N_k`` the GPUs of type ``k``, every policy shares the
base constraints ``X >= 0``, ``sum_k X[m, k] <= 1`` and ``sum_m s_m X[m, k] <= N_k``:

* **max-min fairness** (``MaxMinFairnessPolicyWithPerf``): maximise ``min_m sum_k T[m,k] s_m X[m,k] /
  (w_m T_prop[m])``, where ``T_prop[m] = sum_k T[m,k] N_k / sum_k N_k`` is the throughput under the
  proportional split and ``w_m`` the job's priority weight. One LP (an epigraph variable for the min).
* **finish-time fairness** (``FinishTimeFairnessPolicyWithPerf``): minimise ``max_m rho_m(X)``,
  ``rho_m = (t_m + rem_m / sum_k T[m,k] X[m,k]) / (c_m + rem_m / T_iso[m])``, with ``t_m`` the time
  since arrival, ``rem_m`` the remaining iterations, ``T_iso[m]`` the throughput under an even
  ``1/#jobs`` split of every type and ``c_m`` the accumulated isolated-equivalent time. ``rho`` is
  quasi-convex in ``X``: for a fixed ``rho`` feasibility is linear (``sum_k T X >= rem / (rho D - t)``),
  so it is solved by bisection on ``rho`` over LPs (Gavel uses a convex solver instead), between the
  bound of every job alone on its best type and the isolated split (feasible). When these already
  agree within the tolerance (one job's ``rho`` is fixed by how long it has waited), the min-max
  optimum is degenerate and the isolated split is returned without an LP.
* **minimum total duration** (``min_total_duration.py``): the smallest ``T*`` such that every job can
  finish by ``T*`` (``sum_k T[m,k] X[m,k] >= rem_m / T*``). Gavel bisects ``T*`` over feasibility LPs
  (window 100 s to 1e6 s, stop at 5%); here ``1 / T*`` is maximised in one exact LP (``method="lp"``,
  default) or with Gavel's bisection (``method="bisection"``). The returned rows are scaled down so
  that every job is predicted to finish exactly at ``T*`` (Gavel returns an arbitrary feasible point).

The **round mechanism** (``_update_priorities``, ``_schedule_jobs_on_workers_helper``) turns ``X``
into per-round assignments: ``priority[m, k] = X[m, k] / fraction[m, k]`` (``X * 1e9`` when the
fraction is 0), with ``fraction[m, k]`` the job's share of the time run on type ``k`` since the
last reset (counters start at half a round per job, as in Gavel); per type, in the order
V100, P100, K80 (fastest first; shuffled every round for the agnostic variants), entries sorted by
(priority, deficit, allocation) descending are scheduled greedily if the job's scale factor fits in
the type's free GPUs, each job at most once per round and never on a type where its throughput is 0.
Entries with zero priority still take leftover GPUs, as in Gavel (work conserving), after every
positive-priority entry (``zero_priority_last``). The allocation
is recomputed after arrivals and completions, but, as in Gavel's scheduler, at a round boundary and
at most every ``min_recompute_interval_s`` (Gavel's ``minimum_time_between_allocation_resets``,
1,920 s); at each recompute the deficits accumulate ``X * elapsed - time received``. Jobs that arrive
between recomputes have no allocation yet and here take leftover GPUs; this is a deviation: Gavel's
``_schedule_jobs_on_workers`` assigns no workers to a job missing from the current allocation, so such
a job waits for the next reset (as it does under ``SimConfig(compat="gavel")``, see :class:`GavelPolicy`).

**Heterogeneity-agnostic variants** (``MaxMinFairnessPolicy``, ``FinishTimeFairnessPolicy``): the LP
sees ``T = 1`` on every usable type (max-min fairness) or the job's rate on the reference type
(V100 in Gavel; here the cluster's fastest type by speed index) on every usable type (finish-time
fairness, minimum total duration), and the per-round type order is shuffled.

Throughputs: ``T[m, k] = view.rate(job, k, s_m)``, iterations/s of the job's global batch on its
requested count of type ``k`` (the table's whole-job rates; see ``hetgym/data/NOTICE.md``). A type
with fewer GPUs than ``s_m`` in total, or where the job's rate is 0, is unusable (``X = 0`` there).
Jobs usable on no single type are left out of the LPs and never scheduled.

Deviations and reconstructions (each a knob):

* ``fill_between_rounds`` (default ``True``): on arrivals and completions inside a round, waiting
  jobs take free GPUs by the same priority order without preempting anyone. Gavel's simulator only
  assigns at round boundaries; set ``False`` for that behaviour. The Hadar policies and the classic
  baselines also react to events, so the comparison is like for like.
* ``isolated_normalisation`` (default ``"row"``): the isolated split ``N_k / (M s_m)`` is capped at
  1 per row (Themis' even share), as Gavel's ``IsolatedPolicy`` does (``x / max(row sum, 1)`` row by
  row). ``"global"`` divides every row by the largest row sum instead, which also scales shares *up*
  on a contended cluster and gives multi-GPU jobs less than a full share on an uncontended one.
* ``zero_priority_last`` (default ``True``): zero-priority (leftover) entries come after every
  positive-priority entry. In Gavel's code the per-type queues are concatenated, so on an uncontended
  cluster a job whose allocation is all on P100 is still placed on a free V100 first (V100's queue is
  processed first and leftover entries are scheduled); ``False`` restores that.
* Time fractions count the wall time a job held GPUs of a type (its restart penalty included).

Layout, as Gavel's code divides it: this module holds the policies (the LP objectives' dispatch and
FIFO's type choice, Gavel's ``scheduler/policies/``); the round mechanism they all run over (Gavel's
``scheduler/scheduler.py``) is :mod:`baselines.gavel.rounds`, the LPs themselves
:mod:`baselines.gavel.lp` and finish-time fairness's analytic centre :mod:`baselines.gavel.centre`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np

from baselines.gavel.centre import ftf_analytic_centre
from baselines.gavel.lp import (
    LPSolver,
    isolated_allocation,
    solve_finish_time_fairness,
    solve_max_min_fairness,
    solve_min_total_duration,
)
from baselines.gavel.rounds import GavelRoundKnobs, GavelRounds
from hetgym.sim.policy import register_policy
from hetgym.sim.registry import Knobs, knob
from hetgym.sim.view import ClusterView, JobView

#: How far above the optimal max rho the analytic centre of finish-time fairness is taken (relative).
FTF_CENTRE_MARGIN = 1e-6

Objective = Literal["max_min_fairness", "finish_time_fairness", "min_total_duration", "fifo"]
OBJECTIVES: tuple[str, ...] = ("max_min_fairness", "finish_time_fairness", "min_total_duration")

# --------------------------------------------------------------------------------------------
# The policies


@dataclass(frozen=True)
class GavelKnobs(GavelRoundKnobs):
    """Knobs of the Gavel LP policies (:class:`GavelPolicy`): the round mechanism's, and the LPs'."""

    heterogeneity_aware: bool | None = knob(
        None,
        doc="use the measured per-type throughputs (``True``) or Gavel's agnostic substitutes (all-ones for "
        "max-min fairness, the reference type's rate otherwise); ``None``: the policy's own choice",
    )
    zero_priority_last: bool = knob(
        True,
        doc="consider every entry with a positive priority before any zero-priority (leftover) entry; ``False`` "
        "is Gavel's code, where a job's zero-priority entry on an earlier type can take GPUs before its allocated "
        "type is considered",
    )
    isolated_normalisation: Literal["row", "global"] = knob(
        "row",
        choices=("row", "global"),
        doc="``'row'`` (Gavel's code) or ``'global'``: finish-time fairness's isolated split",
    )
    ftf_tolerance: float = knob(
        1e-3,
        low=0.0,
        low_open=True,
        high=1.0,
        high_open=True,
        doc="relative tolerance of the finish-time-fairness bisection",
    )
    makespan_method: Literal["lp", "bisection"] = knob(
        "lp", choices=("lp", "bisection"), doc="``'lp'`` (exact) or ``'bisection'`` (Gavel's)"
    )
    reference_type: str | None = knob(
        None,
        doc="GPU type whose rate the agnostic finish-time-fairness and makespan LPs use on every type (``None``: "
        "the cluster's fastest type by speed index, V100 on Gavel's cluster)",
    )
    lp_solver: LPSolver = knob(
        "ipm",
        choices=("ipm", "simplex"),
        doc="``'ipm'`` (HiGHS interior point without crossover; non-vertex optima like Gavel's ECOS) or ``'simplex'``",
    )
    ftf_point: Literal["auto", "solver", "centre"] = knob(
        "auto",
        choices=("auto", "solver", "centre"),
        doc="which optimal allocation finish-time fairness returns: ``'solver'`` (the point of the bisection's last "
        "feasibility LP), ``'centre'`` (the analytic centre of the allocations within ``FTF_CENTRE_MARGIN`` of the "
        "optimum, :mod:`baselines.gavel.centre`, the point an interior-point solver such as Gavel's ECOS returns) "
        "or ``'auto'`` (the centre under ``SimConfig(compat='gavel')``, the solver's point otherwise)",
    )


class GavelPolicy(GavelRounds):
    """Gavel's round-based mechanism over one of its LP policies (base class; see the module docstring).

    Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning Workloads",
    OSDI 2020. Implemented: the max-min fairness, finish-time fairness and minimum-total-duration
    policies (heterogeneity-aware ``*_perf`` and agnostic versions) and the priority-based round
    mechanism. Reconstructions / deviations: ``fill_between_rounds``, ``zero_priority_last``,
    ``isolated_normalisation`` and the exact-LP makespan (see the module docstring); no space sharing
    (packing) and no lease extensions.

    Under ``SimConfig(compat="gavel")`` the policy follows Gavel's code whatever its knobs say: no
    filling between rounds, zero-priority entries in each type's queue (``zero_priority_last=False``),
    Gavel's isolated split (each row capped at 1), the recompute gate (a job that arrived since the last recompute
    gets no GPUs until the next one, and a zero-priority entry of such a job still uses up GPUs of
    its type for the round, as in ``_schedule_jobs_on_workers``), a recompute allowed at any round
    while the last one was at t=0, and one forced when a round ran nothing and no job is still to
    arrive. Each job's time counters grow by its own micro-task time, ``floor(T x round) / T`` steps
    over its throughput, plus any idle time before its round, as Gavel's ``_done_callback`` counts it
    (in Gavel's floating-point order: the task's end minus the last round's end);
    finish-time fairness returns the analytic centre of its optimal allocations (``ftf_point="auto"``);
    and the agnostic policies give every type with enough GPUs the substitute throughput, even a type
    where the job's measured figure is 0, as Gavel's do.
    """

    name: ClassVar[str] = "gavel"
    knobs: ClassVar[type[Knobs] | None] = GavelKnobs
    objective: ClassVar[Objective] = "max_min_fairness"
    default_aware: ClassVar[bool] = True

    knob_values: GavelKnobs

    def _configure(self) -> None:
        aware = self.knob_values.heterogeneity_aware
        self.heterogeneity_aware = self.default_aware if aware is None else bool(aware)
        # Without the measured throughputs the GPU types are shuffled (by the run's seed) at each pass.
        self.randomised = not self.heterogeneity_aware
        # Leftover GPUs go to zero-priority entries (Gavel is work conserving); between rounds only
        # when waiting jobs may take free GPUs at events.
        self.keeps_gpus_busy = self.knob_values.fill_between_rounds

    def _positive_first(self) -> bool:
        return self.knob_values.zero_priority_last

    # ----------------------------------------------------------------------------------------
    def _reset(self) -> None:
        super()._reset()
        self._cum_isolated_s: dict[int, float] = {}
        self._prev_remaining: dict[int, float] = {}
        self._prev_isolated: dict[int, float] = {}
        #: Recomputes where the analytic centre was asked for but not found (the LP's point was used).
        self.num_centre_fallbacks = 0
        self.last_solution: object | None = None
        if self.knob_values.reference_type is not None:
            assert self.cluster is not None
            self.cluster.check_gpu_type(self.knob_values.reference_type)

    def _forget_job(self, job_id: int) -> None:
        super()._forget_job(job_id)
        self._cum_isolated_s.pop(job_id, None)
        self._prev_remaining.pop(job_id, None)
        self._prev_isolated.pop(job_id, None)

    def _lp_rates(self, view: ClusterView, jobs: Sequence[JobView], real: np.ndarray) -> np.ndarray:
        """The throughput matrix the LP sees (real, or Gavel's agnostic substitute)."""
        if self.heterogeneity_aware:
            return real
        usable = real > 0
        if self._compat:
            # Gavel's agnostic policies give every type the substitute figure, even one the job cannot use.
            usable = np.array([[self._capacity[i] >= j.num_gpus for i in range(len(self._types))] for j in jobs])
        if self.objective == "max_min_fairness":
            return usable.astype(float)
        ref = self.knob_values.reference_type or max(self._types, key=lambda t: view.throughput.speed_index.get(t, 0.0))
        ref_rates = np.array([view.rate(j, ref, j.num_gpus) for j in jobs])
        fallback = real.max(axis=1)
        ref_rates = np.where(ref_rates > 0, ref_rates, fallback)
        return usable * ref_rates[:, None]

    def _compute_allocation(self, view: ClusterView) -> dict[int, np.ndarray]:
        if self.objective == "max_min_fairness" and self.heterogeneity_aware:
            return self._max_min_fairness()
        jobs = [j for j in view.jobs if self._job_rates(view, j).max() > 0]
        if not jobs:
            return {}
        real = np.vstack([self._job_rates(view, j) for j in jobs])
        rates = self._lp_rates(view, jobs, real)
        scale = np.array([j.num_gpus for j in jobs], dtype=float)
        if self.objective == "max_min_fairness":
            weights = np.array([j.spec.priority_weight for j in jobs])
            x = solve_max_min_fairness(rates, scale, self._capacity, weights, solver=self.knob_values.lp_solver)
            self.last_solution = x
        elif self.objective == "finish_time_fairness":
            x = self._solve_ftf(view, jobs, rates, scale)
        else:
            rem = np.array([j.remaining_iters for j in jobs])
            sol = solve_min_total_duration(
                rates,
                scale,
                self._capacity,
                rem,
                method=self.knob_values.makespan_method,
                solver=self.knob_values.lp_solver,
            )
            self.last_solution = sol
            x = sol.allocation
        return {j.job_id: x[i] for i, j in enumerate(jobs)}

    def _max_min_fairness(self) -> dict[int, np.ndarray]:
        """The heterogeneity-aware max-min fairness LP over the per-job state (rates, GPUs and weights kept
        for every active job, in submission order), without the jobs' views."""
        rates_of = self._rates
        ids = [jid for jid in self._job_time if rates_of[jid].max() > 0]
        if not ids:
            return {}
        rows = self._rows_of(ids)
        weights = np.array([self._weight[jid] for jid in ids])
        x = solve_max_min_fairness(
            self._rates_m[rows],
            self._scale_v[rows].astype(float),
            self._capacity,
            weights,
            solver=self.knob_values.lp_solver,
        )
        self.last_solution = x
        return dict(zip(ids, x, strict=True))

    def _solve_ftf(
        self, view: ClusterView, jobs: Sequence[JobView], rates: np.ndarray, scale: np.ndarray
    ) -> np.ndarray:
        normalisation = "row" if self._compat else self.knob_values.isolated_normalisation
        x_iso = isolated_allocation(scale, self._capacity, normalisation) * (rates > 0)
        iso = (rates * x_iso).sum(axis=1)
        iso = np.where(iso > 0, iso, rates.max(axis=1) / max(1.0, float(len(jobs))))
        rem = np.array([j.remaining_iters for j in jobs])
        for i, j in enumerate(jobs):
            jid = j.job_id
            if jid in self._prev_remaining:
                self._cum_isolated_s[jid] = (
                    self._cum_isolated_s.get(jid, 0.0)
                    + max(0.0, self._prev_remaining[jid] - rem[i]) / self._prev_isolated[jid]
                )
            self._prev_remaining[jid] = float(rem[i])
            self._prev_isolated[jid] = float(iso[i])
        cum = np.array([self._cum_isolated_s.get(j.job_id, 0.0) for j in jobs])
        elapsed = np.array([view.now_s - j.submit_s for j in jobs])
        sol = solve_finish_time_fairness(
            rates,
            scale,
            self._capacity,
            elapsed,
            rem,
            iso,
            cum,
            tolerance=self.knob_values.ftf_tolerance,
            solver=self.knob_values.lp_solver,
        )
        self.last_solution = sol
        if self.knob_values.ftf_point == "centre" or (self.knob_values.ftf_point == "auto" and self._compat):
            # The interior-point answer Gavel's ECOS gives: the centre of the allocations within a hair of
            # the optimum, not the point the bisection's last LP happened to return.
            rho = sol.rho_max * (1.0 + FTF_CENTRE_MARGIN)
            slack = rho * (cum + rem / iso) - elapsed
            if np.all(slack > 0):
                centre = ftf_analytic_centre(rates, scale, self._capacity, rem / slack)
                if centre is not None:
                    return centre
            self.num_centre_fallbacks += 1
        return sol.allocation


@dataclass(frozen=True)
class GavelFifoKnobs(GavelRoundKnobs):
    """Knobs of :class:`GavelFifo`: the round mechanism's, and the type choice."""

    type_choice: str = knob(
        "gavel-code",
        choices=("gavel-code", "random"),
        doc="how a job's GPU type is chosen: as Gavel's code does (``'gavel-code'``) or as it intends (``'random'``)",
    )


@register_policy()
class GavelFifo(GavelRounds):
    """Gavel's ``fifo`` policy (``FIFOPolicy`` in its default ``base`` mode) over the round mechanism.

    Narayanan et al., OSDI 2020 (``scheduler/policies/fifo.py``). At each allocation recompute, jobs
    without a type are taken in arrival order; a completed job's type first goes to the head of the
    queue if it fits there; then each queued job gets a type while some type still has room for its
    GPUs. The allocation is 1 on that type; the round mechanism gives GPUs by priority
    ``1 / fraction of time received`` and never schedules a zero-priority entry, so jobs sharing a
    type take turns when it is oversubscribed. The type order of the rounds is shuffled (the policy
    is not a ``Perf`` one).

    ``type_choice="gavel-code"`` (default) reproduces Gavel's code: the seeded random draw among the
    types with room is made but not used, and the job goes to the alphabetically last type that had
    a free GPU when the pass began (a leftover loop variable), even when its GPUs no longer fit, so
    that type is oversubscribed. The draw still decides which type leaves the list when one is
    exactly full. ``"random"`` uses the draw, as the code intends. Under ``SimConfig(compat="gavel")``
    the draws use Python's ``random.Random(seed)`` as Gavel's ``--seed`` does.
    """

    name = "gavel-fifo"
    knobs = GavelFifoKnobs
    skips_zero_priority = True

    knob_values: GavelFifoKnobs
    # Gavel's FIFO is not a ``Perf`` policy: it sees no throughputs, so the type order of a round is shuffled.
    heterogeneity_aware = False
    randomised = True

    def _reset(self) -> None:
        super()._reset()
        self._fifo_types: dict[int, int] = {}
        self._fifo_rng: random.Random | None = None

    def _compute_allocation(self, view: ClusterView) -> dict[int, np.ndarray]:
        if self._fifo_rng is None:
            self._fifo_rng = random.Random(view.config.seed)
        rng = self._fifo_rng
        # The active jobs' GPUs and rates from the per-job state (kept for every active job), not their views.
        rates, gpus_of = self._rates, self._scale
        active = {jid for jid in self._job_time if rates[jid].max() > 0}
        names = self._types
        free = {k: int(c) for k, c in enumerate(self._capacity)}
        chosen = self._fifo_types
        queue = sorted(jid for jid in active if jid not in chosen)
        for jid in sorted(chosen):
            k = chosen[jid]
            if jid in active:
                free[k] -= gpus_of[jid]
                continue
            # A completed job's type goes to the head of the queue if it fits there.
            if queue:
                head = queue[0]
                if gpus_of[head] <= free[k] and rates[head][k] > 0:
                    queue.pop(0)
                    chosen[head] = k
                    free[k] -= gpus_of[head]
            del chosen[jid]
        open_types = sorted((k for k in free if free[k] > 0), key=lambda k: names[k])
        while queue and open_types:
            jid = queue.pop(0)
            need = gpus_of[jid]
            fits = [i for i, k in enumerate(open_types) if free[k] >= need]
            if not fits:
                break
            draw = rng.randrange(len(fits))
            k = open_types[-1] if self.knob_values.type_choice == "gavel-code" else open_types[fits[draw]]
            if rates[jid][k] > 0:
                chosen[jid] = k
                free[k] -= need
                if free[k] == 0:
                    open_types.pop(fits[draw])
        allocation: dict[int, np.ndarray] = {}
        for jid, k in chosen.items():
            if jid in active:
                row = np.zeros(len(names))
                row[k] = 1.0
                allocation[jid] = row
        return allocation


@register_policy()
class GavelMaxMinFairness(GavelPolicy):
    """Gavel's heterogeneity-aware max-min fairness (LAS) over the round mechanism.

    Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning Workloads",
    OSDI 2020 (``MaxMinFairnessPolicyWithPerf``). See :class:`GavelPolicy` for the knobs and the
    module docstring for what is reconstructed.
    """

    name = "gavel-mmf"
    objective = "max_min_fairness"


@register_policy()
class GavelFinishTimeFairness(GavelPolicy):
    """Gavel's heterogeneity-aware finish-time fairness over the round mechanism.

    Narayanan et al., OSDI 2020 (``FinishTimeFairnessPolicyWithPerf``, after Themis). Solved by
    bisection on rho over LPs. See :class:`GavelPolicy` for the knobs.
    """

    name = "gavel-ftf"
    objective = "finish_time_fairness"


@register_policy()
class GavelMinTotalDuration(GavelPolicy):
    """Gavel's heterogeneity-aware minimum total duration (makespan) over the round mechanism.

    Narayanan et al., OSDI 2020 (``min_total_duration.py``). Exact LP on ``1/T*`` by default. See
    :class:`GavelPolicy` for the knobs.
    """

    name = "gavel-makespan"
    objective = "min_total_duration"


@register_policy()
class GavelMaxMinFairnessAgnostic(GavelPolicy):
    """Gavel's heterogeneity-agnostic max-min fairness (all throughputs 1, shuffled type order).

    Narayanan et al., OSDI 2020 (``MaxMinFairnessPolicy``). See :class:`GavelPolicy`.
    """

    name = "gavel-mmf-agnostic"
    in_default_comparison = False  # a variant: name it in --policies to compare it
    objective = "max_min_fairness"
    default_aware = False


@register_policy()
class GavelFinishTimeFairnessAgnostic(GavelPolicy):
    """Gavel's heterogeneity-agnostic finish-time fairness (reference-type rate on every type).

    Narayanan et al., OSDI 2020 (``FinishTimeFairnessPolicy``). See :class:`GavelPolicy`.
    """

    name = "gavel-ftf-agnostic"
    in_default_comparison = False  # a variant: name it in --policies to compare it
    objective = "finish_time_fairness"
    default_aware = False


@register_policy()
class GavelMinTotalDurationAgnostic(GavelPolicy):
    """Heterogeneity-agnostic minimum total duration (reference-type rate on every type).

    Narayanan et al., OSDI 2020 (``min_total_duration.py`` fed agnostic throughputs, as Gavel's
    agnostic finish-time fairness does). See :class:`GavelPolicy`.
    """

    name = "gavel-makespan-agnostic"
    in_default_comparison = False  # a variant: name it in --policies to compare it
    objective = "min_total_duration"
    default_aware = False


__all__ = [
    "OBJECTIVES",
    "GavelFifo",
    "GavelFifoKnobs",
    "GavelFinishTimeFairness",
    "GavelFinishTimeFairnessAgnostic",
    "GavelKnobs",
    "GavelMaxMinFairness",
    "GavelMaxMinFairnessAgnostic",
    "GavelMinTotalDuration",
    "GavelMinTotalDurationAgnostic",
    "GavelPolicy",
    "Objective",
]
