"""The analytic centre of finish-time fairness's feasible allocations, the point an interior-point solver returns.

Finish-time fairness (``min max_m rho_m(X)``) has many optimal allocations: once the jobs that set the
maximum are served, how the others' time is split over GPU types is free. Gavel solves the problem with
ECOS, an interior-point solver, whose answer lies near the analytic centre of the optimal face (the
point maximising the sum of the logarithms of the constraints' slacks): on 150 jobs at t=0 it is the
proportional split, each job's time spread over the types in proportion to their GPUs. A bisection over
feasibility LPs (:func:`baselines.gavel.lp.solve_finish_time_fairness`) returns whichever feasible point
its LP solver finds instead. :func:`ftf_analytic_centre` replaces it by the analytic centre of the
allocations whose ``rho`` is at most a given bound just above the optimum:

``X >= 0``, ``sum_k X[m,k] <= 1``, ``sum_m s_m X[m,k] <= N_k`` and ``sum_k T[m,k] X[m,k] >= need_m``,

with ``need_m = rem_m / (rho D_m - t_m)``. Every entry of ``X`` is a variable, as in Gavel's program
(an entry with zero throughput can hold time, which the round mechanism never uses). It is found by
Newton's method on the log barrier from a strictly feasible point (an LP maximising the smallest
normalised slack); each job's ``K x K`` block is inverted directly and the ``K`` capacity rows, which
couple the jobs, are added with the Woodbury identity, so a step costs ``O(M K^3)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hetgym.sim import portable

if TYPE_CHECKING:  # the solvers load when a policy solves, not when the policies are registered
    pass

#: Newton steps at most, and the decrement (squared) below which the centre is reached.
_MAX_STEPS = 100
_DECREMENT_TOL = 1e-12


def _slacks(
    x: np.ndarray, rates: np.ndarray, scale: np.ndarray, capacity: np.ndarray, need: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Slacks of ``X >= 0``, the row sums, the capacities and the throughput floors."""
    return x, 1.0 - x.sum(axis=1), capacity - portable.vecmat(scale, x), (rates * x).sum(axis=1) - need


def _interior_point(rates: np.ndarray, scale: np.ndarray, capacity: np.ndarray, need: np.ndarray) -> np.ndarray | None:
    """A point with every slack positive (max of the smallest slack, rows normalised), or ``None``."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    m, k = rates.shape
    n = m * k
    cols = np.arange(n)
    rows_job = np.repeat(np.arange(m), k)
    neg_x = -sp.identity(n, format="csr")
    a_row = sp.csr_matrix((np.ones(n), (rows_job, cols)), shape=(m, n))
    a_cap = sp.csr_matrix((np.repeat(scale, k), (np.tile(np.arange(k), m), cols)), shape=(k, n))
    a_thr = sp.csr_matrix((-rates.ravel(), (rows_job, cols)), shape=(m, n))
    a = sp.vstack([neg_x, a_row, a_cap, a_thr], format="csr")
    b = np.concatenate([np.zeros(n), np.ones(m), capacity, -need])
    norms = np.sqrt(np.asarray(a.multiply(a).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    # a_i x + |a_i| t <= b_i, maximise t (at most 1).
    a_t = sp.hstack([a, sp.csr_matrix(norms[:, None])], format="csr")
    c = np.zeros(n + 1)
    c[-1] = -1.0
    bounds = [(None, None)] * n + [(None, 1.0)]
    res = linprog(c, A_ub=a_t, b_ub=b, bounds=bounds, method="highs-ds")
    if res.status != 0 or -res.fun <= 0:
        return None
    x = np.asarray(res.x[:n]).reshape(m, k)
    # The LP's tolerances can leave a slack at zero on a very thin set: only a strictly inside point will do.
    if any(np.any(part <= 0) for part in _slacks(x, rates, scale, capacity, need)):
        return None
    return x


def ftf_analytic_centre(
    rates: np.ndarray, scale: np.ndarray, capacity: np.ndarray, need: np.ndarray
) -> np.ndarray | None:
    """The analytic centre of the allocations giving every job at least ``need`` (see the module docstring).

    Args:
        rates: ``T[m, k]`` seen by the program (jobs x types).
        scale: GPUs per job.
        capacity: GPUs per type.
        need: Least throughput of each job.

    Returns:
        ``X`` (jobs x types), or ``None`` when the set has no interior point or Newton's method fails.
    """
    rates = np.asarray(rates, dtype=float)
    scale = np.asarray(scale, dtype=float)
    capacity = np.asarray(capacity, dtype=float)
    need = np.asarray(need, dtype=float)
    m, k = rates.shape
    if m == 0:
        return np.zeros((0, k))
    x = _interior_point(rates, scale, capacity, need)
    if x is None:
        return None

    def barrier(z: np.ndarray) -> float:
        parts = _slacks(z, rates, scale, capacity, need)
        if any(np.any(p <= 0) for p in parts):
            return np.inf
        return -float(sum(portable.log(p).sum() for p in parts))

    value = barrier(x)
    diag = np.arange(k)
    for _ in range(_MAX_STEPS):
        s_x, s_row, s_cap, s_thr = _slacks(x, rates, scale, capacity, need)
        # Gradient of -sum log(slack): the slack of row i falls by a_i . x.
        grad = -1.0 / s_x + (1.0 / s_row)[:, None] + scale[:, None] * (1.0 / s_cap)[None, :]
        grad -= rates * (1.0 / s_thr)[:, None]
        # Per-job blocks: diag(1/x^2) + 11^T / row^2 + T T^T / thr^2; the capacity rows by Woodbury.
        blocks = np.zeros((m, k, k))
        blocks[:, diag, diag] = 1.0 / s_x**2
        blocks += (1.0 / s_row**2)[:, None, None]
        blocks += rates[:, :, None] * rates[:, None, :] / (s_thr**2)[:, None, None]
        # Elementwise linear algebra (no BLAS/LAPACK), so the centre is the same on every CPU.
        inv = portable.inv_spd(blocks)
        b_grad = portable.matvec(inv, grad[:, None, :])
        small = np.diag(s_cap**2) + ((scale**2)[:, None, None] * inv).sum(axis=0)
        corr = portable.solve_spd(small, portable.vecmat(scale, b_grad))
        step = -(b_grad - scale[:, None] * portable.matvec(inv, corr))
        decrement = float(-(grad * step).sum())
        if not np.isfinite(decrement):
            return None
        if decrement < _DECREMENT_TOL:
            break
        t = 1.0
        while True:
            trial = x + t * step
            new = barrier(trial)
            if new <= value - 0.25 * t * decrement:
                break
            t *= 0.5
            if t < 1e-12:
                return np.clip(x, 0.0, 1.0)
        x, value = trial, new
    return np.clip(x, 0.0, 1.0)
