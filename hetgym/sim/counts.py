"""A decision given as arrays: the GPU counts per type of the jobs it changes (:class:`CountsDelta`).

The Gym environment decides in arrays (job rows x GPU types, :mod:`hetgym.envs.state`). A commit hands the
simulator those arrays for the rows it changes, with :meth:`Simulator.step_counts
<hetgym.sim.engine.Simulator.step_counts>`: the simulator checks each row once (:func:`resolve_counts`)
and applies the decision as a delta, so that every job without a row keeps its allocation (servers
included) and is neither checked nor looked at. It is the array form of an :class:`~hetgym.sim.allocation.Allocation`
carrying an :class:`~hetgym.sim.allocation.AllocationDelta`, with no explicit servers: the placer in force
places the changed jobs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from hetgym.sim.allocation import JobAllocation, check_job_allocation
from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.errors import InvalidAllocationError
from hetgym.sim.runtime import JobRecord
from hetgym.sim.throughput import EXECUTION_MODES, ExecutionMode


@dataclass(frozen=True, slots=True)
class CountsDelta:
    """The jobs a decision changes at one epoch, as arrays (R rows, T = the cluster's GPU types in order).

    Attributes:
        epoch: The epoch's identity, ``view.active.token`` (a delta of another epoch is refused).
        job_ids: The row's job, int ``(R,)`` (each active, each once).
        counts: GPUs per row and type, int ``(R, T)``, columns in ``cluster.gpu_types`` order: a row of
            zeros leaves the job without GPUs (it waits, or is preempted).
        modes: The execution mode of each row (R names).
        reject: Row rejected for good (its counts must be zero), bool ``(R,)``.

    Every active job without a row keeps its current allocation. A row equal to the job's current counts
    and mode keeps its allocation too (servers included).
    """

    epoch: object
    job_ids: np.ndarray
    counts: np.ndarray
    modes: tuple[ExecutionMode, ...]
    reject: np.ndarray


def resolve_counts(
    delta: CountsDelta,
    cluster: ClusterSpec,
    active: Mapping[int, JobRecord],
    totals: Mapping[str, int],
) -> tuple[frozenset[int], dict[int, JobAllocation], tuple[int, ...]]:
    """Check ``delta`` (raise :class:`InvalidAllocationError` naming the first problem) and turn it into
    ``(reject, new, touched)``: the rejected jobs, ``{job_id: JobAllocation}`` of the rows given GPUs (in row
    order), and every row's job (row order). ``totals`` are the GPUs per type the running jobs hold now.

    The checks are :func:`~hetgym.sim.allocation.check_allocation`'s, on the rows alone: each job active
    and given once, its types in the cluster and allowed for it, between ``min_gpus`` and ``max_gpus`` GPUs
    when it gets any (``max_gpus`` does not bound a ``fork`` row, whose copies the placer sizes), the
    per-type totals within the capacity.
    """
    types = cluster.gpu_types
    counts_array = np.asarray(delta.counts)
    if counts_array.size and not np.issubdtype(counts_array.dtype, np.integer):
        raise InvalidAllocationError(f"a CountsDelta's counts must be integers, got dtype {counts_array.dtype}")
    ids = np.asarray(delta.job_ids).tolist()
    rows = counts_array.tolist()
    rejected = np.asarray(delta.reject).tolist()
    modes = delta.modes
    if not len(ids) == len(rows) == len(rejected) == len(modes):
        raise InvalidAllocationError(
            f"a CountsDelta's rows disagree: {len(ids)} job ids, {len(rows)} count rows, "
            f"{len(rejected)} reject flags, {len(modes)} modes"
        )
    used = dict(totals)
    reject: set[int] = set()
    new: dict[int, JobAllocation] = {}
    for jid, row, rej, mode in zip(ids, rows, rejected, modes, strict=True):
        job = active.get(jid)
        if job is None:
            raise InvalidAllocationError(f"unknown job {jid}: it is not active (not arrived, or already ended)")
        if jid in new or jid in reject:
            raise InvalidAllocationError(f"job {jid} has more than one row")
        if len(row) != len(types):
            raise InvalidAllocationError(f"job {jid}: {len(row)} counts given, the cluster has {len(types)} GPU types")
        cur = job.alloc
        if cur is not None:
            for t, n in cur.counts:
                used[t] -= n
        if rej:
            if any(row):
                raise InvalidAllocationError(f"job(s) [{jid}] are both allocated GPUs and rejected")
            reject.add(jid)
            continue
        if mode not in EXECUTION_MODES:
            raise InvalidAllocationError(f"job {jid}: unknown execution mode {mode!r}; use one of {EXECUTION_MODES}")
        total = 0
        pairs = []
        for t, n in zip(types, row, strict=True):
            if n:
                if n < 0:
                    raise InvalidAllocationError(f"job {jid}: GPU count for {t!r} is {n}; counts must be >= 0")
                pairs.append((t, n))
                total += n
        if not total:
            continue
        pairs.sort()
        counts = tuple(pairs)
        if cur is not None and cur.counts == counts and cur.mode == mode:
            ja = cur  # unchanged: the job keeps its allocation, servers included
        else:
            ja = JobAllocation._of_counts(counts, mode)
            check_job_allocation(jid, ja, job.spec, cluster)
        for t, n in counts:
            used[t] += n
        new[jid] = ja
    capacity = cluster.capacity
    for t, n in used.items():
        if n > capacity[t]:
            raise InvalidAllocationError(
                f"over capacity on {t}: {n} GPUs allocated, the cluster has {capacity[t]}; reduce the counts"
            )
    return frozenset(reject), new, tuple(ids)
