"""Benchmark trace conversion and loading; writes ``bench/traces.json``.

Usage::

    python scripts/bench/bench_traces.py [--data ../shared/data] [--repeats 3] [--out bench/traces.json]

Tasks (each run in a fresh child process, so its peak resident memory is its own):

* ``convert_elasticflow_extended``: the full ElasticFlow extended trace set (10 clusters, 69,351 jobs) read
  from the published ``.tar.gz`` and written as canonical parquet;
* ``convert_elasticflow_raw``: the same jobs from the raw traces, with models, iterations and deadlines
  filled by the samplers;
* ``load_parquet`` / ``load_csv``: reading the converted 69,351-job trace back (every row validated);
* ``convert_philly_stream``: a synthetic 100,000-job file in Philly's ``cluster_job_log`` format (generated
  here, not data), converted to parquet; its peak memory is that of the jobs it holds and writes;
* ``read_philly_stream_only``: the same file only read (every record parsed, nothing kept), to show the
  JSON reader streams: its peak memory does not grow with the file.

Each task's wall and CPU (process) time is the median of ``--repeats`` runs; its memory figures come from
one more run:
``tracemalloc_peak_mb`` (Python allocations) and ``max_rss_mb`` (the child's peak resident set, which
includes the interpreter and libraries: ``baseline_rss_mb`` is that of a child that only imports them).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _write_synthetic_philly(path: Path, num_jobs: int) -> None:
    """A Philly-format ``cluster_job_log`` of ``num_jobs`` made-up jobs (streamed to disk)."""
    import random

    rng = random.Random(0)
    with open(path, "w") as fh:
        fh.write("[\n")
        for i in range(num_jobs):
            t0 = 1_500_000_000 + i * 60
            run = rng.randint(60, 200_000)
            gpus = rng.choice([1, 1, 1, 2, 4, 8, 16])

            def stamp(t: int) -> str:
                return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")

            servers = [min(8, gpus - 8 * k) for k in range((gpus + 7) // 8)]
            rec = {
                "status": rng.choice(["Pass", "Killed", "Failed"]),
                "vc": f"vc{i % 15}",
                "jobid": f"application_{i}",
                "attempts": [
                    {
                        "start_time": stamp(t0 + 30),
                        "end_time": stamp(t0 + 30 + run),
                        "detail": [
                            {"ip": f"m{k}", "gpus": [f"gpu{g}" for g in range(n)]} for k, n in enumerate(servers)
                        ],
                    }
                ],
                "submitted_time": stamp(t0),
                "user": f"u{i % 300}",
            }
            fh.write(json.dumps(rec, indent=4))
            fh.write(",\n" if i < num_jobs - 1 else "\n")
        fh.write("]\n")


def _task(name: str, data: Path, work: Path) -> dict[str, Any]:
    """Run one task; returns its own measurements."""
    from hetgym.workloads.schema import read_trace
    from hetgym.workloads.traces import convert_trace

    ef = data / "elasticflow_traces"
    if name == "convert_elasticflow_extended":
        wl = convert_trace(ef / "elasticflow-traces.tar.gz", "elasticflow", work / "ef_ext.parquet")
        return {"jobs": len(wl)}
    if name == "convert_elasticflow_raw":
        wl = convert_trace(ef / "raw-traces.tar.gz", "elasticflow", work / "ef_raw.parquet")
        return {"jobs": len(wl)}
    if name == "load_parquet":
        return {"jobs": len(read_trace(work / "ef_ext.parquet"))}
    if name == "load_csv":
        return {"jobs": len(read_trace(work / "ef_ext.csv"))}
    if name == "convert_philly_stream":
        wl = convert_trace(work / "cluster_job_log", "philly", work / "philly.parquet")
        return {"jobs": len(wl), "file_mb": round((work / "cluster_job_log").stat().st_size / 2**20, 1)}
    if name == "read_philly_stream_only":
        from hetgym.workloads.traces.philly import PhillyReader
        from hetgym.workloads.traces.records import LoadContext

        ctx = LoadContext()
        n = sum(1 for _ in PhillyReader().read(work / "cluster_job_log", ctx))
        return {"jobs": n, "file_mb": round((work / "cluster_job_log").stat().st_size / 2**20, 1)}
    if name == "baseline":
        return {"jobs": 0}
    raise ValueError(name)


def _child(name: str, data: str, work: str, trace_memory: bool, queue: Any) -> None:
    import hetgym.workloads.traces  # noqa: F401  (imports are not part of the timed work)

    if trace_memory:
        tracemalloc.start()
    t0, c0 = time.perf_counter(), time.process_time()
    info = _task(name, Path(data), Path(work))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    out = {"wall_s": wall, "cpu_s": cpu, **info}
    if trace_memory:
        out["tracemalloc_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    out["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    queue.put(out)


def _run(name: str, data: Path, work: Path, trace_memory: bool) -> dict[str, Any]:
    # Deliberately not hetgym.sweep.map_runs: this benchmark measures each task's peak resident memory, which
    # needs a fresh process per task (a pool worker's ru_maxrss keeps the peak of every task it ran before).
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(name, str(data), str(work), trace_memory, queue))
    proc.start()
    result = queue.get()
    proc.join()
    if proc.exitcode != 0:
        raise RuntimeError(f"{name} failed (exit {proc.exitcode})")
    return dict(result)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--philly-jobs", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "traces.json")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    load_start = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        _write_synthetic_philly(work / "cluster_job_log", args.philly_jobs)
        # the CSV copy of the converted trace, for load_csv
        _run("convert_elasticflow_extended", args.data, work, False)
        from hetgym.workloads.schema import read_trace, write_trace

        write_trace(read_trace(work / "ef_ext.parquet"), work / "ef_ext.csv")
        for name in (
            "baseline",
            "convert_elasticflow_extended",
            "convert_elasticflow_raw",
            "load_parquet",
            "load_csv",
            "convert_philly_stream",
            "read_philly_stream_only",
        ):
            runs = [_run(name, args.data, work, False) for _ in range(args.repeats)]
            walls = [r["wall_s"] for r in runs]
            mem = _run(name, args.data, work, True)
            entry = {
                "wall_s_median": round(statistics.median(walls), 3),
                "cpu_s_median": round(statistics.median(r["cpu_s"] for r in runs), 3),
                "wall_s_runs": [round(w, 3) for w in walls],
                "jobs": mem["jobs"],
                "tracemalloc_peak_mb": round(mem["tracemalloc_peak_mb"], 1),
                "max_rss_mb": round(mem["max_rss_mb"], 1),
            }
            if "file_mb" in mem:
                entry["file_mb"] = mem["file_mb"]
            if mem["jobs"]:
                entry["jobs_per_cpu_s"] = round(mem["jobs"] / entry["cpu_s_median"])
            results[name] = entry
            print(f"{name}: {entry}", flush=True)
    baseline = results.pop("baseline")
    report = {
        "what": "trace conversion and loading: full ElasticFlow trace set (69,351 jobs) and a streamed "
        "synthetic Philly-format file",
        "command": "python scripts/bench/bench_traces.py " + " ".join(sys.argv[1:]),
        "repeats": args.repeats,
        "baseline_rss_mb": baseline["max_rss_mb"],
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
            "load_average_at_start": load_start,
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
            "note": "the cores are shared with other work: cpu_s (process time) is less sensitive to that than wall_s",
        },
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = args.out.with_suffix(".json.tmp")
    tmp_out.write_text(json.dumps(report, indent=2) + "\n")
    os.replace(tmp_out, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
