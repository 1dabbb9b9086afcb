"""Admitting a workload: the checks a simulator runs on its jobs before it starts.

Every job must have throughput figures, a unique id, an allowed GPU type in the cluster, a ``min_gpus``
the cluster holds, and a run that can finish within ``SimConfig.max_job_run_s``; a job asking for more
GPUs than the cluster has of its types either fails the workload or, with ``SimConfig(oversize_jobs=
"reject")``, is admitted to be rejected at its arrival.
"""

from __future__ import annotations

from collections.abc import Callable

from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.config import SimConfig
from hetgym.sim.errors import InvalidJobError, UnknownNameError
from hetgym.sim.job import JobSpec
from hetgym.sim.throughput import ThroughputModel


def check_jobs(
    specs: list[JobSpec],
    cluster: ClusterSpec,
    throughput: ThroughputModel,
    config: SimConfig,
    fastest_run_s: Callable[[JobSpec], float],
) -> set[int]:
    """Check the workload (raise :class:`InvalidJobError` naming the first bad job); the ids of the jobs
    admitted only to be rejected at arrival (``oversize_jobs="reject"``).

    ``fastest_run_s`` gives a lower bound on a job's run time on the cluster.
    """
    oversize: set[int] = set()
    seen: set[int] = set()
    types = set(cluster.gpu_types)
    total = cluster.total_gpus
    known_types: set[str] = set()
    for s in specs:
        if s.job_id in seen:
            raise InvalidJobError(f"job {s.job_id}: duplicate job_id (ids must be unique)", job_id=s.job_id)
        seen.add(s.job_id)
        if s.job_type not in known_types:
            try:
                throughput.check_job_type(s.job_type)
            except UnknownNameError as err:
                # Named by id: the simulator holds jobs in submission order, not a file's rows.
                raise InvalidJobError(f"job {s.job_id}: field 'job_type': {err}", job_id=s.job_id) from None
            known_types.add(s.job_type)
        if s.gpu_types is not None and not types.intersection(s.gpu_types):
            raise InvalidJobError(
                f"job {s.job_id}: may only run on {list(s.gpu_types)}, none of which is in cluster "
                f"{cluster.name!r} ({list(cluster.gpu_types)})",
                job_id=s.job_id,
            )
        if s.min_gpus > total:
            raise InvalidJobError(
                f"job {s.job_id}: needs at least {s.min_gpus} GPUs but cluster {cluster.name!r} has {total}",
                job_id=s.job_id,
            )
        room = _room(s, cluster)
        if s.num_gpus > room:
            if config.oversize_jobs == "reject":
                oversize.add(s.job_id)
                continue
            raise InvalidJobError(
                f"job {s.job_id}: field 'num_gpus' is {s.num_gpus} but cluster "
                f"{cluster.name!r} has {room} GPUs of the types it may use, so it can never run; "
                "lower its num_gpus, pick a larger cluster, or admit the workload with "
                "SimConfig(oversize_jobs='reject') (--oversize-jobs reject), which rejects such jobs at arrival",
                job_id=s.job_id,
            )
        fastest_s = fastest_run_s(s)
        if not fastest_s <= config.max_job_run_s:
            sizes = throughput.batch_sizes(s.job_type)
            if sizes and not sizes[0] <= s.batch_size <= sizes[-1]:  # the rate is extrapolated from far off
                raise InvalidJobError(
                    f"job {s.job_id}: field 'batch_size' is {s.batch_size:g}, outside the measured range "
                    f"{sizes[0]}..{sizes[-1]} of {s.job_type!r}: at that batch its fastest possible run takes "
                    f"{fastest_s:.3g} s, more than SimConfig.max_job_run_s={config.max_job_run_s:.3g} s; "
                    "fix batch_size in the trace",
                    job_id=s.job_id,
                )
            raise InvalidJobError(
                f"job {s.job_id}: field 'total_iters' is {s.total_iters:g}: its fastest possible "
                f"run on cluster {cluster.name!r} takes {fastest_s:.3g} s, more than "
                f"SimConfig.max_job_run_s={config.max_job_run_s:.3g} s; fix total_iters in the trace, or "
                "raise max_job_run_s",
                job_id=s.job_id,
            )
    return oversize


def _room(spec: JobSpec, cluster: ClusterSpec) -> int:
    """GPUs of the cluster of the types ``spec`` may use."""
    capacity = cluster.capacity
    return sum(n for t, n in capacity.items() if spec.gpu_types is None or t in spec.gpu_types)
