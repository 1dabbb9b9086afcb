"""Windows of a trace: a seeded run of consecutive jobs, rebased to time 0, as one episode's workload.

A :class:`~hetgym.workloads.scenario.WorkloadConfig` with ``trace_window=True`` replays, for workload
seed ``s``, ``num_jobs`` consecutive jobs of its trace (sorted by submission) starting at a position
drawn from ``numpy.random.default_rng(s)``; submissions are shifted so the window's first job arrives
at 0 and job ids become 0..n-1. With a ``deadline`` model the deadlines are drawn from the same
generator (after the start), ``model(rng, submit_s, duration_s)`` on the recorded run times; without
one the trace's own deadlines are kept, shifted with the submissions.

The parsed trace is kept in a small in-process cache keyed by the file (path, size and modification
time), its format and member, how missing deadlines are filled and the throughput table, so a reset
does not read the file again. A public trace's missing fields (job type, batch size) are filled with
seed 0 whatever the workload seed: a job keeps its filled fields in every window that holds it.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from hetgym.sim.errors import ConfigError
from hetgym.sim.throughput import ThroughputModel
from hetgym.workloads.deadlines import DeadlineModel
from hetgym.workloads.schema import Workload, read_trace

#: Parsed traces kept in memory (least recently used dropped first).
CACHE_SIZE = 8

_CACHE: OrderedDict[tuple[Any, ...], tuple[ThroughputModel, Workload]] = OrderedDict()


def clear_trace_cache() -> None:
    """Forget every parsed trace (the next window reads its file again)."""
    _CACHE.clear()


def cached_trace(
    path: str,
    fmt: str | None,
    *,
    member: str | None,
    throughput: ThroughputModel,
    fill_deadlines: bool,
    tightness: float = 1.0,
) -> Workload:
    """The whole trace at ``path``, parsed once per file version (see the module docstring).

    Args:
        path: A canonical trace file, or a public trace (file or archive) in format ``fmt``.
        fmt: The public format, or ``None`` for a canonical file.
        member: The archive member to read (``fmt`` only), or ``None`` for the reader's default.
        throughput: Table the job types are checked against.
        fill_deadlines: Fill missing deadlines with the format's model (``fmt`` only); ``False`` fills none.
        tightness: Tightness of the filled deadlines.
    """
    file = Path(path)
    try:
        stat = file.stat()
    except OSError as exc:
        raise ConfigError(f"WorkloadConfig.trace={path!r}: cannot read it ({exc.strerror or exc})") from None
    key = (
        str(file.resolve()),
        stat.st_size,
        stat.st_mtime_ns,
        fmt,
        member,
        fill_deadlines,
        tightness,
        id(throughput),
    )
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is throughput:
        _CACHE.move_to_end(key)
        return hit[1]
    if fmt is None:
        workload = read_trace(file, throughput=throughput)
    else:
        from hetgym.workloads.traces import FillOptions, load_trace

        fill = FillOptions(seed=0, deadline=None if fill_deadlines else "none", tightness=tightness)
        options: dict[str, Any] = {} if member is None else {"members": (member,)}
        workload = load_trace(file, fmt, fill=fill, throughput=throughput, **options)
    # The entry holds the table itself, so its id cannot be reused while the entry lives.
    _CACHE[key] = (throughput, workload)
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return workload


def _draw_start(rng: np.random.Generator, trace_jobs: int, num_jobs: int) -> int:
    return int(rng.integers(0, trace_jobs - num_jobs + 1))


def window_start(trace_jobs: int, num_jobs: int, seed: int) -> int:
    """The position (in the trace sorted by submission) of window ``seed``'s first job, as :func:`draw_window`
    draws it: which jobs a window holds, without building it (e.g. to keep held-out windows out of a sample)."""
    if num_jobs > trace_jobs:
        raise ConfigError(f"a window of num_jobs={num_jobs} jobs is longer than the trace's {trace_jobs} jobs")
    return _draw_start(np.random.default_rng(seed), trace_jobs, num_jobs)


def draw_window(trace: Workload, num_jobs: int, seed: int, deadline: DeadlineModel | None = None) -> Workload:
    """Window ``seed`` of ``num_jobs`` consecutive jobs of ``trace`` (see the module docstring).

    Raises:
        ConfigError: The window is longer than the trace, or a deadline model meets a job without a
            recorded run time.
    """
    jobs = trace.jobs  # sorted by (submit_s, job_id)
    if num_jobs > len(jobs):
        raise ConfigError(
            f"a window of num_jobs={num_jobs} jobs is longer than the trace's {len(jobs)} jobs "
            f"({trace.metadata.get('source_file') or trace.metadata.get('source') or 'trace'}); "
            f"give num_jobs <= {len(jobs)}"
        )
    rng = np.random.default_rng(seed)
    start = _draw_start(rng, len(jobs), num_jobs)
    window = jobs[start : start + num_jobs]
    t0 = window[0].submit_s
    submit = np.array([j.submit_s - t0 for j in window], dtype=float)
    if deadline is not None:
        missing = [j.job_id for j in window if j.duration_s is None]
        if missing:
            raise ConfigError(
                f"deadline={deadline.name!r} draws deadlines from recorded run times, but job {missing[0]} of the "
                "trace has no duration_s; leave deadline unset to keep the trace's deadlines"
            )
        duration = np.array([float(j.duration_s or 0.0) for j in window], dtype=float)
        deadlines = [float(d) for d in deadline(rng, submit, duration)]
    else:
        deadlines = [j.deadline_s - t0 if math.isfinite(j.deadline_s) else j.deadline_s for j in window]
    out = tuple(
        replace(j, job_id=i, submit_s=float(s), deadline_s=d)
        for i, (j, s, d) in enumerate(zip(window, submit, deadlines, strict=True))
    )
    rows = None
    if trace.rows is not None:
        rows = {i: trace.rows[j.job_id] for i, j in enumerate(window) if j.job_id in trace.rows}
    meta = {
        **trace.metadata,
        "window": {"seed": int(seed), "start": start, "num_jobs": num_jobs, "first_job_id": window[0].job_id},
    }
    return Workload(out, meta, rows=rows)


def elasticflow_window_workload(path: str | Path, trace: str = "cluster09", num_jobs: int = 40) -> dict[str, Any]:
    """The ``workload={...}`` override replaying windows of one raw ElasticFlow trace with ElasticFlow's deadlines.

    Args:
        path: ``raw-traces.tar.gz`` (the published archive) or a folder holding ``{trace}.csv``.
        trace: The cluster trace, ``cluster01`` ... ``cluster10``.
        num_jobs: Jobs per window.
    """
    source = Path(path)
    out: dict[str, Any] = {"trace_format": "elasticflow", "trace_window": True, "num_jobs": num_jobs}
    if source.is_dir():
        out["trace"] = str(source / f"{trace}.csv")
    else:
        out["trace"] = str(source)
        out["trace_member"] = f"{trace}.csv"
    out["deadline"] = "elasticflow"
    return out


__all__ = [
    "CACHE_SIZE",
    "cached_trace",
    "clear_trace_cache",
    "draw_window",
    "elasticflow_window_workload",
    "window_start",
]
