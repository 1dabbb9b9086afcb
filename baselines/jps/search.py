"""JPS's search: the within-category solve, local search, the sampling algorithm and the exhaustive references.

Pure functions over a :class:`~baselines.jps.model.PlacementInstance`; the paper, the formulas and what
is reconstructed are described in :mod:`baselines.jps`, which re-exports these names.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from baselines.jps.model import (
    PlacementInstance,
    _owner_to_counts,
    equal_category,
    exact_optimum,
    iter_categories,
    match_auction,
    match_hungarian,
    num_categories,
    sample_categories,
    score_of,
    times_of,
)

Matcher = Literal["hungarian", "auction", "exact"]
Valuation = Literal["rho", "jct"]
MATCHERS: tuple[str, ...] = ("hungarian", "auction", "exact")
VALUATIONS: tuple[str, ...] = ("rho", "jct")


# ============================================================================================
# Within-category solve, local search and the sampling algorithm


@dataclass(frozen=True)
class JPSResult:
    """A placement: per-class counts and its JCTs.

    Attributes:
        counts: ``(S, C)`` workers of each class given to each job.
        times_s: ``(S,)`` JCT of each job under the model.
        avg_jct_s: Their mean.
        score: The fairness-weighted score that was minimised.
        categories_evaluated: Categories matched and scored.
    """

    counts: np.ndarray
    times_s: np.ndarray
    avg_jct_s: float
    score: float
    categories_evaluated: int

    @property
    def sizes(self) -> tuple[int, ...]:
        """The category (workers per job)."""
        return tuple(int(v) for v in self.counts.sum(axis=1))


def _gamma_workers(inst: PlacementInstance, gamma_classes: np.ndarray) -> np.ndarray:
    return gamma_classes[:, inst.worker_class]


def solve_category(
    inst: PlacementInstance,
    sizes: Sequence[int],
    matcher: Matcher = "hungarian",
    valuation: Valuation = "jct",
    valuation_rounds: int = 2,
    max_auction_iter: int = 5_000,
) -> np.ndarray:
    """Match workers to jobs within the category ``sizes``; returns ``(S, C)`` counts."""
    if matcher == "exact":
        return exact_optimum(inst, sizes)

    def match(gamma_classes: np.ndarray) -> np.ndarray:
        gamma = _gamma_workers(inst, gamma_classes)
        if matcher == "hungarian":
            owner = match_hungarian(gamma, sizes)
        else:
            owner, _ = match_auction(gamma, sizes, max_iter=max_auction_iter)
        return _owner_to_counts(inst, owner)

    x = match(inst.rho)
    if valuation == "rho":
        return x
    best, best_avg = x, float(times_of(inst, x).mean())
    k = np.asarray(sizes, dtype=float)[:, None]
    # A job matched only to workers it cannot use has no throughput yet: value workers as if it had a
    # millionth of its best one, so the next matching gives it usable workers first.
    floor = np.maximum(inst.rho.max(axis=1, keepdims=True), 1e-12) * 1e-6
    for _ in range(valuation_rounds):
        sum_rho = np.maximum((x * inst.rho).sum(axis=1, keepdims=True), floor)
        rmin = np.where(x > 0, inst.bw, np.inf).min(axis=1, keepdims=True)
        gain = inst.iters[:, None] * inst.batch[:, None] * inst.rho / sum_rho**2
        with np.errstate(divide="ignore", invalid="ignore"):
            worse_link = np.maximum(0.0, 1.0 / inst.bw[None, :] - np.where(np.isfinite(rmin), 1.0 / rmin, 0.0))
        loss = inst.iters[:, None] * 2.0 * (k - 1) / k * inst.model_bytes[:, None] * worse_link
        x = match(np.nan_to_num(gain - loss, nan=0.0, posinf=1e300, neginf=-1e300))
        avg = float(times_of(inst, x).mean())
        if avg < best_avg:
            best, best_avg = x, avg
    return best


def _score_changed(
    cur: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    new_a: np.ndarray,
    new_b: np.ndarray,
    beta: float,
    equal: np.ndarray | None,
) -> np.ndarray:
    """Scores after jobs ``a`` and ``b`` (arrays of candidates) take JCTs ``new_a`` and ``new_b``."""
    s = cur.size
    finite = np.isfinite(cur)
    if finite.all():
        total = cur.sum() - cur[a] - cur[b] + new_a + new_b
    else:  # a job holds only workers it cannot use: leave its inf out of the differences (inf - inf is nan)
        c0 = np.where(finite, cur, 0.0)
        others_inf = (~finite).sum() - (~finite[a]).astype(int) - (~finite[b]).astype(int)
        total = c0.sum() - c0[a] - c0[b] + new_a + new_b + np.where(others_inf > 0, np.inf, 0.0)
    avg = total / s
    if beta >= 1.0 or equal is None:
        return avg
    x = cur / equal
    xa, xb = new_a / equal[a], new_b / equal[b]
    sx = x.sum() - x[a] - x[b] + xa + xb
    sxx = (x * x).sum() - x[a] ** 2 - x[b] ** 2 + xa**2 + xb**2
    jain = sx**2 / (s * sxx)
    return beta * avg + (1.0 - beta) * (1.0 - jain) * avg


def local_search(
    inst: PlacementInstance,
    x: np.ndarray,
    beta: float = 1.0,
    times_equal: np.ndarray | None = None,
    max_steps: int = 1000,
) -> np.ndarray:
    """Best-improvement search from ``x`` (``(S, C)`` counts); returns the local optimum.

    Neighbours: moving one worker of a class from a job to another, moving a job's whole block of a
    class (all but one worker if that is all it has), and swapping two workers of different classes
    between two jobs. Every job keeps at least one worker and every worker stays used.
    """
    x = np.array(x, dtype=np.int64)
    s, c = x.shape
    eye = np.eye(c, dtype=np.int64)
    not_same_job = ~np.eye(s, dtype=bool)
    jobs_sc = np.repeat(np.arange(s), c)
    cur_times = times_of(inst, x)
    cur = score_of(cur_times, beta, times_equal)
    for _ in range(max_steps):
        sizes = x.sum(axis=1, keepdims=True)
        best_score = cur - 1e-12 * abs(cur) if math.isfinite(cur) else math.inf  # inf - inf is nan
        best_x = None
        # Moves of m workers of class cls from a to b, m = 1 or the whole movable block.
        block = np.where(sizes - x >= 1, x, x - 1)  # a keeps at least one worker
        for m in (np.minimum(block, 1), block):
            minus = x[:, None, :] - eye[None, :, :] * m[:, :, None]  # (S, C, C): a loses m[a, cls] of cls
            a_times = times_of(inst, minus.reshape(-1, c), jobs_sc)
            a_idx, b_idx, c_idx = np.nonzero((m > 0)[:, None, :] & not_same_job[:, :, None])
            if not a_idx.size:
                continue
            gained = x[b_idx] + eye[c_idx] * m[a_idx, c_idx][:, None]
            new_a = a_times.reshape(s, c)[a_idx, c_idx]
            scores = _score_changed(cur_times, a_idx, b_idx, new_a, times_of(inst, gained, b_idx), beta, times_equal)
            j = int(np.argmin(scores))
            if scores[j] < best_score:
                best_score = float(scores[j])
                best_x = x.copy()
                best_x[a_idx[j], c_idx[j]] -= m[a_idx[j], c_idx[j]]
                best_x[b_idx[j], c_idx[j]] += m[a_idx[j], c_idx[j]]
        # Swaps: a gives one c1 to b and takes one c2 from it (c1 != c2, a != b).
        swap = x[:, None, None, :] - eye[None, :, None, :] + eye[None, None, :, :]  # a: -c1 +c2
        t_swap = times_of(inst, swap.reshape(-1, c), np.repeat(np.arange(s), c * c)).reshape(s, c, c)
        has = x > 0
        mask = has[:, None, :, None] & has[None, :, None, :] & not_same_job[:, :, None, None]
        mask &= ~np.eye(c, dtype=bool)[None, None, :, :]
        a_idx, b_idx, c1, c2 = np.nonzero(mask)
        if a_idx.size:
            new_a, new_b = t_swap[a_idx, c1, c2], t_swap[b_idx, c2, c1]
            scores = _score_changed(cur_times, a_idx, b_idx, new_a, new_b, beta, times_equal)
            j = int(np.argmin(scores))
            if scores[j] < best_score:
                best_score = float(scores[j])
                best_x = x.copy()
                best_x[a_idx[j], c1[j]] -= 1
                best_x[a_idx[j], c2[j]] += 1
                best_x[b_idx[j], c2[j]] -= 1
                best_x[b_idx[j], c1[j]] += 1
        if best_x is None:
            break
        x, cur = best_x, best_score
        cur_times = times_of(inst, x)
    return x


def _result(inst: PlacementInstance, x: np.ndarray, score: float, evaluated: int) -> JPSResult:
    times = times_of(inst, x)
    return JPSResult(x, times, float(times.mean()), score, evaluated)


def _check_knobs(matcher: str, valuation: str, beta: float) -> None:
    if matcher not in MATCHERS:
        raise ValueError(f"matcher={matcher!r}; use one of {list(MATCHERS)}")
    if valuation not in VALUATIONS:
        raise ValueError(f"valuation={valuation!r}; use one of {list(VALUATIONS)}")
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta={beta}; it must be in [0, 1]")


#: ``solve_category`` with the matching settings of one search bound (the instance and sizes still to give).
_Solve = Callable[[PlacementInstance, Sequence[int]], np.ndarray]


def _solver(matcher: Matcher, valuation: Valuation, valuation_rounds: int, max_auction_iter: int) -> _Solve:
    return functools.partial(
        solve_category,
        matcher=matcher,
        valuation=valuation,
        valuation_rounds=valuation_rounds,
        max_auction_iter=max_auction_iter,
    )


def _equal_times(inst: PlacementInstance, beta: float, solve: _Solve) -> np.ndarray | None:
    if beta >= 1.0:
        return None
    return times_of(inst, solve(inst, equal_category(inst.num_workers, inst.num_jobs)))


def jps(
    inst: PlacementInstance,
    *,
    n_samples: int = 40,
    alpha: float = 0.0,
    beta: float = 1.0,
    matcher: Matcher = "hungarian",
    valuation: Valuation = "jct",
    valuation_rounds: int = 2,
    local_search_steps: int = 1000,
    max_auction_iter: int = 5_000,
    rng: np.random.Generator | None = None,
) -> JPSResult:
    """The sampling-based placement (see the module docstring).

    Args:
        inst: The instance.
        n_samples: Categories to evaluate (the re-implementation uses 40).
        alpha: Fraction of the lexicographic category list skipped before drawing (default 0).
        beta: Weight of the average JCT against fairness in the score (default 1: JCT only).
        matcher: ``"hungarian"``, ``"auction"`` or ``"exact"``.
        valuation: ``"jct"`` (default) or ``"rho"``.
        valuation_rounds: Re-matching rounds of the ``jct`` valuation.
        local_search_steps: Improving steps of the final local search (0 disables it).
        max_auction_iter: Price rounds of the auction before its fallback.
        rng: Random generator of the sampler.
    """
    _check_knobs(matcher, valuation, beta)
    rng = rng if rng is not None else np.random.default_rng(0)
    solve = _solver(matcher, valuation, valuation_rounds, max_auction_iter)
    equal = _equal_times(inst, beta, solve)
    categories = sample_categories(inst, n_samples, rng, alpha)
    best, best_x = _best_category(inst, categories, solve, beta, equal)
    if local_search_steps > 0:
        best_x = local_search(inst, best_x, beta, equal, local_search_steps)
        best = score_of(times_of(inst, best_x), beta, equal)
    return _result(inst, best_x, best, len(categories))


def _best_category(
    inst: PlacementInstance,
    categories: Iterable[tuple[int, ...]],
    solve: _Solve,
    beta: float,
    equal: np.ndarray | None,
) -> tuple[float, np.ndarray]:
    """The best-scoring matching over ``categories`` (each matched with ``solve``) and its score."""
    best_x: np.ndarray | None = None
    best = math.inf
    for sizes in categories:
        x = solve(inst, sizes)
        sc = score_of(times_of(inst, x), beta, equal)
        # A category can score inf: the throughput-maximising matching leaves a job only workers it
        # cannot use. Keep the first such answer when none is finite (the local search may still mend
        # it; the policy leaves such a job waiting), rather than no answer at all.
        if best_x is None or sc < best:
            best, best_x = sc, x
    if best_x is None:
        raise ValueError("JPS: no category to evaluate (an instance needs at least one job and one worker)")
    return best, best_x


def exhaustive_search(
    inst: PlacementInstance,
    *,
    beta: float = 1.0,
    matcher: Matcher = "hungarian",
    valuation: Valuation = "jct",
    valuation_rounds: int = 2,
    max_auction_iter: int = 5_000,
    max_categories: int | None = 2_000_000,
) -> JPSResult:
    """Every category matched with ``matcher`` and scored: the paper's exhaustive reference."""
    _check_knobs(matcher, valuation, beta)
    total = num_categories(inst.num_workers, inst.num_jobs)
    if max_categories is not None and total > max_categories:
        raise ValueError(f"{total} categories exceed max_categories={max_categories}")
    solve = _solver(matcher, valuation, valuation_rounds, max_auction_iter)
    equal = _equal_times(inst, beta, solve)
    best, best_x = _best_category(inst, iter_categories(inst.num_workers, inst.num_jobs), solve, beta, equal)
    return _result(inst, best_x, best, total)


def optimum(inst: PlacementInstance) -> JPSResult:
    """The exact minimum average JCT of the model (:func:`exact_optimum`) as a result."""
    x = exact_optimum(inst)
    return _result(inst, x, float(times_of(inst, x).mean()), 0)
