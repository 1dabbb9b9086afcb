"""Reproduce the A-SRPT claims on the simulator: its iteration predictor and its JCT against the baselines.

Usage::

    python scripts/reproduce/reproduce_asrpt.py [--quick] [--out results/asrpt_jps] [--workers 2] [--only asrpt]

Two studies, each writing CSVs (and a figure) under ``--out``:

1. **Predictor** (``predictor.csv``): the random-forest iteration predictor of A-SRPT trained on a
   history of recurring jobs, its error on the held-out jobs that follow (median and mean absolute
   log error, share within 25 %), for recurring and one-off jobs, against the global median and the
   per-template mean of the history; plus the error of the predictions A-SRPT actually used online.
2. **A-SRPT** (``asrpt_runs.csv``, ``asrpt_summary.csv``, ``asrpt_jct.png``): average and p95/p99 JCT
   of A-SRPT (random forest and oracle iterations, modes A and B) against SRTF (oracle and predicted),
   FIFO, Tiresias and A-SRPT with communication-unaware placements, on 16 servers x 8 A100 with the
   bandwidth communication model, at two loads and several seeds.

The paper's own setting (16 x 8 A100 with 25 Gb/s NICs, with noisy features and against a single-machine
SRPT bound) is the last section of this file; ``reproduce_papers.py`` runs it with the other papers' and
writes ``docs/results/papers.md``. JPS, the other placement paper of the results page
``docs/results/asrpt_jps.md``, is ``reproduce_jps.py`` (it writes its files to the same default folder).

The default run takes a few minutes on two cores; ``--quick`` is a smoke test. Nothing here is tuned to
the paper's numbers: the scenario is fixed in this file and the margins are reported as measured.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import math
import os
import platform
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from paper_claims import Settings as PaperSettings
from paper_claims import Task, claim, pivot, plot_simple, pyplot, save_plot, verdict_diff, write_csv

from baselines.asrpt import RandomForestPredictor
from hetgym.sim import ClusterSpec, JobSpec, SimConfig, Simulator, make_policy
from hetgym.stats import t_interval
from hetgym.sweep import map_runs
from hetgym.workloads import Load, recurring

CLUSTER = "a100-128"
STUDIES: tuple[str, ...] = ("predictor", "asrpt")


@dataclass(frozen=True)
class Settings:
    """What a run covers (``--quick`` shrinks every dimension)."""

    seeds: tuple[int, ...]
    loads: tuple[float, ...]
    num_jobs: int
    num_history: int


def settings_for(quick: bool) -> Settings:
    if quick:
        return Settings((0,), (0.9,), 40, 60)
    return Settings((0, 1, 2), (0.7, 0.9), 300, 300)


# ============================================================================================
# Workloads


def split_trace(
    seed: int, load: float, num_history: int, num_jobs: int, cluster: str | ClusterSpec = CLUSTER
) -> tuple[list[JobSpec], list[JobSpec]]:
    """A recurring trace: the first ``num_history`` jobs are the past, the rest is simulated from time 0."""
    trace = list(recurring(num_history + num_jobs, seed=seed, load=Load(target_utilisation=load), cluster=cluster))
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
    """Label -> (registered policy, knobs) of every variant run here; ``history`` is added for predicting policies.

    ``A-SRPT (RF), noisy features`` is A-SRPT (RF) given jobs whose metadata is noisy (:func:`with_feature_noise`).
    """
    return {
        "A-SRPT (RF)": ("asrpt", {"predictor": "rf"}),
        "A-SRPT (oracle)": ("asrpt", {"predictor": "oracle"}),
        "A-SRPT mode B (RF)": ("asrpt", {"predictor": "rf", "mode": "preemptive"}),
        "A-SRPT (RF), default placer": ("asrpt", {"predictor": "rf", "placement": "default"}),
        "A-SRPT (RF), random placement": ("asrpt", {"predictor": "rf", "placement": "random"}),
        "A-SRPT (RF), noisy features": ("asrpt", {"predictor": "rf"}),
        "SRTF (oracle)": ("srtf", {}),
        "SRTF (RF)": ("srtf-pred", {"predictor": "rf"}),
        "FIFO": ("fifo", {}),
        "Tiresias": ("tiresias", {}),
    }


#: The variants of the A-SRPT study (``--only asrpt``).
ASRPT_LABELS: tuple[str, ...] = (
    "A-SRPT (RF)",
    "A-SRPT (oracle)",
    "A-SRPT mode B (RF)",
    "A-SRPT (RF), default placer",
    "A-SRPT (RF), random placement",
    "SRTF (oracle)",
    "SRTF (RF)",
    "FIFO",
    "Tiresias",
)
#: The variants of the paper's own setting (reproduce_papers.py), with the noisy-feature one.
PAPER_ASRPT_LABELS: tuple[str, ...] = (
    "A-SRPT (RF)",
    "A-SRPT (RF), default placer",
    "A-SRPT (RF), random placement",
    "A-SRPT (RF), noisy features",
    "A-SRPT (oracle)",
    "SRTF (oracle)",
    "FIFO",
    "Tiresias",
)
NOISY = "A-SRPT (RF), noisy features"


def make_variant(label: str, history: Sequence[JobSpec]) -> Any:
    """The policy of ``label``; a predicting one is trained on ``history``."""
    name, knobs = asrpt_policies()[label]
    if knobs.get("predictor") == "rf":
        knobs = {**knobs, "history": list(history)}
    return make_policy(name, **knobs)


def run_one(task: tuple[str, float, int, int, int]) -> dict[str, Any]:
    """One simulation (a worker process runs several)."""
    label, load, seed, num_history, num_jobs = task
    history, future = split_trace(seed, load, num_history, num_jobs)
    policy = make_variant(label, history)
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
        for load, seed, label in itertools.product(settings.loads, settings.seeds, ASRPT_LABELS)
    ]
    return pd.DataFrame(map_runs(run_one, tasks, workers=workers))


def asrpt_summary(runs: pd.DataFrame) -> pd.DataFrame:
    cols = ["jct_mean_h", "jct_p95_h", "jct_p99_h", "queueing_mean_h", "num_reconfigs"]
    summary = runs.groupby(["load", "policy"], sort=False)[cols].mean().reset_index()
    ref = summary[summary["policy"] == "A-SRPT (RF)"].set_index("load")["jct_mean_h"]
    summary["jct_mean_vs_asrpt_rf"] = summary["jct_mean_h"] / summary["load"].map(ref)
    return summary


# ============================================================================================
# Output


def plot_asrpt(summary: pd.DataFrame, path: Path) -> None:
    plt = pyplot()
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
    save_plot(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke test (seconds)")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("results/asrpt_jps"),
        help="output folder (default results/asrpt_jps, shared with reproduce_jps.py: the file names differ)",
    )
    parser.add_argument("--workers", type=int, default=2, help="processes for the simulations (default 2)")
    parser.add_argument("--only", choices=STUDIES, action="append", help="run only these studies (repeatable)")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers={args.workers}; give at least 1")
    settings = settings_for(args.quick)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    studies = args.only or list(STUDIES)
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
    print(f"\n# done in {time.perf_counter() - started:.0f} s")
    return 0


# ============================================================================================
# The paper's own setting: A-SRPT with costly cross-server placement, noisy features, a lower bound
# (run by reproduce_papers.py)


def asrpt_cluster() -> ClusterSpec:
    """16 servers of 8 A100 (300 GB/s NVLink) with 25 Gb/s (3.125 GB/s) NICs."""
    return ClusterSpec.from_inventory("a100-128-25g", {"a100": (16, 8)}, nic_bw_gb_per_s=3.125)


#: Feature noise of the noisy variant: share of jobs whose template id is lost (renamed resubmissions),
#: log-normal sigma of the learning rate and of the data-set size recorded with the job.
NOISE_RENAMED = 0.3
NOISE_LR_SIGMA = 0.2
NOISE_SAMPLES_SIGMA = 0.1


def with_feature_noise(jobs: Iterable[JobSpec], rng: np.random.Generator) -> list[JobSpec]:
    """The jobs as a predictor would see them with noisy metadata (iterations and timing unchanged)."""
    out = []
    for job in jobs:
        features = dict(job.features)
        if isinstance(features.get("lr"), int | float):
            features["lr"] = float(features["lr"]) * float(rng.lognormal(0.0, NOISE_LR_SIGMA))
        if isinstance(features.get("dataset_samples"), int | float):
            features["dataset_samples"] = round(
                float(features["dataset_samples"]) * float(rng.lognormal(0.0, NOISE_SAMPLES_SIGMA))
            )
        template = None if rng.random() < NOISE_RENAMED else job.template_id
        out.append(replace(job, features=features, template_id=template))
    return out


def srpt_lower_bound_s(jobs: Sequence[JobSpec], capacity_gpus: int) -> float:
    """A lower bound on the mean JCT of any schedule of ``jobs`` on ``capacity_gpus`` GPUs.

    The larger of (a) the mean run time alone (``duration_s``, each job at its requested size,
    communication-free) and (b) the mean completion time of preemptive SRPT on one machine that processes
    ``capacity_gpus`` GPU-seconds per second, each job's work being ``num_gpus x duration_s`` (any
    cluster schedule is a schedule of that machine, on which SRPT minimises the summed completion time).
    """
    if not jobs:
        return math.nan
    alone = float(np.mean([float(j.duration_s or 0.0) for j in jobs]))
    return max(
        alone,
        single_machine_srpt_mean_s(
            [j.submit_s for j in jobs], [j.num_gpus * float(j.duration_s or 0.0) for j in jobs], capacity_gpus
        ),
    )


def single_machine_srpt_mean_s(submit_s: Sequence[float], work: Sequence[float], speed: float) -> float:
    """Mean flow time (completion - submission) of preemptive SRPT on one machine of ``speed``."""
    order = np.argsort(np.asarray(submit_s, dtype=float), kind="stable")
    arrivals = [(float(submit_s[i]), float(work[i]) / speed) for i in order]
    heap: list[tuple[float, int, float]] = []  # (remaining, index, submit)
    now, k, total = 0.0, 0, 0.0
    while k < len(arrivals) or heap:
        if not heap:
            now = max(now, arrivals[k][0])
        while k < len(arrivals) and arrivals[k][0] <= now:
            heapq.heappush(heap, (arrivals[k][1], k, arrivals[k][0]))
            k += 1
        remaining, idx, sub = heapq.heappop(heap)
        next_arrival = arrivals[k][0] if k < len(arrivals) else math.inf
        if now + remaining <= next_arrival:
            now += remaining
            total += now - sub
        else:
            heapq.heappush(heap, (remaining - (next_arrival - now), idx, sub))
            now = next_arrival
    return total / len(arrivals)


def asrpt_task(settings: PaperSettings, seed: int, label: str) -> list[dict]:
    cluster = asrpt_cluster()
    history, future = split_trace(seed, settings.asrpt_load, settings.asrpt_history, settings.asrpt_jobs, cluster)
    if label == "oracle-SRPT bound":
        bound = srpt_lower_bound_s(future, cluster.total_gpus)
        spanning = np.mean([j.num_gpus > 8 for j in future])
        tp = np.mean([(j.parallelism or (1, 1, 1))[2] > 1 for j in future])
        return [
            {"seed": seed, "policy": label, "jct_mean_h": bound / 3600, "share_over_8_gpus": spanning, "share_tp": tp}
        ]
    if label == NOISY:
        rng = np.random.default_rng([seed, 7])
        history, future = with_feature_noise(history, rng), with_feature_noise(future, rng)
    policy = make_variant(label, history)
    result = Simulator(cluster, future, config=SimConfig(comm="bandwidth", seed=seed)).run(policy)
    m = result.metrics
    row: dict[str, Any] = {
        "seed": seed,
        "policy": label,
        "jct_mean_h": m["jct_mean_s"] / 3600,
        "jct_p95_h": m["jct_p95_s"] / 3600,
        "num_completed": int(m["num_completed"]),
    }
    predictions = getattr(policy, "arrival_predictions", None)
    if predictions:
        truth = {j.job_id: j.total_iters for j in future}
        err = [abs(math.log(predictions[i] / truth[i])) for i in predictions if i in truth and predictions[i] > 0]
        row["median_abs_log_error"] = float(np.median(err)) if err else math.nan
    return [row]


def paper_tasks(settings: PaperSettings) -> list[Task]:
    """The own-setting study's tasks: one per variant (and the bound) x seed."""
    labels = [*PAPER_ASRPT_LABELS, "oracle-SRPT bound"]
    return [Task("asrpt", asrpt_task, (settings, seed, label), 2.0) for label in labels for seed in settings.seeds]


def asrpt_claims(runs: pd.DataFrame) -> list[dict]:
    claims: list[dict] = []
    pv = pivot(runs, "jct_mean_h")
    ref = "A-SRPT (RF)"
    if ref not in pv:
        return claims
    for base in (
        "SRTF (oracle)",
        "FIFO",
        "Tiresias",
        "A-SRPT (RF), default placer",
        "A-SRPT (RF), random placement",
        "A-SRPT (oracle)",
    ):
        if base not in pv:
            continue
        red = t_interval(1.0 - pv[ref] / pv[base])
        claims.append(
            claim(
                "asrpt",
                f"A-SRPT (RF) vs {base}: mean JCT reduction",
                "lower JCT than the baselines (third-party summary: 23-41% better 'scheduling efficiency')",
                f"1 - JCT A-SRPT (RF) / {base}",
                red,
                verdict_diff(red, "A-SRPT's reduction", "zero"),
                unit="%",
            )
        )
    if "A-SRPT (RF), noisy features" in pv:
        red = t_interval(pv["A-SRPT (RF), noisy features"] / pv[ref] - 1.0)
        claims.append(
            claim(
                "asrpt",
                "feature noise: JCT of A-SRPT (RF) with noisy features over clean",
                "(not reported)",
                "JCT noisy / clean - 1",
                red,
                verdict_diff(red, "the noise cost", "zero"),
                unit="%",
            )
        )
    if "oracle-SRPT bound" in pv:
        gap = t_interval(pv[ref] / pv["oracle-SRPT bound"])
        claims.append(
            claim(
                "asrpt",
                "A-SRPT (RF) against the single-machine SRPT lower bound",
                "provable competitive ratio (bound not stated in the abstract)",
                "JCT A-SRPT (RF) / lower bound",
                gap,
                f"A-SRPT's mean JCT is {gap.mean:.2f}x the bound (a bound, not an achievable optimum)",
                unit="x",
            )
        )
    if "median_abs_log_error" in runs:
        for label in (ref, "A-SRPT (RF), noisy features"):
            err = runs.loc[runs["policy"] == label, "median_abs_log_error"]
            if err.notna().any():
                iv = t_interval(err)
                claims.append(
                    claim(
                        "asrpt",
                        f"{label}: median |log(predicted / true iterations)| at arrival",
                        "(not reported)",
                        "median abs log error",
                        iv,
                        f"a factor {math.exp(iv.mean):.2f} off in the median",
                    )
                )
    return claims


def paper_report(runs: pd.DataFrame, out: Path, plots: bool = True) -> tuple[list[dict], pd.DataFrame]:
    """The claims and the table of the own-setting study; writes its figure ``asrpt.png`` under ``out``."""
    cols = [
        c for c in ("jct_mean_h", "jct_p95_h", "median_abs_log_error", "share_over_8_gpus", "share_tp") if c in runs
    ]
    if plots:
        plot_simple(runs, [("jct_mean_h", "mean JCT (h)")], "A-SRPT (RF)", out / "asrpt.png")
    return asrpt_claims(runs), runs.groupby("policy", sort=False)[cols].mean().reset_index()


PAPERS: dict[str, tuple[str, str]] = {
    "asrpt": (
        "A-SRPT (Luo et al., INFOCOM 2025)",
        "Paper: mixed-parallelism (DP/PP/TP) jobs, most recurring; graph-based placement minimising "
        "inter-server traffic; random-forest iteration predictor; testbed and simulation. Figures not in "
        "the abstract (a third-party summary mentions 23-41%).",
    ),
}


def ours_text(settings: PaperSettings) -> str:
    """The own-setting study's setting, in words."""
    return (
        f"recurring mixed-parallel jobs (`hetgym.workloads.recurring`, DP/PP/TP, 60% recurring) at offered load "
        f'{settings.asrpt_load} on 16 x 8 A100 with 300 GB/s NVLink and 25 Gb/s NICs, `comm="bandwidth"`; '
        f"{settings.asrpt_history} past jobs train the forest, the next {settings.asrpt_jobs} are simulated; "
        "seed s "
        f"draws the trace. Noisy features: {100 * NOISE_RENAMED:.0f}% of jobs lose their template id (renamed "
        f"resubmissions), learning rate x lognormal(0, {NOISE_LR_SIGMA}), data-set size x lognormal(0, "
        f"{NOISE_SAMPLES_SIGMA}), in history and arrivals. Bound: the larger of the mean run time alone and the "
        "mean completion of preemptive SRPT on one machine of 128 GPU-seconds per second."
    )


if __name__ == "__main__":
    raise SystemExit(main())
