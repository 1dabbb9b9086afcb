"""Dancer's planning step: the dual subroutine run for one job on the GPUs other jobs have not reserved.

Zhang, Luo, Sun, Yu and Li, "Deadline-Aware Online Job Scheduling for Distributed Training in
Heterogeneous Clusters", IEEE TCC 13(2), 2025. What :class:`baselines.dancer.Dancer` asks of its dual
subroutine, over the policy's state: the price function in force and its running calibration
(``price_auto``), a job's options and rates, the cheapest deadline-feasible schedule on the slot ledger's
unreserved GPUs (the block DP of :mod:`baselines.dancer.dp`, checked and repaired exactly), and, for
re-planning, the work a reserved plan still does and the release of its surplus tail. The admission
rule, the executor and the re-planning schedule are :mod:`baselines.dancer`; the reservations
:mod:`baselines.dancer.reservations`.
"""

from __future__ import annotations

import math

import numpy as np

from baselines._deadline import JobOptions, job_options, slot_of
from baselines.dancer.dp import PriceFunction, block_costs, dual_dp, repair_schedule, schedule_progress
from baselines.dancer.knobs import DancerKnobs
from baselines.dancer.reservations import JobState, Plan, SlotLedger, plan_remaining, trim_plan
from hetgym.sim import portable
from hetgym.sim.job import JobSpec
from hetgym.sim.knob_policy import KnobPolicy
from hetgym.sim.view import ClusterView, JobView

_INF = math.inf


class DancerPlanning(KnobPolicy[DancerKnobs]):
    """The planning half of :class:`~baselines.dancer.Dancer` (its base): prices, options and the per-job DP.

    The subclass sets, in ``_reset``, the state read here (``_types``, ``_cap``, ``_slot_s``,
    ``_type_weight``, ``_ledger``, ``_jobs``, ``_seen_L``, ``_seen_U``, ``_memo``, ``stats``).
    """

    _types: tuple[str, ...]
    _cap: np.ndarray
    _slot_s: float
    _type_weight: np.ndarray
    _ledger: SlotLedger
    _jobs: dict[int, JobState]
    _seen_L: float | None
    _seen_U: float | None
    _memo: dict[int, tuple[JobSpec, JobOptions]]
    stats: dict[str, int]

    @property
    def prices(self) -> PriceFunction:
        """The price function in force (after calibration on the jobs seen so far)."""
        L = self.knob_values.price_L if self.knob_values.price_L is not None else self._seen_L
        U = self.knob_values.price_U if self.knob_values.price_U is not None else self._seen_U
        if L is None or U is None:
            L = U = 1.0
        return PriceFunction(float(L), float(max(U, L)), self.knob_values.price_mode, self.knob_values.price_increment)

    def _options(self, view: ClusterView, job: JobView) -> JobOptions:
        st = self._jobs.get(job.job_id)
        if st is not None:
            return st.options
        hit = self._memo.get(job.job_id)
        if hit is not None and (hit[0] is job.spec or hit[0] == job.spec):
            return hit[1]
        opts = job_options(
            view.throughput,
            job.spec,
            view.cluster,
            max_count=self.knob_values.max_count,
            mix_types=self.knob_values.allow_type_mix_in_slot,
        )
        if self.knob_values.memory == "observed":
            self._memo[job.job_id] = (job.spec, opts)
        return opts

    def _calibrate(self, view: ClusterView, job: JobView, opts: JobOptions, value: float) -> None:
        """Widen the running ``[L, U]`` with this job's fewest and most GPU-slots of a feasible schedule."""
        window = job.deadline_s - view.now_s
        if window <= 0 or len(opts) == 0:
            return
        need_s = job.remaining_iters / np.maximum(opts.rates, 1e-300)
        ok = need_s <= window
        if not ok.any():
            return
        weighted_gpus = portable.matvec(opts.counts, self._type_weight)
        # Count whole DP blocks, plus one: a schedule not starting on a block boundary touches one more.
        per = self._slots_per_block(view.now_s, job.deadline_s - self.knob_values.deadline_margin_s)
        blocks = np.ceil(need_s[ok] / (per * self._slot_s) - 1e-9) + 1.0
        gpu_slots = weighted_gpus[ok] * blocks * per
        lo, hi = float(gpu_slots.min()), float(gpu_slots.max())
        u, low = value / max(lo, 1.0), value / max(hi, 1.0)
        self._seen_U = u if self._seen_U is None else max(self._seen_U, u)
        self._seen_L = low if self._seen_L is None else min(self._seen_L, low)

    def _slots_per_block(self, now_s: float, deadline_s: float) -> int:
        """Slots per DP block for a window (at most ``dp_max_blocks`` blocks)."""
        first = slot_of(now_s, self._slot_s)
        last = math.ceil(deadline_s / self._slot_s - 1e-9) - 1
        return max(1, math.ceil((last - first + 1) / self.knob_values.dp_max_blocks))

    def _current_option(self, job: JobView, opts: JobOptions) -> int:
        if job.allocation is None:
            return -1
        return opts.find_pairs(job.allocation.counts)

    def _rates(self, job: JobView, opts: JobOptions, current: int) -> np.ndarray:
        rates = opts.rates.copy()
        if current >= 0 and job.rate_iters_per_s > 0:
            rates[current] = job.rate_iters_per_s  # the observed rate of the placement in force
        return rates

    def _start_penalty_s(self, view: ClusterView, job: JobView) -> float:
        if job.first_start_s is None and not view.config.charge_first_start:
            return 0.0
        return view.restart_penalty_s(job)

    def plan_job(self, view: ClusterView, job: JobView, opts: JobOptions) -> tuple[float, Plan | None]:
        """Cheapest deadline-feasible schedule of ``job`` on the GPUs other jobs have not reserved.

        Returns ``(cost, plan)``; ``plan`` is ``None`` when no schedule meets the deadline.
        """
        now, slot_s = view.now_s, self._slot_s
        deadline = job.deadline_s - self.knob_values.deadline_margin_s
        work = job.remaining_iters
        if deadline <= now + 1e-9 or len(opts) == 0:
            return _INF, None
        first = slot_of(now, slot_s)
        last = math.ceil(deadline / slot_s - 1e-9) - 1
        num_slots = last - first + 1
        slot_start = np.arange(first, last + 1, dtype=float) * slot_s
        starts = np.maximum(slot_start, now)
        ends = np.minimum(slot_start + slot_s, deadline)
        lens = np.maximum(ends - starts, 0.0)
        used = self._ledger.window(first, last).astype(float)

        per = self._slots_per_block(now, deadline)
        num_blocks = math.ceil(num_slots / per)
        pad = num_blocks * per - num_slots
        weight = np.concatenate([lens / slot_s, np.zeros(pad)]).reshape(num_blocks, per)
        used_p = np.hstack([used, np.zeros((len(self._types), pad))]).reshape(len(self._types), num_blocks, per)
        resid_p = np.hstack([self._cap[:, None] - used, np.full((len(self._types), pad), np.iinfo(np.int64).max)])
        residual = resid_p.reshape(len(self._types), num_blocks, per).min(axis=2)
        block_len = np.concatenate([lens, np.zeros(pad)]).reshape(num_blocks, per).sum(axis=1)
        idx = np.arange(num_blocks)
        block_start = starts[idx * per]
        block_end = ends[np.minimum((idx + 1) * per, num_slots) - 1]

        costs = block_costs(self.prices, opts.counts, self._cap, self._type_weight, weight, used_p)
        fits = (opts.counts[:, :, None] <= residual[None, :, :]).all(axis=1)
        # Break (near) ties between blocks: earliest first, or latest first (reserve late, run early).
        order = idx if self.knob_values.tie_break == "early" else num_blocks - 1 - idx
        costs = np.where(fits, costs * (1.0 + 1e-7 * order[None, :]), _INF)

        current = self._current_option(job, opts)
        rates = self._rates(job, opts, current)
        penalty = self._start_penalty_s(view, job) if current < 0 else view.restart_penalty_s(job)
        same = rates[:, None] * block_len[None, :]
        switch = rates[:, None] * np.maximum(block_len[None, :] - penalty, 0.0)
        if current >= 0:
            same[current, 0] = rates[current] * max(block_len[0] - job.penalty_left_s, 0.0)

        # Per-block rounding (no switch state) needs a few units per block to stay accurate; the
        # switch-aware DP rounds cumulatively along runs and keeps Q.
        quanta = (
            self.knob_values.dp_quanta
            if self.knob_values.switch_cost_in_dp
            else max(self.knob_values.dp_quanta, 4 * num_blocks)
        )
        target = work
        for _ in range(4):
            self.stats["dp_calls"] += 1
            res = dual_dp(
                costs,
                same,
                switch,
                target,
                quanta=quanta,
                initial_option=current,
                switch_aware=self.knob_values.switch_cost_in_dp,
            )
            if not res.feasible:
                return _INF, None
            choice, cost = repair_schedule(res.choice, res.cost, costs, same, switch, work, current)
            if choice is not None:
                return cost, Plan.from_blocks(choice, block_start, block_end)
            self.stats["dp_retries"] += 1
            done = schedule_progress(res.choice, same, switch, current)
            target += (work - done) + target / quanta
        return _INF, None

    def _plan_remaining(self, view: ClusterView, job: JobView, st: JobState) -> float:
        """Work the rest of the plan does from now on (restart penalties included)."""
        current = self._current_option(job, st.options)
        start_s = self._start_penalty_s(view, job)
        rates = self._rates(job, st.options, current)
        return plan_remaining(st.plan, job, view.now_s, rates, current, view.restart_penalty_s(job), start_s)

    def _trim(self, view: ClusterView, job: JobView, st: JobState, surplus: float) -> None:
        """Release the tail slots of a plan whose work exceeds the job's remaining work by ``surplus``."""
        rates = self._rates(job, st.options, self._current_option(job, st.options))
        self.stats["trims"] += trim_plan(self._ledger, st, view.now_s, rates, surplus)


__all__ = ["DancerPlanning"]
