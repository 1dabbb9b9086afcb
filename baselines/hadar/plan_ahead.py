"""Hadar-OASiS, the plan-ahead mode of Hadar: schedules over future rounds and their reservations.

Used by :class:`baselines.hadar.Hadar` with ``mode="plan"``; the paper, the price rule and what is
reconstructed are described in :mod:`baselines.hadar`. A :class:`RoundPlan` is one job's schedule (one
GPU type, a set of rounds); :class:`PlanAhead` keeps the reservations per type and round, prices them,
finds each job's best schedule and turns the plans into the epoch's node groups.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from baselines.hadar.pricing import HadarPricing
from hetgym.sim import portable
from hetgym.sim.view import ClusterView, JobView

_EPS = 1e-9


@dataclass
class RoundPlan:
    """A plan-ahead schedule: the job's type and reserved rounds (sorted)."""

    type_id: int
    rounds: list[int]
    num_gpus: int
    progress_per_round: float
    remaining_at_plan: float
    start_round: int
    value: float

    def planned_remaining(self, round_idx: int) -> float:
        """Work the plan expects to be left at the start of ``round_idx``."""
        done = bisect.bisect_left(self.rounds, round_idx)
        return max(0.0, self.remaining_at_plan - done * self.progress_per_round)

    def runs_in(self, round_idx: int) -> bool:
        """Whether the plan reserves ``round_idx``."""
        i = bisect.bisect_left(self.rounds, round_idx)
        return i < len(self.rounds) and self.rounds[i] == round_idx

    def has_rounds_from(self, round_idx: int) -> bool:
        """Whether any reserved round is ``round_idx`` or later."""
        return bool(self.rounds) and self.rounds[-1] >= round_idx


class PlanAhead:
    """The plan-ahead state of one :class:`~baselines.hadar.Hadar` run: plans, reservations, price levels.

    It plans and reserves; the policy runs the reserved jobs and fills the rest
    (:meth:`baselines.hadar.Hadar._decide_planned`).

    Args:
        policy: The Hadar policy (its job quantities, utilities and knobs are used).
        types: The cluster's GPU types.
        capacity: GPUs per type.
    """

    def __init__(self, policy: HadarPricing, types: tuple[str, ...], capacity: np.ndarray) -> None:
        self.policy = policy
        self.types = types
        self.capacity = capacity
        self._plans: dict[int, RoundPlan] = {}
        self.base = 0  # absolute round index of column 0 of grid
        self.grid = np.zeros((len(self.types), 64), dtype=np.int64)
        self.price_levels: tuple[float, float] = (policy.knob_values.price_L, policy.knob_values.price_U)
        self.admitted: set[int] = set()

    def plans(self) -> Mapping[int, RoundPlan]:
        """Current plans by job id (a copy)."""
        return dict(self._plans)

    def round_index(self, view: ClusterView) -> int:
        """Index of the round containing the view's time."""
        return math.floor(view.now_s / view.round_s + 1e-9)

    def reservations(self, start: int, length: int) -> np.ndarray:
        """Reserved GPUs per type for rounds ``start .. start+length-1`` (types x rounds, a copy)."""
        out = np.zeros((len(self.types), length), dtype=np.int64)
        lo = max(start, self.base)
        hi = min(start + length, self.base + self.grid.shape[1])
        if hi > lo:
            out[:, lo - start : hi - start] = self.grid[:, lo - self.base : hi - self.base]
        return out

    def _add(self, plan: RoundPlan, sign: int, from_round: int) -> None:
        """Add (``sign=1``) or remove (``-1``) a plan's GPUs in its rounds from ``from_round`` on."""
        rounds = np.array([r for r in plan.rounds if r >= from_round], dtype=np.int64)
        if rounds.size == 0:
            return
        need_hi = int(rounds.max()) + 1
        if need_hi > self.base + self.grid.shape[1]:
            width = max(need_hi - self.base, 2 * self.grid.shape[1])
            grown = np.zeros((len(self.types), width), dtype=np.int64)
            grown[:, : self.grid.shape[1]] = self.grid
            self.grid = grown
        np.add.at(self.grid[plan.type_id], rounds - self.base, sign * plan.num_gpus)

    def drop_past_rounds(self, r0: int) -> None:
        """Forget the rounds before ``r0``."""
        shift = r0 - self.base
        if shift > 0:
            self.grid = self.grid[:, shift:] if shift < self.grid.shape[1] else self.grid[:, :0]
            if self.grid.shape[1] == 0:
                self.grid = np.zeros((len(self.types), 64), dtype=np.int64)
            self.base = r0

    def release(self, jid: int, from_round: int) -> None:
        """Drop a job's plan and its reservations from ``from_round`` on."""
        plan = self._plans.pop(jid, None)
        if plan is not None:
            self._add(plan, -1, max(from_round, self.base))

    def reserve(self, jid: int, plan: RoundPlan) -> None:
        """Record a job's plan and reserve its rounds."""
        self._add(plan, +1, self.base)
        self._plans[jid] = plan

    def plan_prices(self, view: ClusterView) -> tuple[float, float]:
        """``(L, U)`` per GPU-round for plan-ahead schedules.

        ``U`` = the largest utility per GPU-round any job can earn (its best type, no waiting);
        ``L`` = the smallest utility per GPU-round of a job run at once on its slowest usable type,
        so that an empty cluster admits every job (clamped to ``[price_floor_ratio**2 U, U]``).
        """
        p = self.policy
        if not p.knob_values.price_auto or not view.jobs:
            return p.knob_values.price_L, p.knob_values.price_U
        highs, lows = [], []
        for job in view.jobs:
            r = p.job_rates(view, job)
            pos = r[r > 0]
            if not pos.size:
                continue
            elapsed = view.now_s - job.submit_s
            fast_rounds = max(1.0, job.remaining_iters / (float(pos.max()) * view.round_s))
            slow_s = job.remaining_iters / float(pos.min())
            slow_rounds = max(1.0, slow_s / view.round_s)
            highs.append(p.utility_of(view, job, p.t_min_s(view, job)) / (job.num_gpus * fast_rounds))
            lows.append(p.utility_of(view, job, elapsed + slow_s) / (job.num_gpus * slow_rounds))
        if not highs:
            return p.knob_values.price_L, p.knob_values.price_U
        high = max(highs)
        low = min(max(min(lows), p.knob_values.price_floor_ratio**2 * high), high)
        return low, high

    def utilities(self, view: ClusterView, job: JobView, jct_s: np.ndarray) -> np.ndarray:
        """``u_j`` over an array of JCTs (vectorised for the built-in utilities)."""
        p = self.policy
        u = p.knob_values.utility
        t_min = p.t_min_s(view, job)
        theta = job.spec.priority_weight
        jct = np.maximum(jct_s, _EPS)
        if callable(u) or not math.isfinite(t_min):
            return np.array([p.utility_of(view, job, float(t)) for t in jct])
        if u == "normalized_inverse_jct":
            return theta * np.minimum(1.0, t_min / jct)
        if u == "linear":
            return theta * np.maximum(0.0, 1.0 - jct / (p.knob_values.utility_horizon * t_min))
        if u == "avg_jct":
            return theta * np.maximum(0.0, 1.0 - jct / p.common_horizon_s(view))
        soft = job.deadline_s - job.submit_s if math.isfinite(job.deadline_s) else p.knob_values.sigmoid_slack * t_min
        z = np.minimum((jct - soft) / (p.knob_values.sigmoid_width * soft), 700.0)
        return theta / (1.0 + portable.exp(z))

    def plan_schedule(self, view: ClusterView, job: JobView, start_round: int) -> RoundPlan | None:
        """The best single-type schedule of ``job`` over future rounds under the reservation prices.

        For a type and a completion round ``f``, the cheapest schedule takes the ``n`` cheapest
        available rounds up to ``f`` (``n`` = rounds the remaining work needs on that type); costs
        take few distinct values (one per reservation level), so the prefix sums over levels give
        every ``f`` at once. The result maximises ``u_j(completion) - cost`` over types and ``f``.
        """
        p = self.policy
        rates = p.job_rates(view, job)
        low, high = self.price_levels
        round_s = view.round_s
        need = job.num_gpus
        rem = job.remaining_iters
        best: RoundPlan | None = None
        for t in np.argsort(-rates, kind="stable"):
            t = int(t)
            rate = float(rates[t])
            cap = int(self.capacity[t])
            if rate <= 0 or cap < need:
                continue
            per_round = rate * round_s
            n_rounds = max(1, math.ceil(rem / per_round - 1e-9))
            horizon = min(p.knob_values.plan_max_rounds, max(4 * n_rounds, n_rounds + 50))
            if horizon < n_rounds:
                continue
            used = self.reservations(start_round, horizon)[t]
            avail = used <= cap - need
            if not avail.any():
                continue
            levels, level_of = np.unique(used[avail], return_inverse=True)  # reservation levels present
            g = np.arange(need)
            level_cost = (low * (high / low) ** ((levels[:, None] + g[None, :]) / cap)).sum(axis=1)
            # counts[l, k]: available rounds at level l among rounds 0..k
            onehot = np.zeros((levels.size, horizon), dtype=np.int64)
            onehot[level_of, np.nonzero(avail)[0]] = 1
            counts = np.cumsum(onehot, axis=1)
            before = np.cumsum(counts, axis=0) - counts  # rounds at cheaper levels
            take = np.clip(n_rounds - before, 0, counts)
            total_taken = take.sum(axis=0)
            cost = (take * level_cost[:, None]).sum(axis=0)
            feasible = total_taken >= n_rounds
            if not feasible.any():
                continue
            k = np.arange(horizon)
            last_frac = rem / per_round - (n_rounds - 1)
            finish_s = (start_round + k + last_frac) * round_s
            value = np.where(feasible, self.utilities(view, job, finish_s - job.submit_s) - cost, -np.inf)
            k_best = int(np.argmax(value))
            if best is not None and value[k_best] <= best.value:
                continue
            chosen: list[int] = []
            for lvl in range(levels.size):
                rounds_at = np.nonzero(onehot[lvl, : k_best + 1])[0]
                chosen.extend(int(r) for r in rounds_at[: int(take[lvl, k_best])])
            best = RoundPlan(
                t, sorted(start_round + r for r in chosen), need, per_round, rem, start_round, float(value[k_best])
            )
        return best

    def plan_of(self, jid: int) -> RoundPlan | None:
        """The job's plan, or ``None``."""
        return self._plans.get(jid)

    def update(self, view: ClusterView, round_start: bool) -> int:
        """Hadar-OASiS's planning at one epoch: release ended jobs, re-plan drifted ones, admit new ones.

        Returns the index of the round the view is in.
        """
        p = self.policy
        r0 = self.round_index(view)
        active = view.job_index
        for jid in [j for j in self._plans if j not in active]:
            self.release(jid, r0)
        self.admitted &= set(active)
        self.drop_past_rounds(r0)
        self.price_levels = self.plan_prices(view)
        plan_from = r0 if round_start else r0 + 1
        if round_start:
            for jid in sorted(self.admitted, key=lambda j: (active[j].submit_s, j)):
                job = active[jid]
                plan = self._plans.get(jid)
                drift = abs(job.remaining_iters - plan.planned_remaining(r0)) if plan is not None else math.inf
                exhausted = plan is not None and not plan.has_rounds_from(r0)
                if plan is None or exhausted or drift > p.knob_values.replan_tolerance * job.total_iters:
                    self.release(jid, r0)
                    new = self.plan_schedule(view, job, r0)
                    if new is not None:
                        self.reserve(jid, new)  # admitted jobs keep their place even if the value is <= 0
        for job in view.jobs:
            if job.job_id in self.admitted:
                continue
            if not (round_start or job.job_id in view.arrived):
                continue
            plan = self.plan_schedule(view, job, plan_from)
            if plan is not None and plan.value > 0:
                self.admitted.add(job.job_id)
                self.reserve(job.job_id, plan)
        return r0
