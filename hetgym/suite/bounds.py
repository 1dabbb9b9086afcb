"""Upper bounds on the deadline satisfactory ratio (DSR) of one workload, whatever the scheduler.

Two bounds, both on the share of the jobs with a deadline that finish by it (rejected jobs count as misses,
as in the simulator's ``dsr``), both valid for every policy the simulator can run, in every execution mode:

* **alone** (:func:`alone_shares`): a job can meet its deadline only if it could with the whole cluster to
  itself. Its progress rate on ``n`` GPUs of type ``t`` is at most ``n * e_t``, ``e_t`` its best per-GPU
  rate on that type (``max_n rate(t, n) / n`` over every count up to the cluster's size: a ``sync`` or
  ``proportional`` job on ``N`` GPUs runs at most at ``sum_t n_t * rate(t, N) / N``, and a ``fork`` job's
  copies add up their own rates, each at most ``n_g * e_t``). So alone on every GPU of type ``t`` it
  does at most ``C_t * e_t`` iterations a second,
  and on every GPU of every type at most ``sum_t C_t * e_t``. Its first start costs the restart penalty
  when the simulator charges it (``charge_first_start``), so it progresses only after ``submit_s +
  penalty``. ``alone_by_type[t]``: share that could meet the deadline on type ``t`` alone;
  ``alone_best_type``: on at least one type alone; ``alone_mixed``: on all types at once (the bound).
* **capacity** (:func:`capacity_bound`): a time-indexed relaxation over the whole workload. Time is cut
  into ``num_slots`` equal slots up to the last deadline; ``g[j, t, s]`` is the GPU-time of type ``t``
  job ``j`` uses in slot ``s``, only inside its window ``[submit + penalty, deadline]``, at most ``C_t``
  times the overlap of the slot with that window; the GPU-time of type ``t`` in a slot is at most ``C_t``
  times its length; job ``j`` meets its deadline (``x[j] = 1``) only if ``sum e[j, t] * g[j, t, s] >=
  total_iters``. Maximising ``sum x`` with ``x`` binary (a MILP, HiGHS through ``scipy.optimize.milp``)
  bounds the number of jobs any schedule finishes in time, because every schedule gives such a ``g``.
  Relaxed away: preemption and migration are free (no restart penalty after the first start, and that one
  charged no GPU-time), GPUs are divisible and every job scales linearly at its best per-GPU rate, no
  placement, consolidation or communication loss, no minimum or maximum GPU count, work done before a
  deadline needs no completion at an epoch boundary. When the solver stops at its time limit the bound
  is its dual bound (still an upper bound); the LP relaxation (``x`` in [0, 1]) is reported beside it.

Pure numpy and scipy: no gymnasium, no torch.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.config import SimConfig
from hetgym.sim.job import JobSpec
from hetgym.sim.throughput import ThroughputModel

#: Slots of the time-indexed relaxation (coarse: the solve stays small; any number gives a valid bound).
DEFAULT_NUM_SLOTS = 48
#: CPU-seconds the MILP may take before its dual bound is used.
DEFAULT_TIME_LIMIT_S = 20.0


@dataclass(frozen=True)
class JobLimits:
    """What bounds one job: its progress window and its best per-GPU rate per type.

    Attributes:
        start_s: Earliest time it can progress (submission plus a charged first-start penalty).
        deadline_s: Its deadline.
        work_iters: Its total iterations.
        per_gpu_rate: ``{gpu_type: best iterations/s per GPU}`` over the types it may use.
        max_gpus: Most GPUs it may hold when not forked (its ``max_gpus``, else the cluster's size).
        envelope: Lines ``(a, b)`` above its rate on ``n`` GPUs when not forked (:func:`rate_envelope`).
    """

    start_s: float
    deadline_s: float
    work_iters: float
    per_gpu_rate: dict[str, float]
    max_gpus: int = 0
    envelope: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True)
class WorkloadBounds:
    """The bounds of one workload (shares of the jobs with a deadline).

    Attributes:
        num_deadline_jobs: Jobs with a finite deadline (the DSR's denominator).
        alone_by_type: Share that could meet the deadline alone on each type.
        alone_best_type: Share that could on at least one type alone.
        alone_mixed: Share that could on every type at once (an upper bound on the DSR).
        capacity: The time-indexed MILP bound, every execution mode (``nan`` when not computed).
        capacity_lp: Its LP relaxation.
        capacity_nofork: The MILP bound of schedules in which no job is forked into copies.
        capacity_nofork_lp: Its LP relaxation.
        status: The solver's outcome per MILP (``"optimal"`` or ``"time limit (dual bound)"``).
        cpu_s: CPU seconds of all the solves.
        num_slots: Slots of the relaxation.
    """

    num_deadline_jobs: int
    alone_by_type: dict[str, float]
    alone_best_type: float
    alone_mixed: float
    capacity: float = math.nan
    capacity_lp: float = math.nan
    capacity_nofork: float = math.nan
    capacity_nofork_lp: float = math.nan
    status: dict[str, str] = field(default_factory=dict)
    cpu_s: float = 0.0
    num_slots: int = 0


def job_limits(
    jobs: Sequence[JobSpec], cluster: ClusterSpec, throughput: ThroughputModel, sim: SimConfig
) -> list[JobLimits]:
    """The :class:`JobLimits` of every job with a finite deadline, in the given order."""
    capacity = dict(cluster.capacity)
    # A job across types runs at rate(t, N) / N per GPU with N its total count (proportional, sync), so the
    # best per-GPU rate is taken over every count up to the cluster's size, not only up to C_t.
    max_gpus = sum(capacity.values())
    memo: dict[tuple[str, int, str], float] = {}
    envelopes: dict[tuple[Any, ...], tuple[tuple[float, float], ...]] = {}
    out = []
    for job in jobs:
        if not math.isfinite(job.deadline_s):
            continue
        penalty = sim.restart_penalty_for(job.job_type) if sim.charge_first_start else 0.0
        rates: dict[str, float] = {}
        for gpu_type, total in capacity.items():
            if total <= 0 or (job.gpu_types is not None and gpu_type not in job.gpu_types):
                continue
            key = (job.job_type, int(job.batch_size), gpu_type)
            best = memo.get(key)
            if best is None:
                best = 0.0
                for n in range(1, max_gpus + 1):
                    r = throughput.rate(job.job_type, job.batch_size, gpu_type, n)
                    if math.isfinite(r) and r > 0:
                        best = max(best, r / n)
                memo[key] = best
            if best > 0:
                rates[gpu_type] = best
        cap = min(max_gpus, job.max_gpus) if job.max_gpus is not None else max_gpus
        env_key = (job.job_type, int(job.batch_size), tuple(rates), cap)
        lines = envelopes.get(env_key)
        if lines is None:
            lines = envelopes[env_key] = tuple(rate_envelope(job, tuple(rates), throughput, cap))
        out.append(JobLimits(job.submit_s + penalty, job.deadline_s, float(job.total_iters), rates, cap, lines))
    return out


def alone_shares(limits: Sequence[JobLimits], capacity: dict[str, int]) -> tuple[dict[str, float], float, float]:
    """``(alone_by_type, alone_best_type, alone_mixed)`` of the jobs (see the module docstring)."""
    if not limits:
        return {t: math.nan for t in capacity}, math.nan, math.nan
    by_type = {t: 0 for t in capacity}
    best = mixed = 0
    for lim in limits:
        window_s = lim.deadline_s - lim.start_s
        if window_s <= 0:
            continue
        ok = [t for t, e in lim.per_gpu_rate.items() if capacity[t] * e * window_s >= lim.work_iters]
        for t in ok:
            by_type[t] += 1
        best += bool(ok)
        mixed += sum(capacity[t] * e for t, e in lim.per_gpu_rate.items()) * window_s >= lim.work_iters
    n = len(limits)
    return {t: c / n for t, c in by_type.items()}, best / n, mixed / n


def _upper_hull(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The lines ``(slope, intercept)`` of the upper concave hull of ``points`` (sorted by x, from (0, 0))."""
    hull: list[tuple[float, float]] = []
    for p in points:
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (y2 - y1) * (p[0] - x1) <= (p[1] - y1) * (x2 - x1):
                hull.pop()  # hull[-1] lies on or below the chord from hull[-2] to p
            else:
                break
        hull.append(p)
    lines = []
    for (x1, y1), (x2, y2) in itertools.pairwise(hull):
        slope = (y2 - y1) / (x2 - x1)
        lines.append((slope, y1 - slope * x1))
    return lines


def rate_envelope(
    job: JobSpec, types: Sequence[str], throughput: ThroughputModel, max_gpus: int
) -> list[tuple[float, float]]:
    """Lines ``a * n + b`` (``b >= 0``) above ``max_t rate(t, n)`` for every count ``n`` in 1..``max_gpus``.

    A job on ``N`` GPUs that is not forked runs at most at ``max_t rate(t, N)`` (``sync``: the slowest type's
    rate, ``proportional``: a weighted mean of the types' rates, times a consolidation factor of at most 1), so
    over a slot its work is at most ``a * GPU-time + b * time`` for every such line.
    """
    points = [(0.0, 0.0)]
    for n in range(1, max_gpus + 1):
        best = max((throughput.rate(job.job_type, job.batch_size, t, n) for t in types), default=0.0)
        points.append((float(n), best if math.isfinite(best) else 0.0))
    return _upper_hull(points)


def capacity_bound(
    limits: Sequence[JobLimits],
    capacity: dict[str, int],
    *,
    fork: bool = True,
    num_slots: int = DEFAULT_NUM_SLOTS,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
) -> tuple[float, float, str, float]:
    """``(milp share, lp share, status, cpu_s)`` of the time-indexed relaxation (module docstring).

    ``fork=False`` bounds only schedules in which no job runs as independent copies: each job's work in a
    slot is also at most its rate envelope (:func:`rate_envelope`) and its GPUs at most its ``max_gpus``.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    started = time.process_time()
    n_jobs = len(limits)
    if n_jobs == 0:
        return math.nan, math.nan, "no job with a deadline", 0.0
    types = [t for t in capacity if capacity[t] > 0]
    horizon_s = max(lim.deadline_s for lim in limits)
    edges = np.linspace(0.0, horizon_s, num_slots + 1)
    slot_h = np.diff(edges) / 3600.0
    # Columns: x_j, then per (job, slot) in its window w[j, s] (the share of the job's work done in the slot)
    # and g[j, t, s] (GPU-hours of type t). Rows are built as (row, column, value) triples.
    lower_col: list[float] = [0.0] * n_jobs
    upper_col: list[float] = [1.0] * n_jobs
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    row_lo: list[float] = []
    row_hi: list[float] = []

    def new_col(upper: float) -> int:
        lower_col.append(0.0)
        upper_col.append(upper)
        return len(upper_col) - 1

    def new_row(entries: Sequence[tuple[int, float]], low: float, high: float) -> None:
        r = len(row_lo)
        for c, v in entries:
            rows.append(r)
            cols.append(c)
            vals.append(v)
        row_lo.append(low)
        row_hi.append(high)

    per_type_slot: dict[tuple[int, int], list[int]] = {}
    for j, lim in enumerate(limits):
        if lim.deadline_s <= lim.start_s:
            new_row([(j, 1.0)], 0.0, 0.0)  # cannot progress before its deadline: x_j = 0
            continue
        lo = np.maximum(edges[:-1], lim.start_s)
        hi = np.minimum(edges[1:], lim.deadline_s)
        overlap_h = np.clip(hi - lo, 0.0, None) / 3600.0
        work_entries: list[tuple[int, float]] = [(j, -1.0)]
        for s in np.flatnonzero(overlap_h > 0):
            o_h = float(overlap_h[s])
            w = new_col(1.0)
            work_entries.append((w, 1.0))
            g_cols = []
            linear: list[tuple[int, float]] = [(w, 1.0)]
            for k, t in enumerate(types):
                if t not in lim.per_gpu_rate:
                    continue
                g = new_col(capacity[t] * o_h)
                g_cols.append(g)
                per_type_slot.setdefault((k, int(s)), []).append(g)
                linear.append((g, -lim.per_gpu_rate[t] * 3600.0 / lim.work_iters))
            new_row(linear, -np.inf, 0.0)  # work <= sum_t e_t * g_t
            if not fork:
                for a, b in lim.envelope:
                    new_row(
                        [(w, 1.0)] + [(g, -a * 3600.0 / lim.work_iters) for g in g_cols],
                        -np.inf,
                        b * 3600.0 * o_h / lim.work_iters,
                    )
                new_row([(g, 1.0) for g in g_cols], -np.inf, lim.max_gpus * o_h)
        new_row(work_entries, 0.0, np.inf)  # sum_s w >= x_j
    for (k, slot), type_cols in per_type_slot.items():
        new_row([(g, 1.0) for g in type_cols], -np.inf, capacity[types[k]] * float(slot_h[slot]))
    n_cols = len(upper_col)
    matrix = coo_matrix((vals, (rows, cols)), shape=(len(row_lo), n_cols)).tocsr()
    constraint = LinearConstraint(matrix, np.asarray(row_lo), np.asarray(row_hi))
    cost = np.concatenate([-np.ones(n_jobs), np.zeros(n_cols - n_jobs)])
    bounds = Bounds(np.asarray(lower_col), np.asarray(upper_col))
    lp = milp(cost, constraints=constraint, bounds=bounds, integrality=np.zeros(n_cols))
    lp_share = -float(lp.fun) / n_jobs if lp.fun is not None else math.nan
    integrality = np.concatenate([np.ones(n_jobs), np.zeros(n_cols - n_jobs)])
    res = milp(
        cost,
        constraints=constraint,
        bounds=bounds,
        integrality=integrality,
        options={"time_limit": float(time_limit_s), "disp": False},
    )
    if res.status == 0 and res.fun is not None:
        status, best = "optimal", -float(res.fun)
    else:
        dual = getattr(res, "mip_dual_bound", None)
        if dual is None or not math.isfinite(float(dual)):
            return math.nan, lp_share, f"not solved ({res.message})", time.process_time() - started
        status, best = "time limit (dual bound)", -float(dual)
    # The count of jobs is an integer: round a solver's float down only past its tolerance.
    share = math.floor(best + 1e-6) / n_jobs
    return share, lp_share, status, time.process_time() - started


def workload_bounds(
    jobs: Sequence[JobSpec],
    cluster: ClusterSpec,
    sim: SimConfig,
    *,
    throughput: ThroughputModel | None = None,
    capacity: bool = True,
    num_slots: int = DEFAULT_NUM_SLOTS,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
) -> WorkloadBounds:
    """Both bounds of one workload (``capacity=False`` skips the MILP)."""
    model = throughput or (ThroughputModel.raw() if sim.compat == "gavel" else ThroughputModel.default())
    caps = dict(dict(cluster.capacity))
    limits = job_limits(jobs, cluster, model, sim)
    by_type, best, mixed = alone_shares(limits, caps)
    if not capacity:
        return WorkloadBounds(len(limits), by_type, best, mixed)
    share, lp_share, status, cpu_s = capacity_bound(limits, caps, num_slots=num_slots, time_limit_s=time_limit_s)
    share_nf, lp_nf, status_nf, cpu_nf = capacity_bound(
        limits, caps, fork=False, num_slots=num_slots, time_limit_s=time_limit_s
    )
    return WorkloadBounds(
        len(limits),
        by_type,
        best,
        mixed,
        share,
        lp_share,
        share_nf,
        lp_nf,
        {"capacity": status, "capacity_nofork": status_nf},
        cpu_s + cpu_nf,
        num_slots,
    )


__all__ = [
    "DEFAULT_NUM_SLOTS",
    "DEFAULT_TIME_LIMIT_S",
    "JobLimits",
    "WorkloadBounds",
    "alone_shares",
    "capacity_bound",
    "job_limits",
    "rate_envelope",
    "workload_bounds",
]
