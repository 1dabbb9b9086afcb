"""JPS's model: placement instances, the JCT of a placement, categories, matching markets, the exact optimum.

Pure functions over arrays; the paper, the formulas and what is reconstructed are described in
:mod:`baselines.jps`, which re-exports these names.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from hetgym.sim import portable

if TYPE_CHECKING:  # the solvers load when a policy solves, not when the policies are registered
    pass

# ============================================================================================
# Instances and the JCT model


@dataclass(frozen=True)
class PlacementInstance:
    """``S`` jobs and ``K`` workers in ``C`` classes of identical workers.

    Attributes:
        rho: ``(S, C)`` samples/s of one worker of each class for each job (0: unusable).
        counts: ``(C,)`` workers per class.
        bw: ``(C,)`` bandwidth of a worker of each class, bytes/s.
        batch: ``(S,)`` samples per iteration ``P_i``.
        iters: ``(S,)`` iterations ``T_i``.
        model_bytes: ``(S,)`` model size ``D_i`` in bytes.
    """

    rho: np.ndarray
    counts: np.ndarray
    bw: np.ndarray
    batch: np.ndarray
    iters: np.ndarray
    model_bytes: np.ndarray

    def __post_init__(self) -> None:
        rho = np.asarray(self.rho, dtype=float)
        counts = np.asarray(self.counts, dtype=np.int64)
        arrays = {
            "rho": rho,
            "counts": counts,
            "bw": np.asarray(self.bw, dtype=float),
            "batch": np.asarray(self.batch, dtype=float),
            "iters": np.asarray(self.iters, dtype=float),
            "model_bytes": np.asarray(self.model_bytes, dtype=float),
        }
        if rho.ndim != 2 or rho.shape[0] < 1 or rho.shape[1] < 1:
            raise ValueError(f"rho has shape {rho.shape}; give an (S jobs, C classes) array with S, C >= 1")
        s, c = rho.shape
        for name, shape in (("counts", (c,)), ("bw", (c,)), ("batch", (s,)), ("iters", (s,)), ("model_bytes", (s,))):
            if arrays[name].shape != shape:
                raise ValueError(f"{name} has shape {arrays[name].shape}; expected {shape} for {s} jobs, {c} classes")
        if (rho < 0).any() or (counts < 0).any() or (arrays["model_bytes"] < 0).any():
            raise ValueError("rho, counts and model_bytes must be >= 0")
        if (arrays["bw"] <= 0).any() or (arrays["batch"] <= 0).any() or (arrays["iters"] <= 0).any():
            raise ValueError("bw, batch and iters must be > 0")
        if int(counts.sum()) < s:
            raise ValueError(f"{s} jobs need at least {s} workers; the instance has {int(counts.sum())}")
        for name, arr in arrays.items():
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    @classmethod
    def from_workers(
        cls,
        rho: np.ndarray,
        bw: np.ndarray,
        batch: Sequence[float] | np.ndarray,
        iters: Sequence[float] | np.ndarray,
        model_bytes: Sequence[float] | np.ndarray,
    ) -> PlacementInstance:
        """Build from per-worker throughputs ``rho (S, K)`` and bandwidths ``bw (K,)``.

        Workers with identical columns of ``rho`` and identical bandwidth become one class.
        """
        rho = np.asarray(rho, dtype=float)
        bw = np.asarray(bw, dtype=float)
        if rho.ndim != 2 or bw.shape != (rho.shape[1],):
            raise ValueError(f"rho {rho.shape} and bw {bw.shape} do not describe the same workers")
        keys = np.vstack([rho, bw[None, :]]).T
        uniq, counts = np.unique(keys, axis=0, return_counts=True)
        return cls(uniq[:, :-1].T, counts, uniq[:, -1], np.asarray(batch), np.asarray(iters), np.asarray(model_bytes))

    @property
    def num_jobs(self) -> int:
        """S."""
        return int(self.rho.shape[0])

    @property
    def num_classes(self) -> int:
        """C."""
        return int(self.rho.shape[1])

    @property
    def num_workers(self) -> int:
        """K."""
        return int(self.counts.sum())

    @property
    def worker_class(self) -> np.ndarray:
        """``(K,)`` class of every worker (class-major order)."""
        return np.repeat(np.arange(self.num_classes), self.counts)


#: Per-worker throughputs (samples/s) of T4, P100 and V100 in the re-implementation's synthetic setting [C3].
SYNTHETIC_BASE_RHO: tuple[float, ...] = (300.0, 700.0, 1500.0)
#: NIC bandwidths (bytes/s) used with them here: 10, 25 and 100 Gb/s [I].
SYNTHETIC_BW: tuple[float, ...] = (1.25e9, 3.125e9, 12.5e9)


def synthetic_instance(rng: np.random.Generator, num_jobs: int, num_workers: int) -> PlacementInstance:
    """A random heterogeneous instance for studies and benchmarks (the settings are reconstructions).

    Workers: three classes (T4/P100/V100-like), each with at least one worker, the rest split uniformly
    at random; throughputs :data:`SYNTHETIC_BASE_RHO` times a per-job log-normal affinity
    (sigma 0.3), bandwidths :data:`SYNTHETIC_BW`. Jobs: batch in {32, 64, 128, 256}, iterations
    log-uniform in [1e3, 1e5], model bytes in {100, 440, 550} MB (ResNet-50, BERT-base, VGG-16).
    """
    if num_workers < max(num_jobs, 3):
        raise ValueError(f"num_workers={num_workers}; give at least max(num_jobs, 3)")
    rho = np.array(SYNTHETIC_BASE_RHO) * rng.lognormal(0.0, 0.3, size=(num_jobs, 3))
    counts = rng.multinomial(num_workers - 3, np.ones(3) / 3) + 1
    return PlacementInstance(
        rho,
        counts,
        np.array(SYNTHETIC_BW),
        rng.choice([32.0, 64.0, 128.0, 256.0], size=num_jobs),
        portable.exp(rng.uniform(math.log(1e3), math.log(1e5), size=num_jobs)),
        rng.choice([1e8, 4.4e8, 5.5e8], size=num_jobs),
    )


def times_of(inst: PlacementInstance, x: np.ndarray, jobs: np.ndarray | None = None) -> np.ndarray:
    """JCT ``T_i (P_i / sum rho + 2 (K_i - 1) D_i / (K_i r_min))`` of count rows ``x[..., C]``.

    Args:
        inst: The instance.
        x: Per-class counts; shape ``(S, C)`` (one row per job) or ``(N, C)`` with ``jobs``.
        jobs: ``(N,)`` job index of each row of ``x`` (default: row i is job i).

    Returns:
        JCT per row; ``inf`` for a row without usable workers.
    """
    x = np.asarray(x)
    idx = np.arange(inst.num_jobs) if jobs is None else np.asarray(jobs)
    rho = inst.rho[idx]
    sum_rho = (x * rho).sum(axis=-1)
    k = x.sum(axis=-1)
    rmin = np.where(x > 0, inst.bw, np.inf).min(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        compute = np.where(sum_rho > 0, inst.batch[idx] / sum_rho, np.inf)
        comm = np.where(k > 1, 2.0 * (k - 1) * inst.model_bytes[idx] / (k * rmin), 0.0)
    return inst.iters[idx] * (compute + comm)


def jain_index(values: np.ndarray) -> float:
    """Jain's index ``(sum x)^2 / (n sum x^2)`` (1 when all equal)."""
    x = np.asarray(values, dtype=float)
    denom = x.size * float((x * x).sum())
    return float(x.sum() ** 2 / denom) if denom > 0 else math.nan


def score_of(times: np.ndarray, beta: float = 1.0, times_equal: np.ndarray | None = None) -> float:
    """``beta * avgJ + (1 - beta) * (1 - Jain) * avgJ`` (just ``avgJ`` when ``beta == 1``)."""
    avg = float(np.mean(times))
    if beta >= 1.0 or times_equal is None:
        return avg
    return beta * avg + (1.0 - beta) * (1.0 - jain_index(times / times_equal)) * avg


# ============================================================================================
# Categories


def num_categories(num_workers: int, num_jobs: int) -> int:
    """``C(K - 1, S - 1)``: size vectors with every job at least one worker and every worker used."""
    if num_jobs < 1 or num_workers < num_jobs:
        return 0
    return math.comb(num_workers - 1, num_jobs - 1)


def _sizes_from_cuts(cuts: Sequence[int], num_workers: int) -> tuple[int, ...]:
    bounds = [0, *cuts, num_workers]
    return tuple(b - a for a, b in itertools.pairwise(bounds))


def iter_categories(num_workers: int, num_jobs: int) -> Iterator[tuple[int, ...]]:
    """Every category in lexicographic order of the size vector."""
    for cuts in itertools.combinations(range(1, num_workers), num_jobs - 1):
        yield _sizes_from_cuts(cuts, num_workers)


def unrank_category(num_workers: int, num_jobs: int, index: int) -> tuple[int, ...]:
    """The ``index``-th category (0-based) in lexicographic order."""
    total = num_categories(num_workers, num_jobs)
    if not 0 <= index < total:
        raise ValueError(f"category index {index} is outside 0..{total - 1}")
    n, r = num_workers - 1, num_jobs - 1  # choose r cut points from 1..n
    cuts: list[int] = []
    start = 1
    for slot in range(r):
        for c in range(start, n + 1):
            below = math.comb(n - c, r - slot - 1)  # combinations whose next cut is c
            if index < below:
                cuts.append(c)
                start = c + 1
                break
            index -= below
    return _sizes_from_cuts(cuts, num_workers)


def rank_category(sizes: Sequence[int]) -> int:
    """Inverse of :func:`unrank_category`."""
    num_workers = int(sum(sizes))
    n, r = num_workers - 1, len(sizes) - 1
    cuts = list(itertools.accumulate(sizes))[:-1]
    index, start = 0, 1
    for slot, cut in enumerate(cuts):
        for c in range(start, cut):
            index += math.comb(n - c, r - slot - 1)
        start = cut + 1
    return index


def _proportional_sizes(weights: np.ndarray, num_workers: int) -> tuple[int, ...]:
    """Sizes ``>= 1`` summing to ``num_workers``, the rest in proportion to ``weights`` (largest remainders)."""
    s = len(weights)
    w = np.where(np.isfinite(weights) & (weights > 0), weights, 0.0)
    extra = num_workers - s
    share = w / w.sum() * extra if w.sum() > 0 else np.full(s, extra / s)
    base = np.floor(share).astype(np.int64)
    left = extra - int(base.sum())
    order = np.argsort(-(share - base), kind="stable")
    base[order[:left]] += 1
    return tuple(int(v) + 1 for v in base)


def equal_category(num_workers: int, num_jobs: int) -> tuple[int, ...]:
    """``K // S`` workers each, the remainder one each to the first jobs."""
    q, r = divmod(num_workers, num_jobs)
    return tuple(q + (1 if i < r else 0) for i in range(num_jobs))


def sample_categories(
    inst: PlacementInstance, n_samples: int, rng: np.random.Generator, alpha: float = 0.0
) -> list[tuple[int, ...]]:
    """``n_samples`` distinct categories: seeds (equal, work-proportional), then uniform draws.

    With ``n_samples`` at least the number of categories past the ``alpha`` skip, all of those are
    returned in lexicographic order (plus the seeds).
    """
    if n_samples < 1:
        raise ValueError(f"n_samples={n_samples}; it must be >= 1")
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"alpha={alpha}; it must be in [0, 1)")
    k, s = inst.num_workers, inst.num_jobs
    total = num_categories(k, s)
    skip = math.floor(alpha * total)
    work = inst.iters * inst.batch / np.maximum(portable.matvec(inst.rho, inst.counts) / k, 1e-300)
    seeds = [equal_category(k, s), _proportional_sizes(work, k)]
    out: dict[tuple[int, ...], None] = dict.fromkeys(seeds)
    if n_samples >= total - skip:
        start = itertools.islice(iter_categories(k, s), skip, None)
        out.update(dict.fromkeys(start))
        return list(out)
    bigrng = random.Random(int(rng.integers(0, 2**63 - 1)))
    attempts = 0
    while len(out) < n_samples and attempts < 50 * n_samples:
        attempts += 1
        if skip == 0:
            cuts = np.sort(rng.choice(k - 1, size=s - 1, replace=False) + 1)
            out.setdefault(_sizes_from_cuts(cuts.tolist(), k))
        else:
            out.setdefault(unrank_category(k, s, skip + bigrng.randrange(total - skip)))
    return list(out)[:n_samples]


# ============================================================================================
# Matching markets


def _slots(sizes: Sequence[int] | np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(len(sizes)), np.asarray(sizes, dtype=np.int64))


def _owner_to_counts(inst: PlacementInstance, owner: np.ndarray) -> np.ndarray:
    x = np.zeros((inst.num_jobs, inst.num_classes), dtype=np.int64)
    np.add.at(x, (owner, inst.worker_class), 1)
    return x


def counts_to_owner(inst: PlacementInstance, x: np.ndarray) -> np.ndarray:
    """A worker-level assignment (job of each worker, class-major) with per-class counts ``x``."""
    owner = np.full(inst.num_workers, -1, dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(inst.counts)[:-1]])
    for c in range(inst.num_classes):
        pos = int(start[c])
        for i in range(inst.num_jobs):
            n = int(x[i, c])
            owner[pos : pos + n] = i
            pos += n
    return owner


def match_hungarian(gamma: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Max-weight assignment of workers to ``sizes[i]`` slots of each job; ``gamma`` is ``(S, K)``.

    Returns the job of every worker (``-1`` for workers left over when ``sum(sizes) < K``).
    """
    from scipy.optimize import linear_sum_assignment

    rows = _slots(sizes)
    r, c = linear_sum_assignment(gamma[rows], maximize=True)
    owner = np.full(gamma.shape[1], -1, dtype=np.int64)
    owner[c] = rows[r]
    return owner


def match_auction(
    gamma: np.ndarray,
    sizes: Sequence[int],
    max_iter: int = 5_000,
    min_increment: float = 1e-3,
    scaling: float = 5.0,
) -> tuple[np.ndarray, bool]:
    """Ascending-price auction of the matching market (forward auction with epsilon-scaling).

    Job i takes part as ``K_i`` unit-demand bidders (the same slot replication as the Hungarian
    matcher). Each round, a job with ``m`` unassigned slots bids on its ``m`` best workers by payoff
    ``gamma - price``, offering for each the price plus its margin over the job's ``(m + 1)``-th best
    worker plus ``eps`` (the job's ``V_i - V_i^{-w} + eps``); each worker goes to its highest bidder,
    evicting the previous holder, and its price rises to that bid. Prices only go up. The bid increment
    ``eps`` starts at ``max |gamma| / scaling`` and is divided by ``scaling`` each phase down to
    ``min_increment * max |gamma|``; the final assignment is within ``K * eps`` of the maximum
    ``sum gamma`` (Bertsekas). The re-implementation's variant (recompute every job's top-``K_i``
    demand, raise one over-demanded worker) does not clear markets of identical workers: their prices
    drift up together. It is therefore not used.

    Args:
        gamma: ``(S, K)`` valuations.
        sizes: Workers each job demands (``sum(sizes) == K``).
        max_iter: Bidding rounds over all phases before the greedy fallback.
        min_increment: Final ``eps`` as a fraction of ``max |gamma|`` (reconstruction; default 1e-3,
            close to the re-implementation's +1 on throughputs of 300-1500 samples/s).
        scaling: Factor between successive ``eps`` (default 5).

    Returns:
        ``(owner, converged)``: the job of every worker, and whether every bidder got a worker.
    """
    s, k = gamma.shape
    sizes_arr = np.asarray(sizes, dtype=np.int64)
    if int(sizes_arr.sum()) != k:
        raise ValueError(f"the auction needs sum(sizes) == K; got {int(sizes_arr.sum())} and {k}")
    scale = max(float(np.abs(gamma).max()), 1e-300)
    eps_min = min_increment * scale
    eps = max(scale / scaling, eps_min)
    price = np.zeros(k)
    owner = np.full(k, -1, dtype=np.int64)  # job holding each worker
    rounds = 0
    while True:
        owner[:] = -1
        missing = sizes_arr.copy()  # unassigned slots per job
        while rounds < max_iter and missing.any():
            rounds += 1
            bid_worker: list[np.ndarray] = []
            bid_value: list[np.ndarray] = []
            bid_job: list[np.ndarray] = []
            for job in np.flatnonzero(missing).tolist():
                m = int(missing[job])
                payoff = gamma[job] - price
                payoff[owner == job] = -np.inf  # workers it already holds are not bid for again
                top = np.argpartition(-payoff, min(m, k - 1))[: m + 1] if m < k else np.arange(k)
                top = top[np.argsort(-payoff[top], kind="stable")]
                wanted = top[:m]
                runner_up = payoff[top[m]] if top.size > m and np.isfinite(payoff[top[m]]) else payoff[wanted[-1]]
                bid_worker.append(wanted)
                bid_value.append(price[wanted] + (payoff[wanted] - runner_up) + eps)
                bid_job.append(np.full(m, job))
            workers = np.concatenate(bid_worker)
            values = np.concatenate(bid_value)
            jobs = np.concatenate(bid_job)
            order = np.lexsort((jobs, -values, workers))  # per worker: highest bid first (ties: lowest job)
            first = order[np.r_[True, workers[order][1:] != workers[order][:-1]]]
            for idx in first.tolist():
                w, winner = int(workers[idx]), int(jobs[idx])
                if owner[w] >= 0:
                    missing[owner[w]] += 1
                owner[w] = winner
                missing[winner] -= 1
                price[w] = values[idx]
        if rounds >= max_iter or eps <= eps_min:
            break
        eps = max(eps / scaling, eps_min)
    converged = not missing.any()
    if not converged:
        # Fallback: jobs in turn fill their missing slots with their best remaining workers.
        payoff = gamma - price
        for job in range(s):
            free = np.flatnonzero(owner < 0)
            best = free[np.argsort(-payoff[job, free], kind="stable")[: missing[job]]]
            owner[best] = job
    return owner, converged


def valuation_total(gamma: np.ndarray, owner: np.ndarray) -> float:
    """``sum_k gamma[owner[k], k]`` over assigned workers."""
    mask = owner >= 0
    return float(gamma[owner[mask], np.flatnonzero(mask)].sum())


# ============================================================================================
# Exact references by dynamic programming over class counts


def _all_vectors(counts: np.ndarray) -> np.ndarray:
    grids = np.meshgrid(*[np.arange(int(n) + 1) for n in counts], indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1).astype(np.int64)


def exact_optimum(inst: PlacementInstance, sizes: Sequence[int] | None = None, max_states: int = 20_000) -> np.ndarray:
    """The assignment minimising the average JCT, exactly (dynamic programming over class counts).

    Args:
        inst: The instance.
        sizes: Restrict to this category (the exact within-category matching), or ``None`` for the
            optimum over all full partitions.
        max_states: Refuse instances with more count vectors than this (``prod (n_c + 1)``); the
            work grows as ``S * states ** 2``.

    Returns:
        ``(S, C)`` per-class counts.
    """
    radix = inst.counts + 1
    num_states = int(np.prod(radix))
    if num_states > max_states:
        raise ValueError(f"{num_states} count vectors exceed max_states={max_states}; the instance is too large")
    vecs = _all_vectors(inst.counts)
    place = np.concatenate([np.cumprod(radix[::-1])[::-1][1:], [1]]).astype(np.int64)
    index = vecs @ place
    totals = vecs.sum(axis=1)
    s = inst.num_jobs
    full = int(index[-1])  # every worker still free
    cost_next = np.full(num_states, np.inf)
    cost_next[index[totals == 0]] = 0.0  # after the last job no worker may remain
    choices: list[np.ndarray] = []
    for i in range(s - 1, -1, -1):
        job_cost = times_of(inst, vecs, np.full(num_states, i))
        ok = totals >= 1 if sizes is None else totals == int(sizes[i])
        cost = np.full(num_states, np.inf)
        choice = np.full(num_states, -1, dtype=np.int64)
        for xi in np.flatnonzero(ok & np.isfinite(job_cost)):
            fits = (vecs >= vecs[xi]).all(axis=1)
            rem = index[fits]
            cand = job_cost[xi] + cost_next[rem - index[xi]]
            better = cand < cost[rem]
            cost[rem[better]] = cand[better]
            choice[rem[better]] = xi
        choices.append(choice)
        cost_next = cost
    if not np.isfinite(cost_next[full]):
        raise ValueError("no assignment gives every job a usable worker")
    x = np.zeros((s, inst.num_classes), dtype=np.int64)
    state = full
    for i, choice in enumerate(reversed(choices)):
        pick = int(choice[state])
        x[i] = vecs[pick]
        state -= int(index[pick])
    return x
