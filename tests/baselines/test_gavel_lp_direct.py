"""Gavel's interior-point LPs handed to scipy's HiGHS directly (``baselines.gavel.lp._ipm_direct``) get the
inputs and return the solutions ``linprog(method="highs-ipm")`` does, to the bit; and the max-min fairness
constraint matrix built at once is the one stacking its blocks gives, entry for entry."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from baselines.gavel import lp as _gavel_lp
from baselines.gavel.lp import (
    _base_constraints,
    _block_rows,
    _max_min_rows,
    solve_finish_time_fairness,
    solve_max_min_fairness,
    solve_min_total_duration,
)

sp = pytest.importorskip("scipy.sparse")


def _instance(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 30)), int(rng.integers(1, 4))
    # Few distinct rows (classes), some zero rates (explicit zeros in the matrix).
    templates = rng.random((int(rng.integers(1, 8)), k)) * (rng.random((1, k)) > 0.2) + 0.01 * (np.arange(k) == 0)
    rates = templates[rng.integers(0, len(templates), n)]
    scale = rng.choice([1.0, 2.0, 4.0, 8.0], n)
    capacity = rng.integers(8, 40, k).astype(float)
    return rates, scale, capacity


@pytest.mark.parametrize("seed", range(40))
def test_max_min_rows_is_the_stacked_matrix(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 40)), int(rng.integers(1, 5))
    coef = rng.random((n, k)) * (rng.random((n, k)) > 0.3)
    gpus = rng.integers(1, 9, n).astype(float) * rng.integers(1, 5, n)
    capacity = rng.integers(1, 40, k).astype(float)
    a_base, _ = _base_constraints(gpus, capacity, k)
    a_min = sp.hstack([-_block_rows(coef), sp.csr_matrix(np.ones((n, 1)))], format="csr")
    stacked = sp.vstack([sp.hstack([a_base, sp.csr_matrix((a_base.shape[0], 1))]), a_min], format="csr")
    built = _max_min_rows(gpus, coef)
    assert type(built) is type(stacked) and built.shape == stacked.shape
    for name in ("data", "indices", "indptr"):
        a, b = getattr(built, name), getattr(stacked, name)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name  # signs of explicit zeros included


def _capture_linprog_inputs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """What linprog passes to scipy's HiGHS wrapper, call by call."""
    import scipy.optimize._linprog_highs as linprog_highs

    calls: list[tuple[Any, ...]] = []
    wrapper = linprog_highs._highs_wrapper

    def capture(*args: Any) -> Any:
        calls.append(args)
        return wrapper(*args)

    monkeypatch.setattr(linprog_highs, "_highs_wrapper", capture)
    return calls


@pytest.mark.parametrize("seed", range(12))
def test_direct_inputs_are_linprogs(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from scipy.optimize import OptimizeWarning, linprog

    rates, scale, capacity = _instance(seed)
    n, k = rates.shape
    a_ub, b_base = _base_constraints(scale, capacity, k)
    a_ub = sp.vstack([a_ub, -_block_rows(rates)], format="csr")
    b_ub = np.concatenate([b_base, -0.1 * rates.max(axis=1)])
    bounds = np.column_stack([np.zeros(n * k), np.where(rates.ravel() > 0, 1.0, 0.0)])
    c = np.zeros(n * k)
    calls = _capture_linprog_inputs(monkeypatch)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Unrecognized options", category=OptimizeWarning)
        linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs-ipm", options={"run_crossover": "off"})
    (args,) = calls
    c_in, indptr, indices, data, lhs, rhs, lb, ub, integrality, options = args
    a = sp.csc_array(a_ub)
    for got, want in (
        (c_in, c),
        (indptr, a.indptr),
        (indices, a.indices),
        (data, a.data),
        (lhs, np.full(b_ub.size, -np.inf)),
        (rhs, b_ub),
        (lb, bounds[:, 0]),
        (ub, bounds[:, 1]),
    ):
        assert np.asarray(got).tobytes() == np.asarray(want, dtype=np.asarray(got).dtype).tobytes()
    assert integrality.size == 0
    set_options = {key: value for key, value in options.items() if value is not None and key != "sense"}
    assert {key: (value if isinstance(value, str) else int(value)) for key, value in set_options.items()} == {
        key: (value if isinstance(value, str) else int(value)) for key, value in _gavel_lp._IPM_OPTIONS
    } | {"presolve": int(True)}


def _solve_all(rates: np.ndarray, scale: np.ndarray, capacity: np.ndarray) -> list[np.ndarray]:
    m = len(scale)
    rem = np.linspace(1e3, 5e4, m)
    iso = rates.max(axis=1) / max(1.0, m)
    elapsed = np.linspace(0.0, 3e3, m)
    return [
        solve_max_min_fairness(rates, scale, capacity),
        solve_finish_time_fairness(rates, scale, capacity, elapsed, rem, iso).allocation,
        solve_min_total_duration(rates, scale, capacity, rem).allocation,
    ]


@pytest.mark.parametrize("seed", range(12))
def test_direct_solutions_are_linprogs(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rates, scale, capacity = _instance(100 + seed)
    # (An LP HiGHS reports neither optimal nor infeasible goes through linprog, as before.)
    direct = _solve_all(rates, scale, capacity)
    monkeypatch.setattr(_gavel_lp, "DIRECT_HIGHS", False)
    through_linprog = _solve_all(rates, scale, capacity)
    for a, b in zip(direct, through_linprog, strict=True):
        assert a.tobytes() == b.tobytes()


def test_direct_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _capture_linprog_inputs(monkeypatch)
    for seed in range(12):
        solve_max_min_fairness(*_instance(100 + seed))
    # Most go to HiGHS directly; the odd tiny LP whose status HiGHS leaves unknown goes through linprog.
    assert len(calls) <= 2
