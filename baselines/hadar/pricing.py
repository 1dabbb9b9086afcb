"""Hadar's utility and prices: what a placement is worth to a job and what its GPUs cost.

Sultana et al., "Hadar: Heterogeneity-Aware Optimization-Based Online Scheduling for Deep Learning
Cluster", IEEE IPDPS 2024: the two sides of the online primal-dual framework that :mod:`baselines.hadar`
schedules by. The primal side is the job's utility ``u_j(T)`` of a predicted JCT ``T`` (with the job
quantities it needs: ``T_min``, the job's rate on each type and on a placement that spans types and
nodes); the dual side is the price levels ``(L, U)`` of the per-node exponential price function. The
utility functions and the price constants are reconstructions (knobs of :class:`baselines.hadar.Hadar`,
:mod:`baselines.hadar.knobs`; the module docstring of :mod:`baselines.hadar.policy` states them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from baselines.hadar.knobs import HadarKnobs
from hetgym.sim.knob_policy import KnobPolicy
from hetgym.sim.view import ClusterView, JobView

_EPS = 1e-9


class HadarPricing(KnobPolicy[HadarKnobs]):
    """The base of :class:`~baselines.hadar.Hadar`: the utility ``u_j(T)``, the job quantities it reads, the prices."""

    def _reset(self) -> None:
        self._rates: dict[int, np.ndarray] = {}
        self._t_min: dict[int, float] = {}
        self._kappa: dict[tuple[str, int, str, int], float] = {}
        self._group_rates: dict[tuple[str, int, int, tuple[str, ...], bool], float] = {}
        self._horizon_key: tuple[float, int] | None = None
        self._horizon_s = math.inf

    # ----------------------------------------------------------------------------------------
    # Job quantities

    def job_rates(self, view: ClusterView, job: JobView) -> np.ndarray:
        """The job's rate on ``W_j`` GPUs of each type (0 where not allowed or too few GPUs)."""
        r = self._rates.get(job.job_id)
        if r is None:
            rates = view.rate_table.get(job)
            r = rates.fit_rates
            if r.max() <= 0 and rates.allowed_types:
                # Larger than any single type: the gang must span types; the tasks run at the rate of each
                # type at the full count (the slowest bounds it, as in sync mode).
                r = rates.rates
            self._rates[job.job_id] = r
        return r

    def t_min_s(self, view: ClusterView, job: JobView) -> float:
        """``T_min``: the job's total work on its best single type."""
        t = self._t_min.get(job.job_id)
        if t is None:
            best = float(self.job_rates(view, job).max())
            t = job.total_iters / best if best > 0 else math.inf
            self._t_min[job.job_id] = t
        return t

    def utility_of(self, view: ClusterView, job: JobView, jct_s: float) -> float:
        """``u_j(T)`` for a predicted JCT ``T``."""
        t_min = self.t_min_s(view, job)
        theta = job.spec.priority_weight
        if not math.isfinite(jct_s) or not math.isfinite(t_min):
            return 0.0
        jct_s = max(jct_s, _EPS)
        u = self.knob_values.utility
        if callable(u):
            return float(u(job, jct_s, t_min))
        if u == "normalized_inverse_jct":
            return theta * min(1.0, t_min / jct_s)
        if u == "linear":
            return theta * max(0.0, 1.0 - jct_s / (self.knob_values.utility_horizon * t_min))
        if u == "avg_jct":
            return theta * max(0.0, 1.0 - jct_s / self.common_horizon_s(view))
        soft = (
            job.deadline_s - job.submit_s if math.isfinite(job.deadline_s) else self.knob_values.sigmoid_slack * t_min
        )
        z = (jct_s - soft) / (self.knob_values.sigmoid_width * soft)
        return theta / (1.0 + math.exp(min(z, 700.0)))

    def common_horizon_s(self, view: ClusterView) -> float:
        """``H`` of the ``avg_jct`` utility: ``utility_horizon`` times the longest ``T_min`` of the active jobs."""
        key = (view.now_s, len(view.jobs))
        if key != self._horizon_key:
            t_mins = [self.t_min_s(view, j) for j in view.jobs]
            finite = [t for t in t_mins if math.isfinite(t)]
            self._horizon_s = self.knob_values.utility_horizon * max(finite) if finite else math.inf
            self._horizon_key = key
        return self._horizon_s

    def _kappa_of(self, view: ClusterView, job: JobView, gpu_type: str, n: int) -> float:
        key = (job.job_type, job.batch_size, gpu_type, n)
        k = self._kappa.get(key)
        if k is None:
            k = self._kappa[key] = view.throughput.consolidation_factor(job.job_type, job.batch_size, gpu_type, n)
        return k

    def groups_rate(self, view: ClusterView, job: JobView, groups: Sequence[tuple[int, int]]) -> float:
        """Sync-mode rate of ``job`` on ``groups`` (slowest type at the full count, multi-server factor)."""
        total, types = self._groups_shape(groups)
        return self._shape_rate(view, job, total, types, len(groups) > 1)

    def _groups_shape(self, groups: Sequence[tuple[int, int]]) -> tuple[int, tuple[str, ...]]:
        """GPUs and GPU types (sorted) of ``groups``."""
        assert self.cluster is not None
        servers = self.cluster.servers
        total = 0
        types: set[str] = set()
        for h, n in groups:
            total += n
            types.add(servers[h].gpu_type)
        return total, tuple(sorted(types))

    def _shape_rate(self, view: ClusterView, job: JobView, total: int, types: tuple[str, ...], multi: bool) -> float:
        key = (job.job_type, job.batch_size, total, types, multi)
        rate = self._group_rates.get(key)
        if rate is None:
            rates = {t: view.rate(job, t, total) for t in types}
            slowest = min(rates, key=lambda t: (rates[t], t))
            rate = rates[slowest]
            if multi:
                rate *= self._kappa_of(view, job, slowest, total)
            self._group_rates[key] = rate
        return rate

    # ----------------------------------------------------------------------------------------
    # Prices

    def prices(self, view: ClusterView) -> tuple[float, float]:
        """``(L, U)`` for this decision."""
        if not self.knob_values.price_auto or not view.jobs:
            return self.knob_values.price_L, self.knob_values.price_U
        u_max = max(j.spec.priority_weight / j.num_gpus for j in view.jobs)
        horizon_s = 0.0
        for job in view.jobs:
            r = self.job_rates(view, job)
            pos = r[r > 0]
            if pos.size:
                horizon_s = max(horizon_s, view.now_s - job.submit_s + job.remaining_iters / float(pos.min()))
        rounds = max(1.0, horizon_s / view.round_s)
        lows = [self.utility_of(view, j, horizon_s) / (j.num_gpus * rounds) for j in view.jobs]
        low = max(min(lows), self.knob_values.price_floor_ratio * u_max)
        return min(low, u_max), u_max


__all__ = ["HadarPricing"]
