"""Reproduce the Hadar / HadarE comparisons against Gavel's policies, Tiresias and FIFO on ``gavel-108``.

Two workloads from the Gavel-Philly recipe (:mod:`hetgym.workloads.generators`) on Gavel's 36 V100 + 36 P100 + 36 K80
cluster, several seeds each:

* ``static``: a batch of jobs all submitted at time 0: **total time duration** (makespan; Hadar's and
  Gavel's "total time duration"), GPU **utilisation** over that window, average JCT;
* ``online``: Poisson arrivals at a fixed rate (jobs/hour): **average JCT**, **queueing delay** (first
  start minus submission), **finish-time fairness** (JCT / run time alone on the best type).

Policies: ``hadar``, ``hadare``, the three Gavel policies heterogeneity-aware and agnostic, ``tiresias``
and ``fifo``. Both Hadar policies and Gavel's use their 360 s rounds; the simulator charges the default
30 s restart penalty on every start, migration and resumption. Jobs get model sizes from
``baselines.hadare.GAVEL_MODEL_BYTES`` (used only by HadarE's aggregation overhead).

Writes ``<out>/runs.csv`` (one row per workload x seed x policy), ``<out>/summary.csv`` (mean and 95%
confidence half-width over seeds), ``<out>/claims.csv`` (per-seed paired ratios for the paper's claims)
and ``<out>/hadar.png``.

    python scripts/reproduce/reproduce_hadar.py           # default: 3 seeds, 100 static + 200 online jobs (~3 min)
    python scripts/reproduce/reproduce_hadar.py --quick   # smoke test: 1 seed, tiny workloads
    python scripts/reproduce/reproduce_hadar.py --seeds 10 --static-jobs 200 --online-jobs 600 --workers 8  # larger
    python scripts/reproduce/reproduce_hadar.py --workloads static --policies hadar hadare --fork-efficiency 0.7
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from baselines.hadare import with_model_bytes
from hetgym.sim import SimConfig, Simulator, make_policy
from hetgym.stats import t_interval
from hetgym.workloads import WorkloadConfig

ROOT = Path(__file__).resolve().parents[2]

CLUSTER = "gavel-108"
POLICIES: tuple[str, ...] = (
    "hadar",
    "hadare",
    "gavel-mmf",
    "gavel-ftf",
    "gavel-makespan",
    "gavel-mmf-agnostic",
    "gavel-ftf-agnostic",
    "gavel-makespan-agnostic",
    "tiresias",
    "fifo",
)
GAVEL_AWARE = ("gavel-mmf", "gavel-ftf", "gavel-makespan")
METRICS: dict[str, str] = {
    "makespan_h": "total time duration (h)",
    "jct_mean_h": "average JCT (h)",
    "queueing_mean_h": "average queueing delay (h)",
    "ftf_mean": "finish-time fairness (mean rho)",
    "utilisation": "GPU utilisation",
}


def run_one(
    workload: str,
    seed: int,
    policy: str,
    num_jobs: int,
    rate_per_h: float,
    fork_efficiency: float = 1.0,
    gavel_lp_solver: str = "ipm",
) -> dict[str, Any]:
    """Simulate one (workload, seed, policy) and return its metrics row."""
    if workload == "static":
        cfg = WorkloadConfig(recipe="gavel-philly", num_jobs=num_jobs, static=True)
    else:
        cfg = WorkloadConfig(recipe="gavel-philly", num_jobs=num_jobs, arrival_rate_per_h=rate_per_h)
    jobs = with_model_bytes(cfg.build(CLUSTER, seed=seed))
    t0 = time.perf_counter()
    config = SimConfig(fork_efficiency=fork_efficiency)
    kwargs = {"lp_solver": gavel_lp_solver} if policy.startswith("gavel") else {}
    result = Simulator(CLUSTER, jobs, config=config).run(make_policy(policy, **kwargs))
    m = result.metrics
    return {
        "workload": workload,
        "seed": seed,
        "policy": policy,
        "num_jobs": num_jobs,
        "rate_per_h": rate_per_h if workload == "online" else math.nan,
        "fork_efficiency": fork_efficiency,
        "gavel_lp_solver": gavel_lp_solver if policy.startswith("gavel") else "",
        "num_completed": int(m["num_completed"]),
        "makespan_h": m["makespan_s"] / 3600,
        "jct_mean_h": m["jct_mean_s"] / 3600,
        "jct_p95_h": m["jct_p95_s"] / 3600,
        "queueing_mean_h": m["queueing_mean_s"] / 3600,
        "ftf_mean": m["ftf_mean"],
        "ftf_max": m["ftf_max"],
        "utilisation": m["utilisation"],
        "num_reconfigs": int(m["num_reconfigs"]),
        "decision_ms_p50": m["decision_ms_p50"],
        "decision_ms_p99": m["decision_ms_p99"],
        "stalled": result.stalled,
        "wall_s": time.perf_counter() - t0,
    }


def _t_half_width(values: np.ndarray) -> float:
    """Half-width of the 95% confidence interval of the mean (Student t)."""
    return t_interval(values).half_width


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95% CI half-width over seeds for every workload, policy and metric."""
    rows = []
    for (workload, policy), grp in runs.groupby(["workload", "policy"], sort=False):
        row: dict[str, Any] = {"workload": workload, "policy": policy, "seeds": len(grp)}
        for col in [*METRICS, "num_reconfigs", "decision_ms_p99", "wall_s"]:
            vals = grp[col].to_numpy(dtype=float)
            row[col] = float(np.mean(vals))
            row[f"{col}_ci95"] = _t_half_width(vals)
        rows.append(row)
    return pd.DataFrame(rows)


def claims(runs: pd.DataFrame) -> pd.DataFrame:
    """Per-seed paired ratios for the papers' claims, summarised over seeds.

    ``ratio`` > 1 means the first policy is better (for times: baseline / policy; for utilisation:
    policy / baseline).
    """
    specs: list[tuple[str, str, str, str, str]] = []
    for g in GAVEL_AWARE:
        specs.append(("static", "makespan_h", "hadar", g, "Hadar vs Gavel: total time duration (paper: 1.20x)"))
        specs.append(("online", "jct_mean_h", "hadar", g, "Hadar vs Gavel: average JCT (paper: 2.5x)"))
        specs.append(("online", "queueing_mean_h", "hadar", g, "Hadar vs Gavel: queueing delay (paper: 13% shorter)"))
        specs.append(("online", "ftf_mean", "hadar", g, "Hadar vs Gavel: finish-time fairness (paper: 1.5% better)"))
    specs.append(("static", "utilisation", "hadare", "hadar", "HadarE vs Hadar: utilisation (paper: 1.45x)"))
    specs.append(("static", "makespan_h", "hadare", "hadar", "HadarE vs Hadar: total time duration (paper: 2x-5x)"))
    specs.append(("online", "utilisation", "hadare", "hadar", "HadarE vs Hadar: utilisation, online trace"))
    specs.append(("online", "jct_mean_h", "hadare", "hadar", "HadarE vs Hadar: average JCT, online trace"))
    rows = []
    for workload, metric, policy, baseline, label in specs:
        sub = runs[runs["workload"] == workload]
        a = sub[sub["policy"] == policy].set_index("seed")[metric]
        b = sub[sub["policy"] == baseline].set_index("seed")[metric]
        common = a.index.intersection(b.index)
        if common.empty:
            continue
        a, b = a.loc[common].to_numpy(float), b.loc[common].to_numpy(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = a / b if metric == "utilisation" else b / a
        ratio = ratio[np.isfinite(ratio)]
        rows.append(
            {
                "claim": label,
                "workload": workload,
                "metric": metric,
                "policy": policy,
                "baseline": baseline,
                "seeds": int(ratio.size),
                "ratio_mean": float(ratio.mean()) if ratio.size else math.nan,
                "ratio_ci95": _t_half_width(ratio),
                "ratio_min": float(ratio.min()) if ratio.size else math.nan,
                "ratio_max": float(ratio.max()) if ratio.size else math.nan,
                "policy_mean": float(np.mean(a)),
                "baseline_mean": float(np.mean(b)),
                "wins": int((ratio > 1).sum()),
            }
        )
    return pd.DataFrame(rows)


def plot(summary: pd.DataFrame, path: Path) -> None:
    """Bar charts with 95% CI error bars, one panel per (workload, metric)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("static", "makespan_h"),
        ("static", "utilisation"),
        ("static", "jct_mean_h"),
        ("online", "jct_mean_h"),
        ("online", "queueing_mean_h"),
        ("online", "ftf_mean"),
    ]
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    for ax, (workload, metric) in zip(axes.ravel(), panels, strict=True):
        sub = summary[summary["workload"] == workload].set_index("policy").reindex(POLICIES).dropna(how="all")
        if sub.empty:
            ax.set_axis_off()
            continue
        colors = [
            "tab:red" if p.startswith("hadar") else "tab:blue" if p.startswith("gavel") else "tab:gray"
            for p in sub.index
        ]
        ax.bar(range(len(sub)), sub[metric], yerr=sub[f"{metric}_ci95"].fillna(0.0), color=colors, capsize=3)
        ax.set_xticks(range(len(sub)))
        ax.set_xticklabels(sub.index, rotation=60, ha="right", fontsize=8)
        ax.set_title(f"{workload}: {METRICS[metric]}", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(
        "Hadar, HadarE, Gavel, Tiresias and FIFO on gavel-108 (Gavel-Philly recipe), mean and 95% CI over seeds"
    )
    fig.tight_layout()
    _atomic_savefig(fig, path)
    plt.close(fig)


def _atomic_write_csv(frame: pd.DataFrame, path: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        frame.to_csv(tmp, index=False, float_format="%.6g")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _atomic_savefig(fig: Any, path: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".png")
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=110)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 (default 3)")
    p.add_argument("--static-jobs", type=int, default=100, help="jobs in the static batch (default 100)")
    p.add_argument("--online-jobs", type=int, default=200, help="jobs in the online trace (default 200)")
    p.add_argument("--rate", type=float, default=6.0, help="online arrival rate in jobs/hour (default 6)")
    p.add_argument("--policies", nargs="+", default=list(POLICIES), help="policies to run (default: all ten)")
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "hadar", help="output folder")
    p.add_argument(
        "--workloads", nargs="+", choices=("static", "online"), default=["static", "online"], help="workloads to run"
    )
    p.add_argument(
        "--fork-efficiency",
        type=float,
        default=1.0,
        help="SimConfig.fork_efficiency: statistical efficiency of HadarE's averaged copies (default 1.0)",
    )
    p.add_argument(
        "--gavel-lp-solver",
        choices=("ipm", "simplex"),
        default="ipm",
        help="LP solver of Gavel's policies: interior point (default, non-vertex optima) or simplex (vertices)",
    )
    p.add_argument("--quick", action="store_true", help="smoke test: 1 seed, 12 static and 16 online jobs")
    args = p.parse_args(argv)
    if args.quick:
        args.seeds, args.static_jobs, args.online_jobs = 1, 12, 16
    if args.seeds < 1 or args.static_jobs < 1 or args.online_jobs < 1 or args.workers < 1:
        p.error("--seeds, --static-jobs, --online-jobs and --workers must be >= 1")
    if not args.rate > 0:
        p.error("--rate must be > 0 jobs/hour")
    if not 0 < args.fork_efficiency <= 1:
        p.error("--fork-efficiency must be in (0, 1]")
    from hetgym.sim import list_policies

    known = list_policies()
    unknown = [x for x in args.policies if x not in known]
    if unknown:
        p.error(f"unknown policies {unknown}; known: {sorted(known)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    tasks = [
        (workload, seed, policy, n, args.rate, args.fork_efficiency, args.gavel_lp_solver)
        for workload, n in (("static", args.static_jobs), ("online", args.online_jobs))
        if workload in args.workloads
        for seed in range(args.seeds)
        for policy in args.policies
    ]
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    if args.workers == 1:
        for i, task in enumerate(tasks, 1):
            rows.append(run_one(*task))
            print(f"[{i}/{len(tasks)}] {task[0]} seed {task[1]} {task[2]}: {rows[-1]['wall_s']:.1f}s", flush=True)
    else:
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            futures = [pool.submit(run_one, *task) for task in tasks]
            for i, (task, fut) in enumerate(zip(tasks, futures, strict=True), 1):
                rows.append(fut.result())
                print(f"[{i}/{len(tasks)}] {task[0]} seed {task[1]} {task[2]}: {rows[-1]['wall_s']:.1f}s", flush=True)
    runs = pd.DataFrame(rows)
    summary = summarise(runs)
    claim_table = claims(runs)
    _atomic_write_csv(runs, args.out / "runs.csv")
    _atomic_write_csv(summary, args.out / "summary.csv")
    _atomic_write_csv(claim_table, args.out / "claims.csv")
    plot(summary, args.out / "hadar.png")
    pd.set_option("display.width", 200)
    cols = ["workload", "policy", *METRICS]
    print(summary[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if not claim_table.empty:
        print(
            claim_table[
                ["claim", "baseline", "ratio_mean", "ratio_ci95", "ratio_min", "ratio_max", "wins", "seeds"]
            ].to_string(index=False, float_format=lambda v: f"{v:.3f}")
        )
    print(f"wrote {args.out} in {time.perf_counter() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
