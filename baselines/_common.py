"""Helpers shared by the classic baselines: choosing GPU types for a rigid gang, greedy filling."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from hetgym.sim.allocation import Allocation, AllocationBuilder, JobAllocation
from hetgym.sim.job import JobSpec
from hetgym.sim.view import ClusterView, JobView

TypeChoice = Literal["order", "fastest"]
#: A job as :func:`fill_in_order` walks it: its id, its view or spec, and its current allocation (``None``
#: while waiting), so a policy that keeps its own order need not build the running jobs' views.
JobRef = tuple[int, JobView | JobSpec, JobAllocation | None]
TYPE_CHOICES: tuple[str, ...] = ("order", "fastest")
TYPE_CHOICE_DOC = "'order' (first type with room, cluster order) or 'fastest' (for the job)"


def gang_counts(
    view: ClusterView,
    job: JobView | JobSpec,
    free: Mapping[str, int],
    num_gpus: int,
    type_choice: TypeChoice = "order",
    *,
    span_types: bool = True,
) -> dict[str, int] | None:
    """GPUs for a rigid gang of ``num_gpus``, or ``None`` if it does not fit now.

    ``order`` takes the first GPU type, in the cluster's order, with enough free GPUs
    (heterogeneity-agnostic); ``fastest`` takes the free type with the highest rate for this job.
    A single type is always preferred. A gang larger than every allowed type's capacity can never run
    on one type, so it spans types (fastest first, ``sync`` mode) when enough GPUs are free in total,
    unless ``span_types`` is ``False``.
    """
    # The rates and both type orders are computed once per kind of job (RateTable.ranked), not per call.
    rate, types, fastest_first = view.rate_table.ranked(job, num_gpus)
    if type_choice == "fastest":
        types = fastest_first
    for t in types:
        if free.get(t, 0) >= num_gpus and rate[t] > 0:
            return {t: num_gpus}
    if not span_types:
        return None
    usable = [t for t in types if rate[t] > 0]
    capacity = view.cluster.capacity
    if any(capacity[t] >= num_gpus for t in usable):
        return None  # it fits one type once that type frees up
    if sum(free.get(t, 0) for t in usable) < num_gpus:
        return None
    counts: dict[str, int] = {}
    left = num_gpus
    for t in [t for t in fastest_first if rate[t] > 0]:  # usable, fastest first
        take = min(left, free.get(t, 0))
        if take:
            counts[t] = take
            left -= take
    return counts


def greedy_fill(
    view: ClusterView,
    ordered: Iterable[JobView],
    *,
    type_choice: TypeChoice = "order",
    strict: bool = False,
    builder: AllocationBuilder | None = None,
    upgrade_margin: float = 0.2,
) -> Allocation:
    """Walk ``ordered`` by priority and give each job its requested gang while GPUs remain.

    A running job whose current GPUs are still free in the builder keeps them (no migration, no
    penalty) unless, with ``type_choice="fastest"``, a free type would run it more than
    ``upgrade_margin`` (a fraction, default 20%) faster: then it moves and pays the restart penalty.
    A job that cannot keep its GPUs gets a new gang or, if none fits, is preempted. Jobs not in
    ``ordered`` get nothing. With ``strict``, the walk stops at the first job that does not fit.
    """
    return fill_in_order(
        view,
        ((job.job_id, job, job.allocation) for job in ordered),
        type_choice=type_choice,
        strict=strict,
        builder=builder,
        upgrade_margin=upgrade_margin,
    )


def fill_in_order(
    view: ClusterView,
    ordered: Iterable[JobRef],
    *,
    type_choice: TypeChoice = "order",
    strict: bool = False,
    builder: AllocationBuilder | None = None,
    upgrade_margin: float = 0.2,
) -> Allocation:
    """:func:`greedy_fill` over ``(job_id, job, current allocation)`` triples (:data:`JobRef`).

    Without a ``builder`` it starts from an empty cluster and tells the engine which jobs changed
    (:meth:`AllocationBuilder.replacing`), so only those are checked and applied.
    """
    builder = builder or AllocationBuilder.replacing(view)
    free = builder.free
    free_get = free.get
    assigned = builder.assignments  # live
    take_if_fits = builder.take_if_fits
    fastest = type_choice == "fastest"
    if not any(free.values()):
        return builder.build()
    # "Every GPU is taken" is checked whenever GPUs are taken: then the remaining jobs get nothing.
    for job_id, job, current in ordered:
        if job_id in assigned:
            continue
        if not fastest:
            # keep(job) when its GPUs are still free, without checking twice
            if current is not None and current.counts and take_if_fits(job_id, current):
                if not any(free.values()):
                    break
                continue
            counts = gang_counts(view, job, free, job.num_gpus, type_choice)
        elif current is not None and current.counts and all(free_get(t, 0) >= n for t, n in current.counts):
            counts = gang_counts(view, job, free, job.num_gpus, type_choice)
            if counts is None or counts_rate(view, job, counts) <= (1.0 + upgrade_margin) * counts_rate(
                view, job, current.as_dict()
            ):
                builder.assign(job_id, current)  # keep(job)
                if not any(free.values()):
                    break
                continue
        else:
            counts = gang_counts(view, job, free, job.num_gpus, type_choice)
        if counts:
            builder.assign(job_id, counts)
            if not any(free.values()):
                break
        elif strict:
            break
    return builder.build()


def counts_rate(view: ClusterView, job: JobView | JobSpec, counts: Mapping[str, int]) -> float:
    """Rate of ``job`` on ``counts`` in ``sync`` mode on one server per type (slowest type bounds)."""
    total = sum(counts.values())
    table = view.rate_table
    rates = table.rates_at(job, total)
    return min((float(rates[table.types.index(t)]) for t, n in counts.items() if n > 0), default=0.0)


def keep_running(view: ClusterView) -> AllocationBuilder:
    """A builder holding every running job's current allocation (non-preemptive policies)."""
    return AllocationBuilder.keeping_running(view)


def best_rate(view: ClusterView, job: JobView, num_gpus: int | None = None) -> float:
    """The job's highest rate over its allowed types at ``num_gpus`` (default: its request)."""
    return view.rate_table.best_rate(job, num_gpus)
