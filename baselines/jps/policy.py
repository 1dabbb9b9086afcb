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

from dataclasses import dataclass

import numpy as np

from baselines.jps.model import (
    PlacementInstance,
)
from baselines.jps.search import (
    MATCHERS,
    VALUATIONS,
    Matcher,
    Valuation,
    jps,
)
from hetgym.sim.allocation import Allocation, AllocationBuilder, JobAllocation
from hetgym.sim.comm import job_model_bytes
from hetgym.sim.knob_policy import KnobPolicy
from hetgym.sim.policy import register_policy
from hetgym.sim.registry import Knobs, knob
from hetgym.sim.view import ClusterView, JobView

# ============================================================================================
# Online policy


@dataclass(frozen=True)
class JPSKnobs(Knobs):
    """Knobs of :class:`JPSPolicy`."""

    mode: str = knob(
        "nonpreemptive",
        choices=("nonpreemptive", "replace_all"),
        doc="what each decision re-solves: ``'nonpreemptive'`` or ``'replace_all'`` (module docstring)",
    )
    n_samples: int = knob(
        40, low=1, integer=True, doc="categories sampled per decision (the re-implementation's value)"
    )
    alpha: float = knob(0.0, low=0.0, high=1.0, high_open=True, doc="skipped fraction of the category list")
    beta: float = knob(1.0, low=0.0, high=1.0, doc="JCT weight against fairness (1: JCT only)")
    matcher: Matcher = knob("hungarian", choices=MATCHERS, doc="``'hungarian'``, ``'auction'`` or ``'exact'``")
    valuation: Valuation = knob("jct", choices=VALUATIONS, doc="``'jct'`` or ``'rho'``")
    valuation_rounds: int = knob(2, low=0, integer=True, doc="re-matching rounds of the jct valuation")
    local_search_steps: int = knob(1000, low=0, integer=True, doc="steps of the final local search (0: none)")


@register_policy("jps")
class JPSPolicy(KnobPolicy[JPSKnobs]):
    """JPS (Liu, Wang, Huang and Pan, "Sampling-Based Multi-Job Placement for Heterogeneous Deep Learning
    Clusters", IEEE TPDS 35(6), 2024): matching-market job sizing and placement over GPU types.

    Implemented: proportional workload assignment and the ring all-reduce JCT model, categories, the
    matching market (Hungarian or ascending-price auction), sampling of categories with local search,
    the fairness-weighted score, and the online embedding described in the module docstring.
    Reconstructions [I]: the JCT valuation, the sampler's seeds and local search, the online triggers and
    job selection, and the mapping of the simulator's jobs to ``rho``, ``T``, ``D`` and ``r``.
    """

    name = "jps"
    knobs = JPSKnobs
    # Not work-conserving: the matching knows no per-job bounds, so a job matched fewer workers than
    # its min_gpus waits and its workers (or those cut above its max_gpus) stay idle until the next
    # decision, even when another waiting job could use them.
    keeps_gpus_busy = False
    # The categories are sampled with the run's generator (all of them are evaluated only when few).
    randomised = True
    # Workers of one class are interchangeable, so the matching step decides GPU counts per type and the
    # simulator's default placer maps them onto servers; every job runs in the proportional mode.
    modes = ("proportional",)

    def _rho(self, view: ClusterView, job: JobView, gpu_type: str) -> float:
        # The table's rate is 0 on a type the job may not use.
        return job.batch_size * view.rate_table.get(job).rate(gpu_type) / job.num_gpus

    def schedule(self, view: ClusterView) -> Allocation:
        builder = AllocationBuilder(view)
        if self.knob_values.mode == "nonpreemptive" or not (view.arrived or view.completed):
            for job in view.running:
                builder.keep(job)
            if self.knob_values.mode == "replace_all":
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
        if not candidates:
            return builder.build()
        # Every placed job needs a worker of its own on a type it runs on. When not all candidates can
        # have one (more jobs than workers, or jobs restricted to the same few types), the ones with the
        # least work on their best worker go first.
        key = np.array([j.remaining_iters * j.batch_size for j in candidates]) / rho.max(axis=1)
        keep = matchable_jobs(rho, np.array([free[t] for t in types]), np.argsort(key, kind="stable"))
        if len(keep) < len(candidates):
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
            n_samples=self.knob_values.n_samples,
            alpha=self.knob_values.alpha,
            beta=self.knob_values.beta,
            matcher=self.knob_values.matcher,
            valuation=self.knob_values.valuation,
            valuation_rounds=self.knob_values.valuation_rounds,
            local_search_steps=self.knob_values.local_search_steps,
            rng=self.rng,
        )
        for row, job in enumerate(candidates):
            counts = {t: int(result.counts[row, c]) for c, t in enumerate(types) if rho[row, c] > 0}
            counts = _within_bounds(
                {t: n for t, n in counts.items() if n > 0}, job, dict(zip(types, rho[row], strict=True))
            )
            counts = _runnable(counts, job, view)
            if counts:
                builder.assign(job.job_id, JobAllocation(counts, mode="proportional"))
        return builder.build()


def _within_bounds(counts: dict[str, int], job: JobView, rho: dict[str, float]) -> dict[str, int]:
    """The matching's ``counts`` cut to the job's ``max_gpus`` (slowest types' workers dropped first), or
    ``{}`` when they fall short of its ``min_gpus`` (the job then waits).

    The matching step has no per-job cap, so a job may be matched more workers than it takes.
    """
    spec = job.spec
    excess = sum(counts.values()) - (spec.max_gpus if spec.max_gpus is not None else sum(counts.values()))
    for t in sorted(counts, key=lambda t: (rho[t], t)):
        if excess <= 0:
            break
        cut = min(excess, counts[t])
        counts[t] -= cut
        excess -= cut
    counts = {t: n for t, n in counts.items() if n > 0}
    return counts if sum(counts.values()) >= spec.min_gpus else {}


def _runnable(counts: dict[str, int], job: JobView, view: ClusterView) -> dict[str, int]:
    """``counts`` without the types on which the job has no throughput at its total count, or ``{}`` when
    what is left has none at all or falls short of its ``min_gpus`` (the job then waits).

    The model's per-worker throughput ``rho`` is the table's at the job's requested count, and it assumes
    that a worker's throughput does not depend on how many workers the job has. The table disagrees where
    a type cannot hold the job below some count (a batch too large for fewer GPUs' memory, e.g.
    ResNet-50 at batch 512 on fewer than 8 K80s): there the rate is 0, and a job matched fewer workers
    would hold them at zero throughput until it is moved, which the non-preemptive mode never does. In the
    proportional mode every type runs at the job's total count, so a type is kept only where its rate at
    that total is positive; dropping workers lowers the total, hence the loop.
    """
    table = view.rate_table
    while counts:
        rates = table.rates_at(job, sum(counts.values()))
        useless = [t for t in counts if rates[table.types.index(t)] <= 0]
        if not useless:
            break
        counts = {t: n for t, n in counts.items() if t not in useless}
    return counts if counts and sum(counts.values()) >= job.spec.min_gpus else {}


def matchable_jobs(rho: np.ndarray, workers: np.ndarray, order: np.ndarray) -> list[int]:
    """The jobs (rows of ``rho``) that can each have a worker of its own on a type with a positive rate.

    Jobs are tried in ``order`` and a job is kept when the jobs kept so far and it can all be matched
    (augmenting paths over the types, ``workers[c]`` workers of type ``c``); matchings form a matroid,
    so this greedy keeps as many jobs as fit and, among those, the earliest in ``order``.
    Returns the kept rows, ascending.
    """
    holders: list[list[int]] = [[] for _ in range(len(workers))]

    def augment(job: int, seen: set[int]) -> bool:
        for c in np.flatnonzero(rho[job] > 0).tolist():
            if c in seen:
                continue
            seen.add(c)
            if len(holders[c]) < workers[c]:
                holders[c].append(job)
                return True
            for other in list(holders[c]):
                if augment(other, seen):
                    holders[c].remove(other)
                    holders[c].append(job)
                    return True
        return False

    return sorted(int(j) for j in order if augment(int(j), set()))


__all__ = [
    "JPSKnobs",
    "JPSPolicy",
    "matchable_jobs",
]
