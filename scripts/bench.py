"""Simulator speed on fixed seeded scenarios, written to ``bench/results.json``.

Measures FIFO and Tiresias-LAS on a 10,000-job Gavel-Philly workload on ``gavel-108`` and on
``large`` (median of several runs): wall and CPU time (CPU time is the fairer figure on a shared
machine), decision epochs and events per second, simulated seconds per wall second, and peak
memory (tracemalloc, in a separate measuring run so tracing does not slow the timed runs). A second
part checks that memory grows linearly in the number of jobs.

Usage::

    python scripts/bench.py                   # the full benchmark (a few minutes)
    python scripts/bench.py --quick           # smaller workloads, fewer repeats
    python scripts/bench.py --repeats 5 --out bench/results.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from hetgym.sim import SimConfig, Simulator, ThroughputModel, make_policy
from hetgym.workloads import Load, gavel_philly

# Offered utilisation of each cluster: high enough that queues form, low enough that the run ends.
UTILISATION = 0.8


def workload(num_jobs: int, cluster: str, seed: int = 0) -> list[Any]:
    return list(gavel_philly(num_jobs, seed=seed, cluster=cluster, load=Load(target_utilisation=UTILISATION)))


def timed_run(policy: str, cluster: str, jobs: list[Any]) -> dict[str, float]:
    gc.collect()
    sim = Simulator(cluster, jobs, config=SimConfig(record_timeline=True))
    start = time.perf_counter()
    cpu_start = time.process_time()
    result = sim.run(make_policy(policy))
    wall_s = time.perf_counter() - start
    cpu_s = time.process_time() - cpu_start
    sim_span_s = float(result.jobs["finish_s"].max() - result.jobs["submit_s"].min())
    return {
        "wall_s": wall_s,
        "cpu_s": cpu_s,
        "epochs": result.num_epochs,
        "events": result.num_events,
        "events_per_s": result.num_events / wall_s,
        "epochs_per_s": result.num_epochs / wall_s,
        "sim_s_per_wall_s": sim_span_s / wall_s,
        "completed": result.metrics["num_completed"],
        "jct_mean_h": result.metrics["jct_mean_s"] / 3600,
    }


def peak_memory_mb(policy: str, cluster: str, jobs: list[Any]) -> float:
    gc.collect()
    tracemalloc.start()
    Simulator(cluster, jobs).run(make_policy(policy))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2,000 jobs and 2 repeats")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--num-jobs", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=Path("bench/results.json"))
    args = parser.parse_args()
    num_jobs = 2_000 if args.quick else args.num_jobs
    repeats = 2 if args.quick else args.repeats
    ThroughputModel.default()  # load the table outside the timed region

    cases = []
    for cluster in ("gavel-108", "large"):
        jobs = workload(num_jobs, cluster)
        for policy in ("fifo", "tiresias"):
            runs = [timed_run(policy, cluster, jobs) for _ in range(repeats)]
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            case = {
                "policy": policy,
                "cluster": cluster,
                "num_jobs": num_jobs,
                "repeats": repeats,
                "wall_s_all": [round(r["wall_s"], 4) for r in runs],
                **{f"median_{k}": round(v, 4) for k, v in med.items()},
                "peak_memory_mb": round(peak_memory_mb(policy, cluster, jobs), 2),
            }
            cases.append(case)
            print(
                f"{policy:9s} {cluster:9s} {num_jobs} jobs: median {med['wall_s']:.2f} s wall, "
                f"{med['events_per_s']:.0f} events/s, {med['sim_s_per_wall_s']:.3g} sim-s/wall-s, "
                f"peak {case['peak_memory_mb']:.1f} MB",
                flush=True,
            )

    scaling = []
    sizes = [500, 1_000, 2_000] if args.quick else [2_500, 5_000, 10_000, 20_000]
    for n in sizes:
        jobs = workload(n, "gavel-108")
        scaling.append({"num_jobs": n, "peak_memory_mb": round(peak_memory_mb("fifo", "gavel-108", jobs), 2)})
        print(f"memory: fifo gavel-108 {n} jobs peak {scaling[-1]['peak_memory_mb']:.1f} MB", flush=True)
    per_job_kb = [1024 * s["peak_memory_mb"] / s["num_jobs"] for s in scaling]

    report = {
        "benchmark": "simulator speed (scripts/bench.py)",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average_at_start": os.getloadavg(),
        },
        "date": time.strftime("%Y-%m-%d"),
        "workload": f"gavel-philly, offered utilisation {UTILISATION}, seed 0",
        "cases": cases,
        "memory_scaling": {"fifo_gavel-108": scaling, "kb_per_job": [round(x, 3) for x in per_job_kb]},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    tmp.replace(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
