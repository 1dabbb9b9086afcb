"""Metrics of a simulation run, each defined once here.

Per job (the ``jobs`` table of a result):

* ``jct_s`` = finish − submit (completed jobs only);
* ``queueing_s`` = first start − submit (jobs that ever started);
* ``met_deadline``: completed at or before ``deadline_s`` (rejected and unfinished jobs never meet it);
* ``ideal_s`` = total iterations / the job's best rate on any allowed GPU type of the cluster with its
  requested GPU count on one server, with no contention and no restart penalty;
* ``ftf`` (finish-time fairness, Themis' rho) = ``jct_s / ideal_s``.

Scalar metrics (``SimulationResult.metrics``), over the jobs that arrived:

* ``dsr`` (deadline satisfactory ratio) = jobs meeting their deadline / jobs with a deadline
  (rejected and unfinished jobs count as misses; best-effort jobs are excluded);
* ``jct_mean_s``, ``jct_p50_s``, ``jct_p95_s``, ``jct_p99_s`` over completed jobs;
* ``makespan_s`` ("total time duration") = last completion − first submission;
* ``queueing_mean_s``, ``queueing_p95_s``;
* ``utilisation`` and ``util_<type>``: GPU-seconds allocated / (GPUs × makespan window), from the
  timeline of GPUs in use (reconfiguration time counts as allocated);
* ``ftf_mean``, ``ftf_max``; ``jain_index``: Jain's fairness index of ``1 / ftf`` over completed jobs;
* ``num_reconfigs``: allocation changes after first starts (resizes, migrations, preemptions, resumptions);
* ``decision_ms_p50``, ``decision_ms_p99``: wall time of the policy's ``schedule`` calls (in ``run``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.job import JobSpec, JobStatus
from hetgym.sim.throughput import ThroughputModel

if TYPE_CHECKING:
    import pandas as pd

#: Seconds by which a job may complete after its deadline and still meet it (float rounding of event times).
#: The one tolerance of every deadline outcome: the metrics' ``met_deadline``, the simulator's deadline log
#: (:mod:`hetgym.sim.deadlines`) and the environments' rewards all use it.
DEADLINE_TOL_S = 1e-6

_B = TypeVar("_B", bool, np.ndarray)


def met_deadline(completed: _B, finish_s: float | np.ndarray, deadline_s: float | np.ndarray) -> _B:
    """The one "met" rule: a job meets its deadline when it completed by it (within :data:`DEADLINE_TOL_S`).

    Elementwise over arrays (``completed`` a bool array), or on one job (``completed`` a bool; ``finish_s`` of a
    job that did not complete is not read). The metrics' ``met_deadline`` column, the simulator's deadline log
    (:mod:`hetgym.sim.deadlines`) and the environments' reference counts all apply it.
    """
    if isinstance(completed, bool):
        return completed and bool(finish_s <= deadline_s + DEADLINE_TOL_S)
    return completed & (finish_s <= deadline_s + DEADLINE_TOL_S)


JOB_COLUMNS = (
    "job_id",
    "job_type",
    "batch_size",
    "num_gpus",
    "submit_s",
    "deadline_s",
    "status",
    "start_s",
    "finish_s",
    "jct_s",
    "queueing_s",
    "has_deadline",
    "met_deadline",
    "attained_gpu_s",
    "num_reconfigs",
    "total_iters",
    "remaining_iters",
    "ideal_s",
    "ftf",
)


def ideal_time_s(spec: JobSpec, throughput: ThroughputModel, cluster: ClusterSpec) -> float:
    """Run time of the job alone on its best allowed GPU type with its requested count."""
    types = cluster.gpu_types if spec.gpu_types is None else [t for t in cluster.gpu_types if t in spec.gpu_types]
    best = max((throughput.rate(spec.job_type, spec.batch_size, t, spec.num_gpus) for t in types), default=0.0)
    return spec.total_iters / best if best > 0 else math.inf


#: One row of the per-job table, its values in :data:`JOB_COLUMNS` order.
JobRow = tuple[
    int,
    str,
    int,
    int,
    float,
    float,
    str,
    float,
    float,
    float,
    float,
    bool,
    bool,
    float,
    int,
    float,
    float,
    float,
    float,
]


def job_rows(
    records: Sequence[tuple[JobSpec, JobStatus, float | None, float | None, float, int, float]],
    throughput: ThroughputModel,
    cluster: ClusterSpec,
) -> list[JobRow]:
    """The per-job table's rows from ``(spec, status, start, finish, attained_gpu_s, reconfigs, remaining)``."""
    rows: list[JobRow] = []
    for spec, status, start, finish, attained, reconfigs, remaining in records:
        completed = status == JobStatus.COMPLETED
        jct = finish - spec.submit_s if completed and finish is not None else math.nan
        ideal = ideal_time_s(spec, throughput, cluster)
        rows.append(
            (
                spec.job_id,
                spec.job_type,
                spec.batch_size,
                spec.num_gpus,
                spec.submit_s,
                spec.deadline_s,
                status.name.lower(),
                math.nan if start is None else start,
                math.nan if finish is None else finish,
                jct,
                math.nan if start is None else start - spec.submit_s,
                spec.has_deadline,
                finish is not None and met_deadline(completed, finish, spec.deadline_s),
                attained,
                reconfigs,
                spec.total_iters,
                remaining,
                ideal,
                jct / ideal if completed and ideal > 0 and math.isfinite(ideal) else math.nan,
            )
        )
    return rows


@dataclass(frozen=True)
class _JobArrays:
    """The per-job columns the scalar metrics read (one entry a job, in the table's order)."""

    status: np.ndarray  # the status names
    jct_s: np.ndarray
    queueing_s: np.ndarray
    has_deadline: np.ndarray
    met_deadline: np.ndarray
    ftf: np.ndarray
    finish_s: np.ndarray
    num_reconfigs: float
    first_submit_s: float  # 0.0 without jobs


def _pcts(values: np.ndarray, qs: tuple[int, ...]) -> list[float]:
    """``np.percentile(values, q)`` (its default ``linear`` method) for each of ``qs``; ``nan`` when empty.

    Computed in Python floats with numpy's own operations, in its order: the virtual index ``(n - 1) * (q / 100)``,
    its neighbours (both the last value beyond the end) and numpy's two-sided interpolation. The same IEEE
    operations give the same bits (``tests/envs/test_episode_metrics.py`` compares them with numpy's), without
    numpy's per-call overhead, which at an episode's end cost more than every other metric together.
    """
    if not values.size:
        return [math.nan] * len(qs)
    ordered = sorted(values.tolist())
    n = len(ordered)
    out: list[float] = []
    for q in qs:
        virtual = (n - 1) * (q / 100)
        if virtual >= n - 1:
            below = above = n - 1
            gamma = virtual - (-1)  # numpy's index of the last value there is -1
        else:
            below = math.floor(virtual)
            above = below + 1
            gamma = virtual - below
        a, b = ordered[below], ordered[above]
        diff = b - a
        out.append(b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma)
    return out


def compute_metrics(
    jobs: pd.DataFrame,
    timeline: pd.DataFrame,
    cluster: ClusterSpec,
    latencies_s: Sequence[float] = (),
) -> dict[str, float]:
    """Scalar metrics from the per-job table and the usage timeline (definitions in the module doc)."""
    arrays = _JobArrays(
        status=jobs["status"].to_numpy(),
        jct_s=jobs["jct_s"].to_numpy(dtype=float),
        queueing_s=jobs["queueing_s"].to_numpy(dtype=float),
        has_deadline=jobs["has_deadline"].to_numpy(dtype=bool),
        met_deadline=jobs["met_deadline"].to_numpy(dtype=bool),
        ftf=jobs["ftf"].to_numpy(dtype=float),
        finish_s=jobs["finish_s"].to_numpy(dtype=float),
        num_reconfigs=float(jobs["num_reconfigs"].sum()),
        first_submit_s=float(jobs["submit_s"].min()) if len(jobs) else 0.0,
    )
    times = timeline["time_s"].to_numpy(dtype=float)
    used = {c: timeline[c].to_numpy(dtype=float) for c in timeline.columns if c != "time_s"}
    return _metrics(arrays, times, used, cluster, latencies_s)


def metrics_from_rows(
    rows: Sequence[JobRow],
    usage: Sequence[tuple[float, tuple[int, ...]]],
    cluster: ClusterSpec,
    latencies_s: Sequence[float] = (),
) -> dict[str, float]:
    """:func:`compute_metrics` without the tables: from :func:`job_rows` and the usage timeline
    ``(time_s, GPUs in use per type in cluster.gpu_types order)``; the same figures to the bit (the same
    arrays reach the same numpy operations)."""
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(JOB_COLUMNS)
    col = dict(zip(JOB_COLUMNS, columns, strict=True))
    arrays = _JobArrays(
        status=np.array(col["status"], dtype=object),
        jct_s=np.array(col["jct_s"], dtype=float),
        queueing_s=np.array(col["queueing_s"], dtype=float),
        has_deadline=np.array(col["has_deadline"], dtype=bool),
        met_deadline=np.array(col["met_deadline"], dtype=bool),
        ftf=np.array(col["ftf"], dtype=float),
        finish_s=np.array(col["finish_s"], dtype=float),
        num_reconfigs=float(sum(col["num_reconfigs"])),
        first_submit_s=float(min(col["submit_s"])) if rows else 0.0,
    )
    times = np.array([t for t, _ in usage], dtype=float)
    counts = np.array([c for _, c in usage], dtype=float).reshape(len(usage), len(cluster.gpu_types))
    used = {t: np.ascontiguousarray(counts[:, i]) for i, t in enumerate(cluster.gpu_types)}
    return _metrics(arrays, times, used, cluster, latencies_s)


def _metrics(
    jobs: _JobArrays,
    times: np.ndarray,
    used: dict[str, np.ndarray],
    cluster: ClusterSpec,
    latencies_s: Sequence[float],
) -> dict[str, float]:
    """The scalar metrics from the job columns and the timeline (``times``; GPUs in use per type)."""
    status = jobs.status
    completed = status == "completed"
    jct = jobs.jct_s[completed]
    queue = jobs.queueing_s
    queue = queue[~np.isnan(queue)]
    has_ddl = jobs.has_deadline
    met = jobs.met_deadline
    ftf = jobs.ftf[completed]
    ftf = ftf[np.isfinite(ftf)]
    jct_p50, jct_p95, jct_p99 = _pcts(jct, (50, 95, 99))
    m: dict[str, float] = {
        "num_jobs": float(len(status)),
        "num_completed": float(completed.sum()),
        "num_rejected": float((status == "rejected").sum()),
        "num_unfinished": float((status == "unfinished").sum()),
        "num_with_deadline": float(has_ddl.sum()),
        "dsr": float(met[has_ddl].mean()) if has_ddl.any() else math.nan,
        "jct_mean_s": float(jct.mean()) if jct.size else math.nan,
        "jct_p50_s": jct_p50,
        "jct_p95_s": jct_p95,
        "jct_p99_s": jct_p99,
        "queueing_mean_s": float(queue.mean()) if queue.size else math.nan,
        "queueing_p95_s": _pcts(queue, (95,))[0],
        "ftf_mean": float(ftf.mean()) if ftf.size else math.nan,
        "ftf_max": float(ftf.max()) if ftf.size else math.nan,
        "jain_index": _jain(1.0 / ftf) if ftf.size else math.nan,
        "num_reconfigs": jobs.num_reconfigs,
    }
    finish = jobs.finish_s
    finish = finish[~np.isnan(finish)]
    t0 = jobs.first_submit_s
    t1 = float(finish.max()) if finish.size else t0
    if times.size:
        t1 = max(t1, float(times[-1]))
    m["makespan_s"] = (float(finish.max()) - t0) if finish.size else math.nan
    busy = _busy_gpu_s(times, used, t0, t1)
    total_cap = 0.0
    total_busy = 0.0
    for gpu_type, cap in cluster.capacity.items():
        b = busy.get(gpu_type, 0.0)
        m[f"util_{gpu_type}"] = b / (cap * (t1 - t0)) if t1 > t0 else math.nan
        total_cap += cap
        total_busy += b
    m["utilisation"] = total_busy / (total_cap * (t1 - t0)) if t1 > t0 else math.nan
    lat = np.asarray(latencies_s, dtype=float) * 1e3
    m["decision_ms_p50"], m["decision_ms_p99"] = _pcts(lat, (50, 99))
    m["num_decisions"] = float(lat.size)
    return m


def _busy_gpu_s(times: np.ndarray, used: dict[str, np.ndarray], t0: float, t1: float) -> dict[str, float]:
    """Integrate the step function of GPUs in use (``used[type]`` from ``times[i]`` on) over ``[t0, t1]``."""
    if not times.size or t1 <= t0:
        return {}
    ends = np.append(times[1:], t1)
    lo = np.clip(times, t0, t1)
    hi = np.clip(ends, t0, t1)
    width = np.maximum(hi - lo, 0.0)
    return {c: float((u * width).sum()) for c, u in used.items()}


def _jain(x: np.ndarray) -> float:
    """Jain's fairness index ``(sum x)^2 / (n sum x^2)``, 1 when all equal."""
    x = x[np.isfinite(x)]
    if not x.size or not np.any(x):
        return math.nan
    return float(x.sum() ** 2 / (x.size * (x * x).sum()))


def utilisation_curve(timeline: pd.DataFrame, cluster: ClusterSpec) -> pd.DataFrame:
    """Fraction of each type's GPUs in use over time (a step function), for plots."""
    out = timeline.copy()
    for gpu_type, cap in cluster.capacity.items():
        if gpu_type in out:
            out[gpu_type] = out[gpu_type] / cap
    out["all"] = timeline[list(cluster.capacity)].sum(axis=1) / cluster.total_gpus
    return out
