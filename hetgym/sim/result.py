"""What a simulation returns: :class:`SimulationResult`, and its assembly from the engine's job records.

:func:`build_result` turns the runtime records (:mod:`hetgym.sim.runtime`), the usage timeline and
the decision latencies into the per-job rows and the scalar metrics (:mod:`hetgym.sim.metrics`), computed
from the rows without pandas. The ``pandas`` tables (``jobs``, ``timeline``) are built on first access, so a
run whose tables nobody reads (an environment's episode) never pays for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.job import JobStatus
from hetgym.sim.metrics import JOB_COLUMNS, JobRow, job_rows, metrics_from_rows
from hetgym.sim.runtime import JobRecord
from hetgym.sim.throughput import ThroughputModel

if TYPE_CHECKING:
    import pandas as pd


class SimulationResult:
    """What :meth:`Simulator.run` returns.

    Attributes:
        policy: Policy name.
        cluster: Cluster name.
        metrics: Scalar metrics (see :mod:`hetgym.sim.metrics` for each definition).
        jobs: One row per job with its outcome (a ``pandas.DataFrame`` with the columns
            :data:`~hetgym.sim.metrics.JOB_COLUMNS`, built on first access).
        timeline: GPUs in use per type over time (a step function: one row per change; built on first access).
        job_rows: The rows of ``jobs`` as tuples, for readers that need no table.
        stalled: Whether the engine's watchdog stopped the run (no progress in simulated work for
            ``SimConfig.stall_epochs`` epochs, or more epochs than the workload can need).
        stall_reason: Why the watchdog stopped the run (empty when it did not).
        num_epochs: Decision epochs.
        num_events: Arrival, completion and tick events processed.
        wall_s: Wall-clock duration of the run.
    """

    def __init__(
        self,
        policy: str,
        cluster: str,
        metrics: dict[str, float],
        jobs: pd.DataFrame | None = None,
        timeline: pd.DataFrame | None = None,
        stalled: bool = False,
        stall_reason: str = "",
        num_epochs: int = 0,
        num_events: int = 0,
        wall_s: float = 0.0,
        extra: dict[str, Any] | None = None,
        *,
        job_rows: Sequence[JobRow] | None = None,
        usage: Sequence[tuple[float, tuple[int, ...]]] | None = None,
        gpu_types: Sequence[str] = (),
    ) -> None:
        if (jobs is None) == (job_rows is None) or (timeline is None) == (usage is None):
            raise ValueError("give jobs or job_rows, and timeline or usage (one of each)")
        self.policy = policy
        self.cluster = cluster
        self.metrics = metrics
        self.stalled = stalled
        self.stall_reason = stall_reason
        self.num_epochs = num_epochs
        self.num_events = num_events
        self.wall_s = wall_s
        self.extra: dict[str, Any] = {} if extra is None else extra
        self._jobs = jobs
        self._timeline = timeline
        self._rows = None if job_rows is None else tuple(job_rows)
        self._usage = None if usage is None else tuple(usage)
        self._gpu_types = tuple(gpu_types)

    @property
    def jobs(self) -> pd.DataFrame:
        """The per-job table (built from the rows on first access, then kept)."""
        if self._jobs is None:
            import pandas as pd

            self._jobs = pd.DataFrame(list(self.job_rows), columns=list(JOB_COLUMNS))
        return self._jobs

    @jobs.setter
    def jobs(self, frame: pd.DataFrame) -> None:
        self._jobs = frame
        self._rows = None

    @property
    def timeline(self) -> pd.DataFrame:
        """GPUs in use per type over time (built from the usage records on first access, then kept)."""
        if self._timeline is None:
            import pandas as pd

            assert self._usage is not None
            rows = [(t, *used) for t, used in self._usage]
            self._timeline = pd.DataFrame(rows, columns=["time_s", *self._gpu_types])
        return self._timeline

    @timeline.setter
    def timeline(self, frame: pd.DataFrame) -> None:
        self._timeline = frame
        self._usage = None

    @property
    def job_rows(self) -> tuple[JobRow, ...]:
        """The per-job table's rows, in :data:`~hetgym.sim.metrics.JOB_COLUMNS` order."""
        if self._rows is None:
            assert self._jobs is not None
            self._rows = tuple(self._jobs.itertuples(index=False, name=None))
        return self._rows

    def __repr__(self) -> str:
        return (
            f"SimulationResult(policy={self.policy!r}, cluster={self.cluster!r}, jobs={len(self.job_rows)}, "
            f"stalled={self.stalled}, num_epochs={self.num_epochs}, num_events={self.num_events})"
        )

    def summary(self) -> str:
        """A short human-readable line of the headline metrics."""
        m = self.metrics
        return (
            f"{self.policy} on {self.cluster}: DSR {m['dsr']:.3f}, avg JCT {m['jct_mean_s'] / 3600:.2f} h, "
            f"makespan {m['makespan_s'] / 3600:.2f} h, util {m['utilisation']:.3f}, "
            f"{int(m['num_completed'])}/{int(m['num_jobs'])} done"
        )


def build_result(
    policy_name: str,
    cluster: ClusterSpec,
    throughput: ThroughputModel,
    records: Sequence[JobRecord],
    usage: Sequence[tuple[float, tuple[int, ...]]],
    latencies_s: Sequence[float],
    *,
    stalled: bool,
    num_epochs: int,
    num_events: int,
    wall_s: float,
    stall_reason: str = "",
    num_oversize: int = 0,
) -> SimulationResult:
    """Assemble the result of a run from its job records (all of them, in submission order).

    Args:
        policy_name: The policy's name.
        cluster: The simulated cluster.
        throughput: The throughput model the run used (for the per-job ideal durations).
        records: Every job's runtime record; those still ``PENDING`` (never arrived) are counted in
            ``num_not_arrived`` and left out of the table.
        usage: The GPUs in use per type over time, ``(time_s, counts in cluster.gpu_types order)``.
        latencies_s: The policy's decision latencies.
        stalled: Whether the engine's watchdog stopped the run.
        num_epochs: Decision epochs.
        num_events: Events processed.
        wall_s: Wall-clock duration of the run.
        stall_reason: Why the watchdog stopped the run.
        num_oversize: Jobs rejected at arrival because they can never fit the cluster
            (``SimConfig.oversize_jobs="reject"``), reported as ``metrics["num_oversize"]``.
    """
    jobs = [j for j in records if j.status != JobStatus.PENDING]
    rows = job_rows(
        [
            (
                j.spec,
                j.status,
                j.first_start_s,
                j.finish_s,
                j.attained_gpu_s,
                j.num_reconfigs,
                j.remaining,
            )
            for j in jobs
        ],
        throughput,
        cluster,
    )
    # The metrics straight from the rows; the tables are built only if someone reads them.
    metrics = metrics_from_rows(rows, usage, cluster, latencies_s)
    metrics["num_not_arrived"] = float(len(records) - len(jobs))
    metrics["num_oversize"] = float(num_oversize)
    return SimulationResult(
        policy=policy_name,
        cluster=cluster.name,
        metrics=metrics,
        stalled=stalled,
        stall_reason=stall_reason,
        num_epochs=num_epochs,
        num_events=num_events,
        wall_s=wall_s,
        job_rows=rows,
        usage=usage,
        gpu_types=cluster.gpu_types,
    )
