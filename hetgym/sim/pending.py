"""The jobs a running simulation has not seen arrive yet: read them, or replace them in a copy.

A lookahead that must not read the future (:mod:`hetgym.lookahead`) forks a simulation at a decision and
swaps the jobs still to arrive for jobs drawn from the workload model. The simulator holds its workload as
job records in submission order with a cursor on the next arrival; :func:`replace_pending` rebuilds the
part after the cursor (the records, their ranks, the oversize set and the epoch bound derived from the
workload) and leaves every arrived job, the clock and the event heap as they are. Call it on a copy
(a fork): the original's results no longer describe its workload once its future is replaced.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from hetgym.sim.admission import check_jobs
from hetgym.sim.errors import HetgymError, InvalidJobError
from hetgym.sim.job import JobSpec
from hetgym.sim.rates import RateTable
from hetgym.sim.runtime import JobRecord

if TYPE_CHECKING:
    from hetgym.sim.engine import Simulator


def _check_running(sim: Simulator) -> None:
    if not getattr(sim, "_started", False) or sim.done:
        raise HetgymError("the simulation has not started or has ended: call reset() and step to a decision first")


def arrived_specs(sim: Simulator) -> tuple[JobSpec, ...]:
    """The jobs that have arrived so far (in submission order), whatever became of them."""
    _check_running(sim)
    return tuple(r.spec for r in sim._queue.order[: sim._queue.next_arrival])


def pending_specs(sim: Simulator) -> tuple[JobSpec, ...]:
    """The jobs still to arrive, in submission order."""
    _check_running(sim)
    return tuple(r.spec for r in sim._queue.order[sim._queue.next_arrival :])


def replace_pending(sim: Simulator, jobs: Iterable[JobSpec]) -> None:
    """Make ``jobs`` the jobs still to arrive in ``sim`` (started, not finished), instead of its own.

    Args:
        sim: The simulation to change (a fork: see the module docstring).
        jobs: The new future; each must arrive after the current time and have an id unused by the
            jobs that have arrived.

    Raises:
        HetgymError: The simulation is not running.
        InvalidJobError: A job arrives at or before ``sim.now_s``, reuses an arrived job's id, or fails the
            simulator's workload checks (unknown type, duplicate id, ...); nothing was changed.
    """
    _check_running(sim)
    new = sorted(jobs, key=lambda j: (j.submit_s, j.job_id))
    queue = sim._queue
    cut = queue.next_arrival
    kept = queue.order[:cut]
    kept_ids = {r.spec.job_id for r in kept}
    for spec in new:
        if spec.submit_s <= sim.now_s:
            raise InvalidJobError(
                f"job {spec.job_id}: submit_s={spec.submit_s} is not after the current time {sim.now_s}; a job still "
                "to arrive must arrive later",
                job_id=spec.job_id,
            )
        if spec.job_id in kept_ids:
            raise InvalidJobError(
                f"job {spec.job_id}: the id is taken by a job that has arrived; renumber the new jobs",
                job_id=spec.job_id,
            )
    # Checked before anything changes: a bad job leaves the simulation as it was.
    oversize = check_jobs(new, sim.cluster, sim.throughput, sim.config, sim._watchdog.fastest_run_s)
    records = [JobRecord(s) for s in new]
    order = [*kept, *records]
    for rank, record in enumerate(records, start=cut):
        record.rank = rank
    # New containers, not edits in place: a fork may share the original's (they never change in a run).
    rank_of = {r.spec.job_id: i for i, r in enumerate(order)}
    queue.order = order
    sim.specs = tuple(r.spec for r in order)
    queue.jobs = {**{r.spec.job_id: r for r in kept}, **{r.spec.job_id: r for r in records}}
    sim._rank = rank_of
    sim._placements.rank = rank_of
    sim._oversize = {j for j in sim._oversize if j in kept_ids} | oversize
    sim._watchdog.epoch_limit = sim._watchdog.epoch_bound(sim.specs, sim.round_s)
    # Rates are cached by job id and a fork shares its original's table: the new jobs get a table of the
    # fork's own (clearing the shared one would let two futures' jobs of one id read each other's rates).
    sim.rate_table = RateTable(sim.cluster, sim.throughput)


__all__ = ["arrived_specs", "pending_specs", "replace_pending"]
