"""JPS: sampling-based multi-job placement with matching markets on heterogeneous GPUs.

Liu, Wang, Huang and Pan, "Sampling-Based Multi-Job Placement for Heterogeneous Deep Learning Clusters",
IEEE TPDS 35(6):874-888, 2024. User guide: ``docs/communication-policies.md``. The abstract fixes the ingredients
(proportional workload assignment, feasible-solution categories, matching markets, sampling of
categories, fairness); the formulas come from a third-party re-implementation [C3]; the rest is
reconstructed [I] and exposed as knobs.

**Model** (one instance: ``S`` jobs, ``K`` workers = GPUs, each worker used by at most one job). Job i
on workers ``W_i`` processes its ``P_i`` samples per iteration split in proportion to the workers'
throughputs ``rho_ik`` (samples/s), so compute takes ``P_i / sum_{k in W_i} rho_ik``; a ring all-reduce
of its ``D_i`` model bytes adds ``2 (K_i - 1) D_i / (K_i r_min(W_i))``; its JCT is ``T_i`` iterations
times their sum. The objective is the average JCT over disjoint ``W_1..W_S`` that use every worker.
Workers with identical throughputs and bandwidth form a *class* (a GPU type); all algorithms work on
per-class counts ``X[i, c]``, which is exact because such workers are interchangeable.

**Algorithm.**

* A *category* is a size vector ``(K_1..K_S)``, ``K_i >= 1``, ``sum K_i = K``: ``C(K-1, S-1)`` of them,
  enumerated in lexicographic order (:func:`iter_categories`, :func:`unrank_category`).
* Within a category a *matching market* assigns workers: jobs are buyers demanding ``K_i`` units,
  workers are goods, valuations ``Gamma[i, k]``. ``matcher="hungarian"`` (default): the exact
  max-weight assignment with each job replicated into ``K_i`` slots
  (:func:`scipy.optimize.linear_sum_assignment`), the market's efficient competitive equilibrium;
  ``matcher="auction"``: an ascending-price auction (:func:`match_auction`): the job's ``K_i`` slots bid
  for workers, a worker's price rises by the winning bidder's margin ``V_i - V_i^{-w}`` plus ``eps``,
  with epsilon-scaling (Bertsekas' forward auction; the re-implementation's rule [C3], which recomputes
  every job's demand and raises one over-demanded worker per round, does not clear markets of
  identical workers, so it is replaced) and a greedy fallback after ``max_auction_iter`` rounds;
  ``matcher="exact"``: the JCT-optimal assignment of the category by dynamic programming over class
  counts (small instances; a reference, not part of the paper).
* Valuations: ``valuation="rho"`` uses ``Gamma = rho`` (the re-implementation); ``"jct"`` (default)
  starts there and re-matches ``valuation_rounds`` times with the first-order JCT gain
  ``Gamma[i, k] = T_i P_i rho_ik / (sum_{W_i} rho)^2 - T_i 2 (K_i - 1) D_i / K_i * max(0, 1/r_k - 1/r_min(W_i))``,
  keeping the best assignment found [I].
* *Sampling* (the sparsification): ``n_samples`` distinct categories, the equal category and a
  work-proportional one (``K_i ~ T_i P_i / mean_k rho_ik``, largest remainders) first, then uniformly
  random compositions; ``alpha`` skips that fraction of the lexicographic list before drawing [C3]. When
  ``n_samples`` reaches the number of categories every category is evaluated. Each is matched and
  scored; the best is refined by local search (single-worker moves between jobs and swaps of two
  workers of different classes) [I].
* *Score* with fairness weight ``beta`` [C3]: ``beta * avgJ + (1 - beta) * (1 - Jain) * avgJ``, Jain's
  index of ``J_i / J_i^equal`` where ``J^equal`` is the matched equal category (``K_i = K // S``, the
  remainder to the first jobs). ``beta = 1`` (default) is pure average JCT.
* References: :func:`exhaustive_search` evaluates every category with the same matcher (the paper's
  exhaustive baseline); :func:`exact_optimum` is the true optimum of the model by dynamic programming
  over class counts (average JCT only).

**Online embedding** (:class:`JPSPolicy`, [I]): at arrivals and completions, ``nonpreemptive``
mode places the waiting jobs on the free GPUs (the ``K`` jobs with the smallest ``T_i P_i / max_k
rho_ik`` when there are more jobs than GPUs), running jobs untouched; ``replace_all`` mode re-solves over
every active job and all GPUs, and the simulator charges moved jobs the restart penalty. Workers are
GPUs, classes their types; ``rho_ik`` is the job's per-GPU samples/s at its requested count on that type
from the throughput table, ``r_k`` the NIC bandwidth of the type's servers, ``T_i`` the remaining
iterations (JPS assumes known work), ``D_i`` the job's model bytes (nominal size of its type if absent).
Jobs run in the simulator's ``proportional`` execution mode across types; the simulator then charges
its own (measured, or bandwidth) multi-server cost, so the model and the simulated progress differ
where the table's scaling is not linear.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.optimize import linear_sum_assignment

from hetgym.sim.allocation import Allocation, AllocationBuilder, JobAllocation
from hetgym.sim.comm import job_model_bytes
from hetgym.sim.policy import Policy, register_policy
from hetgym.sim.view import ClusterView, JobView

Matcher = Literal["hungarian", "auction", "exact"]
Valuation = Literal["rho", "jct"]
MATCHERS: tuple[str, ...] = ("hungarian", "auction", "exact")
VALUATIONS: tuple[str, ...] = ("rho", "jct")


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
        np.exp(rng.uniform(math.log(1e3), math.log(1e5), size=num_jobs)),
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
    work = inst.iters * inst.batch / np.maximum(inst.rho @ inst.counts / k, 1e-300)
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
    total = cur.sum() - cur[a] - cur[b] + new_a + new_b
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
        best_score, best_x = cur - 1e-12 * abs(cur), None
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


def _equal_times(inst: PlacementInstance, beta: float, **solve_kw: object) -> np.ndarray | None:
    if beta >= 1.0:
        return None
    x_eq = solve_category(inst, equal_category(inst.num_workers, inst.num_jobs), **solve_kw)  # type: ignore[arg-type]
    return times_of(inst, x_eq)


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
    kw = {
        "matcher": matcher,
        "valuation": valuation,
        "valuation_rounds": valuation_rounds,
        "max_auction_iter": max_auction_iter,
    }
    equal = _equal_times(inst, beta, **kw)
    categories = sample_categories(inst, n_samples, rng, alpha)
    best_x: np.ndarray | None = None
    best = math.inf
    for sizes in categories:
        x = solve_category(inst, sizes, **kw)  # type: ignore[arg-type]
        sc = score_of(times_of(inst, x), beta, equal)
        if sc < best:
            best, best_x = sc, x
    assert best_x is not None
    if local_search_steps > 0:
        best_x = local_search(inst, best_x, beta, equal, local_search_steps)
        best = score_of(times_of(inst, best_x), beta, equal)
    return _result(inst, best_x, best, len(categories))


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
    kw = {
        "matcher": matcher,
        "valuation": valuation,
        "valuation_rounds": valuation_rounds,
        "max_auction_iter": max_auction_iter,
    }
    equal = _equal_times(inst, beta, **kw)
    best_x: np.ndarray | None = None
    best = math.inf
    for sizes in iter_categories(inst.num_workers, inst.num_jobs):
        x = solve_category(inst, sizes, **kw)  # type: ignore[arg-type]
        sc = score_of(times_of(inst, x), beta, equal)
        if sc < best:
            best, best_x = sc, x
    assert best_x is not None
    return _result(inst, best_x, best, total)


def optimum(inst: PlacementInstance) -> JPSResult:
    """The exact minimum average JCT of the model (:func:`exact_optimum`) as a result."""
    x = exact_optimum(inst)
    return _result(inst, x, float(times_of(inst, x).mean()), 0)


# ============================================================================================
# Online policy


@register_policy("jps")
class JPSPolicy(Policy):
    """JPS (Liu, Wang, Huang and Pan, "Sampling-Based Multi-Job Placement for Heterogeneous Deep Learning
    Clusters", IEEE TPDS 35(6), 2024): matching-market job sizing and placement over GPU types.

    Implemented: proportional workload assignment and the ring all-reduce JCT model, categories, the
    matching market (Hungarian or ascending-price auction), sampling of categories with local search,
    the fairness-weighted score, and the online embedding described in the module docstring.
    Reconstructions [I]: the JCT valuation, the sampler's seeds and local search, the online triggers and
    job selection, and the mapping of the simulator's jobs to ``rho``, ``T``, ``D`` and ``r``.

    Args:
        mode: ``"nonpreemptive"`` (default) or ``"replace_all"``.
        n_samples: Categories sampled per decision (default 40, the re-implementation's value).
        alpha: Skipped fraction of the lexicographic category list (default 0).
        beta: JCT weight against fairness (default 1.0: JCT only).
        matcher: ``"hungarian"`` (default), ``"auction"`` or ``"exact"``.
        valuation: ``"jct"`` (default) or ``"rho"``.
        valuation_rounds: Re-matching rounds of the ``jct`` valuation (default 2).
        local_search_steps: Steps of the final local search (default 1000; 0 disables it).
    """

    name = "jps"
    # Workers of one class are interchangeable, so the matching step decides GPU counts per type and the
    # simulator's default placer maps them onto servers; every job runs in the proportional mode.
    modes = ("proportional",)

    def __init__(
        self,
        mode: Literal["nonpreemptive", "replace_all"] = "nonpreemptive",
        n_samples: int = 40,
        alpha: float = 0.0,
        beta: float = 1.0,
        matcher: Matcher = "hungarian",
        valuation: Valuation = "jct",
        valuation_rounds: int = 2,
        local_search_steps: int = 1000,
    ) -> None:
        super().__init__()
        if mode not in ("nonpreemptive", "replace_all"):
            raise ValueError(f"mode={mode!r}; use 'nonpreemptive' or 'replace_all'")
        if n_samples < 1:
            raise ValueError(f"n_samples={n_samples}; it must be >= 1")
        _check_knobs(matcher, valuation, beta)
        self.mode = mode
        self.n_samples = n_samples
        self.alpha = alpha
        self.beta = beta
        self.matcher = matcher
        self.valuation = valuation
        self.valuation_rounds = valuation_rounds
        self.local_search_steps = local_search_steps

    def _rho(self, view: ClusterView, job: JobView, gpu_type: str) -> float:
        if job.spec.gpu_types is not None and gpu_type not in job.spec.gpu_types:
            return 0.0
        return job.batch_size * view.rate(job, gpu_type, job.num_gpus) / job.num_gpus

    def schedule(self, view: ClusterView) -> Allocation:
        builder = AllocationBuilder(view)
        if self.mode == "nonpreemptive" or not (view.arrived or view.completed):
            for job in view.running:
                builder.keep(job)
            if self.mode == "replace_all":
                return builder.build()
            candidates = list(view.waiting)
            free = {t: n for t, n in builder.free.items() if n > 0}
        else:
            candidates = list(view.jobs)
            free = {t: n for t, n in view.cluster.capacity.items() if n > 0}
        types = list(free)
        if not candidates or not types:
            return builder.build()
        rho = np.array([[self._rho(view, j, t) for t in types] for j in candidates])
        usable = rho.max(axis=1) > 0
        candidates = [j for j, ok in zip(candidates, usable, strict=True) if ok]
        rho = rho[usable]
        num_workers = sum(free.values())
        if not candidates:
            return builder.build()
        if len(candidates) > num_workers:
            # More jobs than workers: the ones with the least work on their best worker go first.
            key = np.array([j.remaining_iters * j.batch_size for j in candidates]) / rho.max(axis=1)
            keep = np.argsort(key, kind="stable")[:num_workers]
            keep.sort()
            candidates = [candidates[i] for i in keep]
            rho = rho[keep]
        servers = view.cluster.servers
        bw = np.array([min(servers[s].nic_bw_gb_per_s for s in view.cluster.servers_by_type[t]) * 1e9 for t in types])
        inst = PlacementInstance(
            rho,
            np.array([free[t] for t in types]),
            bw,
            np.array([j.batch_size for j in candidates], dtype=float),
            np.array([max(j.remaining_iters, 1e-9) for j in candidates]),
            np.array([job_model_bytes(j.spec) or 0.0 for j in candidates]),
        )
        result = jps(
            inst,
            n_samples=self.n_samples,
            alpha=self.alpha,
            beta=self.beta,
            matcher=self.matcher,
            valuation=self.valuation,
            valuation_rounds=self.valuation_rounds,
            local_search_steps=self.local_search_steps,
            rng=self.rng,
        )
        for row, job in enumerate(candidates):
            counts = {t: int(result.counts[row, c]) for c, t in enumerate(types) if rho[row, c] > 0}
            counts = {t: n for t, n in counts.items() if n > 0}
            if counts:
                builder.assign(job.job_id, JobAllocation(counts, mode="proportional"))
        return builder.build()


__all__ = [
    "JPSPolicy",
    "JPSResult",
    "PlacementInstance",
    "counts_to_owner",
    "equal_category",
    "exact_optimum",
    "exhaustive_search",
    "iter_categories",
    "jain_index",
    "jps",
    "local_search",
    "match_auction",
    "match_hungarian",
    "num_categories",
    "optimum",
    "rank_category",
    "sample_categories",
    "score_of",
    "solve_category",
    "synthetic_instance",
    "times_of",
    "unrank_category",
    "valuation_total",
]
