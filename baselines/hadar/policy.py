"""Hadar: heterogeneity-aware, optimisation-based online scheduling (primal-dual with per-node prices).

Sultana, Xu, Yuan, Chen, Tzeng, "Hadar: Heterogeneity-Aware Optimization-Based Online Scheduling for
Deep Learning Cluster", IEEE IPDPS 2024 (DOI 10.1109/IPDPS57955.2024.00066); extended as Sultana,
Pakka, Xu, Yuan, Chen, Tzeng, "Resource Heterogeneity-Aware and Utilization-Enhanced Scheduling for
Deep Learning Clusters", arXiv:2503.10918 (2025).

What the abstracts confirm: a task-level heterogeneity-aware scheduler built on an online primal-dual
framework with a dual subroutine (the OASiS lineage), deciding across the spatial (which GPUs) and
temporal (which rounds) dimensions, evaluated on Gavel's setting. Everything below that is not in the
abstracts is a reconstruction, and every reconstructed constant is a knob (user guide:
``docs/heterogeneity-policies.md``; provenance tags and open questions: ``docs/provenance.md``).

**Hadar-Round** (``mode="round"``, default). At each round boundary the allocation is re-decided from
an empty cluster:

1. Every node ``h`` (one GPU type) has a price per GPU that grows with the GPUs already committed on
   it in this round, ``P_h(g) = L (U / L) ** (g / c_h)`` (``c_h`` its GPUs); taking ``n`` GPUs costs
   the sum of the marginal prices.
2. **Dual subroutine** (task level): for each candidate bottleneck type ``r*`` (types by the job's
   rate, fastest first), the eligible GPUs are the free GPUs of every type at least as fast as ``r*``
   for this job (``task_level_mixing``), and the job's ``W_j`` tasks take the cheapest ones (nodes by
   price, then the job's current nodes, then most free). Tasks may span GPU types and nodes: the
   slowest type bounds the step rate (``sync``), times Gavel's multi-server factor. The job's current
   placement is one more candidate when it is still free. For each candidate, ``est_T = (t - a_j) +
   restart penalty if the placement changes + remaining / rate`` and ``payoff = u_j(est_T) - cost``;
   the best candidate is the job's offer.
3. **Greedy admission by payoff**: the job with the largest positive payoff is committed, prices rise,
   and the offers are recomputed lazily (an offer can only get worse as GPUs fill, so a lazily
   re-evaluated max-heap picks exactly the current best).
4. **Work-conserving fill** (``work_conserving``): once no payoff is positive, the remaining jobs still
   take free GPUs in decreasing payoff order, so no GPU idles while a job fits.

Inside a round (arrivals, completions) running jobs keep their GPUs and waiting jobs take the free GPUs
by the same greedy, with prices from the current occupancy (``fill_between_rounds``). Placements are
decided as GPU counts per type (mode ``sync``); the simulator's ``priced`` placer, which this policy
declares (:mod:`hetgym.sim.placement.priced`), maps them onto nodes by the same node prices, placing the
changed jobs largest first (a reconstruction: Hadar's own order is its payoff order), and a job whose
counts are unchanged keeps its nodes.

**Utility** ``u_j(T)``, non-increasing in the JCT ``T`` (the knob that "expresses other scheduling
algorithms"), with ``T_min = total iterations / best single-type rate`` and ``theta_j`` the job's
priority weight: ``normalized_inverse_jct`` (default) ``theta T_min / T``; ``linear`` ``theta max(0,
1 - T / (utility_horizon T_min))``; ``sigmoid`` ``theta / (1 + exp((T - T_soft) / (sigmoid_width
T_soft)))`` with ``T_soft`` the job's deadline slack or ``sigmoid_slack T_min``; or any callable
``f(job_view, T_s, T_min_s) -> float``. ``avg_jct`` is the average-JCT objective the draft states:
``theta max(0, 1 - T / H)`` with one horizon ``H = utility_horizon * max_j T_min_j`` over the active jobs
of the decision, so the summed utility falls linearly with the summed JCT and the payoff ranks jobs by
predicted completion (shortest first); the other utilities scale each job by its own ``T_min`` and so
weigh a long job's delay like a short one's (relative slowdown, a fairness aim).

**Prices** (``price_auto``): per decision, ``U = max_j theta_j / W_j`` (the largest utility per GPU of
a round) and ``L = max(price_floor_ratio U, min_j u_j(T_h) / (W_j R))``, with ``T_h`` the longest
predicted completion on the slowest usable type and ``R = T_h / round``; ``price_L`` / ``price_U``
fix them instead. Hadar's own price constants remain to be checked against the full paper.

**Hadar-OASiS** (``mode="plan"``, plan ahead). When a job arrives (and at later rounds while deferred)
it gets a schedule over future rounds: ``W_j`` GPUs of one type in a set of rounds, chosen to maximise
``u_j(completion) - cost`` where the cost sums per-type, per-round prices ``L (U/L) ** (g_r(t) /
C_r)`` over the reservations ``g_r(t)`` already made (for one type and completion round, the cheapest
rounds are exact; the best over types and completion rounds is taken). A job is admitted and its
rounds reserved if the value is positive, otherwise it is retried next round. Plan prices are per
GPU-round: ``U`` = the largest utility per GPU-round any job can earn (best type, no waiting), ``L`` =
the smallest of a job run at once on its slowest usable type, clamped to ``[price_floor_ratio**2 U,
U]``, so that an empty cluster admits every job. Each round runs the
reserved jobs (placed by the node prices), re-plans admitted jobs whose progress drifted from their
plan by more than ``replan_tolerance`` of their work, and fills the remaining GPUs as Hadar-Round does.
Simplification: one GPU type per planned schedule instead of a type choice per round (a DP over rounds and
work quanta, like Dancer's dual subroutine, is too slow for Philly-length jobs), and prices per type rather
than per node (future placements are not known).

Layout: the utility and the prices (the primal-dual framework's two sides) are
:mod:`baselines.hadar.pricing`; this module holds the dual subroutine (offers), the greedy admission
and the round decisions; the plan-ahead variant is :mod:`baselines.hadar.plan_ahead` and HadarE's forking
:mod:`baselines.hadar.hadare`.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from baselines.hadar.knobs import HadarKnobs
from baselines.hadar.plan_ahead import PlanAhead, RoundPlan
from baselines.hadar.pricing import HadarPricing
from hetgym.sim.allocation import Allocation, JobAllocation
from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.placement import NodePool
from hetgym.sim.policy import register_policy
from hetgym.sim.throughput import ServerGroup
from hetgym.sim.view import ClusterView, JobView

HADAR_ROUND_S = 360.0


# --------------------------------------------------------------------------------------------
# Offers made by the dual subroutine


@dataclass
class Offer:
    """A job's best placement under the current prices.

    Attributes:
        job_id: The job.
        groups: ``[(node, num_gpus), ...]``.
        rate: Predicted iterations/s.
        cost: Sum of the marginal prices of its GPUs.
        utility: ``u_j(est_T)``.
        payoff: ``utility - cost``.
        est_jct_s: Predicted JCT if the job ran at ``rate`` from now on.
    """

    job_id: int
    groups: list[tuple[int, int]]
    rate: float
    cost: float
    utility: float
    payoff: float
    est_jct_s: float


@dataclass
class _Decision:
    """The placement chosen at one epoch: node groups per job, and the pool after it."""

    groups: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    pool: NodePool | None = None
    offers: dict[int, Offer] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# The policy


#: A candidate placement in ``Hadar.offer``: the node groups, their cost, the sorted groups, and the id of
#: their shape (GPUs, sorted GPU types, spans several nodes; see ``Hadar._shape_id``).
_Candidate = tuple[list[tuple[int, int]], float, tuple[tuple[int, int], ...], int]
#: An offer's ``(payoff, groups, rate, cost, utility, est_jct_s)``.
_Valued = tuple[float, list[tuple[int, int]], float, float, float, float]
#: A job's eligible type sets, GPUs and current nodes: jobs alike in these get the same cheapest placements.
_Signature = tuple[tuple[tuple[int, ...], ...], int, tuple[int, ...]]


@register_policy()
class Hadar(HadarPricing):
    """Hadar (IPDPS 2024; arXiv:2503.10918): round-based primal-dual scheduling with per-node prices.

    Sultana et al., "Hadar: Heterogeneity-Aware Optimization-Based Online Scheduling for Deep Learning
    Cluster", IEEE IPDPS 2024. Implemented: Hadar-Round (per-node exponential prices, the task-level
    dual subroutine with cross-type placements, greedy admission by payoff, work-conserving fill) and
    the plan-ahead Hadar-OASiS variant. Reconstructions (knobs, defaults documented as such): the
    utility function, the price function and its constants, the candidate ordering of the dual
    subroutine, the plan-ahead schedule space; see the module docstring.
    """

    name: ClassVar[str] = "hadar"
    knobs = HadarKnobs
    round_s = HADAR_ROUND_S
    placer = "priced"

    def _configure(self) -> None:
        # The work-conserving fill at rounds, and the fill between them, leave no GPU idle while a job fits.
        self.keeps_gpus_busy = self.knob_values.work_conserving and self.knob_values.fill_between_rounds

    # ----------------------------------------------------------------------------------------
    def _reset(self) -> None:
        assert self.cluster is not None
        super()._reset()
        self._types = self.cluster.gpu_types
        self._capacity = np.array([self.cluster.capacity[t] for t in self._types], dtype=np.int64)
        self._eligible: dict[int, list[list[int]]] = {}
        self._planner = PlanAhead(self, self._types, self._capacity)
        # Per-view caches of `offer`: the job's current nodes (and their shape id), and (rate, estimated JCT,
        # utility) per placement shape id and whether it is the current placement.
        self._cache_view: ClusterView | None = None
        self._prepared: dict[
            int,
            tuple[
                list[tuple[int, int]],
                bool,
                int,
                tuple[tuple[int, int], ...] | None,
                int,
                dict[int, tuple[float, float, float]],
            ],
        ] = {}
        # Per pool: the cheapest placements per signature (at one pool version), and per (eligible type set,
        # GPUs, current nodes) at the versions of the set's types (the only nodes the walk reads).
        self._candidates_pool: NodePool | None = None
        self._candidates: dict[int, tuple[int, list[_Candidate]]] = {}
        # Signatures as small ints (per view, like the shapes below).
        self._signature_ids: dict[_Signature, int] = {}
        self._signatures: list[_Signature] = []
        self._per_set: dict[tuple[tuple[int, ...], int, tuple[int, ...]], tuple[int, _Candidate | None]]
        self._per_set = {}
        # Placement shapes as small ints, so that the per-candidate lookups hash ints, not nested tuples.
        self._shape_ids: dict[tuple[int, tuple[str, ...], bool], int] = {}
        self._shapes: list[tuple[int, tuple[str, ...], bool]] = []
        # Rates per (job type, batch size) and shape id (what `_shape_rate` keys by the shape itself).
        self._rate_by_kind: dict[tuple[str, int], dict[int, float]] = {}
        self.last_prices: tuple[float, float] = (self.knob_values.price_L, self.knob_values.price_U)

    # ----------------------------------------------------------------------------------------
    # Dual subroutine

    def _eligible_sets(self, view: ClusterView, job: JobView) -> list[list[int]]:
        """Eligible type sets, one per candidate bottleneck type (fastest first, duplicates removed)."""
        sets = self._eligible.get(job.job_id)
        if sets is None:
            rates = self.job_rates(view, job)
            order = [int(i) for i in np.argsort(-rates, kind="stable") if rates[i] > 0]
            sets = []
            for r_star in order:
                # Every type at least as fast as the bottleneck for this job (task-level mixing).
                eligible = (
                    [t for t in order if rates[t] >= rates[r_star]] if self.knob_values.task_level_mixing else [r_star]
                )
                if eligible not in sets:
                    sets.append(eligible)
            self._eligible[job.job_id] = sets
        return sets

    def offer(self, view: ClusterView, job: JobView, pool: NodePool, keep_current: bool = True) -> Offer | None:
        """The job's best placement under the pool's prices (the dual subroutine), or ``None``.

        The job's current placement is a candidate when ``keep_current``, the job runs as one gang (mode
        ``sync``: a forked job's primary and copies are none) and its nodes are still free.
        """
        best = self._evaluate(view, job, pool, keep_current)
        if best is None:
            return None
        payoff, groups, rate, cost, u, est = best
        return Offer(job.job_id, list(groups), rate, cost, u, payoff, est)

    def _evaluate(self, view: ClusterView, job: JobView, pool: NodePool, keep_current: bool) -> _Valued | None:
        """:meth:`offer` as ``(payoff, groups, rate, cost, utility, est_jct_s)`` (the greedy's re-evaluations
        build an :class:`Offer` only for the job they commit)."""
        if self._cache_view is not view:
            # What depends on the view and the job but not on the pool is kept for this view's offers.
            self._cache_view = view
            self._prepared.clear()
        jid = job.job_id
        prepared = self._prepared.get(jid)
        if prepared is None:
            current = sorted((g.server_id, g.num_gpus) for g in job.groups)
            sync_now = job.allocation is not None and job.allocation.mode == "sync"
            sets = self._eligible_sets(view, job)
            signature = (tuple(tuple(e) for e in sets), job.num_gpus, tuple(h for h, _ in current))
            sig_id = self._signature_ids.get(signature)
            if sig_id is None:
                sig_id = self._signature_ids[signature] = len(self._signatures)
                self._signatures.append(signature)
            prepared = self._prepared[jid] = (
                current,
                sync_now,
                sig_id,
                tuple(current) if sync_now else None,
                self._shape_id(current) if current else -1,
                {},
            )
        current, sync_now, sig_id, current_key, current_shape, valued_cache = prepared
        hit = self._candidates.get(sig_id) if self._candidates_pool is pool else None
        found = hit[1] if hit is not None and hit[0] == pool.version else self._cheapest_candidates(pool, sig_id)
        # The current placement is the first candidate when it is still free; a cheapest placement equal to
        # it is then the same candidate (the first one of equal placements is kept).
        with_current = bool(keep_current and current and sync_now and pool.fits(current))
        if not found and not with_current:
            return None
        best: _Valued | None = None
        for i in range(-1 if with_current else 0, len(found)):
            if i < 0:
                groups, cost, shape, stays = current, None, current_shape, True
            else:
                groups, cost, key, shape = found[i]
                stays = key == current_key
                if stays and with_current:
                    continue
            # The rate depends on the placement's shape only, the delay on whether it is the current one.
            valued = valued_cache.get(2 * shape + stays)
            if valued is None:
                kind = self._rate_by_kind.get((job.job_type, job.batch_size))
                if kind is None:
                    kind = self._rate_by_kind[(job.job_type, job.batch_size)] = {}
                rate = kind.get(shape)
                if rate is None:
                    rate = kind[shape] = self._shape_rate(view, job, *self._shapes[shape])
                if rate <= 0:
                    valued = (rate, 0.0, 0.0)
                else:
                    elapsed = view.now_s - job.submit_s
                    delay = job.penalty_left_s if stays else view.restart_penalty_s(job)
                    est = elapsed + delay + job.remaining_iters / rate
                    valued = (rate, est, self.utility_of(view, job, est))
                valued_cache[2 * shape + stays] = valued
            rate, est, u = valued
            if rate <= 0:
                continue
            if cost is None:
                cost = sum(pool.cost(h, n) for h, n in groups)
            payoff = u - cost
            if best is None or payoff > best[0] + 1e-15:
                best = (payoff, groups, rate, cost, u, est)
        return best

    def _shape_id(self, groups: Sequence[tuple[int, int]]) -> int:
        """The id of the shape (GPUs, sorted GPU types, spans several nodes) of ``groups``."""
        shape = (*self._groups_shape(groups), len(groups) > 1)
        found = self._shape_ids.get(shape)
        if found is None:
            found = self._shape_ids[shape] = len(self._shapes)
            self._shapes.append(shape)
        return found

    def _cheapest_candidates(self, pool: NodePool, sig_id: int) -> list[_Candidate]:
        """The cheapest placement on each eligible type set of jobs with this (sets, GPUs, current nodes).

        Jobs with the same signature get the same placements while the pool is unchanged, so they are
        kept until the pool's next version; the placement on one type set is kept while none of the set's
        types changes (``NodePool.stamp``). Equal placements of several sets appear once (the
        first). cheapest() sums the node costs in the groups' order, as ``offer`` would.
        """
        if self._candidates_pool is not pool:
            self._candidates_pool = pool
            self._candidates.clear()
            self._per_set.clear()
        hit = self._candidates.get(sig_id)
        if hit is not None and hit[0] == pool.version:
            return hit[1]
        sets, need, current_nodes = self._signatures[sig_id]
        versions = pool.type_versions
        per_set = self._per_set
        found: list[_Candidate] = []
        keys: set[tuple[tuple[int, int], ...]] = set()
        for eligible in sets:
            stamp = sum([versions[t] for t in eligible])
            entry = per_set.get((eligible, need, current_nodes))
            if entry is None or entry[0] != stamp:
                got = pool.walk(eligible, need, current_nodes)
                cand = None if got is None else (got[0], got[1], tuple(sorted(got[0])), self._shape_id(got[0]))
                entry = per_set[(eligible, need, current_nodes)] = (stamp, cand)
            cand = entry[1]
            if cand is not None and cand[2] not in keys:
                keys.add(cand[2])
                found.append(cand)
        self._candidates[sig_id] = (pool.version, found)
        return found

    def greedy(
        self,
        view: ClusterView,
        pool: NodePool,
        jobs: Sequence[JobView],
        decision: _Decision,
        *,
        admit_nonpositive: bool | None = None,
    ) -> None:
        """Greedy admission by payoff, then (optionally) the work-conserving fill, committing into ``pool``."""
        fill = self.knob_values.work_conserving if admit_nonpositive is None else admit_nonpositive
        version = 0
        heap: list[tuple[float, float, int, int]] = []
        offers: dict[int, _Valued] = {}
        by_id = {j.job_id: j for j in jobs}
        evaluate = self._evaluate
        for job in jobs:
            o = evaluate(view, job, pool, True)
            if o is not None:
                offers[job.job_id] = o
                heapq.heappush(heap, (-o[0], job.submit_s, job.job_id, version))
        while heap:
            neg, sub, jid, ver = heapq.heappop(heap)
            if not fill and -neg <= 0:
                break  # stale entries are upper bounds: nothing left has a positive payoff
            if ver != version:
                o = evaluate(view, by_id[jid], pool, True)
                if o is None:
                    continue
                offers[jid] = o
                heapq.heappush(heap, (-o[0], sub, jid, version))
                continue
            payoff, groups, rate, cost, u, est = offers[jid]
            committed = Offer(jid, list(groups), rate, cost, u, payoff, est)
            for h, n in committed.groups:
                pool.take(h, n)
            decision.groups[jid] = committed.groups
            decision.offers[jid] = committed
            version += 1

    # ----------------------------------------------------------------------------------------
    # Decisions

    def _pool(self, view: ClusterView, used: Sequence[int]) -> NodePool:
        assert self.cluster is not None
        low, high = self.prices(view)
        self.last_prices = (low, high)
        return NodePool(self.cluster, used, low, high)

    def decide(self, view: ClusterView) -> _Decision:
        """Node groups per job for this epoch (before any HadarE forking)."""
        assert self.cluster is not None
        # The first epoch starts a round too (it is no tick); from the view, so a fresh instance agrees.
        round_start = view.is_tick or view.epoch == 0
        active = view.job_index
        for store in (self._rates, self._t_min, self._eligible):
            for jid in [j for j in store if j not in active]:
                del store[jid]
        decision = _Decision()
        if self.knob_values.mode == "plan":
            return self._decide_planned(view, round_start, decision)
        if round_start:
            pool = self._pool(view, [0] * len(self.cluster.servers))
            self.greedy(view, pool, list(view.jobs), decision)
        else:
            pool = self._keep_running(view, decision)
            if self.knob_values.fill_between_rounds:
                self.greedy(view, pool, list(view.waiting), decision)
        decision.pool = pool
        return decision

    def _decide_planned(self, view: ClusterView, round_start: bool, decision: _Decision) -> _Decision:
        """Hadar-OASiS's decision: the plans brought up to date, the reserved jobs run, the rest filled."""
        assert self.cluster is not None
        r0 = self._planner.update(view, round_start)
        fill = self.knob_values.work_conserving
        if round_start:
            pool = self._pool(view, [0] * len(self.cluster.servers))
            for job in sorted(view.jobs, key=lambda j: -j.num_gpus):
                plan = self._planner.plan_of(job.job_id)
                if plan is None or not plan.runs_in(r0):
                    continue
                current = [g.server_id for g in job.groups]
                found = pool.cheapest([plan.type_id], job.num_gpus, current)
                if found is None:
                    continue
                for h, n in found[0]:
                    pool.take(h, n)
                decision.groups[job.job_id] = found[0]
            rest = [j for j in view.jobs if j.job_id not in decision.groups]
            self.greedy(view, pool, rest, decision, admit_nonpositive=fill)
        else:
            pool = self._keep_running(view, decision)
            if self.knob_values.fill_between_rounds:
                self.greedy(view, pool, list(view.waiting), decision, admit_nonpositive=fill)
        decision.pool = pool
        return decision

    def _keep_running(self, view: ClusterView, decision: _Decision) -> NodePool:
        assert self.cluster is not None
        used = [s.num_gpus - f for s, f in zip(self.cluster.servers, view.free_by_server, strict=True)]
        pool = self._pool(view, used)
        for job in view.running:
            decision.groups[job.job_id] = [(g.server_id, g.num_gpus) for g in job.groups]
        return pool

    def to_allocation(self, view: ClusterView, decision: _Decision) -> Allocation:
        """``sync`` GPU counts per job; the declared ``priced`` placer maps them onto nodes.

        A job whose counts are unchanged keeps its exact allocation (and so its nodes: no restart).
        """
        out: dict[int, JobAllocation] = {}
        for jid, groups in decision.groups.items():
            job = view.job(jid)
            counts = self.counts_of(groups)
            if job.allocation is not None and job.allocation.mode == "sync" and job.allocation.as_dict() == counts:
                out[jid] = job.allocation
                continue
            out[jid] = JobAllocation(counts, mode="sync")
        return Allocation(out)

    def counts_of(self, groups: Iterable[tuple[int, int]]) -> dict[str, int]:
        """GPUs per type of ``[(node, n), ...]``."""
        assert self.cluster is not None
        servers = self.cluster.servers
        counts: dict[str, int] = {}
        for h, n in groups:
            t = servers[h].gpu_type
            counts[t] = counts.get(t, 0) + n
        return counts

    def schedule(self, view: ClusterView) -> Allocation:
        try:
            return self.to_allocation(view, self.decide(view))
        finally:
            self._forget_view()

    def _forget_view(self) -> None:
        """Drop the per-view caches of :meth:`offer` (they hold the view)."""
        self._cache_view = None
        self._prepared.clear()
        self._candidates_pool = None
        self._candidates.clear()
        self._per_set.clear()
        self._shape_ids.clear()
        self._shapes.clear()
        self._rate_by_kind.clear()
        self._signature_ids.clear()
        self._signatures.clear()

    # ----------------------------------------------------------------------------------------
    @property
    def plan_price_levels(self) -> tuple[float, float]:
        """``(L, U)`` per GPU-round of the latest plan-ahead decision."""
        return self._planner.price_levels

    def plan_prices(self, view: ClusterView) -> tuple[float, float]:
        """``(L, U)`` per GPU-round for plan-ahead schedules (see :meth:`PlanAhead.plan_prices`)."""
        return self._planner.plan_prices(view)

    def plan_schedule(self, view: ClusterView, job: JobView, start_round: int) -> RoundPlan | None:
        """The best single-type schedule of ``job`` from ``start_round`` (see :meth:`PlanAhead.plan_schedule`)."""
        return self._planner.plan_schedule(view, job, start_round)

    def plans(self) -> Mapping[int, RoundPlan]:
        """Current plan-ahead reservations (``mode="plan"``)."""
        return self._planner.plans()


def _merge(groups: Iterable[tuple[int, int]]) -> dict[int, int]:
    out: dict[int, int] = {}
    for h, n in groups:
        out[h] = out.get(h, 0) + n
    return out


def groups_to_server_groups(cluster: ClusterSpec, groups: Iterable[tuple[int, int]]) -> tuple[ServerGroup, ...]:
    """``[(node, n)]`` as the simulator's :class:`ServerGroup` tuple (for :func:`allocation_rate`)."""
    return tuple(ServerGroup(h, cluster.servers[h].gpu_type, n) for h, n in sorted(_merge(groups).items()))
