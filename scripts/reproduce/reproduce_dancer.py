"""Deadline satisfactory ratio of Dancer against ElasticFlow and the classic baselines, and against the optimum.

Usage::

    python scripts/reproduce/reproduce_dancer.py                 # the default sweep (a few minutes on 2 cores)
    python scripts/reproduce/reproduce_dancer.py --quick         # a smoke run (seconds)
    python scripts/reproduce/reproduce_dancer.py --seeds 0 1 2 3 4 5 6 7 8 9 --jobs 200 --rates 1.5 3 6 12 24 48 \\
        --tightness 0.5 0.75 1.5 2 --ilp-instances 10     # a larger configuration (about an hour)

Part 1 sweeps the load (the ElasticFlow recipe's Poisson arrival rate, in jobs per hour) at the
recipe's deadlines, and the deadline tightness (slack divided by ``tightness``) at the moderate rate
(12 jobs/h by default), on the 64-GPU, 4-type
``default`` cluster (A100, V100, P100, K80), with several seeds. Policies: Dancer, ElasticFlow, EDF
with and without admission control, Tiresias, FIFO and SRTF, each with its default knobs and the
simulator's default overheads (30 s restart penalty). Part 2 draws small instances (short jobs of the
same recipe on an 8-GPU cluster, one 4-GPU A100 and one 4-GPU V100 server) and compares each online policy with
the offline optimum of the slotted ILP (:mod:`baselines.optimal`), with and without restart penalties.

Writes, under ``--out`` (default ``results/dancer``): ``dsr.csv`` (one row per run), ``dsr_summary.csv``
(mean, standard deviation and per-seed values per point), ``dsr.png`` and ``optimum.csv``. Every file
is written to a temporary name and renamed, so an interrupted run leaves no half-written output.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from hetgym.sim import ClusterSpec, SimConfig, Simulator, make_policy
from hetgym.sim.job import JobSpec
from hetgym.workloads import WorkloadConfig

REPO_ROOT = Path(__file__).resolve().parents[2]

POLICIES: tuple[str, ...] = ("dancer", "elasticflow", "edf", "edf-admission", "tiresias", "fifo", "srtf")
SMALL_INVENTORY = {"a100": (1, 4), "v100": (1, 4)}


@dataclass(frozen=True)
class Run:
    """One simulation of the sweep."""

    sweep: str
    rate_per_h: float
    tightness: float
    seed: int
    policy: str
    num_jobs: int
    cluster: str
    max_gpus_per_job: int


def run_one(run: Run) -> dict[str, Any]:
    """Simulate one (workload, policy) pair and return its CSV row."""
    wl = WorkloadConfig(
        recipe="elasticflow",
        num_jobs=run.num_jobs,
        arrival_rate_per_h=run.rate_per_h,
        tightness=run.tightness,
        max_gpus_per_job=run.max_gpus_per_job,
    )
    workload = wl.build(run.cluster, seed=run.seed)
    started = time.perf_counter()
    result = Simulator(run.cluster, workload.jobs, config=SimConfig()).run(make_policy(run.policy))
    m = result.metrics
    deadline_jobs = int(result.jobs["has_deadline"].sum())
    return {
        "sweep": run.sweep,
        "arrival_rate_per_h": run.rate_per_h,
        "tightness": run.tightness,
        "seed": run.seed,
        "policy": run.policy,
        "dsr": m["dsr"],
        "num_met": int(result.jobs["met_deadline"].sum()),
        "num_deadline_jobs": deadline_jobs,
        "jct_mean_h": m["jct_mean_s"] / 3600.0,
        "utilisation": m["utilisation"],
        "num_reconfigs": m["num_reconfigs"],
        "decision_ms_p50": m["decision_ms_p50"],
        "decision_ms_p99": m["decision_ms_p99"],
        "wall_s": time.perf_counter() - started,
    }


def small_instance(seed: int, num_jobs: int, max_duration_s: float, rate_per_h: float) -> list[JobSpec]:
    """Short ElasticFlow-recipe jobs for the ILP: the first ``num_jobs`` with a duration under the cap."""
    cluster = ClusterSpec.from_inventory("small", SMALL_INVENTORY)
    wl = WorkloadConfig(recipe="elasticflow", num_jobs=num_jobs * 6, arrival_rate_per_h=rate_per_h, max_gpus_per_job=4)
    jobs = [j for j in wl.build(cluster, seed=seed).jobs if (j.duration_s or 0.0) <= max_duration_s]
    return jobs[:num_jobs]


def optimum_one(args: tuple[int, int, float, float, str, float, float]) -> list[dict[str, Any]]:
    """Solve one small instance offline and run every online policy on it (with and without penalties)."""
    from baselines.optimal import solve_offline

    seed, num_jobs, max_duration_s, slot_s, solver, time_limit_s, rate_per_h = args
    cluster = ClusterSpec.from_inventory("small", SMALL_INVENTORY)
    jobs = small_instance(seed, num_jobs, max_duration_s, rate_per_h=rate_per_h)
    opt = solve_offline(cluster, jobs, slot_s=slot_s, solver=solver, time_limit_s=time_limit_s)
    rows = []
    for penalty in (0.0, SimConfig().restart_penalty_s):
        for policy in POLICIES:
            result = Simulator(cluster, jobs, config=SimConfig(restart_penalty_s=penalty)).run(make_policy(policy))
            met = int(result.jobs["met_deadline"].sum())
            rows.append(
                {
                    "seed": seed,
                    "num_jobs": len(jobs),
                    "restart_penalty_s": penalty,
                    "policy": policy,
                    "num_met": met,
                    "opt_num_met": opt.num_met,
                    "opt_upper_bound": opt.upper_bound,
                    "opt_status": opt.status,
                    "fraction_of_optimum": met / opt.num_met if opt.num_met else float("nan"),
                    "ilp_slot_s": slot_s,
                    "arrival_rate_per_h": rate_per_h,
                    "ilp_binaries": opt.num_binaries,
                    "ilp_solve_s": round(opt.solve_s, 2),
                }
            )
    return rows


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard deviation and per-seed DSR per (sweep, arrival rate, tightness, policy)."""
    keys = ["sweep", "arrival_rate_per_h", "tightness", "policy"]
    grouped = frame.sort_values("seed").groupby(keys, sort=True)
    out = grouped.agg(
        dsr_mean=("dsr", "mean"),
        dsr_std=("dsr", "std"),
        num_seeds=("seed", "nunique"),
        decision_ms_p50=("decision_ms_p50", "median"),
    ).reset_index()
    per_seed = grouped["dsr"].apply(lambda s: " ".join(f"{v:.3f}" for v in s)).rename("dsr_per_seed")
    return out.merge(per_seed.reset_index(), on=keys)


def plot(summary: pd.DataFrame, path: Path) -> None:
    """DSR against load and against tightness, one line per policy with a +-1 std band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, sweep, xcol, label in (
        (axes[0], "load", "arrival_rate_per_h", "arrival rate (jobs per hour, log scale)"),
        (axes[1], "tightness", "tightness", "deadline tightness (slack / tightness)"),
    ):
        part = summary[summary["sweep"] == sweep]
        for policy in POLICIES:
            rows = part[part["policy"] == policy].sort_values(xcol)
            if rows.empty:
                continue
            std = rows["dsr_std"].fillna(0.0)
            style = "-" if policy in ("dancer", "elasticflow") else "--"
            ax.plot(rows[xcol], rows["dsr_mean"], style, marker="o", label=policy)
            ax.fill_between(rows[xcol], rows["dsr_mean"] - std, rows["dsr_mean"] + std, alpha=0.12)
        ax.set_xlabel(label)
        if sweep == "load":
            ax.set_xscale("log")
            ticks = sorted(part[xcol].unique())
            ax.set_xticks(ticks, [f"{v:g}" for v in ticks])
            ax.minorticks_off()
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("deadline satisfactory ratio")
    axes[0].set_ylim(0, 1.02)
    axes[1].legend(fontsize=8, loc="lower left")
    fig.suptitle("ElasticFlow recipe on the 64-GPU, 4-type cluster (mean +- std over seeds)")
    fig.tight_layout()
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".png", delete=False) as tmp:
        fig.savefig(tmp.name, dpi=120)
    os.chmod(tmp.name, 0o644)
    os.replace(tmp.name, path)
    plt.close(fig)


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write ``frame`` atomically (temporary file, then rename)."""
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".csv", delete=False, newline="") as tmp:
        frame.to_csv(tmp, index=False)
    os.chmod(tmp.name, 0o644)
    os.replace(tmp.name, path)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 seed, 1 load, 20 jobs, 1 small ILP")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "results" / "dancer", help="output folder")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--jobs", type=int, default=100, help="jobs per workload")
    parser.add_argument("--rates", type=float, nargs="+", default=[3.0, 12.0, 48.0], help="arrivals per hour")
    parser.add_argument("--tightness", type=float, nargs="+", default=[0.75, 1.5], help="extra tightness points")
    parser.add_argument("--moderate-rate", type=float, default=12.0, help="arrival rate of the tightness sweep")
    parser.add_argument("--cluster", default="default", help="cluster preset of part 1")
    parser.add_argument("--max-gpus-per-job", type=int, default=16)
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES)
    parser.add_argument("--skip-sweep", action="store_true", help="only part 2 (the small instances)")
    parser.add_argument("--ilp-instances", type=int, default=3, help="small instances solved offline (0: skip)")
    parser.add_argument("--ilp-jobs", type=int, default=14)
    parser.add_argument("--ilp-rate", type=float, default=8.0, help="arrivals per hour of the small instances")
    parser.add_argument("--ilp-slot-s", type=float, default=60.0)
    parser.add_argument("--ilp-solver", default="cbc", choices=("cbc", "highs"))
    parser.add_argument("--ilp-time-limit-s", type=float, default=120.0)
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.jobs, args.rates, args.tightness = [0], 20, [12.0], [1.5]
        args.ilp_instances, args.ilp_jobs = 1, 5
    if args.jobs < 1 or not args.seeds or any(v <= 0 for v in [*args.rates, *args.tightness, args.moderate_rate]):
        parser.error("--jobs must be >= 1, --seeds non-empty, rates and tightness > 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    runs: list[Run] = []
    for seed in [] if args.skip_sweep else args.seeds:
        points = [("load", rate, 1.0) for rate in args.rates]
        # The tightness sweep's 1.0 point is the load sweep's moderate point when both are run (copied below).
        shared = args.moderate_rate in args.rates
        tights = sorted({*args.tightness} - {1.0}) if shared else sorted({1.0, *args.tightness})
        points += [("tightness", args.moderate_rate, t) for t in tights]
        for sweep, rate, tight in points:
            for policy in args.policies:
                runs.append(Run(sweep, rate, tight, seed, policy, args.jobs, args.cluster, args.max_gpus_per_job))
    started = time.perf_counter()
    pool: Callable[..., Any]
    with ProcessPoolExecutor(max_workers=args.workers) if args.workers > 1 else _Serial() as pool:
        rows = list(pool.map(run_one, runs))
        ilp_args = [
            (seed, args.ilp_jobs, 2 * 3600.0, args.ilp_slot_s, args.ilp_solver, args.ilp_time_limit_s, args.ilp_rate)
            for seed in range(args.ilp_instances)
        ]
        opt_rows = [row for rows_i in pool.map(optimum_one, ilp_args) for row in rows_i]
    if opt_rows:
        write_csv(pd.DataFrame(opt_rows), args.out / "optimum.csv")
    if not rows:
        print(pd.DataFrame(opt_rows).groupby(["restart_penalty_s", "policy"])[["num_met", "opt_num_met"]].sum())
        return 0
    frame = pd.DataFrame(rows)
    if args.moderate_rate in args.rates:
        shared_rows = frame[(frame["sweep"] == "load") & (frame["arrival_rate_per_h"] == args.moderate_rate)]
        frame = pd.concat([frame, shared_rows.assign(sweep="tightness")], ignore_index=True)
    summary = summarise(frame)
    write_csv(frame, args.out / "dsr.csv")
    write_csv(summary, args.out / "dsr_summary.csv")
    plot(summary, args.out / "dsr.png")
    elapsed = time.perf_counter() - started
    print(f"{len(runs)} runs and {args.ilp_instances} ILP instances in {elapsed:.0f} s on {platform.node()}")
    moderate = summary[(summary["sweep"] == "tightness") & (summary["tightness"] == 1.0)]
    if not moderate.empty:
        print(moderate[["policy", "dsr_mean", "dsr_std", "dsr_per_seed"]].to_string(index=False))
    if opt_rows:
        opt = pd.DataFrame(opt_rows)
        print(opt.groupby(["restart_penalty_s", "policy"])[["num_met", "opt_num_met"]].sum().to_string())
    print(f"wrote {args.out}")
    return 0


class _Serial:
    """A stand-in for a process pool that maps in this process (``--workers 1``)."""

    def __enter__(self) -> _Serial:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        return [fn(x) for x in items]


if __name__ == "__main__":
    sys.exit(main())
