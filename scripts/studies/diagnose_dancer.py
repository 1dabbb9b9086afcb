"""Why Dancer's DSR differs from ElasticFlow's: where each policy loses its deadline misses.

Usage::

    python scripts/studies/diagnose_dancer.py                       # 12 jobs/h, seeds 0-2 (a few minutes)
    python scripts/studies/diagnose_dancer.py --rate 48 --seeds 0 1 2 3 4

On the ElasticFlow recipe (the cluster and job count of ``reproduce_dancer.py``), runs ElasticFlow and
Dancer (its defaults and one-knob variants), each with the simulator's default 30 s restart penalty
and with none, and counts for every run: jobs meeting their deadline; jobs no configuration could
finish in time even alone on the empty cluster (*infeasible alone*, after one restart penalty); jobs
rejected (for Dancer split into *no room* among the other jobs' reservations and *priced out*, cost
above the job's value); admitted jobs that still missed. Writes ``--out`` (default
``results/dancer/diagnosis.csv``) atomically and prints the per-variant means.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from baselines._deadline import job_options
from hetgym.sim import SimConfig, Simulator, ThroughputModel, get_cluster, make_policy
from hetgym.workloads import WorkloadConfig

REPO_ROOT = Path(__file__).resolve().parents[2]

VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "elasticflow": ("elasticflow", {}),
    "dancer": ("dancer", {}),
    "dancer switch_cost_in_dp=False": ("dancer", {"switch_cost_in_dp": False}),
    "dancer price_increment=exact": ("dancer", {"price_increment": "exact"}),
    "dancer price_mode=linear": ("dancer", {"price_mode": "linear"}),
    "dancer price_scale=speed": ("dancer", {"price_scale": "speed"}),
    "dancer tie_break=late": ("dancer", {"tie_break": "late"}),
    "dancer rejected_jobs=best_effort": ("dancer", {"rejected_jobs": "best_effort"}),
    "dancer without prices (L=U=1e-9)": ("dancer", {"price_auto": False, "price_L": 1e-9, "price_U": 1e-9}),
}


def diagnose(rate: float, seed: int, jobs: int, cluster_name: str, variants: Sequence[str]) -> list[dict[str, Any]]:
    cluster = get_cluster(cluster_name)
    throughput = ThroughputModel.default()
    workload = WorkloadConfig(recipe="elasticflow", num_jobs=jobs, arrival_rate_per_h=rate, max_gpus_per_job=16).build(
        cluster, seed=seed
    )
    penalty = SimConfig().restart_penalty_s
    infeasible = 0
    for spec in workload.jobs:
        opts = job_options(throughput, spec, cluster)
        if not (opts.rates * (spec.deadline_s - spec.submit_s - penalty) >= spec.total_iters).any():
            infeasible += 1
    rows = []
    for restart in (penalty, 0.0):
        for label in variants:
            name, knobs = VARIANTS[label]
            policy = make_policy(name, **knobs)
            result = Simulator(cluster, workload.jobs, config=SimConfig(restart_penalty_s=restart)).run(policy)
            frame = result.jobs
            admitted = frame[frame["status"] != "rejected"]
            stats = getattr(policy, "stats", {})
            rows.append(
                {
                    "variant": label,
                    "arrival_rate_per_h": rate,
                    "seed": seed,
                    "restart_penalty_s": restart,
                    "dsr": result.metrics["dsr"],
                    "met": int(frame["met_deadline"].sum()),
                    "infeasible_alone": infeasible,
                    "rejected": int((frame["status"] == "rejected").sum()),
                    "rejected_no_room": stats.get("rejected_no_room", float("nan")),
                    "rejected_price": stats.get("rejected_price", float("nan")),
                    "admitted_missed": int((~admitted["met_deadline"]).sum()),
                    "num_reconfigs": int(frame["num_reconfigs"].sum()),
                }
            )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=12.0, help="arrivals per hour")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--cluster", default="default")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS), metavar="VARIANT")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "results" / "dancer" / "diagnosis.csv")
    args = parser.parse_args(argv)
    rows = [row for seed in args.seeds for row in diagnose(args.rate, seed, args.jobs, args.cluster, args.variants)]
    frame = pd.DataFrame(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=args.out.parent, suffix=".tmp", delete=False, newline="") as tmp:
        frame.to_csv(tmp, index=False)
    os.chmod(tmp.name, 0o644)
    os.replace(tmp.name, args.out)
    cols = ["dsr", "met", "infeasible_alone", "rejected", "rejected_no_room", "rejected_price", "admitted_missed"]
    summary = frame.groupby(["restart_penalty_s", "variant"], sort=False)[cols].mean().round(3)
    print(summary.to_string())
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
