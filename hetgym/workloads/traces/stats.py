"""Trace statistics: job counts, span, GPU-count and duration distributions, and the load a trace
offers a cluster.

**Offered load** on a cluster is ``sum_j num_gpus_j x run_time_j / (cluster GPUs x span)``, where a
job's run time is its iterations over its capacity-weighted mean rate across the cluster's GPU types it
may use (at its requested GPU count, consolidated) and the span is the time from the first to the last
submission. 1.0 means the jobs would keep every GPU busy for the whole arrival period if nothing queued;
the same quantity the synthetic generators target with ``target_utilisation``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from hetgym.sim.cluster import ClusterSpec, get_cluster
from hetgym.sim.job import JobSpec
from hetgym.sim.throughput import ThroughputModel


def job_gpu_seconds(
    jobs: Sequence[JobSpec], cluster: ClusterSpec, throughput: ThroughputModel | None = None
) -> np.ndarray:
    """GPU-seconds each job needs on ``cluster`` (``inf`` for a job no allowed type can run)."""
    tp = throughput or ThroughputModel.default()
    cap = cluster.capacity
    memo: dict[tuple[str, int, int, tuple[str, ...] | None], float] = {}
    out = np.empty(len(jobs))
    for i, j in enumerate(jobs):
        key = (j.job_type, j.batch_size, j.num_gpus, j.gpu_types)
        rate = memo.get(key)
        if rate is None:
            types = [t for t in cap if j.gpu_types is None or t in j.gpu_types]
            total = sum(cap[t] for t in types)
            rate = (
                sum(cap[t] / total * tp.rate(j.job_type, j.batch_size, t, j.num_gpus) for t in types) if total else 0.0
            )
            memo[key] = rate
        out[i] = j.num_gpus * j.total_iters / rate if rate > 0 else math.inf
    return out


def offered_load(
    jobs: Sequence[JobSpec], cluster: ClusterSpec | str, throughput: ThroughputModel | None = None
) -> dict[str, float]:
    """The load ``jobs`` offer ``cluster`` (see the module docstring).

    Returns:
        ``load`` (offered GPU-time / cluster GPU-time over the span), ``gpu_s`` (offered GPU-seconds),
        ``span_s``, ``cluster_gpus``, and ``unrunnable`` (jobs no allowed GPU type can run).
    """
    cluster = get_cluster(cluster)
    gpu_s = job_gpu_seconds(jobs, cluster, throughput)
    finite = np.isfinite(gpu_s)
    span_s = (max(j.submit_s for j in jobs) - min(j.submit_s for j in jobs)) if jobs else 0.0
    total = float(gpu_s[finite].sum())
    load = total / (cluster.total_gpus * span_s) if span_s > 0 else math.inf
    return {
        "load": load,
        "gpu_s": total,
        "span_s": float(span_s),
        "cluster_gpus": float(cluster.total_gpus),
        "unrunnable": float((~finite).sum()),
    }


def _percentiles(values: np.ndarray) -> dict[str, float]:
    if values.size == 0:
        return {}
    qs = (0, 10, 50, 90, 99, 100)
    names = ("min", "p10", "p50", "p90", "p99", "max")
    pts = np.percentile(values, qs)
    return {n: float(v) for n, v in zip(names, pts, strict=True)} | {"mean": float(values.mean())}


def summarize(
    jobs: Sequence[JobSpec],
    *,
    cluster: ClusterSpec | str | None = None,
    throughput: ThroughputModel | None = None,
) -> dict[str, Any]:
    """A JSON-ready summary of a trace (what ``hetgym trace info`` prints).

    Keys: ``jobs``, ``span_s``, ``first_submit_s``, ``last_submit_s``, ``gpus`` (count per GPU count),
    ``job_types`` (count per type), ``duration_s`` (percentiles of the recorded run time, when the
    trace has it), ``deadlines`` (fraction with a deadline and percentiles of
    ``(deadline - submit) / duration``), ``gpu_types_pinned`` and, with ``cluster``, ``load``.
    """
    out: dict[str, Any] = {"jobs": len(jobs)}
    if not jobs:
        return out
    submit = np.array([j.submit_s for j in jobs])
    out["first_submit_s"] = float(submit.min())
    out["last_submit_s"] = float(submit.max())
    out["span_s"] = float(submit.max() - submit.min())
    out["gpus"] = {str(k): v for k, v in sorted(Counter(j.num_gpus for j in jobs).items())}
    out["job_types"] = dict(Counter(j.job_type for j in jobs).most_common())
    dur = np.array([j.duration_s for j in jobs if j.duration_s is not None], dtype=float)
    if dur.size:
        out["duration_s"] = _percentiles(dur)
        out["duration_s"]["jobs_with_duration"] = int(dur.size)
    with_ddl = [j for j in jobs if math.isfinite(j.deadline_s)]
    ddl: dict[str, Any] = {"fraction": len(with_ddl) / len(jobs)}
    ratios = np.array(
        [(j.deadline_s - j.submit_s) / j.duration_s for j in with_ddl if j.duration_s],
        dtype=float,
    )
    if ratios.size:
        ddl["slack_over_duration"] = _percentiles(ratios)
        ddl["shorter_than_duration"] = float((ratios < 1).mean())
    out["deadlines"] = ddl
    pinned = Counter("|".join(j.gpu_types) for j in jobs if j.gpu_types)
    if pinned:
        out["gpu_types_pinned"] = dict(pinned.most_common())
    if cluster is not None:
        spec = get_cluster(cluster)
        out["load"] = {"cluster": spec.name, **offered_load(jobs, spec, throughput)}
    return out
