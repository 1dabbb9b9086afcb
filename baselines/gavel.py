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
between recomputes have no allocation yet and only take leftover GPUs.

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
  1 per row (Themis' even share). Gavel divides every row by the largest row sum (``"global"``), which
  also scales shares *up* on a contended cluster and gives multi-GPU jobs less than a full share on an
  uncontended one.
* ``zero_priority_last`` (default ``True``): zero-priority (leftover) entries come after every
  positive-priority entry. In Gavel's code the per-type queues are concatenated, so on an uncontended
  cluster a job whose allocation is all on P100 is still placed on a free V100 first (V100's queue is
  processed first and leftover entries are scheduled); ``False`` restores that.
* Time fractions count the wall time a job held GPUs of a type (its restart penalty included).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
import scipy.sparse as sp
from scipy.optimize import OptimizeWarning, linprog

from hetgym.sim.allocation import Allocation, AllocationBuilder, JobAllocation
from hetgym.sim.job import JobStatus
from hetgym.sim.policy import Policy, register_policy
from hetgym.sim.view import ClusterView, JobView

#: Gavel's round length (``time_per_iteration``).
GAVEL_ROUND_S = 360.0
#: Gavel's ``minimum_time_between_allocation_resets``.
GAVEL_MIN_RESET_INTERVAL_S = 1920.0
#: Gavel's priority for a job with an allocation that has received no time yet (``X * 1e9``).
_UNSERVED_PRIORITY = 1e9

Objective = Literal["max_min_fairness", "finish_time_fairness", "min_total_duration"]
LPSolver = Literal["ipm", "simplex"]
OBJECTIVES: tuple[str, ...] = ("max_min_fairness", "finish_time_fairness", "min_total_duration")


class LPError(RuntimeError):
    """The LP solver failed on a problem that should always be feasible."""


# --------------------------------------------------------------------------------------------
# The LPs (pure functions over arrays, usable on their own)


def _base_constraints(scale: np.ndarray, capacity: np.ndarray, num_types: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """``sum_k X[m,k] <= 1`` per job and ``sum_m s_m X[m,k] <= N_k`` per type, over ``X`` flattened row-major."""
    m = scale.size
    n_var = m * num_types
    cols = np.arange(n_var)
    rows_job = np.repeat(np.arange(m), num_types)
    a_job = sp.csr_matrix((np.ones(n_var), (rows_job, cols)), shape=(m, n_var))
    rows_type = np.tile(np.arange(num_types), m)
    a_type = sp.csr_matrix((np.repeat(scale.astype(float), num_types), (rows_type, cols)), shape=(num_types, n_var))
    a = sp.vstack([a_job, a_type], format="csr")
    b = np.concatenate([np.ones(m), capacity.astype(float)])
    return a, b


def _x_bounds(usable: np.ndarray) -> np.ndarray:
    upper = np.where(usable.ravel(), 1.0, 0.0)
    return np.column_stack([np.zeros_like(upper), upper])


def _solve(
    c: np.ndarray,
    a_ub: sp.csr_matrix,
    b_ub: np.ndarray,
    bounds: np.ndarray,
    what: str,
    solver: LPSolver = "ipm",
) -> tuple[np.ndarray | None, int]:
    """Solve with HiGHS: interior point without crossover (``ipm``) or dual simplex (``simplex``).

    The interior-point answer is not a vertex: like Gavel's ECOS solutions it spreads time over the
    jobs of a degenerate optimum instead of giving some of them nothing. A failed interior-point
    solve (numerical trouble) is retried with the simplex method.
    """
    if solver == "ipm":
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Unrecognized options", category=OptimizeWarning)
            res = linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs-ipm", options={"run_crossover": "off"})
        if res.status in (0, 2):
            return (np.asarray(res.x), 0) if res.status == 0 else (None, 2)
    elif solver != "simplex":
        raise ValueError(f"solver={solver!r}; use 'ipm' or 'simplex'")
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs-ds")
    if res.status == 0:
        return np.asarray(res.x), 0
    if res.status == 2:  # infeasible
        return None, 2
    raise LPError(f"{what}: HiGHS returned status {res.status} ({res.message})")


def _check_inputs(rates: np.ndarray, scale: np.ndarray, capacity: np.ndarray) -> None:
    if rates.ndim != 2 or rates.shape[0] != scale.size or rates.shape[1] != capacity.size:
        raise ValueError(f"rates must be (jobs x types) = ({scale.size} x {capacity.size}), got shape {rates.shape}")
    if np.any(rates < 0) or not np.all(np.isfinite(rates)):
        raise ValueError("rates must be finite and >= 0")
    if np.any(scale < 1):
        raise ValueError("scale factors must be >= 1")


def proportional_rates(rates: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Throughput of each job under Gavel's proportional split ``X[m,k] = N_k / sum N`` (``proportional.py``)."""
    share = capacity / capacity.sum()
    return rates @ share


def isolated_allocation(
    scale: np.ndarray, capacity: np.ndarray, normalisation: Literal["row", "global"] = "row"
) -> np.ndarray:
    """The even ``1/#jobs`` split of every type as time fractions: ``N_k / (M s_m)`` (``isolated.py``).

    ``row`` caps each row's sum at 1; ``global`` divides every row by the largest row sum (Gavel).
    """
    m = scale.size
    x = np.outer(1.0 / scale, capacity / m)
    sums = x.sum(axis=1)
    if normalisation == "row":
        return x / np.maximum(1.0, sums)[:, None]
    if normalisation == "global":
        return x / sums.max()
    raise ValueError(f"normalisation={normalisation!r}; use 'row' or 'global'")


def solve_max_min_fairness(
    rates: np.ndarray,
    scale: np.ndarray,
    capacity: np.ndarray,
    priority_weights: np.ndarray | None = None,
    *,
    solver: LPSolver = "ipm",
) -> np.ndarray:
    """Gavel's max-min fairness LP; returns ``X`` (jobs x types).

    Jobs with identical rates, scale factor and weight are solved as one class (one row of ``X``
    scaled by the class size in the capacity constraints). This is exact: the LP is symmetric in
    such jobs and convex, so averaging an optimal solution over them is optimal too. Gavel-Philly
    traces have at most 26 templates x 4 scale factors, so 1,000 jobs become about 100 rows.

    Args:
        rates: ``T[m, k]`` (0 where the job cannot run).
        scale: Requested GPUs per job.
        capacity: GPUs per type.
        priority_weights: Per-job weights (default 1); a larger weight gets a larger share.
        solver: ``"ipm"`` (default) or ``"simplex"``.
    """
    rates = np.asarray(rates, dtype=float)
    scale = np.asarray(scale, dtype=float)
    capacity = np.asarray(capacity, dtype=float)
    _check_inputs(rates, scale, capacity)
    m, k = rates.shape
    if m == 0:
        return np.zeros((0, k))
    weights = np.ones(m) if priority_weights is None else np.asarray(priority_weights, dtype=float)
    t_prop = proportional_rates(rates, capacity)
    if np.any(t_prop <= 0):
        raise ValueError("every job needs a positive rate on some type (drop unusable jobs first)")
    keys = np.column_stack([rates, scale, weights])
    uniq, cls, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    cls = cls.ravel()
    c_rates, c_scale, c_weight = uniq[:, :k], uniq[:, k], uniq[:, k + 1]
    c_prop = proportional_rates(c_rates, capacity)
    coef = c_rates * (c_scale / (c_weight * c_prop))[:, None]
    n_cls = uniq.shape[0]
    n_x = n_cls * k
    # Capacity counts every job of a class: sum_c n_c s_c X[c, k] <= N_k.
    a_base, b_base = _base_constraints(c_scale * counts, capacity, k)
    # z - sum_k coef[c,k] X[c,k] <= 0 for every class: z is the minimum normalised share.
    a_min = sp.hstack([-_block_rows(coef), sp.csr_matrix(np.ones((n_cls, 1)))], format="csr")
    a_ub = sp.vstack([sp.hstack([a_base, sp.csr_matrix((a_base.shape[0], 1))]), a_min], format="csr")
    b_ub = np.concatenate([b_base, np.zeros(n_cls)])
    c = np.zeros(n_x + 1)
    c[-1] = -1.0
    bounds = np.vstack([_x_bounds(c_rates > 0), [[0.0, np.inf]]])
    x, status = _solve(c, a_ub, b_ub, bounds, "max-min fairness LP", solver)
    if x is None:
        raise LPError(f"max-min fairness LP infeasible (status {status}); this is a bug")
    return np.clip(x[:n_x].reshape(n_cls, k), 0.0, 1.0)[cls]


def _block_rows(coef: np.ndarray) -> sp.csr_matrix:
    """The (jobs x jobs*types) matrix whose row m holds ``coef[m, :]`` at columns ``m*K .. m*K+K-1``."""
    m, k = coef.shape
    rows = np.repeat(np.arange(m), k)
    cols = np.arange(m * k)
    return sp.csr_matrix((coef.ravel(), (rows, cols)), shape=(m, m * k))


def _feasible_with_min_rates(
    rates: np.ndarray,
    scale: np.ndarray,
    capacity: np.ndarray,
    min_rates: np.ndarray,
    what: str,
    solver: LPSolver = "ipm",
) -> np.ndarray | None:
    """An ``X`` meeting the base constraints and ``sum_k T X >= min_rates`` per job, or ``None``."""
    m, k = rates.shape
    if np.any(min_rates > rates.max(axis=1) * (1 + 1e-12)):
        return None  # a job would need more than its full time on its best type
    a_base, b_base = _base_constraints(scale, capacity, k)
    a_ub = sp.vstack([a_base, -_block_rows(rates)], format="csr")
    b_ub = np.concatenate([b_base, -min_rates])
    x, _ = _solve(np.zeros(m * k), a_ub, b_ub, _x_bounds(rates > 0), what, solver)
    return None if x is None else np.clip(x.reshape(m, k), 0.0, 1.0)


@dataclass(frozen=True)
class FTFSolution:
    """Result of :func:`solve_finish_time_fairness`.

    Attributes:
        allocation: ``X`` (jobs x types).
        rho: Predicted finish-time fairness of each job under ``X``.
        rho_max: The minimised maximum (an upper bound within the bisection tolerance).
        num_lps: LPs solved.
    """

    allocation: np.ndarray
    rho: np.ndarray
    rho_max: float
    num_lps: int


def finish_time_rho(
    allocation: np.ndarray,
    rates: np.ndarray,
    elapsed_s: np.ndarray,
    remaining_iters: np.ndarray,
    isolated_s: np.ndarray,
) -> np.ndarray:
    """``rho_m = (t_m + rem_m / sum_k T X) / isolated_s_m`` (inf where the job gets no throughput)."""
    thr = (rates * allocation).sum(axis=1)
    with np.errstate(divide="ignore"):
        return (elapsed_s + np.where(thr > 0, remaining_iters / np.maximum(thr, 1e-300), np.inf)) / isolated_s


def solve_finish_time_fairness(
    rates: np.ndarray,
    scale: np.ndarray,
    capacity: np.ndarray,
    elapsed_s: np.ndarray,
    remaining_iters: np.ndarray,
    isolated_rates: np.ndarray,
    cumulative_isolated_s: np.ndarray | None = None,
    *,
    tolerance: float = 1e-3,
    max_lps: int = 60,
    solver: LPSolver = "ipm",
) -> FTFSolution:
    """Minimise ``max_m rho_m(X)`` by bisection on ``rho`` over feasibility LPs.

    Args:
        rates: ``T[m, k]`` used by the LP.
        scale: Requested GPUs per job.
        capacity: GPUs per type.
        elapsed_s: Time since each job's arrival (``t_m``).
        remaining_iters: Remaining iterations.
        isolated_rates: Throughput under the isolated split (``T_iso``), > 0.
        cumulative_isolated_s: Isolated-equivalent time already accumulated (``c_m``, default 0).
        tolerance: Relative width of the final ``rho`` bracket.
        max_lps: Cap on the bisection LPs.
        solver: ``"ipm"`` (default) or ``"simplex"``.
    """
    rates = np.asarray(rates, dtype=float)
    scale = np.asarray(scale, dtype=float)
    capacity = np.asarray(capacity, dtype=float)
    _check_inputs(rates, scale, capacity)
    m, k = rates.shape
    if m == 0:
        return FTFSolution(np.zeros((0, k)), np.zeros(0), 0.0, 0)
    elapsed = np.asarray(elapsed_s, dtype=float)
    rem = np.asarray(remaining_iters, dtype=float)
    iso = np.asarray(isolated_rates, dtype=float)
    if np.any(iso <= 0) or np.any(rem <= 0):
        raise ValueError("isolated rates and remaining iterations must be > 0")
    cum = np.zeros(m) if cumulative_isolated_s is None else np.asarray(cumulative_isolated_s, dtype=float)
    denom = cum + rem / iso  # isolated finish time D_m
    best = rates.max(axis=1)
    rho_lo = float(np.max((elapsed + rem / best) / denom))
    # The isolated split itself is feasible: it bounds the optimum from above.
    x_hi = isolated_allocation(scale, capacity, "row") * (rates > 0)
    rho_of_hi = finish_time_rho(x_hi, rates, elapsed, rem, denom)
    rho_hi = float(np.max(rho_of_hi))
    if not math.isfinite(rho_hi):
        rho_hi = max(rho_lo, 1.0) * 2.0
        x_hi = None  # type: ignore[assignment]
        while x_hi is None:
            x_hi = _ftf_feasible(rates, scale, capacity, elapsed, rem, denom, rho_hi, solver)
            if x_hi is None:
                rho_lo, rho_hi = rho_hi, rho_hi * 4.0
    num = 0
    while rho_hi > rho_lo * (1.0 + tolerance) and num < max_lps:
        mid = 0.5 * (rho_lo + rho_hi)
        x = _ftf_feasible(rates, scale, capacity, elapsed, rem, denom, mid, solver)
        num += 1
        if x is None:
            rho_lo = mid
        else:
            rho_hi, x_hi = mid, x
    rho = finish_time_rho(x_hi, rates, elapsed, rem, denom)
    return FTFSolution(x_hi, rho, float(rho.max()), num)


def _ftf_feasible(
    rates: np.ndarray,
    scale: np.ndarray,
    capacity: np.ndarray,
    elapsed: np.ndarray,
    rem: np.ndarray,
    denom: np.ndarray,
    rho: float,
    solver: LPSolver,
) -> np.ndarray | None:
    slack = rho * denom - elapsed
    if np.any(slack <= 0):
        return None
    return _feasible_with_min_rates(rates, scale, capacity, rem / slack, "finish-time fairness LP", solver)


@dataclass(frozen=True)
class MakespanSolution:
    """Result of :func:`solve_min_total_duration`.

    Attributes:
        allocation: ``X`` (jobs x types), rows scaled so every job finishes at ``duration_s``.
        duration_s: The minimum total duration ``T*`` from now.
        num_lps: LPs solved.
    """

    allocation: np.ndarray
    duration_s: float
    num_lps: int


def solve_min_total_duration(
    rates: np.ndarray,
    scale: np.ndarray,
    capacity: np.ndarray,
    remaining_iters: np.ndarray,
    *,
    method: Literal["lp", "bisection"] = "lp",
    solver: LPSolver = "ipm",
) -> MakespanSolution:
    """The smallest ``T*`` such that ``sum_k T[m,k] X[m,k] >= rem_m / T*`` for every job.

    ``lp`` maximises ``theta = 1 / T*`` in one LP (exact); ``bisection`` is Gavel's search over
    ``[100 s, 1e6 s]`` (widened x10 while infeasible) stopping when ``1.05 min >= max``.
    """
    rates = np.asarray(rates, dtype=float)
    scale = np.asarray(scale, dtype=float)
    capacity = np.asarray(capacity, dtype=float)
    _check_inputs(rates, scale, capacity)
    m, k = rates.shape
    if m == 0:
        return MakespanSolution(np.zeros((0, k)), 0.0, 0)
    rem = np.asarray(remaining_iters, dtype=float)
    if np.any(rem <= 0):
        raise ValueError("remaining iterations must be > 0")
    if np.any(rates.max(axis=1) <= 0):
        raise ValueError("every job needs a positive rate on some type (drop unusable jobs first)")
    if method == "lp":
        x, duration, num = _makespan_lp(rates, scale, capacity, rem, solver)
    elif method == "bisection":
        x, duration, num = _makespan_bisection(rates, scale, capacity, rem, solver)
    else:
        raise ValueError(f"method={method!r}; use 'lp' or 'bisection'")
    # Scale each row down to exactly the throughput that finishes the job at T*.
    thr = (rates * x).sum(axis=1)
    need = rem / duration
    factor = np.where(thr > need, need / np.maximum(thr, 1e-300), 1.0)
    return MakespanSolution(x * factor[:, None], duration, num)


def _makespan_lp(
    rates: np.ndarray, scale: np.ndarray, capacity: np.ndarray, rem: np.ndarray, solver: LPSolver
) -> tuple[np.ndarray, float, int]:
    m, k = rates.shape
    n_x = m * k
    # Rows scaled by each job's best rate for conditioning: (rem/best) theta - sum_k (T/best) X <= 0.
    best = rates.max(axis=1)
    a_base, b_base = _base_constraints(scale, capacity, k)
    a_fin = sp.hstack([-_block_rows(rates / best[:, None]), sp.csr_matrix((rem / best)[:, None])], format="csr")
    a_ub = sp.vstack([sp.hstack([a_base, sp.csr_matrix((a_base.shape[0], 1))]), a_fin], format="csr")
    b_ub = np.concatenate([b_base, np.zeros(m)])
    c = np.zeros(n_x + 1)
    c[-1] = -1.0
    bounds = np.vstack([_x_bounds(rates > 0), [[0.0, np.inf]]])
    x, status = _solve(c, a_ub, b_ub, bounds, "minimum total duration LP", solver)
    if x is None or x[-1] <= 0:
        raise LPError(f"minimum total duration LP failed (status {status}); this is a bug")
    return np.clip(x[:n_x].reshape(m, k), 0.0, 1.0), 1.0 / float(x[-1]), 1


def _makespan_bisection(
    rates: np.ndarray, scale: np.ndarray, capacity: np.ndarray, rem: np.ndarray, solver: LPSolver
) -> tuple[np.ndarray, float, int]:
    max_t, min_t = 1e6, 100.0
    last_max_t = max_t
    feasible: np.ndarray | None = None
    best_t = math.inf
    num = 0
    while feasible is None:
        while 1.05 * min_t < max_t:
            t = 0.5 * (min_t + max_t)
            x = _feasible_with_min_rates(rates, scale, capacity, rem / t, "minimum total duration LP", solver)
            num += 1
            if x is not None:
                feasible, best_t, max_t = x, t, t
            else:
                min_t = t
        max_t, min_t = last_max_t * 10.0, last_max_t
        last_max_t *= 10.0
        if last_max_t > 1e15:
            raise LPError("minimum total duration bisection found no feasible duration below 1e15 s")
    return feasible, best_t, num


# --------------------------------------------------------------------------------------------
# The policies


class GavelPolicy(Policy):
    """Gavel's round-based mechanism over one of its LP policies (base class; see the module docstring).

    Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning Workloads",
    OSDI 2020. Implemented: the max-min fairness, finish-time fairness and minimum-total-duration
    policies (heterogeneity-aware ``*_perf`` and agnostic versions) and the priority-based round
    mechanism. Reconstructions / deviations: ``fill_between_rounds``, ``zero_priority_last``,
    ``isolated_normalisation`` and the exact-LP makespan (see the module docstring); no space sharing
    (packing) and no lease extensions.

    Args:
        heterogeneity_aware: Use the measured per-type throughputs (``True``) or Gavel's agnostic
            substitutes (all-ones for max-min fairness, the reference type's rate otherwise).
        min_recompute_interval_s: Least time between allocation recomputes (Gavel's 1,920 s).
        fill_between_rounds: Let waiting jobs take free GPUs at arrivals and completions inside a
            round (no preemption); ``False`` assigns only at round boundaries, as Gavel's simulator.
        global_queue: Sort the (job, type) entries of all types together (Gavel's
            ``enable_global_queue``) instead of type by type.
        zero_priority_last: Consider every entry with a positive priority before any zero-priority
            (leftover) entry (default ``True``); ``False`` is Gavel's code, where a job's zero-priority
            entry on an earlier type can take GPUs before its allocated type is considered.
        isolated_normalisation: ``"row"`` (default) or ``"global"`` (Gavel's code); finish-time fairness only.
        ftf_tolerance: Relative tolerance of the finish-time-fairness bisection.
        makespan_method: ``"lp"`` (exact, default) or ``"bisection"`` (Gavel's).
        reference_type: GPU type whose rate the agnostic finish-time-fairness and makespan LPs use on
            every type (default: the cluster's fastest type by speed index, V100 on Gavel's cluster).
        lp_solver: ``"ipm"`` (HiGHS interior point without crossover, default; non-vertex optima like
            Gavel's ECOS) or ``"simplex"``.
    """

    name: ClassVar[str] = "gavel"
    round_s = GAVEL_ROUND_S
    objective: ClassVar[Objective] = "max_min_fairness"
    default_aware: ClassVar[bool] = True

    def __init__(
        self,
        heterogeneity_aware: bool | None = None,
        min_recompute_interval_s: float = GAVEL_MIN_RESET_INTERVAL_S,
        fill_between_rounds: bool = True,
        global_queue: bool = False,
        zero_priority_last: bool = True,
        isolated_normalisation: Literal["row", "global"] = "row",
        ftf_tolerance: float = 1e-3,
        makespan_method: Literal["lp", "bisection"] = "lp",
        reference_type: str | None = None,
        lp_solver: LPSolver = "ipm",
    ) -> None:
        super().__init__()
        if min_recompute_interval_s < 0:
            raise ValueError(f"min_recompute_interval_s={min_recompute_interval_s}; it must be >= 0")
        if isolated_normalisation not in ("row", "global"):
            raise ValueError(f"isolated_normalisation={isolated_normalisation!r}; use 'row' or 'global'")
        if makespan_method not in ("lp", "bisection"):
            raise ValueError(f"makespan_method={makespan_method!r}; use 'lp' or 'bisection'")
        if not 0 < ftf_tolerance < 1:
            raise ValueError(f"ftf_tolerance={ftf_tolerance}; it must be in (0, 1)")
        self.heterogeneity_aware = self.default_aware if heterogeneity_aware is None else bool(heterogeneity_aware)
        self.min_recompute_interval_s = float(min_recompute_interval_s)
        self.fill_between_rounds = fill_between_rounds
        self.global_queue = global_queue
        self.zero_priority_last = zero_priority_last
        self.isolated_normalisation = isolated_normalisation
        self.ftf_tolerance = ftf_tolerance
        self.makespan_method = makespan_method
        self.reference_type = reference_type
        if lp_solver not in ("ipm", "simplex"):
            raise ValueError(f"lp_solver={lp_solver!r}; use 'ipm' or 'simplex'")
        self.lp_solver: LPSolver = lp_solver

    # ----------------------------------------------------------------------------------------
    def _reset(self) -> None:
        assert self.cluster is not None
        self._types: tuple[str, ...] = self.cluster.gpu_types
        self._type_index = {t: i for i, t in enumerate(self._types)}
        self._capacity = np.array([self.cluster.capacity[t] for t in self._types], dtype=float)
        self._rates: dict[int, np.ndarray] = {}
        self._rate_cache: dict[tuple[str, int, int, tuple[str, ...] | None], np.ndarray] = {}
        self._job_allocs: dict[tuple[str, int], JobAllocation] = {}
        self._alloc: dict[int, np.ndarray] = {}
        self._job_time: dict[int, np.ndarray] = {}
        self._type_time = np.zeros(len(self._types))
        self._deficit: dict[int, np.ndarray] = {}
        self._last_now: float | None = None
        self._last_reset_s: float | None = None
        self._need_update = True
        self._cum_isolated_s: dict[int, float] = {}
        self._prev_remaining: dict[int, float] = {}
        self._prev_isolated: dict[int, float] = {}
        self.num_recomputes = 0
        self.last_solution: object | None = None
        if self.reference_type is not None:
            self.cluster.check_gpu_type(self.reference_type)

    def _type_order(self, view: ClusterView) -> list[int]:
        order = sorted(range(len(self._types)), key=lambda i: -view.throughput.speed_index.get(self._types[i], 0.0))
        if not self.heterogeneity_aware:
            self.rng.shuffle(order)
        return order

    def _job_rates(self, view: ClusterView, job: JobView) -> np.ndarray:
        r = self._rates.get(job.job_id)
        if r is None:
            spec = job.spec
            key = (spec.job_type, spec.batch_size, spec.num_gpus, spec.gpu_types)
            r = self._rate_cache.get(key)
            if r is None:
                allowed = set(view.allowed_types(job))
                r = np.array(
                    [
                        view.rate(job, t, job.num_gpus) if t in allowed and self._capacity[i] >= job.num_gpus else 0.0
                        for i, t in enumerate(self._types)
                    ]
                )
                self._rate_cache[key] = r
            self._rates[job.job_id] = r
        return r

    def _lp_rates(self, view: ClusterView, jobs: Sequence[JobView], real: np.ndarray) -> np.ndarray:
        """The throughput matrix the LP sees (real, or Gavel's agnostic substitute)."""
        if self.heterogeneity_aware:
            return real
        usable = real > 0
        if self.objective == "max_min_fairness":
            return usable.astype(float)
        ref = self.reference_type or max(self._types, key=lambda t: view.throughput.speed_index.get(t, 0.0))
        ref_rates = np.array([view.rate(j, ref, j.num_gpus) for j in jobs])
        fallback = real.max(axis=1)
        ref_rates = np.where(ref_rates > 0, ref_rates, fallback)
        return usable * ref_rates[:, None]

    # ----------------------------------------------------------------------------------------
    def _account(self, view: ClusterView) -> None:
        """Add the time each running job held GPUs since the previous epoch to its counters."""
        active = view.job_index
        for jid in [j for j in self._job_time if j not in active]:
            for store in (self._job_time, self._deficit, self._alloc, self._rates):
                store.pop(jid, None)
            self._cum_isolated_s.pop(jid, None)
            self._prev_remaining.pop(jid, None)
            self._prev_isolated.pop(jid, None)
        half = self.round_s_in_force(view) / 2.0
        for job in view.jobs:
            if job.job_id not in self._job_time:
                self._job_time[job.job_id] = np.full(len(self._types), half)
                self._type_time += half
                self._deficit[job.job_id] = np.zeros(len(self._types))
        if self._last_now is not None:
            dt = view.now_s - self._last_now
            if dt > 0:
                for job in view.running:
                    assert job.allocation is not None
                    for t in job.allocation.gpu_types:
                        i = self._type_index[t]
                        self._job_time[job.job_id][i] += dt
                        self._type_time[i] += dt
        self._last_now = view.now_s

    @staticmethod
    def round_s_in_force(view: ClusterView) -> float:
        """The round length of this run."""
        return view.round_s

    def _recompute(self, view: ClusterView) -> None:
        """Gavel's ``_reset_time_run_so_far`` (deficits) followed by a new allocation."""
        now = view.now_s
        half = self.round_s_in_force(view) / 2.0
        elapsed = 0.0 if self._last_reset_s is None else now - self._last_reset_s
        for jid, times in self._job_time.items():
            x = self._alloc.get(jid)
            should = x * elapsed if x is not None else 0.0
            self._deficit[jid] += should - (times - half)
            times[:] = half
        self._type_time[:] = half * len(self._job_time)
        self._last_reset_s = now
        self._need_update = False
        self._alloc = self._compute_allocation(view)
        self.num_recomputes += 1

    def _compute_allocation(self, view: ClusterView) -> dict[int, np.ndarray]:
        jobs = [j for j in view.jobs if self._job_rates(view, j).max() > 0]
        if not jobs:
            return {}
        real = np.vstack([self._job_rates(view, j) for j in jobs])
        rates = self._lp_rates(view, jobs, real)
        scale = np.array([j.num_gpus for j in jobs], dtype=float)
        if self.objective == "max_min_fairness":
            weights = np.array([j.spec.priority_weight for j in jobs])
            x = solve_max_min_fairness(rates, scale, self._capacity, weights, solver=self.lp_solver)
            self.last_solution = x
        elif self.objective == "finish_time_fairness":
            x = self._solve_ftf(view, jobs, rates, scale)
        else:
            rem = np.array([j.remaining_iters for j in jobs])
            sol = solve_min_total_duration(
                rates, scale, self._capacity, rem, method=self.makespan_method, solver=self.lp_solver
            )
            self.last_solution = sol
            x = sol.allocation
        return {j.job_id: x[i] for i, j in enumerate(jobs)}

    def _solve_ftf(
        self, view: ClusterView, jobs: Sequence[JobView], rates: np.ndarray, scale: np.ndarray
    ) -> np.ndarray:
        x_iso = isolated_allocation(scale, self._capacity, self.isolated_normalisation) * (rates > 0)
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
            rates, scale, self._capacity, elapsed, rem, iso, cum, tolerance=self.ftf_tolerance, solver=self.lp_solver
        )
        self.last_solution = sol
        return sol.allocation

    # ----------------------------------------------------------------------------------------
    def priority_matrix(self, job_ids: Sequence[int]) -> np.ndarray:
        """Gavel's priorities ``X / fraction`` (``X * 1e9`` before any service) for ``job_ids`` x types."""
        k = len(self._types)
        zeros = np.zeros(k)
        if not job_ids:
            return np.zeros((0, k))
        times = np.vstack([self._job_time[j] for j in job_ids])
        x = np.vstack([self._alloc.get(j, zeros) for j in job_ids])
        rates = np.vstack([self._rates.get(j, zeros) for j in job_ids])
        type_time = self._type_time
        fraction = np.divide(times, type_time, out=np.zeros_like(times), where=type_time > 0)
        prio = np.divide(x, fraction, out=x * _UNSERVED_PRIORITY, where=fraction > 0)
        return np.where(rates > 0, prio, 0.0)

    def priorities(self) -> dict[int, np.ndarray]:
        """Gavel's per-(job, type) priorities under the current counters, for every active job."""
        ids = list(self._job_time)
        return dict(zip(ids, self.priority_matrix(ids), strict=True))

    def schedule(self, view: ClusterView) -> Allocation:
        self._account(view)
        if view.arrived or view.completed:
            self._need_update = True
        for job in view.jobs:
            self._job_rates(view, job)
        first = self._last_reset_s is None
        round_start = view.is_tick or first
        if (
            round_start
            and self._need_update
            and (first or view.now_s - self._last_reset_s >= self.min_recompute_interval_s)  # type: ignore[operator]
        ):
            self._recompute(view)
        if round_start:
            builder = AllocationBuilder(view)
            candidates = list(view.jobs)
        else:
            builder = AllocationBuilder(view)
            for job in view.running:
                builder.keep(job)
            if not self.fill_between_rounds:
                return builder.build()
            candidates = [j for j in view.jobs if j.status == JobStatus.WAITING]
        self._greedy(view, builder, candidates)
        return builder.build()

    def _greedy(self, view: ClusterView, builder: AllocationBuilder, candidates: Sequence[JobView]) -> None:
        """Gavel's ``_schedule_jobs_on_workers_helper`` over ``candidates`` and the builder's free GPUs."""
        if not candidates:
            return
        ids = np.array([j.job_id for j in candidates])
        scale = np.array([j.num_gpus for j in candidates])
        prio = self.priority_matrix([j.job_id for j in candidates])
        deficit = np.vstack([self._deficit[j.job_id] for j in candidates])
        alloc = np.vstack([self._alloc.get(j.job_id, np.zeros(len(self._types))) for j in candidates])
        rates = np.vstack([self._rates[j.job_id] for j in candidates])
        n_types = len(self._types)
        order = self._type_order(view)
        # Entries as flat indices c * n_types + k, in Gavel's order.
        if self.global_queue:
            cols = np.repeat(np.array(order), len(candidates))
            rows = np.tile(np.arange(len(candidates)), len(order))
            idx = np.lexsort((-alloc[rows, cols], -deficit[rows, cols], -prio[rows, cols]))
            flat = rows[idx] * n_types + cols[idx]
        else:
            parts = [np.lexsort((-alloc[:, k], -deficit[:, k], -prio[:, k])) * n_types + k for k in order]
            flat = np.concatenate(parts)
            if self.zero_priority_last:
                positive = prio.ravel()[flat] > 0
                flat = np.concatenate([flat[positive], flat[~positive]])
        usable = (rates.ravel() > 0)[flat]
        flat = flat[usable]
        free = [builder.free[t] for t in self._types]
        scheduled = np.zeros(len(candidates), dtype=bool)
        scale_list = scale.tolist()
        for c, k in zip((flat // n_types).tolist(), (flat % n_types).tolist(), strict=True):
            need = scale_list[c]
            if scheduled[c] or need > free[k]:
                continue
            free[k] -= need
            scheduled[c] = True
            builder.assign(int(ids[c]), self._job_allocation(self._types[k], need))

    def _job_allocation(self, gpu_type: str, num_gpus: int) -> JobAllocation:
        key = (gpu_type, num_gpus)
        ja = self._job_allocs.get(key)
        if ja is None:
            ja = self._job_allocs[key] = JobAllocation({gpu_type: num_gpus})
        return ja


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
