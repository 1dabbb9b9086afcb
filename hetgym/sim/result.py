"""What a simulation returns: :class:`SimulationResult`, and its assembly from the engine's job records.

:func:`build_result` turns the runtime records (:mod:`hetgym.sim.runtime`), the usage timeline and
the decision latencies into the per-job table and the scalar metrics (:mod:`hetgym.sim.metrics`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.job import JobStatus
from hetgym.sim.metrics import compute_metrics, jobs_frame
from hetgym.sim.runtime import JobRecord
from hetgym.sim.throughput import ThroughputModel

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class SimulationResult:
    """What :meth:`Simulator.run` returns.

    Attributes:
        policy: Policy name.
        cluster: Cluster name.
        metrics: Scalar metrics (see :mod:`hetgym.sim.metrics` for each definition).
        jobs: One row per job with its outcome.
        timeline: GPUs in use per type over time (a step function: one row per change).
        stalled: Whether the engine's watchdog stopped the run (no progress in simulated work for
            ``SimConfig.stall_epochs`` epochs, or more epochs than the workload can need).
        stall_reason: Why the watchdog stopped the run (empty when it did not).
        num_epochs: Decision epochs.
        num_events: Arrival, completion and tick events processed.
        wall_s: Wall-clock duration of the run.
    """

    policy: str
    cluster: str
    metrics: dict[str, float]
    jobs: pd.DataFrame
    timeline: pd.DataFrame
    stalled: bool = False
    stall_reason: str = ""
    num_epochs: int = 0
    num_events: int = 0
    wall_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

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
    frame = jobs_frame(
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
    import pandas as pd

    types = list(cluster.gpu_types)
    timeline = pd.DataFrame([(t, *used) for t, used in usage], columns=["time_s", *types])
    metrics = compute_metrics(frame, timeline, cluster, latencies_s)
    metrics["num_not_arrived"] = float(len(records) - len(jobs))
    metrics["num_oversize"] = float(num_oversize)
    return SimulationResult(
        policy=policy_name,
        cluster=cluster.name,
        metrics=metrics,
        jobs=frame,
        timeline=timeline,
        stalled=stalled,
        stall_reason=stall_reason,
        num_epochs=num_epochs,
        num_events=num_events,
        wall_s=wall_s,
    )
