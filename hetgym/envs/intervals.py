"""Measuring a committed interval: the reward components of the simulated time between two epochs.

A commit applies an allocation at an epoch at ``t0`` and the simulator runs to the next epoch at ``t1``
(:class:`~hetgym.envs.rewards.RewardComponents`): every job active at ``t0`` and not rejected counts
until it ended or ``t1``, every allocated GPU is busy until its job ended or ``t1``, jobs that ended are
counted by how, and the deadlines the simulator saw met or lost in the interval are counted.

Under ``decisions="on-change"`` one agent step also covers the quiet round ticks after its commit, each
an epoch whose decision keeps every allocation. The simulator passes over them in the commit's step
(:mod:`hetgym.sim.fastforward`); :func:`add_quiet_ticks` measures their intervals as the epoch-by-epoch
replay did, in the same order: the commit's allocation up to the first tick, the same allocation
standing between ticks (whole seconds apart, so its sum does not depend on the order of the jobs),
and the environment measures the last interval, from the last tick to ``t1``, with the allocation
standing at that tick in the window's order there. The simulator passes over no tick at which a
deadline is lost (``QuietTicks(deadlines=True)``), since a lost deadline is news to the agent.

Deadlines met and lost are not decided here: the simulator records each deadline job's outcome
(:mod:`hetgym.sim.deadlines`, with the metrics' tolerance) and :func:`add_deadlines` counts those of the
interval.

:func:`charge_unfinished` adds, on the last step of a run stopped with jobs unfinished, the least time they
still needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from hetgym.envs.rewards import RewardComponents
from hetgym.sim.deadlines import DeadlineOutcome
from hetgym.sim.job import JobStatus
from hetgym.sim.metrics import JOB_COLUMNS, JobRow
from hetgym.sim.view import ClusterView


def add_interval(
    comps: RewardComponents,
    view: ClusterView,
    t0: float,
    t1: float,
    held: Sequence[tuple[int, int]],
    rejected: frozenset[int],
    ended_at: Mapping[int, float] | None,
    total_gpus: int,
) -> None:
    """Add ``[t0, t1]`` under an allocation to ``comps``: time, job-seconds, busy and idle GPU-seconds.

    ``held`` is ``(job_id, GPUs)`` of each job holding GPUs under the allocation, in its order (the sums
    run in that order).

    ``view`` holds the jobs active over the interval (in its order); ``ended_at`` the end times of jobs
    that ended, ``None`` when none ended in the interval.
    """
    dt = t1 - t0
    job_s = 0.0
    busy = 0.0
    if ended_at is not None:
        for job in view.jobs:
            if job.job_id not in rejected:
                job_s += min(ended_at.get(job.job_id, t1), t1) - t0
        for jid, n in held:
            busy += n * (min(ended_at.get(jid, t1), t1) - t0)
    else:
        # No job ended in the interval (and none active at t0 had ended before): every term is dt,
        # summed in the same order, so the totals are the same to the bit.
        active = len(view.running) + len(view.waiting)  # len(view.jobs), without merging the two
        for _ in range(active - len(rejected)):  # the rejected are among the view's jobs
            job_s += dt
        for _, n in held:
            busy += n * dt
    # Accumulated: under decisions="on-change" one step may cover several quiet epochs.
    comps.dt_s += dt
    comps.job_s += job_s
    comps.busy_gpu_s += busy
    comps.idle_gpu_s += max(0.0, total_gpus * dt - busy)


def add_quiet_ticks(
    comps: RewardComponents,
    view: ClusterView,
    t0: float,
    held: Sequence[tuple[int, int]],
    times_s: Sequence[float],
    total_gpus: int,
) -> None:
    """Add the intervals from ``t0`` to the last of the ticks ``times_s`` passed over after a commit.

    The first runs under the commit's allocation (``held``: as :func:`add_interval`'s), the others under
    the same allocation standing; no job ended and nothing was rejected in any of them (else the ticks were news).
    """
    add_interval(comps, view, t0, times_s[0], held, frozenset(), None, total_gpus)
    if len(times_s) < 2:
        return
    active = len(view.running) + len(view.waiting)
    gpus = 0
    for _, n in held:
        gpus += n
    # Ticks passed over are whole seconds apart: each sum of whole multiples of dt is exact, so the
    # products equal the replay's sums over the jobs in any order. The accumulators take the terms one by
    # one, in tick order (as the replay's steps added them), in a loop or, for many ticks, numpy's running sum.
    if len(times_s) <= _LOOP_TICKS:
        dt_s, job_s, busy_s, idle_s = comps.dt_s, comps.job_s, comps.busy_gpu_s, comps.idle_gpu_s
        previous = times_s[0]
        for i in range(1, len(times_s)):
            t = times_s[i]
            dt = t - previous
            previous = t
            busy = gpus * dt
            idle = total_gpus * dt - busy
            dt_s += dt
            job_s += active * dt
            busy_s += busy
            idle_s += idle if idle > 0.0 else 0.0  # max(0.0, idle)
        comps.dt_s, comps.job_s, comps.busy_gpu_s, comps.idle_gpu_s = dt_s, job_s, busy_s, idle_s
        return
    # One row a component: its value so far, then its term at each tick; the running sum along a row adds the
    # terms one by one, left to right (``np.add.accumulate`` is sequential: the loop's additions, in its order).
    times = np.array(times_s, dtype=float)
    terms = np.empty((4, len(times_s)))
    terms[:, 0] = (comps.dt_s, comps.job_s, comps.busy_gpu_s, comps.idle_gpu_s)
    dts = terms[0, 1:]
    np.subtract(times[1:], times[:-1], out=dts)
    np.multiply(active, dts, out=terms[1, 1:])
    busy_v = np.multiply(gpus, dts, out=terms[2, 1:])
    idle_v = total_gpus * dts - busy_v
    terms[3, 1:] = np.where(idle_v > 0.0, idle_v, 0.0)  # max(0.0, idle)
    sums = np.add.accumulate(terms, axis=1)[:, -1].tolist()
    comps.dt_s, comps.job_s, comps.busy_gpu_s, comps.idle_gpu_s = sums


#: Up to this many ticks :func:`add_quiet_ticks` adds in a Python loop; beyond, with numpy.
_LOOP_TICKS = 48


def add_ended(comps: RewardComponents, ended: Iterable[tuple[int, float, JobStatus]]) -> None:
    """Count the jobs that ended by how (completed; rejected; left unfinished counts in neither)."""
    for _, _, status in ended:
        if status == JobStatus.COMPLETED:
            comps.completed += 1
        elif status == JobStatus.REJECTED:
            comps.rejected += 1


def add_deadlines(comps: RewardComponents, outcomes: Iterable[DeadlineOutcome]) -> None:
    """Count the deadlines met and lost, from the simulator's deadline log (:mod:`hetgym.sim.deadlines`)."""
    for outcome in outcomes:
        if outcome.met:
            comps.met += 1
        else:
            comps.missed += 1


def charge_unfinished(comps: RewardComponents, rows: Sequence[JobRow]) -> None:
    """The least time the jobs left unfinished at the stop still needed (a lower bound of what is lost).

    Remaining iterations at each job's best rate with its requested count, alone on the cluster (``rows``:
    the run's per-job rows, :attr:`~hetgym.sim.SimulationResult.job_rows`). Without this charge, stopping
    early (an agent that never allocates ends the run by stalling) would look cheap under the time-based rewards.
    """
    status, num_gpus, total, remaining, ideal = (JOB_COLUMNS.index(c) for c in _CHARGED)
    left = [r for r in rows if r[status] == "unfinished"]
    if not left:
        return
    share = np.array([r[remaining] for r in left], dtype=float) / np.array([r[total] for r in left], dtype=float)
    need_s = np.array([r[ideal] for r in left], dtype=float) * share
    gpus = np.array([r[num_gpus] for r in left], dtype=float)
    ok = np.isfinite(need_s)  # a job no allowed type can run has no finite bound; it is not charged
    comps.unfinished_s = float(need_s[ok].sum())
    comps.unfinished_max_s = float(need_s[ok].max()) if ok.any() else 0.0
    comps.unfinished_gpu_s = float((need_s[ok] * gpus[ok]).sum())


#: The per-job columns :func:`charge_unfinished` reads.
_CHARGED = ("status", "num_gpus", "total_iters", "remaining_iters", "ideal_s")
