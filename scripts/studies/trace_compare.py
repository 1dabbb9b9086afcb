"""Trace-driven comparison: every registered policy on the ElasticFlow cluster traces and a Gavel
Philly-VC trace, converted from the published files.

Usage::

    python scripts/studies/trace_compare.py [--data ../shared/data] [--out results/traces] \\
        [--summary docs/results/traces] [--clusters cluster01,cluster10] [--policies fifo,edf]

What runs (each is ``hetgym trace convert`` followed by ``hetgym compare`` with seed 0):

* each of the ten ElasticFlow clusters, extended trace (ElasticFlow's models, iterations and deadlines),
  arrivals rescaled to an offered load of 0.8 on ``elasticflow-n16g8`` (128 A100, ElasticFlow's simulated
  cluster), every job kept;
* Gavel's per-VC Philly trace ``6214e9`` (seed 0, the largest VC, 2,000 jobs), 7-column format, deadlines from
  Gavel's SLO model, arrivals rescaled to an offered load of 0.8 on ``philly-het`` (300 V100 + 300 P100 + 300
  K80, Gavel's heterogeneous MSR cluster).

Per-run results go to ``--out`` (``results/`` is not versioned); the summary table (CSV and markdown) and a
DSR figure go to ``--summary``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

from hetgym.experiments import compare, default_policies
from hetgym.sim.config import SimConfig
from hetgym.workloads.scenario import Scenario, WorkloadConfig
from hetgym.workloads.schema import read_trace
from hetgym.workloads.traces import CleanOptions, convert_trace, offered_load

ROOT = Path(__file__).resolve().parents[2]
EF_CLUSTERS = tuple(f"cluster{i:02d}" for i in range(1, 11))
TARGET_LOAD = 0.8


def _runs(data: Path, clusters: tuple[str, ...]) -> list[dict[str, Any]]:
    runs = [
        {
            "name": f"elasticflow-{c}",
            "source": data / "elasticflow_traces" / "elasticflow-traces.tar.gz",
            "format": "elasticflow",
            "options": {"members": (f"{c}.csv",)},
            "cluster": "elasticflow-n16g8",
        }
        for c in clusters
    ]
    runs.append(
        {
            "name": "gavel-philly-vc-6214e9",
            "source": data / "gavel" / "traces" / "msr" / "seed0_per_vc_traces.tar.gz",
            "format": "gavel",
            "options": {"members": ("6214e9.trace",)},
            "cluster": "philly-het",
        }
    )
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "traces")
    parser.add_argument("--summary", type=Path, default=ROOT / "docs" / "results" / "traces")
    parser.add_argument("--clusters", help="ElasticFlow clusters to run (default: all ten)")
    parser.add_argument("--skip-gavel", action="store_true")
    parser.add_argument("--policies", help="comma-separated policies (default: every registered one)")
    parser.add_argument(
        "--summary-only", action="store_true", help="rebuild the summary from the results already in --out"
    )
    args = parser.parse_args()
    clusters = tuple(args.clusters.split(",")) if args.clusters else EF_CLUSTERS
    policies = args.policies.split(",") if args.policies else default_policies()
    runs = _runs(args.data, clusters)
    if args.skip_gavel:
        runs = runs[:-1]
    rows: list[dict[str, Any]] = []
    for run in runs:
        trace = args.out / f"{run['name']}.parquet"
        if not args.summary_only:
            _run(run, trace, args.out / run["name"], policies)
        wl = read_trace(trace)
        runs_csv = pd.read_csv(args.out / run["name"] / "runs.csv")
        for rec in runs_csv.to_dict("records"):
            rows.append(
                {
                    "trace": run["name"],
                    "cluster": run["cluster"],
                    "jobs": len(wl),
                    "time_scale": round(wl.metadata["time"]["time_scale"], 4),
                    "rigid_ceiling": round(_rigid_ceiling(wl), 4),
                    "policy": rec["policy"],
                    "dsr": rec.get("dsr"),
                    "jct_mean_h": rec.get("jct_mean_s", float("nan")) / 3600,
                    "jct_p95_h": rec.get("jct_p95_s", float("nan")) / 3600,
                    "makespan_h": rec.get("makespan_s", float("nan")) / 3600,
                    "queueing_mean_h": rec.get("queueing_mean_s", float("nan")) / 3600,
                    "utilisation": rec.get("utilisation"),
                    "num_completed": int(rec["num_completed"]),
                    "num_rejected": int(rec["num_rejected"]),
                    "num_unfinished": int(rec["num_unfinished"]),
                    "reconfigs": int(rec["num_reconfigs"]),
                }
            )
    table = pd.DataFrame(rows)
    args.summary.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.summary / "compare.csv", index=False, float_format="%.6g")
    command = " ".join(["python scripts/studies/trace_compare.py", *(a for a in sys.argv[1:] if a != "--summary-only")])
    _markdown(table, args.summary / "compare.md", command)
    _figure(table, args.summary / "dsr.png")
    (args.summary / "compare.json").write_text(json.dumps({"command": command, "policies": policies}, indent=2) + "\n")
    print(f"wrote {args.summary}/compare.csv, compare.md, dsr.png")
    return 0


def _run(run: dict[str, Any], trace: Path, out: Path, policies: list[str]) -> None:
    """Convert one trace and compare the policies on it (results in ``out``)."""
    clean = CleanOptions(target_load=TARGET_LOAD, load_cluster=run["cluster"])
    t0 = time.perf_counter()
    wl = convert_trace(run["source"], run["format"], trace, clean=clean, **run["options"])
    convert_s = time.perf_counter() - t0
    load = offered_load(wl.jobs, run["cluster"])
    scenario = Scenario(
        run["name"],
        run["cluster"],
        WorkloadConfig(trace=str(trace), num_jobs=len(wl)),
        SimConfig(),
        description=f"{run['name']} at offered load {TARGET_LOAD} on {run['cluster']}",
    )
    print(f"{run['name']}: {len(wl)} jobs, load {load['load']:.3f} on {run['cluster']}", flush=True)
    t0 = time.perf_counter()
    result = compare(scenario, policies, [0])
    wall_s = time.perf_counter() - t0
    result.save(out, plots=False)
    for (policy, seed), msg in result.errors.items():
        print(f"  {policy} seed {seed} FAILED: {msg}", flush=True)
    print(f"  {len(policies)} policies in {wall_s:.0f} s (conversion {convert_s:.1f} s)", flush=True)


def _rigid_ceiling(wl: Any) -> float:
    """Fraction of jobs whose deadline slack covers their recorded run time plus the start penalty."""
    penalty_s = SimConfig().restart_penalty_s
    ok = [
        j.deadline_s - j.submit_s >= j.duration_s + penalty_s
        for j in wl
        if j.duration_s is not None and math.isfinite(j.deadline_s)
    ]
    return sum(ok) / len(ok) if ok else float("nan")


def _markdown(table: pd.DataFrame, path: Path, command: str) -> None:
    lines = [
        "# Trace-driven comparison",
        "",
        f"`{command}`",
        "",
        f"Every trace rescaled to an offered load of {TARGET_LOAD} on its cluster; seed 0; all jobs kept. The rigid "
        "ceiling is the fraction of jobs whose deadline slack covers their recorded run time plus the 30 s start "
        "penalty: the best a policy running each job at its requested size on its reference GPU type can do.",
        "",
    ]
    for trace, grp in table.groupby("trace", sort=False):
        first = grp.iloc[0]
        lines += [
            f"## {trace} ({int(first['jobs'])} jobs on {first['cluster']}, arrivals x{first['time_scale']}, "
            f"rigid ceiling {first['rigid_ceiling']:.3f})",
            "",
            "| policy | DSR | avg JCT (h) | p95 JCT (h) | makespan (h) | queue (h) | util | done | reconfigs |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in grp.itertuples():
            lines.append(
                f"| {r.policy} | {r.dsr:.3f} | {r.jct_mean_h:.2f} | {r.jct_p95_h:.2f} | {r.makespan_h:.1f} | "
                f"{r.queueing_mean_h:.2f} | {r.utilisation:.3f} | {int(r.num_completed)} | {int(r.reconfigs)} |"
            )
        lines.append("")
    path.write_text("\n".join(lines))


def _figure(table: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pivot = table.pivot(index="trace", columns="policy", values="dsr").reindex(table["trace"].unique())
    ax = pivot.plot.bar(figsize=(12, 4.5), width=0.85)
    ceilings = table.groupby("trace", sort=False)["rigid_ceiling"].first().reindex(pivot.index)
    ax.hlines(
        ceilings.to_numpy(),
        [i - 0.45 for i in range(len(ceilings))],
        [i + 0.45 for i in range(len(ceilings))],
        colors="black",
        linestyles="dashed",
        linewidth=1.2,
        label="rigid ceiling",
    )
    ax.set_ylabel("deadline satisfactory ratio")
    ax.set_xlabel("")
    ax.set_ylim(0, 1)
    ax.set_title(f"DSR per trace and policy (offered load {TARGET_LOAD}, seed 0)")
    ax.legend(ncol=4, fontsize=8)
    plt.xticks(rotation=30, ha="right")
    plt.tight_layout()
    plt.savefig(path, dpi=110)
    plt.close()


if __name__ == "__main__":
    sys.exit(main())
