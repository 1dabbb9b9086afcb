"""One decision shape: the rows a decision changes, checked once, and what a step reports back.

A :class:`Decision` is what :meth:`Simulator.step <hetgym.sim.engine.Simulator.step>` applies at one epoch:
the rows of the jobs it changes (job, GPU counts per type in the cluster's type order, execution mode,
reject flag, optionally the servers), every other active job keeping its allocation, servers included,
unlooked at. The Gym environment writes its rows as arrays; a policy's :class:`~hetgym.sim.allocation.Allocation`
(the complete desired state, :mod:`hetgym.sim.allocation`) becomes one through :func:`decision_of`.

:func:`check_decision` is the one validator: it checks each row once (the job active and given once, its
types allowed, between ``min_gpus`` and ``max_gpus`` GPUs when it gets any, explicit servers real and
matching the counts), then the per-type totals and, when a row places a job explicitly, each server's use,
and turns the rows into the allocations the placements apply (:class:`Resolved`). It raises
:class:`~hetgym.sim.errors.InvalidAllocationError` naming the first problem, before anything changes.

:class:`StepReport` is what a step returns: the next view, the jobs that ended and the deadline outcomes
decided since the previous report (:mod:`hetgym.sim.deadlines`; the one "met" rule is
:func:`hetgym.sim.metrics.met_deadline`), and the GPU-seconds the running jobs held over that interval,
so that a caller maps reports to rewards without reading the simulator's logs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Protocol

import numpy as np

from hetgym.sim.allocation import Allocation, JobAllocation
from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.deadlines import DeadlineOutcome
from hetgym.sim.errors import InvalidAllocationError
from hetgym.sim.job import JobSpec, JobStatus
from hetgym.sim.throughput import EXECUTION_MODES, ExecutionMode

if TYPE_CHECKING:
    from hetgym.sim.view import ClusterView

#: One row's explicit servers, ``((server_id, num_gpus), ...)``, or ``None`` to let the placer place it.
RowServers = tuple[tuple[int, int], ...] | None


@dataclass(frozen=True, slots=True)
class Decision:
    """The jobs a decision changes at one epoch (R rows; T = the cluster's GPU types, in ``cluster.gpu_types`` order).

    Attributes:
        epoch: The epoch's identity, ``view.active.token`` (a decision of another epoch is refused).
        job_ids: The row's job, ``(R,)`` ints (each active, each once).
        counts: GPUs per row and type, ``(R, T)`` ints: a row of zeros leaves the job without GPUs (it waits,
            or is preempted).
        modes: The execution mode of each row (R names).
        reject: Row rejected for good (its counts must be zero), ``(R,)`` bools.
        servers: Optionally, each row's explicit servers (:data:`RowServers`; ``None`` for a row the placer
            places); ``None``: the placer places every row.

    Every active job without a row keeps its current allocation. A row equal to the job's current counts
    and mode (and servers, when given) keeps its allocation too, servers included.
    """

    epoch: object
    job_ids: Sequence[int] | np.ndarray
    counts: Sequence[Sequence[int]] | np.ndarray
    modes: tuple[ExecutionMode, ...]
    reject: Sequence[bool] | np.ndarray
    servers: tuple[RowServers, ...] | None = None


@dataclass(frozen=True, slots=True)
class StepReport:
    """What one :meth:`Simulator.step <hetgym.sim.engine.Simulator.step>` did, from its decision to the next epoch.

    Attributes:
        view: The next epoch's view, or ``None`` when the simulation has ended.
        ended: ``(job_id, time_s, status)`` of every job that ended since the previous report (or the reset),
            in order: completions, rejections, and at the end of the run the jobs left unfinished.
        deadlines: The deadline outcomes decided since the previous report (:mod:`hetgym.sim.deadlines`).
        busy_gpu_s: GPU-seconds the running jobs held since the previous report, per GPU type in
            ``cluster.gpu_types`` order.
        quiet_ticks_s: The quiet round ticks the step passed over (:mod:`hetgym.sim.fastforward`), in order.
    """

    view: ClusterView | None
    ended: tuple[tuple[int, float, JobStatus], ...]
    deadlines: tuple[DeadlineOutcome, ...]
    busy_gpu_s: tuple[float, ...]
    quiet_ticks_s: tuple[float, ...] = ()

    @property
    def done(self) -> bool:
        """Whether the simulation has ended."""
        return self.view is None


class Resolved(NamedTuple):
    """A checked decision, as the placements apply it (simulator-internal).

    Attributes:
        reject: The rejected jobs.
        new: ``{job_id: JobAllocation}`` of the rows given GPUs, in row order (a job's current allocation,
            the very object, where its row keeps it).
        touched: Every row's job, in row order.
        explicit: Whether a row places its job on explicit servers it does not hold now.
    """

    reject: frozenset[int]
    new: dict[int, JobAllocation]
    touched: tuple[int, ...]
    explicit: bool


class _HasAllocation(Protocol):
    @property
    def spec(self) -> JobSpec: ...

    @property
    def allocation(self) -> JobAllocation | None: ...


def check_decision(
    decision: Decision,
    cluster: ClusterSpec,
    active: Mapping[int, _HasAllocation],
    current: Mapping[int, JobAllocation],
    totals: Mapping[str, int],
    now_s: float,
) -> Resolved:
    """Check ``decision`` against the epoch's state and turn it into what the placements apply.

    Args:
        decision: The rows.
        cluster: The cluster.
        active: The active jobs (``spec`` and current ``allocation``) by id.
        current: The running jobs' allocations (with their servers) by id.
        totals: GPUs per type those hold.
        now_s: The epoch's time (for messages).

    Raises:
        InvalidAllocationError: The first problem found (see the module); nothing is changed.
    """
    ids, rows, rejected = decision.job_ids, decision.counts, decision.reject
    if len(ids) == 0 == len(rows) == len(rejected) == len(decision.modes):
        return NO_ROWS  # no row: every job keeps its allocation
    types = cluster.gpu_types
    num_types = len(types)
    # Arrays (the environment's) are read once as Python lists; lists (decision_of's) as they are.
    if isinstance(rows, np.ndarray):
        if rows.size and not np.issubdtype(rows.dtype, np.integer):
            raise InvalidAllocationError(f"a decision's counts must be integers, got dtype {rows.dtype}")
        rows = rows.tolist()
    if isinstance(ids, np.ndarray):
        ids = ids.tolist()
    if isinstance(rejected, np.ndarray):
        rejected = rejected.tolist()
    modes = decision.modes
    servers = decision.servers if decision.servers is not None else (None,) * len(ids)
    if not len(ids) == len(rows) == len(rejected) == len(modes) == len(servers):
        raise InvalidAllocationError(
            f"a decision's rows disagree: {len(ids)} job ids, {len(rows)} count rows, "
            f"{len(rejected)} reject flags, {len(modes)} modes, {len(servers)} server placements"
        )
    used = dict(totals)
    reject: set[int] = set()
    new: dict[int, JobAllocation] = {}
    explicit = False
    for jid, row, rej, mode, srv in zip(ids, rows, rejected, modes, servers, strict=False):  # (lengths checked)
        job = active.get(jid)
        if job is None:
            what = f"cannot reject job {jid}" if rej else f"unknown job {jid}"
            raise InvalidAllocationError(
                f"{what}: it is not active at t={now_s:.1f}s (not arrived, or already ended); "
                f"active jobs are {_preview(active)}"
            )
        if jid in new or jid in reject:
            raise InvalidAllocationError(f"job {jid} has more than one row")
        if len(row) != num_types:
            raise InvalidAllocationError(f"job {jid}: {len(row)} counts given, the cluster has {num_types} GPU types")
        cur = job.allocation
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
        for t, n in zip(types, row, strict=False):  # (lengths checked)
            if n:
                if type(n) is not int and (isinstance(n, bool | np.bool_) or not isinstance(n, int | np.integer)):
                    raise InvalidAllocationError(f"job {jid}: GPU count {n!r} for {t!r} is not an integer")
                if n < 0:
                    raise InvalidAllocationError(f"job {jid}: GPU count for {t!r} is {n}; counts must be >= 0")
                pairs.append((t, n))
                total += n
        if not total:
            continue
        if len(pairs) > 1:
            pairs.sort()
        counts = tuple(pairs)
        if cur is not None and cur.counts == counts and cur.mode == mode and srv == cur.servers:
            ja = cur  # its current placement spelled out: unchanged
        elif cur is not None and cur.counts == counts and cur.mode == mode and srv is None:
            # Unchanged, and no placement asked for: the job stays where it is unless an explicit placement
            # needs its servers (then the placements place it afresh, as any job without servers).
            ja = JobAllocation._of_counts(counts, mode)
        else:
            ja = JobAllocation._of_counts(counts, mode) if srv is None else JobAllocation._placed(counts, srv, mode)
            spec = job.spec
            if srv is not None or spec.gpu_types is not None or spec.max_gpus is not None or total < spec.min_gpus:
                _check_job(jid, ja, spec, cluster)  # (else each of its checks passes: nothing bounds the row)
            explicit = explicit or srv is not None
        for t, n in counts:
            used[t] += n
        new[jid] = ja
    capacity = cluster.capacity
    for t, n in used.items():
        if n > capacity[t]:
            raise InvalidAllocationError(
                f"over capacity on {t}: {n} GPUs allocated, the cluster has {capacity[t]}; reduce the counts"
            )
    touched = tuple(ids)
    if explicit:  # kept placements are valid together; the placer handles the rest
        _check_servers(cluster, new, current, touched, servers)
    return Resolved(frozenset(reject) if reject else _NO_IDS, new, touched, explicit)


#: The checked decision without a row (every job keeps its allocation).
NO_ROWS = Resolved(frozenset(), {}, (), False)
_NO_IDS: frozenset[int] = frozenset()


def _check_servers(
    cluster: ClusterSpec,
    new: Mapping[int, JobAllocation],
    current: Mapping[int, JobAllocation],
    touched: tuple[int, ...],
    servers: Sequence[RowServers],
) -> None:
    """No server holds more GPUs than it has under the explicit rows and the placements of the jobs without a row."""
    server_use: dict[int, int] = {}
    rows = dict(zip(touched, servers, strict=True))
    placed = [ja.servers for jid, ja in new.items() if rows[jid] is not None]
    placed += [ja.servers for jid, ja in current.items() if jid not in rows]
    for srv in placed:
        for s, n in srv or ():
            server_use[s] = server_use.get(s, 0) + n
    for s, n in server_use.items():
        if n > cluster.servers[s].num_gpus:
            raise InvalidAllocationError(
                f"over capacity on server {s} ({cluster.servers[s].gpu_type}): {n} GPUs placed, "
                f"it has {cluster.servers[s].num_gpus}"
            )


def _check_job(jid: int, ja: JobAllocation, spec: JobSpec, cluster: ClusterSpec) -> None:
    """One row's allocation against its job's spec and the cluster (types, GPU bounds, explicit servers)."""
    for t, _ in ja.counts:
        if spec.gpu_types is not None and t not in spec.gpu_types:
            raise InvalidAllocationError(
                f"job {jid}: GPU type {t!r} is not allowed for this job (allowed: {list(spec.gpu_types)})"
            )
    total = ja.total_gpus
    if total and total < spec.min_gpus:
        raise InvalidAllocationError(
            f"job {jid}: {total} GPUs given but the job needs at least min_gpus={spec.min_gpus}; give it "
            f"{spec.min_gpus} or more, or leave it out of the allocation to let it wait"
        )
    if spec.max_gpus is not None and ja.mode == "fork" and ja.servers is not None:
        # Each server of a fork allocation runs an independent copy: the bound is per copy.
        for s, n in ja.servers:
            if n > spec.max_gpus:
                raise InvalidAllocationError(
                    f"job {jid}: its fork copy on server {s} has {n} GPUs but the job takes at most "
                    f"max_gpus={spec.max_gpus}; give each copy {spec.min_gpus}..{spec.max_gpus} GPUs"
                )
    elif spec.max_gpus is not None and ja.mode != "fork" and total > spec.max_gpus:
        raise InvalidAllocationError(
            f"job {jid}: {total} GPUs given but the job takes at most max_gpus={spec.max_gpus}; give it "
            f"{spec.min_gpus}..{spec.max_gpus} GPUs"
        )
    if ja.servers is None:
        return
    per_type: dict[str, int] = {}
    for s, n in ja.servers:
        if not 0 <= s < len(cluster.servers):
            raise InvalidAllocationError(
                f"job {jid}: unknown server {s}; cluster {cluster.name!r} has servers 0..{len(cluster.servers) - 1}"
            )
        t = cluster.servers[s].gpu_type
        per_type[t] = per_type.get(t, 0) + n
    if per_type != dict(ja.counts):
        raise InvalidAllocationError(
            f"job {jid}: servers {dict(ja.servers)} hold {per_type} GPUs by type, but counts say {dict(ja.counts)}"
        )


def _preview(ids: Mapping[int, object], limit: int = 10) -> str:
    keys = list(ids)[:limit]
    return "[" + ", ".join(str(k) for k in keys) + (", ...]" if len(ids) > limit else "]")


def decision_of(
    allocation: Allocation, cluster: ClusterSpec, epoch: object, current: Mapping[int, JobAllocation]
) -> Decision:
    """The :class:`Decision` that takes the cluster from its running allocations ``current`` (the epoch
    ``epoch``'s) to ``allocation``: the one map from a policy's answer to the simulator's decision.

    With an :class:`~hetgym.sim.allocation.AllocationDelta` of this epoch, the rows are the jobs it names;
    else a row for each running job the allocation leaves out (in submission order, it loses its GPUs) and
    for each entry that is not the job's current allocation (the very object), in the allocation's order.
    Rejected jobs get a reject row. Rows are in the order the placements apply them. Where no entry names
    servers, an entry that gives a running job its current counts and mode again is no row (the job keeps
    its allocation either way).

    Raises:
        InvalidAllocationError: ``allocation`` is not an :class:`Allocation`, or names a GPU type the cluster
            does not have (no row can express it).
    """
    return decision_or_none(allocation, cluster, epoch, current) or Decision(epoch, (), (), (), ())


def decision_or_none(
    allocation: Allocation, cluster: ClusterSpec, epoch: object, current: Mapping[int, JobAllocation]
) -> Decision | None:
    """:func:`decision_of`, or ``None`` where its decision has no row: ``allocation`` keeps every running job's
    allocation (the very objects) and rejects none, so every job keeps its allocation (the simulator's
    stepping skips such a decision; one pass over the changed jobs otherwise)."""
    if not isinstance(allocation, Allocation):
        raise InvalidAllocationError(f"a policy must return an Allocation, got {type(allocation).__name__}")
    jobs, reject = allocation.jobs, allocation.reject
    delta = allocation.delta
    if delta is not None and delta.epoch is epoch:
        get = current.get
        ids = []
        for jid in delta.touched:  # (a loop: usually none or one job, for which a comprehension costs more)
            if jid in reject or jobs.get(jid) is not get(jid):
                ids.append(jid)
    else:
        ids = [jid for jid in current if jid not in jobs]
        ids += [jid for jid, ja in jobs.items() if ja is not current.get(jid)]
    if reject:
        seen = set(ids)
        ids += sorted(jid for jid in reject if jid not in seen)
    if not ids:
        return None
    index = cluster.type_index
    num_types = len(index)
    counts: list[list[int]] = []
    modes: list[ExecutionMode] = []
    servers: list[RowServers] = []
    restated: list[int] = []  # rows that give a running job its current counts and mode again, without servers
    named_servers = False
    for jid in ids:
        row = [0] * num_types
        ja = jobs.get(jid)
        if ja is None:
            modes.append("sync")
            servers.append(None)
        else:
            cur = current.get(jid)
            if ja.servers is not None:
                named_servers = True
            elif cur is not None and ja.counts == cur.counts and ja.mode == cur.mode and jid not in reject:
                restated.append(len(counts))
            for t, n in ja.counts:
                i = index.get(t)
                if i is None:
                    raise InvalidAllocationError(
                        f"job {jid}: unknown GPU type {t!r}; cluster {cluster.name!r} has {list(cluster.gpu_types)}"
                    )
                row[i] = n
            modes.append(ja.mode)
            servers.append(ja.servers)
        counts.append(row)
    if restated and not named_servers:
        # Such a row changes nothing: checked, it is the job's current counts (valid), and applied, the job keeps
        # its allocation and servers, even under a placer that re-packs the cluster (which places the job anew
        # either way). Only a row naming servers could take that job's servers: with none, the row is left out.
        keep = set(range(len(ids))).difference(restated)
        if not keep:
            return None
        ids = [ids[i] for i in sorted(keep)]
        counts = [counts[i] for i in sorted(keep)]
        modes = [modes[i] for i in sorted(keep)]
        servers = [servers[i] for i in sorted(keep)]
    flags = [jid in reject for jid in ids] if reject else [False] * len(ids)
    return Decision(epoch, ids, counts, tuple(modes), flags, tuple(servers))


def validate_allocation(allocation: Allocation, view: ClusterView) -> None:
    """Raise :class:`InvalidAllocationError` naming the first problem of ``allocation`` at ``view``'s epoch;
    change nothing.

    The simulator's own checks (:func:`decision_of`, then :func:`check_decision`): every job is active; no
    job is both allocated and rejected; every GPU type exists in the cluster and is allowed for the job; each
    job gets between its ``min_gpus`` and ``max_gpus`` GPUs when it gets any (in ``fork`` mode every server
    holds an independent copy, so ``max_gpus`` bounds each copy where the servers are given); per-type totals
    fit the capacity; explicit placements name real servers of the right type, match the counts, and fit
    each server.
    """
    current = view.active.allocations
    capacity = view.cluster.capacity
    totals = {t: capacity[t] - view.free_gpus[t] for t in view.cluster.gpu_types}
    decision = decision_of(allocation, view.cluster, view.active.token, current)
    check_decision(decision, view.cluster, view.job_index, current, totals, view.now_s)
