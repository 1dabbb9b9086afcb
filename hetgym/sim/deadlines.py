"""The deadline outcomes of a run, as they happen: each deadline job met or lost, and when.

A job with a deadline (:attr:`JobSpec.has_deadline <hetgym.sim.job.JobSpec.has_deadline>`) has exactly one
outcome, recorded by the simulator (:meth:`Simulator.deadline_log <hetgym.sim.engine.Simulator.deadline_log>`)
at the first of:

* its completion: met when it completes by its deadline (within :data:`~hetgym.sim.metrics.DEADLINE_TOL_S`,
  the tolerance of the metrics' ``met_deadline``), else lost;
* its rejection, or the stop of the run with the job unfinished: lost;
* the first decision epoch past its deadline (``now > deadline + DEADLINE_TOL_S``) while it is still active:
  lost (the epoch's time is recorded). Quiet round ticks passed over by a fast-forward are not epochs here;
  a :class:`~hetgym.sim.fastforward.QuietTicks` request with ``deadlines=True`` passes over none past a deadline.

So a step-by-step caller (the Gym env) reads from the log, after each step, which deadlines were met and
lost in the interval it covered, with no accounting of its own.
"""

from __future__ import annotations

import heapq
import math
from typing import NamedTuple

from hetgym.sim.job import JobSpec, JobStatus
from hetgym.sim.metrics import DEADLINE_TOL_S, met_deadline
from hetgym.sim.runtime import JobRecord

_ACTIVE = (JobStatus.WAITING, JobStatus.RUNNING)


class DeadlineOutcome(NamedTuple):
    """One deadline job's outcome: ``met`` or lost, at ``time_s`` (see the module)."""

    job_id: int
    time_s: float
    met: bool


class DeadlineBook:
    """The deadline outcomes of one run (simulator-internal; read through ``Simulator.deadline_log``).

    Attributes:
        log: Every outcome so far, in the order they were decided.
    """

    __slots__ = ("_decided", "_due", "log")

    def __init__(self) -> None:
        self.log: list[DeadlineOutcome] = []
        self._decided: set[int] = set()
        # (deadline + tolerance, job id) of the active deadline jobs; entries of ended jobs are dropped lazily.
        self._due: list[tuple[float, int]] = []

    def copy(self) -> DeadlineBook:
        """An independent book with the same outcomes and watches (for a fork of the simulator)."""
        out = DeadlineBook.__new__(DeadlineBook)
        out.log, out._decided, out._due = list(self.log), set(self._decided), list(self._due)
        return out

    def arrived(self, spec: JobSpec) -> None:
        """A job became active: watch its deadline."""
        if spec.has_deadline:
            heapq.heappush(self._due, (spec.deadline_s + DEADLINE_TOL_S, spec.job_id))

    def ended(self, spec: JobSpec, time_s: float, status: JobStatus) -> None:
        """A job ended (completed, rejected or left unfinished) at ``time_s``: its outcome, if not decided yet."""
        if spec.has_deadline and spec.job_id not in self._decided:
            self._decided.add(spec.job_id)
            met = met_deadline(status == JobStatus.COMPLETED, time_s, spec.deadline_s)
            self.log.append(DeadlineOutcome(spec.job_id, time_s, met))

    def passed(self, now_s: float, jobs: dict[int, JobRecord]) -> None:
        """At a decision epoch at ``now_s``: the active jobs whose deadline has passed are lost there."""
        due = self._due
        while due and due[0][0] < now_s:
            _, jid = heapq.heappop(due)
            if jid not in self._decided and jobs[jid].status in _ACTIVE:
                self._decided.add(jid)
                self.log.append(DeadlineOutcome(jid, now_s, False))

    def horizon_s(self, jobs: dict[int, JobRecord]) -> float:
        """The last time at which no active job has lost its deadline yet (``inf`` when none has one)."""
        due = self._due
        while due and (due[0][1] in self._decided or jobs[due[0][1]].status not in _ACTIVE):
            heapq.heappop(due)
        return due[0][0] if due else math.inf
