"""Reproduce the A-SRPT and JPS claims on the simulator and on the JPS model.

Usage::

    python scripts/reproduce/reproduce_asrpt_jps.py [--quick] [--out results/asrpt_jps] [--workers 2]

Four studies, each writing CSVs and a figure under ``--out``:

1. **Predictor** (``predictor.csv``): the random-forest iteration predictor of A-SRPT trained on a
   history of recurring jobs, its error on the held-out jobs that follow (median and mean absolute
   log error, share within 25 %), for recurring and one-off jobs, against the global median and the
   per-template mean of the history; plus the error of the predictions A-SRPT actually used online.
2. **A-SRPT** (``asrpt_runs.csv``, ``asrpt_summary.csv``, ``asrpt_jct.png``): average and p95/p99 JCT
   of A-SRPT (random forest and oracle iterations, modes A and B) against SRTF (oracle and predicted),
   FIFO, Tiresias and A-SRPT with communication-unaware placements, on 16 servers x 8 A100 with the
   bandwidth communication model, at two loads and several seeds.
3. **JPS optimality** (``jps_gap.csv``, ``jps_gap_summary.csv``, ``jps_gap.png``): the average JCT of
   JPS and of simpler placements as a multiple of the exact optimum on small random instances (the
   paper reports JPS within 2.04 % of the optimum).
4. **JPS running time** (``jps_runtime.csv``, ``jps_runtime.png``): JPS against the exhaustive search
   over categories as instances grow; where the exhaustive search would exceed ``--exhaustive-budget-s``
   its time is estimated from a sample of categories (marked ``estimated``).

The default run takes a few minutes on two cores; ``--quick`` is a smoke test. Nothing here is tuned to
the papers' numbers: the scenario is fixed in this file and the margins are reported as measured.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import platform
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from baselines.asrpt import RandomForestPredictor
from baselines.jps import (
    PlacementInstance,
    equal_category,
    exhaustive_search,
    iter_categories,
    jps,
    num_categories,
    optimum,
    sample_categories,
    solve_category,
    synthetic_instance,
    times_of,
)
from hetgym.atomic import atomic_write
from hetgym.sim import JobSpec, SimConfig, Simulator, make_policy
from hetgym.workloads import Load, recurring

CLUSTER = "a100-128"
# The exact dynamic programme costs about S * states^2; beyond this many count vectors it is skipped.
EXACT_DP_MAX_STATES = 5_000


@dataclass(frozen=True)
class Settings:
    """What a run covers (``--quick`` shrinks every dimension)."""

    seeds: tuple[int, ...]
    loads: tuple[float, ...]
    num_jobs: int
    num_history: int
    gap_sizes: tuple[tuple[int, int], ...]
    gap_instances: int
    runtime_sizes: tuple[tuple[int, int], ...]
    runtime_repeats: int
    exhaustive_budget_s: float


def settings_for(quick: bool, exhaustive_budget_s: float | None) -> Settings:
    if quick:
        return Settings((0,), (0.9,), 40, 60, ((3, 8), (4, 10)), 2, ((3, 8), (4, 12)), 1, exhaustive_budget_s or 2.0)
    return Settings(
        (0, 1, 2),
        (0.7, 0.9),
        300,
        300,
        ((3, 8), (4, 12), (5, 16), (6, 20)),
        30,
        ((3, 8), (4, 12), (5, 16), (6, 20), (8, 32), (12, 64), (16, 128), (32, 256)),
        3,
        exhaustive_budget_s or 20.0,
    )


# ============================================================================================
# Workloads


def split_trace(seed: int, load: float, num_history: int, num_jobs: int) -> tuple[list[JobSpec], list[JobSpec]]:
    """A recurring trace: the first ``num_history`` jobs are the past, the rest is simulated from time 0."""
    trace = list(recurring(num_history + num_jobs, seed=seed, load=Load(target_utilisation=load), cluster=CLUSTER))
    history, future = trace[:num_history], trace[num_history:]
    t0 = future[0].submit_s
    return history, [replace(j, submit_s=j.submit_s - t0) for j in future]


# ============================================================================================
# 1. Predictor error


def _errors(pred: Sequence[float], jobs: Sequence[JobSpec]) -> dict[str, float]:
    ratio = np.log(np.asarray(pred, dtype=float) / np.array([j.total_iters for j in jobs]))
    return {
        "num_jobs": float(len(jobs)),
        "median_abs_log_error": float(np.median(np.abs(ratio))),
        "mean_abs_log_error": float(np.mean(np.abs(ratio))),
        "within_25pct": float(np.mean(np.abs(np.exp(ratio) - 1.0) <= 0.25)),
    }


class HistoryBaseline:
    """Non-learned references: the global median of the history, or the template's mean log iterations."""

    def __init__(self, history: Sequence[JobSpec], per_template: bool) -> None:
        self.median = float(np.median([j.total_iters for j in history]))
        self.per_template = per_template
        logs: dict[str | None, list[float]] = {}
        for j in history:
            logs.setdefault(j.template_id, []).append(math.log(j.total_iters))
        self.template_mean = {k: math.exp(float(np.mean(v))) for k, v in logs.items()}

    def predict_many(self, jobs: Sequence[JobSpec]) -> list[float]:
        if not self.per_template:
            return [self.median] * len(jobs)
        return [self.template_mean.get(j.template_id, self.median) for j in jobs]


def predictor_study(settings: Settings) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for seed in settings.seeds:
        history, future = split_trace(seed, settings.loads[0], settings.num_history, settings.num_jobs)
        seen = {j.template_id for j in history}
        groups = {
            "recurring (template seen)": [j for j in future if j.template_id in seen],
            "one-off or unseen template": [j for j in future if j.template_id not in seen],
            "all": future,
        }
        predictors: dict[str, Callable[[list[JobSpec]], list[float]]] = {
            "global median": HistoryBaseline(history, per_template=False).predict_many,
            "template mean (history)": HistoryBaseline(history, per_template=True).predict_many,
        }
        for target, unseen in (("log", "median"), ("log", "rf"), ("residual", "rf")):
            rf = RandomForestPredictor(unseen=unseen, target=target, seed=seed)  # type: ignore[arg-type]
            rf.fit(history)
            predictors[f"random forest (target={target}, unseen={unseen})"] = rf.predict_many
        for name, predict in predictors.items():
            for group, jobs in groups.items():
                if jobs:
                    rows.append({"seed": seed, "predictor": name, "jobs": group, **_errors(predict(jobs), jobs)})
    return pd.DataFrame(rows)


# ============================================================================================
# 2. A-SRPT against the baselines


def asrpt_policies() -> dict[str, tuple[str, dict[str, Any]]]:
    """Label -> (registered policy, knobs); ``history`` is added for predicting policies."""
    return {
        "A-SRPT (RF)": ("asrpt", {"predictor": "rf"}),
        "A-SRPT (oracle)": ("asrpt", {"predictor": "oracle"}),
        "A-SRPT mode B (RF)": ("asrpt", {"predictor": "rf", "mode": "preemptive"}),
        "A-SRPT (RF), default placer": ("asrpt", {"predictor": "rf", "placement": "default"}),
        "A-SRPT (RF), random placement": ("asrpt", {"predictor": "rf", "placement": "random"}),
        "SRTF (oracle)": ("srtf", {}),
        "SRTF (RF)": ("srtf-pred", {"predictor": "rf"}),
        "FIFO": ("fifo", {}),
        "Tiresias": ("tiresias", {}),
    }


def run_one(task: tuple[str, float, int, int, int]) -> dict[str, Any]:
    """One simulation (a worker process runs several)."""
    label, load, seed, num_history, num_jobs = task
    history, future = split_trace(seed, load, num_history, num_jobs)
    name, knobs = asrpt_policies()[label]
    if knobs.get("predictor") == "rf":
        knobs = {**knobs, "history": history}
    policy = make_policy(name, **knobs)
    t0 = time.perf_counter()
    result = Simulator(CLUSTER, future, config=SimConfig(comm="bandwidth", seed=seed)).run(policy)
    m = result.metrics
    row: dict[str, Any] = {
        "policy": label,
        "load": load,
        "seed": seed,
        "jct_mean_h": m["jct_mean_s"] / 3600,
        "jct_p95_h": m["jct_p95_s"] / 3600,
        "jct_p99_h": m["jct_p99_s"] / 3600,
        "queueing_mean_h": m["queueing_mean_s"] / 3600,
        "makespan_h": m["makespan_s"] / 3600,
        "num_completed": m["num_completed"],
        "num_reconfigs": m["num_reconfigs"],
        "decision_ms_p50": m["decision_ms_p50"],
        "wall_s": time.perf_counter() - t0,
    }
    predictions = getattr(policy, "arrival_predictions", None)
    if predictions and label == "A-SRPT (RF)":
        jobs = [j for j in future if j.job_id in predictions]
        row.update({f"online_{k}": v for k, v in _errors([predictions[j.job_id] for j in jobs], jobs).items()})
    return row


def asrpt_study(settings: Settings, workers: int) -> pd.DataFrame:
    tasks = [
        (label, load, seed, settings.num_history, settings.num_jobs)
        for load, seed, label in itertools.product(settings.loads, settings.seeds, asrpt_policies())
    ]
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            rows = list(pool.map(run_one, tasks))
    else:
        rows = [run_one(t) for t in tasks]
    return pd.DataFrame(rows)


def asrpt_summary(runs: pd.DataFrame) -> pd.DataFrame:
    cols = ["jct_mean_h", "jct_p95_h", "jct_p99_h", "queueing_mean_h", "num_reconfigs"]
    summary = runs.groupby(["load", "policy"], sort=False)[cols].mean().reset_index()
    ref = summary[summary["policy"] == "A-SRPT (RF)"].set_index("load")["jct_mean_h"]
    summary["jct_mean_vs_asrpt_rf"] = summary["jct_mean_h"] / summary["load"].map(ref)
    return summary


# ============================================================================================
# 3. JPS against the optimum on small instances


def greedy_fastest_first(inst: PlacementInstance) -> np.ndarray:
    """Equal category; jobs with the most work first take their fastest remaining workers."""
    sizes = equal_category(inst.num_workers, inst.num_jobs)
    left = inst.counts.copy()
    x = np.zeros((inst.num_jobs, inst.num_classes), dtype=np.int64)
    work = inst.iters * inst.batch
    for i in np.argsort(-work, kind="stable"):
        need = sizes[i]
        for c in np.argsort(-inst.rho[i], kind="stable"):
            take = min(need, int(left[c]))
            x[i, c] += take
            left[c] -= take
            need -= take
    return x


def gap_study(settings: Settings) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    rng = np.random.default_rng(2024)
    for (num_jobs, num_workers), rep in itertools.product(settings.gap_sizes, range(settings.gap_instances)):
        inst = synthetic_instance(rng, num_jobs, num_workers)
        opt = optimum(inst).avg_jct_s
        seed = int(rng.integers(0, 2**31 - 1))
        variants: dict[str, float] = {
            "JPS (Hungarian, JCT valuation, local search)": jps(inst, rng=np.random.default_rng(seed)).avg_jct_s,
            "JPS (auction)": jps(inst, matcher="auction", rng=np.random.default_rng(seed)).avg_jct_s,
            "JPS without local search": jps(inst, local_search_steps=0, rng=np.random.default_rng(seed)).avg_jct_s,
            "JPS, rho valuation, no local search (re-implementation-like)": jps(
                inst, valuation="rho", local_search_steps=0, rng=np.random.default_rng(seed)
            ).avg_jct_s,
            "equal category + matching": float(
                times_of(inst, solve_category(inst, equal_category(num_workers, num_jobs))).mean()
            ),
            "random category + matching": float(
                times_of(inst, solve_category(inst, sample_categories(inst, 3, np.random.default_rng(seed))[-1])).mean()
            ),
            "greedy fastest-GPU-first": float(times_of(inst, greedy_fastest_first(inst)).mean()),
        }
        if num_categories(num_workers, num_jobs) <= 2000:
            variants["exhaustive search (all categories + Hungarian)"] = exhaustive_search(inst).avg_jct_s
        for name, value in variants.items():
            rows.append(
                {
                    "num_jobs": num_jobs,
                    "num_workers": num_workers,
                    "instance": rep,
                    "method": name,
                    "avg_jct_s": value,
                    "optimum_s": opt,
                    "ratio_to_optimum": value / opt,
                }
            )
    return pd.DataFrame(rows)


def gap_summary(gaps: pd.DataFrame) -> pd.DataFrame:
    def stats(group: pd.DataFrame) -> pd.Series:
        r = group["ratio_to_optimum"].to_numpy()
        return pd.Series(
            {
                "instances": len(r),
                "mean_gap_pct": 100 * (r.mean() - 1),
                "median_gap_pct": 100 * (np.median(r) - 1),
                "p95_gap_pct": 100 * (np.percentile(r, 95) - 1),
                "max_gap_pct": 100 * (r.max() - 1),
                "share_within_2.04pct": float(np.mean(r <= 1.0204)),
            }
        )

    per_size = gaps.groupby(["method", "num_jobs", "num_workers"], sort=False).apply(stats, include_groups=False)
    overall = gaps.groupby(["method"], sort=False).apply(stats, include_groups=False)
    overall = overall.assign(num_jobs="all", num_workers="all").set_index(["num_jobs", "num_workers"], append=True)
    return pd.concat([per_size, overall]).reset_index()


# ============================================================================================
# 4. JPS running time against the exhaustive search


def runtime_study(settings: Settings) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    rng = np.random.default_rng(7)
    for num_jobs, num_workers in settings.runtime_sizes:
        inst = synthetic_instance(rng, num_jobs, num_workers)
        total = num_categories(num_workers, num_jobs)
        times = []
        for rep in range(settings.runtime_repeats):
            t0 = time.perf_counter()
            jps(inst, rng=np.random.default_rng(rep))
            times.append(time.perf_counter() - t0)
        # Exhaustive: time a sample of categories first, run it all only within the budget.
        sample = list(itertools.islice(iter_categories(num_workers, num_jobs), min(total, 30)))
        t0 = time.perf_counter()
        for sizes in sample:
            solve_category(inst, sizes)
        per_category = (time.perf_counter() - t0) / len(sample)
        if per_category * total <= settings.exhaustive_budget_s:
            t0 = time.perf_counter()
            exhaustive_search(inst, max_categories=None)
            exhaustive_s, estimated = time.perf_counter() - t0, False
        else:
            exhaustive_s, estimated = per_category * total, True
        opt_s = math.nan
        if int(np.prod(inst.counts + 1)) <= EXACT_DP_MAX_STATES:
            t0 = time.perf_counter()
            optimum(inst)
            opt_s = time.perf_counter() - t0
        rows.append(
            {
                "num_jobs": num_jobs,
                "num_workers": num_workers,
                "categories": float(total),
                "jps_s": float(np.median(times)),
                "exhaustive_s": exhaustive_s,
                "exhaustive_estimated": estimated,
                "speedup": exhaustive_s / float(np.median(times)),
                "exact_dp_s": opt_s,
            }
        )
    return pd.DataFrame(rows)


# ============================================================================================
# Output


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write atomically (temporary file, then rename)."""
    atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False, float_format="%.6g"))


def save_figure(fig: Any, path: Path) -> None:
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, bbox_inches="tight"), keep_suffix=True)


def plot_asrpt(summary: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    loads = sorted(summary["load"].unique())
    fig, axes = plt.subplots(1, len(loads), figsize=(4 + 4 * len(loads), 4.5), squeeze=False, sharey=True)
    for ax, load in zip(axes[0], loads, strict=True):
        part = summary[summary["load"] == load]
        y = np.arange(len(part))
        ax.barh(y - 0.2, part["jct_mean_h"], height=0.4, label="mean")
        ax.barh(y + 0.2, part["jct_p95_h"], height=0.4, label="p95")
        ax.set_yticks(y, part["policy"])
        ax.set_xlabel("JCT (h)")
        ax.set_title(f"16x8 A100, bandwidth model, load {load}")
        ax.legend()
    axes[0][0].invert_yaxis()  # the y axis is shared: invert it once
    save_figure(fig, path)
    plt.close(fig)


def plot_gap(gaps: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = list(dict.fromkeys(gaps["method"]))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    data = [100 * (gaps.loc[gaps["method"] == m, "ratio_to_optimum"] - 1) for m in methods]
    ax.boxplot(data, orientation="horizontal", tick_labels=methods)
    ax.axvline(2.04, color="red", linestyle="--", label="paper: within 2.04 %")
    ax.set_xlabel("average JCT above the exact optimum (%)")
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(left=0.0)
    ax.invert_yaxis()
    ax.legend(loc="lower right")
    save_figure(fig, path)
    plt.close(fig)


def plot_runtime(runtime: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    labels = [f"S={s}\nK={k}" for s, k in zip(runtime["num_jobs"], runtime["num_workers"], strict=True)]
    x = np.arange(len(runtime))
    ax.plot(x, runtime["jps_s"], "o-", label="JPS (40 samples)")
    measured = ~runtime["exhaustive_estimated"].astype(bool)
    ax.plot(x[measured], runtime["exhaustive_s"][measured], "s-", label="exhaustive (measured)")
    ax.plot(x[~measured], runtime["exhaustive_s"][~measured], "s--", mfc="none", label="exhaustive (estimated)")
    ax.plot(x, runtime["exact_dp_s"], "^:", label="exact optimum (dynamic programme)")
    ax.set_yscale("log")
    ax.set_xticks(x, labels)
    ax.set_ylabel("seconds per instance")
    ax.legend()
    save_figure(fig, path)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke test (seconds)")
    parser.add_argument("--out", type=Path, default=Path("results/asrpt_jps"), help="output folder")
    parser.add_argument("--workers", type=int, default=2, help="processes for the simulations (default 2)")
    parser.add_argument(
        "--exhaustive-budget-s",
        type=float,
        default=None,
        help="largest exhaustive search actually run; larger ones are estimated (default 20, quick 2)",
    )
    parser.add_argument(
        "--only", choices=["predictor", "asrpt", "gap", "runtime"], action="append", help="run only these studies"
    )
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers={args.workers}; give at least 1")
    if args.exhaustive_budget_s is not None and not args.exhaustive_budget_s > 0:
        parser.error("--exhaustive-budget-s must be > 0")
    settings = settings_for(args.quick, args.exhaustive_budget_s)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    studies = args.only or ["predictor", "asrpt", "gap", "runtime"]
    started = time.perf_counter()
    print(f"# {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs; output in {out}")
    pd.set_option("display.width", 160)
    pd.set_option("display.max_columns", 20)
    if "predictor" in studies:
        pred = predictor_study(settings)
        write_csv(pred, out / "predictor.csv")
        table = pred.groupby(["jobs", "predictor"], sort=False)[
            ["median_abs_log_error", "mean_abs_log_error", "within_25pct"]
        ].mean()
        print("\n## Predictor error on held-out jobs (mean over seeds)\n", table.round(3).to_string())
    if "asrpt" in studies:
        runs = asrpt_study(settings, args.workers)
        write_csv(runs, out / "asrpt_runs.csv")
        summary = asrpt_summary(runs)
        write_csv(summary, out / "asrpt_summary.csv")
        plot_asrpt(summary, out / "asrpt_jct.png")
        print("\n## A-SRPT and baselines (mean over seeds)\n", summary.round(3).to_string(index=False))
        online = runs.filter(like="online_").dropna()
        if not online.empty:
            print("\n## Online predictions used by A-SRPT (RF)\n", online.mean().round(3).to_string())
    if "gap" in studies:
        gaps = gap_study(settings)
        write_csv(gaps, out / "jps_gap.csv")
        gsum = gap_summary(gaps)
        write_csv(gsum, out / "jps_gap_summary.csv")
        plot_gap(gaps, out / "jps_gap.png")
        print("\n## Average JCT above the exact optimum (%)\n", gsum[gsum["num_jobs"] == "all"].round(3).to_string())
    if "runtime" in studies:
        runtime = runtime_study(settings)
        write_csv(runtime, out / "jps_runtime.csv")
        plot_runtime(runtime, out / "jps_runtime.png")
        print("\n## JPS against the exhaustive search (seconds)\n", runtime.to_string(index=False))
    print(f"\n# done in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
