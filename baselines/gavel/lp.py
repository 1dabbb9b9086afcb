"""Gavel's policies as optimisation problems: the LPs over the allocation matrix ``X[m, k]``.

Pure functions over arrays, usable on their own (max-min fairness, finish-time fairness by bisection
over LPs, minimum total duration as one LP or by Gavel's bisection). The formulation, the paper and
what is reconstructed are described in :mod:`baselines.gavel`, which re-exports these names.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from hetgym.sim import portable

if TYPE_CHECKING:  # the solvers load when a policy solves, not when the policies are registered
    import scipy.sparse as sp

LPSolver = Literal["ipm", "simplex"]


class LPError(RuntimeError):
    """The LP solver failed on a problem that should always be feasible."""


# --------------------------------------------------------------------------------------------
# The LPs (pure functions over arrays, usable on their own)


def _base_constraints(scale: np.ndarray, capacity: np.ndarray, num_types: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """``sum_k X[m,k] <= 1`` per job and ``sum_m s_m X[m,k] <= N_k`` per type, over ``X`` flattened row-major."""
    import scipy.sparse as sp

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

    Each LP is solved cold by scipy's HiGHS (handed the model directly where :func:`_ipm_direct` can).
    The interior-point method has no warm start (a warm simplex would return vertices, other
    allocations), and ``highspy``'s own HiGHS, though about twice
    as fast on these LPs, does not return the same bits: on the 3,000-job Gavel trace (compat mode,
    scipy 1.17.1 with HiGHS 1.12, highspy 1.16) 2 of the 284 max-min fairness LPs and 172 of the 2,309
    finish-time fairness LPs came out different, by up to 0.012 in a time fraction.
    """
    from scipy.optimize import OptimizeWarning, linprog

    if solver == "ipm":
        direct = _ipm_direct(c, a_ub, b_ub, bounds)
        if direct is not None:
            return direct
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


#: Whether :func:`_solve` may hand its interior-point LPs to scipy's HiGHS directly (:func:`_ipm_direct`).
DIRECT_HIGHS = True
#: The HiGHS options ``linprog(method="highs-ipm", options={"run_crossover": "off"})`` sets (scipy 1.17).
_IPM_OPTIONS = (
    ("presolve", "on"),
    ("solver", "ipm"),
    ("highs_debug_level", 0),
    ("log_to_console", False),
    ("output_flag", False),
    ("simplex_strategy", 1),
    ("run_crossover", "off"),
)


def _ipm_direct(
    c: np.ndarray, a_ub: sp.csr_matrix, b_ub: np.ndarray, bounds: np.ndarray
) -> tuple[np.ndarray | None, int] | None:
    """``linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs-ipm", options={"run_crossover": "off"})``
    as :func:`_solve` reads it (``(x, 0)`` solved, ``(None, 2)`` infeasible), without linprog's input checks
    and result assembly: the same model and options passed to the same HiGHS (scipy's own build), so the same
    solution, to the bit. ``None`` in every other case (another status, a solution outside linprog's
    feasibility tolerance, scipy's HiGHS module not as expected): the caller then asks linprog itself.

    linprog (scipy 1.17) hands HiGHS the constraint matrix in CSC form, the rows as ``-inf <= A x <= b``,
    the bounds as columns' lower and upper limits and :data:`_IPM_OPTIONS`; it then reports a solution
    whose bounds or rows are violated by more than ``sqrt(1e-9) x 10`` as failed (``_check_result``).
    ``tests/baselines/test_gavel_lp_direct.py`` checks that the inputs are those linprog passes.
    """
    if not DIRECT_HIGHS:
        return None
    try:
        import scipy.sparse as sp
        from scipy.optimize._highspy import _core as highs_core
    except ImportError:  # another scipy layout: linprog it is
        return None
    try:
        a = sp.csc_array(a_ub)
        n, m = c.size, b_ub.size
        lp = highs_core.HighsLp()
        lp.num_col_ = n
        lp.num_row_ = m
        lp.a_matrix_.num_col_ = n
        lp.a_matrix_.num_row_ = m
        lp.a_matrix_.format_ = highs_core.MatrixFormat.kColwise
        lp.col_cost_ = c
        lp.col_lower_ = np.ascontiguousarray(bounds[:, 0], dtype=float)
        lp.col_upper_ = np.ascontiguousarray(bounds[:, 1], dtype=float)
        lp.row_lower_ = np.full(m, -np.inf)
        lp.row_upper_ = b_ub
        lp.a_matrix_.start_ = a.indptr
        lp.a_matrix_.index_ = a.indices
        lp.a_matrix_.value_ = a.data
        highs = highs_core._Highs()
        options = highs_core.HighsOptions()
        for key, value in _IPM_OPTIONS:
            setattr(options, key, value)
        if highs.passOptions(options) == highs_core.HighsStatus.kError:
            return None
        if highs.passModel(lp) == highs_core.HighsStatus.kError:
            return None
        if highs.run() == highs_core.HighsStatus.kError:
            return None
        status = highs.getModelStatus()
        if status == highs_core.HighsModelStatus.kInfeasible:
            return None, 2
        if status != highs_core.HighsModelStatus.kOptimal:
            return None
        fun = highs.getInfo().objective_function_value
        solution = highs.getSolution()
        x = np.array(solution.col_value)
        slack = b_ub - np.asarray(solution.row_value)
    except (AttributeError, TypeError):  # another HiGHS binding: linprog it is
        return None
    # linprog's _check_result (no equality rows, no integrality).
    tol = np.sqrt(1e-9) * 10
    if np.isnan(x).any() or np.isnan(fun) or np.isnan(slack).any():
        return None
    if not np.all((x >= bounds[:, 0] - tol) & (x <= bounds[:, 1] + tol)) or (slack < -tol).any():
        return None
    return x, 0


def _checked_inputs(rates: Any, scale: Any, capacity: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three inputs of an LP as float arrays, checked: rates ``(jobs x types)``, finite and >= 0; scales >= 1."""
    rates = np.asarray(rates, dtype=float)
    scale = np.asarray(scale, dtype=float)
    capacity = np.asarray(capacity, dtype=float)
    if rates.ndim != 2 or rates.shape[0] != scale.size or rates.shape[1] != capacity.size:
        raise ValueError(f"rates must be (jobs x types) = ({scale.size} x {capacity.size}), got shape {rates.shape}")
    if np.any(rates < 0) or not np.all(np.isfinite(rates)):
        raise ValueError("rates must be finite and >= 0")
    if np.any(scale < 1):
        raise ValueError("scale factors must be >= 1")
    return rates, scale, capacity


def proportional_rates(rates: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Throughput of each job under Gavel's proportional split ``X[m,k] = N_k / sum N`` (``proportional.py``)."""
    share = capacity / capacity.sum()
    return portable.matvec(rates, share)


def isolated_allocation(
    scale: np.ndarray, capacity: np.ndarray, normalisation: Literal["row", "global"] = "row"
) -> np.ndarray:
    """The even ``1/#jobs`` split of every type as time fractions: ``N_k / (M s_m)`` (``isolated.py``).

    ``row`` caps each row's sum at 1 (Gavel's ``IsolatedPolicy``); ``global`` divides every row by the
    largest row sum.
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

    rates, scale, capacity = _checked_inputs(rates, scale, capacity)
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
    # Capacity counts every job of a class: sum_c n_c s_c X[c, k] <= N_k; and z - sum_k coef[c,k] X[c,k] <= 0
    # for every class: z is the minimum normalised share.
    a_ub = _max_min_rows(c_scale * counts, coef)
    b_ub = np.concatenate([np.ones(n_cls), capacity, np.zeros(n_cls)])
    c = np.zeros(n_x + 1)
    c[-1] = -1.0
    bounds = np.vstack([_x_bounds(c_rates > 0), [[0.0, np.inf]]])
    x, status = _solve(c, a_ub, b_ub, bounds, "max-min fairness LP", solver)
    if x is None:
        raise LPError(f"max-min fairness LP infeasible (status {status}); this is a bug")
    return np.clip(x[:n_x].reshape(n_cls, k), 0.0, 1.0)[cls]


def _max_min_rows(class_gpus: np.ndarray, coef: np.ndarray) -> sp.csr_matrix:
    """The max-min fairness LP's constraint matrix over ``X`` (row-major) and ``z`` (last column), built
    as CSR arrays at once: per class ``sum_k X[c,k]`` (rows ``0..C-1``), per type ``sum_c g_c X[c,k]`` with
    ``g_c`` the class's GPUs (rows ``C..C+K-1``), per class ``z - sum_k coef[c,k] X[c,k]`` (the last ``C``).

    The same matrix, entry for entry (explicit zeros and their signs included), as stacking
    :func:`_base_constraints`, a zero column, ``-_block_rows(coef)`` and a column of ones.
    """
    import scipy.sparse as sp

    n_cls, k = coef.shape
    n_x = n_cls * k
    per_class = np.arange(n_x, dtype=np.int32).reshape(n_cls, k)
    # Rows of each class: its K columns; rows of each type: column c*K + t for every class; min rows: the
    # class's K columns then z.
    minima = np.column_stack([per_class, np.full(n_cls, n_x, dtype=np.int32)])
    indices = np.concatenate([per_class.ravel(), per_class.T.ravel(), minima.ravel()])
    data = np.concatenate(
        [
            np.ones(n_x),
            np.tile(np.asarray(class_gpus, dtype=float), k),
            np.column_stack([-coef, np.ones(n_cls)]).ravel(),
        ]
    )
    lengths = np.concatenate([np.full(n_cls, k), np.full(k, n_cls), np.full(n_cls, k + 1)])
    indptr = np.zeros(lengths.size + 1, dtype=np.int32)
    np.cumsum(lengths, out=indptr[1:])
    return sp.csr_matrix((data, indices, indptr), shape=(2 * n_cls + k, n_x + 1))


def _block_rows(coef: np.ndarray) -> sp.csr_matrix:
    """The (jobs x jobs*types) matrix whose row m holds ``coef[m, :]`` at columns ``m*K .. m*K+K-1``."""
    import scipy.sparse as sp

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
    import scipy.sparse as sp

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
    rates, scale, capacity = _checked_inputs(rates, scale, capacity)
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
        found = _ftf_feasible(rates, scale, capacity, elapsed, rem, denom, rho_hi, solver)
        while found is None:
            rho_lo, rho_hi = rho_hi, rho_hi * 4.0
            found = _ftf_feasible(rates, scale, capacity, elapsed, rem, denom, rho_hi, solver)
        x_hi = found
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
    rates, scale, capacity = _checked_inputs(rates, scale, capacity)
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
    import scipy.sparse as sp

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
