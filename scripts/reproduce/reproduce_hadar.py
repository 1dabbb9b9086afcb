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
``baselines.hadar.hadare.GAVEL_MODEL_BYTES`` (used only by HadarE's aggregation overhead).

The papers' own settings (Hadar against YARN-CS and Gavel on a static batch with and without the restart
penalty, HadarE on six mixed nodes, 95 % intervals over 10 seeds) are the last section of this file;
``reproduce_papers.py`` runs them with the other papers' and writes ``docs/results/papers.md``.

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
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from paper_claims import (
    Settings,
    Task,
    available,
    bars,
    claim,
    pivot,
    plot_simple,
    pyplot,
    save_figure,
    verdict_diff,
    verdict_ratio,
)

from baselines.hadar import with_model_bytes
from hetgym.sim import ClusterSpec, JobSpec, SimConfig, Simulator, list_policies, make_policy
from hetgym.stats import t_interval
from hetgym.sweep import map_runs
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


def gavel_jobs(
    cluster: str | ClusterSpec,
    seed: int,
    num_jobs: int,
    *,
    rate_per_h: float | None = None,
    max_gpus: int | None = None,
) -> list[JobSpec]:
    """Gavel-Philly jobs with their model sizes: all submitted at time 0, or Poisson arrivals at ``rate_per_h``."""
    cfg = WorkloadConfig(
        recipe="gavel-philly",
        num_jobs=num_jobs,
        static=rate_per_h is None,
        arrival_rate_per_h=rate_per_h,
        max_gpus_per_job=max_gpus,
    )
    return with_model_bytes(cfg.build(cluster, seed=seed))


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
    jobs = gavel_jobs(CLUSTER, seed, num_jobs, rate_per_h=None if workload == "static" else rate_per_h)
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


def run_task(task: tuple[Any, ...]) -> dict[str, Any]:
    """:func:`run_one` of one task tuple (a worker process runs several)."""
    return run_one(*task)


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

    def report(i: int, row: dict[str, Any]) -> None:
        task = tasks[i]
        print(f"[{i + 1}/{len(tasks)}] {task[0]} seed {task[1]} {task[2]}: {row['wall_s']:.1f}s", flush=True)

    rows = map_runs(run_task, tasks, workers=args.workers, on_result=report)
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


# ============================================================================================
# The papers' own settings: Hadar against YARN-CS and Gavel on a static batch, HadarE on six mixed nodes
# (run by reproduce_papers.py)

#: Baselines of Hadar's conference version (YARN-CS) and of both versions (Gavel).
#: Baselines of Hadar's conference version (YARN-CS) and of both versions (Gavel).
HADAR_BASELINES: tuple[str, ...] = ("yarn-cs", "gavel-makespan", "gavel-ftf")
#: Baselines of HadarE's physical-cluster comparison.
#: Baselines of HadarE's physical-cluster comparison.
HADARE_BASELINES: tuple[str, ...] = ("hadar", "gavel-makespan")


def inventory_cluster(name: str, inventory: Sequence[tuple[str, int, int]]) -> ClusterSpec:
    return ClusterSpec.from_inventory(name, {t: (n, g) for t, n, g in inventory})


HADAR_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "hadar": ("hadar", {}),
    "hadar (avg-JCT objective)": ("hadar", {"utility": "avg_jct"}),
}


def hadar_task(settings: Settings, seed: int, penalty_s: float, label: str) -> list[dict]:
    cluster = inventory_cluster("gavel-mix", settings.hadar_inventory)
    jobs = gavel_jobs(cluster, seed, settings.hadar_jobs)
    name, knobs = HADAR_VARIANTS.get(label, (label, {}))
    result = Simulator(cluster, jobs, config=SimConfig(restart_penalty_s=penalty_s, seed=seed)).run(
        make_policy(name, **knobs)
    )
    m = result.metrics
    return [
        {
            "seed": seed,
            "restart_penalty_s": penalty_s,
            "policy": label,
            "makespan_h": m["makespan_s"] / 3600,
            "jct_sum_h": m["jct_mean_s"] * m["num_completed"] / 3600,
            "jct_mean_h": m["jct_mean_s"] / 3600,
            "utilisation": m["utilisation"],
            "num_completed": int(m["num_completed"]),
        }
    ]


def hadare_task(settings: Settings, seed: int, policy: str) -> list[dict]:
    cluster = inventory_cluster("mixed-6", settings.hadare_inventory)
    per_server = min(g for _, _, g in settings.hadare_inventory)
    jobs = gavel_jobs(cluster, seed, settings.hadare_jobs, max_gpus=per_server)
    result = Simulator(cluster, jobs, config=SimConfig(seed=seed)).run(make_policy(policy))
    m = result.metrics
    return [
        {
            "seed": seed,
            "policy": policy,
            "makespan_h": m["makespan_s"] / 3600,
            "jct_mean_h": m["jct_mean_s"] / 3600,
            "utilisation": m["utilisation"],
            "job_types": " ".join(sorted(j.job_type for j in jobs)),
        }
    ]


def paper_tasks(settings: Settings, studies: Sequence[str]) -> list[Task]:
    """The own-setting studies' tasks (``hadar``, ``hadare`` or both): one per policy x penalty x seed."""
    tasks: list[Task] = []
    if "hadar" in studies:
        policies, _ = available(HADAR_BASELINES)
        for label in [*HADAR_VARIANTS, *policies]:
            for penalty in (30.0, 0.0):
                for seed in settings.seeds:
                    tasks.append(Task("hadar", hadar_task, (settings, seed, penalty, label), 2.0))
    if "hadare" in studies:
        policies, _ = available(("hadare", *HADARE_BASELINES))
        tasks += [Task("hadare", hadare_task, (settings, seed, p), 0.5) for p in policies for seed in settings.seeds]
    return tasks


HADAR_PAPER: dict[tuple[str, str], str] = {
    ("gavel", "makespan_h"): "total time duration 1.20x shorter than Gavel (arXiv)",
    ("gavel", "jct_sum_h"): "avg JCT 2.5x better than Gavel (IPDPS)",
    ("yarn-cs", "makespan_h"): "(not reported; IPDPS: avg JCT 3x better than YARN-CS)",
    ("yarn-cs", "jct_sum_h"): "avg JCT 3x better than YARN-CS (IPDPS)",
    ("hadar", "makespan_h"): "(the draft states average JCT as the aim)",
    ("hadar", "jct_sum_h"): "(the draft states average JCT as the aim)",
}


def hadar_claims(runs: pd.DataFrame) -> list[dict]:
    """Baseline / Hadar ratios of makespan and summed JCT per restart penalty (> 1: Hadar better)."""
    claims: list[dict] = []
    variants = list(HADAR_VARIANTS)
    for penalty in sorted(runs["restart_penalty_s"].unique(), reverse=True):
        part = runs[runs["restart_penalty_s"] == penalty]
        pairs = [(h, b) for h in variants for b in part["policy"].unique() if b not in HADAR_VARIANTS]
        pairs.append((variants[1], variants[0]))  # the objective knob's own effect
        for hadar, base in pairs:
            for metric, label in (("makespan_h", "makespan"), ("jct_sum_h", "summed JCT")):
                pv = pivot(part, metric)
                if hadar not in pv or base not in pv:
                    continue
                ratio = t_interval(pv[base] / pv[hadar])
                family = "gavel" if base.startswith("gavel") else "hadar" if base in HADAR_VARIANTS else base
                claims.append(
                    claim(
                        "hadar",
                        f"{hadar} vs {base}: {label}, restart penalty {penalty:g} s",
                        HADAR_PAPER.get((family, metric), "(not reported)"),
                        f"{label} ratio {base} / {hadar} (> 1: {hadar} better)",
                        ratio,
                        verdict_ratio(ratio, hadar),
                        unit="x",
                        scope=f"penalty {penalty:g} s",
                    )
                )
    return claims


def hadare_claims(runs: pd.DataFrame) -> list[dict]:
    claims: list[dict] = []
    pv_u, pv_m = pivot(runs, "utilisation"), pivot(runs, "makespan_h")
    if "hadare" not in pv_u:
        return claims
    for base in [p for p in pv_u.columns if p != "hadare"]:
        util = t_interval(pv_u["hadare"] / pv_u[base])
        claims.append(
            claim(
                "hadare",
                f"HadarE vs {base}: cluster utilisation",
                "1.45x utilisation over Hadar (AWS and lab clusters)",
                f"utilisation ratio hadare / {base}",
                util,
                verdict_ratio(util, "HadarE"),
                unit="x",
            )
        )
        red = t_interval(1.0 - pv_m["hadare"] / pv_m[base])
        claims.append(
            claim(
                "hadare",
                f"HadarE vs {base}: total time duration reduction",
                "50% (AWS) / 80% (lab) shorter total time duration than Hadar",
                f"1 - makespan hadare / {base}",
                red,
                verdict_diff(red, "HadarE's reduction", "zero"),
                unit="%",
            )
        )
    return claims


def plot_hadar(runs: pd.DataFrame, path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(16, 4.2))
    panels = [(m, p) for p in (30.0, 0.0) for m in ("makespan_h", "jct_sum_h")]
    for ax, (metric, penalty) in zip(axes, panels, strict=True):
        pv = pivot(runs[runs["restart_penalty_s"] == penalty], metric)
        labels = list(pv.columns)
        bars(ax, labels, [t_interval(pv[p]) for p in labels], "hadar")
        ax.set_title(
            f"{'makespan' if metric == 'makespan_h' else 'summed JCT'} (h), penalty {penalty:g} s", fontsize=10
        )
    save_figure(fig, path)


def paper_report(study: str, runs: pd.DataFrame, out: Path, plots: bool = True) -> tuple[list[dict], pd.DataFrame]:
    """The claims and the table of means of ``study`` (``hadar`` or ``hadare``); writes its figure under ``out``."""
    if study == "hadar":
        means = runs.groupby(["policy", "restart_penalty_s"], sort=False)[["makespan_h", "jct_sum_h", "utilisation"]]
        wide = means.mean().unstack("restart_penalty_s")
        penalties = sorted(runs["restart_penalty_s"].unique(), reverse=True)
        table = pd.DataFrame({"policy": wide.index})
        for metric in ("makespan_h", "jct_sum_h", "utilisation"):
            for penalty in penalties:
                table[f"{metric}, penalty {penalty:g} s"] = wide[(metric, penalty)].to_numpy()
        if plots:
            plot_hadar(runs, out / "hadar.png")
        return hadar_claims(runs), table
    table = runs.groupby("policy", sort=False)[["makespan_h", "jct_mean_h", "utilisation"]].mean().reset_index()
    if plots:
        plot_simple(
            runs,
            [("utilisation", "utilisation"), ("makespan_h", "total time duration (h)")],
            "hadare",
            out / "hadare.png",
        )
    return hadare_claims(runs), table


PAPERS: dict[str, tuple[str, str]] = {
    "hadar": (
        "Hadar (Sultana et al., IPDPS 2024; arXiv:2503.10918)",
        "Paper: trace-driven simulation with Gavel's models and throughputs (likely); avg JCT 3x better than "
        "YARN-CS and 2.5x than Gavel (IPDPS); total time duration 1.20x shorter than Gavel (arXiv). Cluster "
        "size, job count and the Gavel policy compared not retrieved; the draft states average JCT as the aim.",
    ),
    "hadare": (
        "HadarE (arXiv:2503.10918)",
        "Paper: physical AWS and lab clusters (a handful of nodes with different GPU models) running Gavel's "
        "models; utilisation 1.45x over Hadar, total time duration 50% (AWS) / 80% (lab) shorter.",
    ),
}


def _inventory(items: Sequence[tuple[str, int, int]]) -> str:
    return " + ".join(f"{n}x{g} {t.upper()}" for t, n, g in items)


def ours_text(settings: Settings, study: str) -> str:
    """The own-setting study's setting, in words."""
    if study == "hadar":
        _, missing_h = available(HADAR_BASELINES)
        return (
            f"{settings.hadar_jobs} Gavel-Philly jobs submitted at t = 0 on {_inventory(settings.hadar_inventory)} "
            "GPUs "
            "(servers x GPUs), seed s drawing the jobs; 360 s rounds; restart penalty 30 s and 0 s. Hadar with its "
            'default utility (relative slowdown) and with `utility="avg_jct"` (the average-JCT objective); '
            "baselines "
            + ", ".join(HADAR_BASELINES)
            + (f" (not available here: {', '.join(missing_h)})" if missing_h else "")
            + ". Total time duration = makespan; also summed JCT."
        )
    return (
        f"{settings.hadare_jobs} Gavel-Philly jobs (at most one node's GPUs each) submitted together on six nodes, "
        f"{_inventory(settings.hadare_inventory)}; seed s draws the models and lengths; fork efficiency 1.0, 30 s "
        "penalty."
    )


if __name__ == "__main__":
    raise SystemExit(main())
