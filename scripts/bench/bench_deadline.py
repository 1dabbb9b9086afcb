"""Decision latency of Dancer and ElasticFlow with 100 and 1,000 active jobs on 256 and 2,048 GPUs.

Usage::

    python scripts/bench/bench_deadline.py                     # writes bench/deadline.json
    python scripts/bench/bench_deadline.py --quick             # 100 jobs on 256 GPUs only (a check, seconds)

For each cluster size, number of active jobs ``N`` and policy, the simulator is driven with
``reset()`` / ``step()`` on an ElasticFlow-recipe workload whose ``N + extra`` jobs all arrive within
about ten minutes (deadline slack doubled, ``tightness=0.5``, so jobs stay active). Every
``schedule()`` call is timed; the figures are the median and 99th percentile over the decisions taken
while at least ``N`` jobs are active (up to ``--decisions`` of them, arrivals and slot ticks alike),
repeated ``--repeats`` times (median of the repeats' medians, largest p99). Rejected jobs leave
Dancer and ElasticFlow, so both run with ``rejected_jobs="best_effort"`` here: declined jobs stay
active and are scheduled on leftover GPUs, which keeps ``N`` jobs in every decision. The clusters mix
A100, V100 (servers of 8), P100 and K80 (servers of 4) in equal numbers. Speeds are never asserted in
tests; the JSON records the machine and the command.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hetgym.sim import ClusterSpec, SimConfig, Simulator, make_policy
from hetgym.workloads import WorkloadConfig

REPO_ROOT = Path(__file__).resolve().parents[2]

CLUSTERS = {
    256: {"a100": (8, 8), "v100": (8, 8), "p100": (16, 4), "k80": (16, 4)},
    2048: {"a100": (64, 8), "v100": (64, 8), "p100": (128, 4), "k80": (128, 4)},
}


def measure(gpus: int, active: int, policy_name: str, decisions: int, seed: int) -> dict[str, Any]:
    """Time ``schedule()`` over the decisions taken with at least ``active`` jobs in the cluster."""
    cluster = ClusterSpec.from_inventory(f"bench-{gpus}", CLUSTERS[gpus])
    extra = max(20, active // 5)
    wl = WorkloadConfig(
        recipe="elasticflow",
        num_jobs=active + extra,
        arrival_rate_per_h=6.0 * (active + extra),
        tightness=0.5,
        max_gpus_per_job=16,
    )
    jobs = wl.build(cluster, seed=seed).jobs
    sim = Simulator(cluster, jobs, config=SimConfig(record_timeline=False))
    policy = make_policy(policy_name, rejected_jobs="best_effort")
    policy.reset(cluster, rng=np.random.default_rng(seed))
    view = sim.reset(round_s=policy.round_s)
    latencies: list[float] = []
    counts: list[int] = []
    ramp_s = 0.0
    while view is not None and len(latencies) < decisions:
        t0 = time.perf_counter()
        allocation = policy.schedule(view)
        dt = time.perf_counter() - t0
        if len(view.jobs) >= active:
            latencies.append(dt)
            counts.append(len(view.jobs))
        else:
            ramp_s += dt
        view = sim.step(allocation)
    if not latencies:
        raise RuntimeError(f"{policy_name} on {gpus} GPUs never had {active} active jobs; raise the arrival rate")
    arr = np.array(latencies) * 1000.0
    return {
        "p50_ms": float(np.percentile(arr, 50)),
        "p99_ms": float(np.percentile(arr, 99)),
        "mean_ms": float(arr.mean()),
        "decisions": len(arr),
        "active_jobs_min": int(min(counts)),
        "active_jobs_median": float(statistics.median(counts)),
        "ramp_up_policy_s": round(ramp_s, 2),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "deadline.json")
    parser.add_argument("--gpus", type=int, nargs="+", default=[256, 2048], choices=sorted(CLUSTERS))
    parser.add_argument("--active", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--policies", nargs="+", default=["dancer", "elasticflow"])
    parser.add_argument("--decisions", type=int, default=60, help="timed decisions per run")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.gpus, args.active, args.repeats, args.decisions = [256], [100], 1, 20
    results: list[dict[str, Any]] = []
    for gpus in args.gpus:
        for active in args.active:
            for name in args.policies:
                runs = [measure(gpus, active, name, args.decisions, seed) for seed in range(args.repeats)]
                row = {
                    "policy": name,
                    "gpus": gpus,
                    "active_jobs": active,
                    "p50_ms": statistics.median(r["p50_ms"] for r in runs),
                    "p99_ms": max(r["p99_ms"] for r in runs),
                    "runs": runs,
                }
                results.append(row)
                print(
                    f"{name:12s} {gpus:5d} GPUs {active:5d} jobs: median {row['p50_ms']:8.2f} ms, "
                    f"p99 {row['p99_ms']:8.2f} ms",
                    flush=True,
                )
    payload = {
        "benchmark": "decision latency of deadline-aware policies (schedule() wall time)",
        "command": "python scripts/bench/"
        + Path(__file__).name
        + " "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": {
            "node": platform.node(),
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
        },
        "goal": "median < 50 ms at 1,000 active jobs",
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=args.out.parent, suffix=".tmp", delete=False) as tmp:
        json.dump(payload, tmp, indent=2)
        tmp.write("\n")
    os.chmod(tmp.name, 0o644)
    os.replace(tmp.name, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
