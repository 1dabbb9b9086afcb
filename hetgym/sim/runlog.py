"""What a run records as it goes: jobs ended, deadline outcomes, GPU use over time, and the step reports.

:class:`RunLog` is the simulator's record of one run (one per :meth:`Simulator.reset
<hetgym.sim.engine.Simulator.reset>`): every job's end, in order; every deadline outcome
(:class:`~hetgym.sim.deadlines.DeadlineBook`); the GPUs held per type whenever they change (the timeline,
when ``SimConfig.record_timeline``) and the GPU-seconds they add up to; the policy's decision latencies.
Each :class:`~hetgym.sim.decision.StepReport` carries what was recorded since the previous one.
"""

from __future__ import annotations

from collections.abc import Mapping

from hetgym.sim.deadlines import DeadlineBook, DeadlineOutcome
from hetgym.sim.decision import StepReport
from hetgym.sim.job import JobSpec, JobStatus
from hetgym.sim.view import ClusterView


class RunLog:
    """The records of one run (see the module).

    Args:
        gpu_types: The cluster's GPU types, in order.
        record_timeline: Whether to keep the timeline of GPUs held.

    Attributes:
        ended: ``(job_id, time_s, status)`` of every job that ended, in order.
        deadlines: The deadline outcomes.
        timeline: ``(time_s, GPUs held per type)`` at each change (with ``record_timeline``).
        latencies_s: Wall time of each ``schedule`` call of a :meth:`Simulator.run`.
    """

    def __init__(self, gpu_types: tuple[str, ...], *, record_timeline: bool) -> None:
        self.gpu_types = gpu_types
        self.record_timeline = record_timeline
        self.ended: list[tuple[int, float, JobStatus]] = []
        self.deadlines = DeadlineBook()
        self.timeline: list[tuple[float, tuple[int, ...]]] = []
        self.latencies_s: list[float] = []
        # GPUs held per type since held_since_s, and the GPU-seconds held since the last report.
        self._held: tuple[int, ...] = (0,) * len(gpu_types)
        self._held_since_s = 0.0
        self._busy_gpu_s = [0.0] * len(gpu_types)
        self._reported_ended = 0
        self._reported_deadlines = 0

    def copy(self) -> RunLog:
        """An independent copy (for a fork of the simulator)."""
        out = RunLog.__new__(RunLog)
        out.__dict__.update(self.__dict__)
        out.ended, out.timeline, out.latencies_s = list(self.ended), list(self.timeline), list(self.latencies_s)
        out.deadlines = self.deadlines.copy()
        out._busy_gpu_s = list(self._busy_gpu_s)
        return out

    def end(self, spec: JobSpec, time_s: float, status: JobStatus) -> None:
        """A job ended (completed, rejected, or left unfinished when the run stops)."""
        self.ended.append((spec.job_id, time_s, status))
        self.deadlines.ended(spec, time_s, status)

    def usage(self, now_s: float, totals: Mapping[str, int]) -> None:
        """The GPUs held per type are ``totals`` from ``now_s`` on (called whenever they may have changed)."""
        used = tuple(map(totals.__getitem__, self.gpu_types))
        if used != self._held:
            self._account(now_s)
            self._held = used
        if not self.record_timeline:
            return
        timeline = self.timeline
        if timeline and timeline[-1][1] == used:
            return
        if timeline and timeline[-1][0] == now_s:
            timeline[-1] = (now_s, used)
        else:
            timeline.append((now_s, used))

    def _account(self, now_s: float) -> None:
        span_s = now_s - self._held_since_s
        if span_s > 0:
            busy = self._busy_gpu_s
            for i, n in enumerate(self._held):
                if n:
                    busy[i] += n * span_s
        self._held_since_s = now_s

    def report(self, view: ClusterView | None, now_s: float, quiet_ticks_s: tuple[float, ...] = ()) -> StepReport:
        """What was recorded since the previous report, up to ``now_s``, with the next ``view``."""
        self._account(now_s)
        ended, deadlines = self.ended, self.deadlines.log
        since_ended, since_deadlines = self._reported_ended, self._reported_deadlines
        busy = self._busy_gpu_s
        # Only what was recorded since the previous report is copied (usually nothing: no slice then).
        out = StepReport(
            view,
            tuple(ended[since_ended:]) if len(ended) > since_ended else (),
            tuple(deadlines[since_deadlines:]) if len(deadlines) > since_deadlines else (),
            tuple(busy),
            quiet_ticks_s,
        )
        self._reported_ended, self._reported_deadlines = len(ended), len(deadlines)
        self._busy_gpu_s = [0.0] * len(busy)
        return out

    def deadline_log(self, start: int = 0) -> list[DeadlineOutcome]:
        """The deadline outcomes from record ``start`` on."""
        return self.deadlines.log[start:]
