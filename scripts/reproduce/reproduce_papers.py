"""Reproduce the five papers' claims in their own settings, with 95 % t intervals over >= 10 seeds.

Usage::

    python scripts/reproduce/reproduce_papers.py               # the full run: 266-722 s measured on 2 shared cores
    python scripts/reproduce/reproduce_papers.py --quick       # the same studies and seeds on smaller sizes: 58-91 s
    python scripts/reproduce/reproduce_papers.py --only dancer jps --out /tmp/papers --page /tmp/papers.md

Five studies (each one's setting is spelled out in the page it writes):

* **Dancer** on the ten ElasticFlow cluster traces (``cluster01.csv`` .. ``cluster10.csv`` of the
  published raw traces): real arrival times, GPU counts and run times of a window of consecutive jobs,
  deadlines by ElasticFlow's rule (submit + U(0.5, 1.5) x run time), on the ElasticFlow cluster on which
  the window's offered load is closest to 0.8, and on a heterogeneous version of it (the same GPUs in
  servers of 4: half A100, the other half V100 and T4). Seed ``s`` draws each trace's window and its
  deadlines. Baselines: :data:`DANCER_BASELINES`.
* **Hadar** against YARN-CS and Gavel on a static Gavel-Philly batch: total time duration as makespan
  and as summed JCT, with the simulator's 30 s restart penalty and without (Gavel's simulator has none),
  Hadar's default utility and its average-JCT objective (``utility="avg_jct"``).
* **HadarE** in the paper's regime: a handful of Gavel models submitted together on six mixed nodes.
* **A-SRPT** on recurring mixed-parallel jobs on 16 x 8 A100 with 25 Gb/s NICs (placement across
  servers is costly), its communication-aware placement against the default placer, its random forest
  with and without feature noise, against SRTF, FIFO, Tiresias and a single-machine SRPT lower bound.
* **JPS** on instances drawn from the measured V100/P100/K80 throughputs: its fairness knob ``beta``
  swept, the gap to the exact optimum, and the tail (instances beyond 2.04 %) traced to sampling.

A baseline not registered in this installation is reported as "not available" in the page. Output:
CSVs and PNGs under ``--out`` (default ``docs/results/papers``) and the page ``--page`` (default
``docs/results/papers.md``), every figure in it computed by this run. Files are written to temporary
names and renamed, so an interrupted run leaves the previous output whole.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import platform
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hetgym.atomic import atomic_write
from hetgym.progress import ProgressReport
from hetgym.sim import ClusterSpec, JobSpec, SimConfig, Simulator, get_cluster, list_policies, make_policy
from hetgym.stats import Interval, paired_interval, t_interval

ROOT = Path(__file__).resolve().parents[2]

DATA_DIR = ROOT.parent / "shared" / "data"
STUDIES: tuple[str, ...] = ("dancer", "hadar", "hadare", "asrpt", "jps")

#: Deadline baselines of the Dancer study (registered names; an absent one is reported, not run).
DANCER_BASELINES: tuple[str, ...] = (
    "edf",
    "gandiva",
    "tiresias",
    "gavel-ftf",
    "elasticflow-agnostic",
    "elasticflow",
    "chronus",
    "hydra",
)
#: Baselines of Hadar's conference version (YARN-CS) and of both versions (Gavel).
HADAR_BASELINES: tuple[str, ...] = ("yarn-cs", "gavel-makespan", "gavel-ftf")
#: Baselines of HadarE's physical-cluster comparison.
HADARE_BASELINES: tuple[str, ...] = ("hadar", "gavel-makespan")
#: ElasticFlow's cluster presets (servers of 8 A100) a trace may run on.
EF_PRESET_SERVERS: tuple[int, ...] = (1, 4, 8, 16, 32, 48, 64)
EF_TARGET_LOAD = 0.8
#: The paper's threshold of JPS's gap to the optimum.
JPS_THRESHOLD = 0.0204


@dataclass(frozen=True)
class Settings:
    """Sizes of a run (``--quick`` and the test's tiny run shrink them)."""

    label: str
    seeds: tuple[int, ...]
    traces: tuple[str, ...]
    window_jobs: int
    hadar_jobs: int
    hadar_inventory: tuple[tuple[str, int, int], ...]
    hadare_jobs: int
    hadare_inventory: tuple[tuple[str, int, int], ...]
    asrpt_jobs: int
    asrpt_history: int
    asrpt_load: float
    jps_sizes: tuple[tuple[int, int], ...]
    jps_instances: int
    jps_betas: tuple[float, ...] = (1.0, 0.75, 0.5, 0.25, 0.0)
    jps_samples: int = 40
    jps_more_samples: int = 400


ALL_TRACES = tuple(f"cluster{i:02d}" for i in range(1, 11))
TEN_SEEDS = tuple(range(10))
GAVEL_108 = (("v100", 9, 4), ("p100", 9, 4), ("k80", 9, 4))
GAVEL_36 = (("v100", 3, 4), ("p100", 3, 4), ("k80", 3, 4))
MIXED_6 = (("v100", 2, 2), ("p100", 2, 2), ("k80", 2, 2))


def settings_for(mode: str) -> Settings:
    """``full``, ``quick`` or ``tiny`` (the test's)."""
    if mode == "full":
        return Settings(
            "full", TEN_SEEDS, ALL_TRACES, 40, 100, GAVEL_108, 6, MIXED_6, 150, 200, 0.9, ((4, 12), (5, 16), (6, 20)), 5
        )
    if mode == "quick":
        return Settings(
            "quick", TEN_SEEDS, ALL_TRACES[:4], 12, 12, GAVEL_36, 4, MIXED_6, 40, 60, 0.9, ((4, 12), (5, 16)), 1
        )
    if mode == "tiny":
        return Settings(
            "tiny", (0, 1, 2), ("cluster01",), 4, 4, GAVEL_36, 3, MIXED_6, 12, 30, 0.9, ((3, 8),), 1, (1.0, 0.0), 10, 20
        )
    raise ValueError(f"mode {mode!r}; use 'full', 'quick' or 'tiny'")


# ============================================================================================
# Dancer on the ElasticFlow traces


@functools.lru_cache(maxsize=16)
def load_ef_trace(source: str, trace: str) -> tuple[JobSpec, ...]:
    """The raw ElasticFlow trace ``trace`` (e.g. ``cluster04``) from a ``.tar.gz`` or a folder of CSVs."""
    from hetgym.workloads.traces import CleanOptions, FillOptions, load_trace

    path = Path(source)
    clean = CleanOptions()
    fill = FillOptions(seed=0, deadline="none")
    if path.is_dir():
        wl = load_trace(path / f"{trace}.csv", "elasticflow", clean=clean, fill=fill)
    else:
        wl = load_trace(path, "elasticflow", members=(f"{trace}.csv",), clean=clean, fill=fill)
    return tuple(sorted(wl.jobs, key=lambda j: (j.submit_s, j.job_id)))


def ef_cluster(jobs: Sequence[JobSpec]) -> str:
    """The ElasticFlow preset on which ``jobs`` offer a load closest to :data:`EF_TARGET_LOAD`.

    The load is the window's mean GPU demand, each job holding its requested GPUs for its recorded run
    time from its submission, over the period from the first submission to the last such end, divided by
    the cluster's GPUs, among the presets large enough for the window's widest job. A window of real
    arrivals thus meets a cluster it keeps busy; a cluster sized for the whole trace would start the
    window empty and see no contention.
    """
    demand_gpu_s = sum(j.num_gpus * float(j.duration_s or 0.0) for j in jobs)
    busy_s = max(j.submit_s + float(j.duration_s or 0.0) for j in jobs) - min(j.submit_s for j in jobs)
    mean_demand_gpus = demand_gpu_s / busy_s if busy_s > 0 else float(max(j.num_gpus for j in jobs))
    widest_gpus = max(j.num_gpus for j in jobs)
    fits = [n for n in EF_PRESET_SERVERS if 8 * n >= widest_gpus] or [EF_PRESET_SERVERS[-1]]
    best = min(fits, key=lambda n: (abs(mean_demand_gpus / (8 * n) - EF_TARGET_LOAD), n))
    return f"elasticflow-n{best}g8"


def heterogeneous_version(preset: str) -> ClusterSpec:
    """The preset's heterogeneous version, registered as ``{preset}-het``: its GPUs in servers of 4, half
    A100, the other half V100 and T4 servers alternately."""
    return get_cluster(f"{preset}-het")


def ef_window(source: str, trace: str, seed: int, num_jobs: int) -> list[JobSpec]:
    """``num_jobs`` consecutive jobs from a seeded start, rebased to 0, deadlines by ElasticFlow's rule."""
    from hetgym.workloads.deadlines import ElasticFlowDeadline

    jobs = load_ef_trace(source, trace)
    rng = np.random.default_rng([seed, ALL_TRACES.index(trace) if trace in ALL_TRACES else 99])
    start = int(rng.integers(0, max(1, len(jobs) - num_jobs + 1)))
    window = jobs[start : start + num_jobs]
    t0 = window[0].submit_s
    submit = np.array([j.submit_s - t0 for j in window])
    duration = np.array([float(j.duration_s or 0.0) for j in window])
    deadlines = ElasticFlowDeadline()(rng, submit, duration)
    return [
        replace(j, job_id=i, submit_s=float(s), deadline_s=float(d))
        for i, (j, s, d) in enumerate(zip(window, submit, deadlines, strict=True))
    ]


def dancer_task(source: str, trace: str, kind: str, seed: int, num_jobs: int, policies: tuple[str, ...]) -> list[dict]:
    jobs = ef_window(source, trace, seed, num_jobs)
    preset = ef_cluster(jobs)
    cluster = preset if kind == "homogeneous" else f"{preset}-het"
    rows = []
    for policy in policies:
        result = Simulator(cluster, jobs, config=SimConfig(seed=seed)).run(make_policy(policy))
        rows.append(
            {
                "trace": trace,
                "cluster_kind": kind,
                "cluster": cluster,
                "seed": seed,
                "policy": policy,
                "num_jobs": len(jobs),
                "dsr": float(result.metrics["dsr"]),
            }
        )
    return rows


# ============================================================================================
# Hadar and HadarE on Gavel's models


def inventory_cluster(name: str, inventory: Sequence[tuple[str, int, int]]) -> ClusterSpec:
    return ClusterSpec.from_inventory(name, {t: (n, g) for t, n, g in inventory})


HADAR_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "hadar": ("hadar", {}),
    "hadar (avg-JCT objective)": ("hadar", {"utility": "avg_jct"}),
}


def static_gavel_jobs(cluster: ClusterSpec, seed: int, num_jobs: int, max_gpus: int | None = None) -> list[JobSpec]:
    from baselines.hadare import with_model_bytes
    from hetgym.workloads import WorkloadConfig

    cfg = WorkloadConfig(recipe="gavel-philly", num_jobs=num_jobs, static=True, max_gpus_per_job=max_gpus)
    return with_model_bytes(cfg.build(cluster, seed=seed))


def hadar_task(settings: Settings, seed: int, penalty_s: float, label: str) -> list[dict]:
    cluster = inventory_cluster("gavel-mix", settings.hadar_inventory)
    jobs = static_gavel_jobs(cluster, seed, settings.hadar_jobs)
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
    jobs = static_gavel_jobs(cluster, seed, settings.hadare_jobs, max_gpus=per_server)
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


# ============================================================================================
# A-SRPT on recurring mixed-parallel jobs


def asrpt_cluster() -> ClusterSpec:
    """16 servers of 8 A100 (300 GB/s NVLink) with 25 Gb/s (3.125 GB/s) NICs."""
    return ClusterSpec.from_inventory("a100-128-25g", {"a100": (16, 8)}, nic_bw_gb_per_s=3.125)


ASRPT_VARIANTS: dict[str, tuple[str, dict[str, Any], bool]] = {
    # label: (policy, knobs, noisy features)
    "A-SRPT (RF)": ("asrpt", {"predictor": "rf"}, False),
    "A-SRPT (RF), default placer": ("asrpt", {"predictor": "rf", "placement": "default"}, False),
    "A-SRPT (RF), random placement": ("asrpt", {"predictor": "rf", "placement": "random"}, False),
    "A-SRPT (RF), noisy features": ("asrpt", {"predictor": "rf"}, True),
    "A-SRPT (oracle)": ("asrpt", {"predictor": "oracle"}, False),
    "SRTF (oracle)": ("srtf", {}, False),
    "FIFO": ("fifo", {}, False),
    "Tiresias": ("tiresias", {}, False),
}
#: Feature noise of the noisy variant: share of jobs whose template id is lost (renamed resubmissions),
#: log-normal sigma of the learning rate and of the data-set size recorded with the job.
NOISE_RENAMED = 0.3
NOISE_LR_SIGMA = 0.2
NOISE_SAMPLES_SIGMA = 0.1


def asrpt_trace(settings: Settings, seed: int) -> tuple[list[JobSpec], list[JobSpec]]:
    from hetgym.workloads import Load, recurring

    n_hist, n_jobs = settings.asrpt_history, settings.asrpt_jobs
    trace = list(
        recurring(
            n_hist + n_jobs, seed=seed, load=Load(target_utilisation=settings.asrpt_load), cluster=asrpt_cluster()
        )
    )
    history, future = trace[:n_hist], trace[n_hist:]
    t0 = future[0].submit_s
    return history, [replace(j, submit_s=j.submit_s - t0) for j in future]


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
    import heapq

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


def asrpt_task(settings: Settings, seed: int, label: str) -> list[dict]:
    history, future = asrpt_trace(settings, seed)
    cluster = asrpt_cluster()
    if label == "oracle-SRPT bound":
        bound = srpt_lower_bound_s(future, cluster.total_gpus)
        spanning = np.mean([j.num_gpus > 8 for j in future])
        tp = np.mean([(j.parallelism or (1, 1, 1))[2] > 1 for j in future])
        return [
            {"seed": seed, "policy": label, "jct_mean_h": bound / 3600, "share_over_8_gpus": spanning, "share_tp": tp}
        ]
    name, knobs, noisy = ASRPT_VARIANTS[label]
    if noisy:
        rng = np.random.default_rng([seed, 7])
        history, future = with_feature_noise(history, rng), with_feature_noise(future, rng)
    if knobs.get("predictor") == "rf":
        knobs = {**knobs, "history": history}
    policy = make_policy(name, **knobs)
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


# ============================================================================================
# JPS on measured throughputs


#: NIC bandwidth (bytes/s) per GPU type in the JPS instances (100, 25 and 10 Gb/s; a reconstruction).
JPS_BW = {"v100": 12.5e9, "p100": 3.125e9, "k80": 1.25e9}


def measured_instance(rng: np.random.Generator, num_jobs: int, num_workers: int) -> Any:
    """A JPS instance whose per-worker throughputs are the embedded table's V100/P100/K80 measurements.

    Jobs: a Gavel model and batch size drawn uniformly among those measured on all three types;
    ``rho`` = iterations/s on one GPU x batch (samples/s); iterations log-uniform in [1e3, 1e5];
    model bytes from ``baselines.hadare.GAVEL_MODEL_BYTES``. Workers: at least one of each type, the rest
    split uniformly at random.
    """
    from baselines.hadare import GAVEL_MODEL_BYTES
    from baselines.jps import PlacementInstance
    from hetgym.sim.throughput import ThroughputModel

    tp = ThroughputModel.default()
    types = tuple(JPS_BW)
    choices = [
        (jt, b)
        for jt in sorted(GAVEL_MODEL_BYTES)
        for b in tp.batch_sizes(jt, "v100")
        if all(b in tp.batch_sizes(jt, t) for t in types)
    ]
    picks = [choices[int(i)] for i in rng.integers(0, len(choices), size=num_jobs)]
    rho = np.array([[tp.rate(jt, b, t, 1) * b for t in types] for jt, b in picks])
    counts = rng.multinomial(num_workers - len(types), np.ones(len(types)) / len(types)) + 1
    return PlacementInstance(
        rho,
        counts,
        np.array([JPS_BW[t] for t in types]),
        np.array([float(b) for _, b in picks]),
        np.exp(rng.uniform(math.log(1e3), math.log(1e5), size=num_jobs)),
        np.array([GAVEL_MODEL_BYTES[jt] for jt, _ in picks]),
    )


def jps_task(settings: Settings, seed: int) -> list[dict]:
    from baselines.jps import (
        equal_category,
        jain_index,
        jps,
        num_categories,
        optimum,
        sample_categories,
        solve_category,
        times_of,
    )

    rows = []
    rng = np.random.default_rng([seed, 2024])
    for (num_jobs, num_workers), rep in [(s, r) for s in settings.jps_sizes for r in range(settings.jps_instances)]:
        inst = measured_instance(rng, num_jobs, num_workers)
        opt = optimum(inst)
        # Fairness as JPS scores it: Jain's index of each job's JCT over its JCT under the equal category.
        equal_s = times_of(inst, solve_category(inst, equal_category(inst.num_workers, inst.num_jobs)))
        sampler_seed = int(rng.integers(0, 2**31 - 1))
        sampled = set(sample_categories(inst, settings.jps_samples, np.random.default_rng(sampler_seed)))
        total = num_categories(inst.num_workers, inst.num_jobs)
        base = {"seed": seed, "num_jobs": num_jobs, "num_workers": num_workers, "instance": rep, "categories": total}
        for beta in settings.jps_betas:
            res = jps(inst, beta=beta, n_samples=settings.jps_samples, rng=np.random.default_rng(sampler_seed))
            rows.append(
                {
                    **base,
                    "method": f"JPS beta={beta:g}",
                    "beta": beta,
                    "n_samples": settings.jps_samples,
                    "gap": res.avg_jct_s / opt.avg_jct_s - 1.0,
                    "jain": jain_index(res.times_s / equal_s),
                    "optimal_category_sampled": opt.sizes in sampled,
                    "found_optimal_category": res.sizes == opt.sizes,
                }
            )
        more = jps(inst, n_samples=settings.jps_more_samples, rng=np.random.default_rng(sampler_seed))
        rows.append(
            {
                **base,
                "method": f"JPS beta=1, {settings.jps_more_samples} samples",
                "beta": 1.0,
                "n_samples": settings.jps_more_samples,
                "gap": more.avg_jct_s / opt.avg_jct_s - 1.0,
                "jain": jain_index(more.times_s / equal_s),
                "optimal_category_sampled": math.nan,
                "found_optimal_category": more.sizes == opt.sizes,
            }
        )
        rows.append(
            {
                **base,
                "method": "optimum",
                "beta": math.nan,
                "n_samples": 0,
                "gap": 0.0,
                "jain": jain_index(opt.times_s / equal_s),
            }
        )
    return rows


# ============================================================================================
# Tasks and the pool


@dataclass(frozen=True)
class Task:
    """One unit of work for a worker process: a study and its arguments."""

    study: str
    args: tuple[Any, ...]
    cost: float = 1.0


def run_task(task: Task) -> tuple[str, list[dict]]:
    """Run one task in a worker process: ``(study, rows)``."""
    tasks: dict[str, Callable[..., list[dict]]] = {
        "dancer": dancer_task,
        "hadar": hadar_task,
        "hadare": hadare_task,
        "asrpt": asrpt_task,
        "jps": jps_task,
    }
    return task.study, tasks[task.study](*task.args)


def available(names: Iterable[str]) -> tuple[list[str], list[str]]:
    """(registered, not registered) among ``names``, in order."""
    known = set(list_policies())
    names = list(names)
    return [n for n in names if n in known], [n for n in names if n not in known]


def build_tasks(settings: Settings, studies: Sequence[str], source: str) -> list[Task]:
    tasks: list[Task] = []
    if "dancer" in studies:
        policies, _ = available(("dancer", *DANCER_BASELINES))
        for trace in settings.traces:
            for kind in ("homogeneous", "heterogeneous"):
                for seed in settings.seeds:
                    tasks.append(
                        Task("dancer", (source, trace, kind, seed, settings.window_jobs, tuple(policies)), 3.0)
                    )
    if "hadar" in studies:
        policies, _ = available(HADAR_BASELINES)
        for label in [*HADAR_VARIANTS, *policies]:
            for penalty in (30.0, 0.0):
                for seed in settings.seeds:
                    tasks.append(Task("hadar", (settings, seed, penalty, label), 2.0))
    if "hadare" in studies:
        policies, _ = available(("hadare", *HADARE_BASELINES))
        tasks += [Task("hadare", (settings, seed, p), 0.5) for p in policies for seed in settings.seeds]
    if "asrpt" in studies:
        labels = [*ASRPT_VARIANTS, "oracle-SRPT bound"]
        tasks += [Task("asrpt", (settings, seed, label), 2.0) for label in labels for seed in settings.seeds]
    if "jps" in studies:
        tasks += [Task("jps", (settings, seed), 4.0) for seed in settings.seeds]
    return tasks


def run_tasks(tasks: Sequence[Task], workers: int, progress: bool = True) -> dict[str, pd.DataFrame]:
    rows: dict[str, list[dict]] = {}
    # Costliest first, so that the two workers finish together.
    order = sorted(tasks, key=lambda t: -t.cost)
    with ProgressReport(enabled=progress, live=False) as report:
        report.task("reproduce_papers", len(order), unit="tasks")
        if workers > 1:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                results: Iterable[tuple[str, list[dict]]] = pool.map(run_task, order)
                for study, out in results:
                    rows.setdefault(study, []).extend(out)
                    report.update(advance=1, detail=study)
        else:
            for task in order:
                study, out = run_task(task)
                rows.setdefault(study, []).extend(out)
                report.update(advance=1, detail=study)
    return {k: pd.DataFrame(v) for k, v in rows.items()}


# ============================================================================================
# Claims: one row per figure in the page


def _claim(
    study: str, claim: str, paper: str, metric: str, iv: Interval, note: str, *, unit: str = "", scope: str = ""
) -> dict[str, Any]:
    return {
        "study": study,
        "claim": claim,
        "scope": scope,
        "paper": paper,
        "metric": metric,
        "estimate": iv.mean,
        "ci_low": iv.low,
        "ci_high": iv.high,
        "n_seeds": iv.n,
        "unit": unit,
        "note": note,
    }


def _pivot(runs: pd.DataFrame, value: str, index: Sequence[str] = ("seed",)) -> pd.DataFrame:
    return runs.pivot_table(index=list(index), columns="policy", values=value, aggfunc="mean")


def dancer_claims(runs: pd.DataFrame) -> tuple[list[dict], pd.DataFrame]:
    """Per cluster kind: Dancer against the best baseline (paired over seeds, DSR averaged over traces)."""
    claims: list[dict] = []
    per_trace_rows = []
    _, missing = available(DANCER_BASELINES)
    for kind in ("homogeneous", "heterogeneous"):
        part = runs[runs["cluster_kind"] == kind]
        if part.empty or "dancer" not in set(part["policy"]):
            continue
        per_seed = _pivot(part, "dsr")  # mean over traces of each seed's DSR
        baselines = [p for p in per_seed.columns if p != "dancer"]
        if not baselines:
            continue
        best = max(baselines, key=lambda p: per_seed[p].mean())
        diff = paired_interval(per_seed["dancer"], per_seed[best])
        rel = t_interval(per_seed["dancer"] / per_seed[best] - 1.0)
        claims.append(
            _claim(
                "dancer",
                f"Dancer vs the best baseline ({best}), {kind} clusters",
                "DSR +58.9% to +74.2% over state-of-the-art schedulers (real-world DL traces)",
                "DSR difference (Dancer - best), mean over the traces",
                diff,
                _verdict_diff(diff, "Dancer's DSR", f"{best}'s"),
                scope=kind,
            )
        )
        claims.append(
            _claim(
                "dancer",
                f"Dancer's relative DSR improvement over {best}, {kind} clusters",
                "+58.9% to +74.2%",
                "relative DSR improvement",
                rel,
                _verdict_rel(rel, 0.589),
                unit="%",
                scope=kind,
            )
        )
        by_trace = part.pivot_table(index=["trace", "seed"], columns="policy", values="dsr")
        for trace, grp in by_trace.groupby(level="trace"):
            bases = {p: grp[p].mean() for p in baselines if p in grp}
            top = max(bases, key=lambda p: bases[p])
            rel_t = t_interval(grp["dancer"] - grp[top])
            per_trace_rows.append(
                {
                    "cluster_kind": kind,
                    "trace": trace,
                    "cluster": part.loc[part["trace"] == trace, "cluster"].iloc[0],
                    **{f"dsr_{p}": grp[p].mean() for p in grp.columns},
                    "best_baseline": top,
                    "dancer_minus_best": rel_t.mean,
                    "dancer_minus_best_ci": rel_t.half_width,
                    "relative_improvement": grp["dancer"].mean() / bases[top] - 1.0 if bases[top] > 0 else math.nan,
                }
            )
    per_trace = pd.DataFrame(per_trace_rows)
    if not per_trace.empty:
        finite = per_trace[np.isfinite(per_trace["relative_improvement"])]
        if not finite.empty:
            top = finite.loc[finite["relative_improvement"].idxmax()]
            grp = runs[(runs["trace"] == top["trace"]) & (runs["cluster_kind"] == top["cluster_kind"])]
            pv = _pivot(grp, "dsr")
            diff = paired_interval(pv["dancer"], pv[top["best_baseline"]])
            gain = float(top["relative_improvement"])
            claims.append(
                _claim(
                    "dancer",
                    f"'Up to' DSR improvement: the largest per-trace gain ({top['trace']}, {top['cluster_kind']}, "
                    f"over {top['best_baseline']})",
                    "up to +74.2%",
                    "mean DSR of Dancer / mean DSR of the trace's best baseline - 1",
                    Interval(gain, math.nan, int(diff.n)),
                    f"the paper's form: up to {100 * gain:.1f}% (max over {len(finite)} trace x cluster points, "
                    f"each against its own best baseline); paired DSR difference there {diff.mean:+.3f} "
                    f"[{diff.low:+.3f}, {diff.high:+.3f}]",
                    unit="%",
                    scope=str(top["cluster_kind"]),
                )
            )
    if missing:
        claims.append(
            {
                "study": "dancer",
                "claim": "baselines not available in this installation",
                "scope": "",
                "paper": "",
                "metric": ", ".join(missing),
                "estimate": math.nan,
                "ci_low": math.nan,
                "ci_high": math.nan,
                "n_seeds": 0,
                "unit": "",
                "note": "not registered here: not run",
            }
        )
    return claims, per_trace


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
                pv = _pivot(part, metric)
                if hadar not in pv or base not in pv:
                    continue
                ratio = t_interval(pv[base] / pv[hadar])
                family = "gavel" if base.startswith("gavel") else "hadar" if base in HADAR_VARIANTS else base
                claims.append(
                    _claim(
                        "hadar",
                        f"{hadar} vs {base}: {label}, restart penalty {penalty:g} s",
                        HADAR_PAPER.get((family, metric), "(not reported)"),
                        f"{label} ratio {base} / {hadar} (> 1: {hadar} better)",
                        ratio,
                        _verdict_ratio(ratio, hadar),
                        unit="x",
                        scope=f"penalty {penalty:g} s",
                    )
                )
    return claims


def hadare_claims(runs: pd.DataFrame) -> list[dict]:
    claims: list[dict] = []
    pv_u, pv_m = _pivot(runs, "utilisation"), _pivot(runs, "makespan_h")
    if "hadare" not in pv_u:
        return claims
    for base in [p for p in pv_u.columns if p != "hadare"]:
        util = t_interval(pv_u["hadare"] / pv_u[base])
        claims.append(
            _claim(
                "hadare",
                f"HadarE vs {base}: cluster utilisation",
                "1.45x utilisation over Hadar (AWS and lab clusters)",
                f"utilisation ratio hadare / {base}",
                util,
                _verdict_ratio(util, "HadarE"),
                unit="x",
            )
        )
        red = t_interval(1.0 - pv_m["hadare"] / pv_m[base])
        claims.append(
            _claim(
                "hadare",
                f"HadarE vs {base}: total time duration reduction",
                "50% (AWS) / 80% (lab) shorter total time duration than Hadar",
                f"1 - makespan hadare / {base}",
                red,
                _verdict_diff(red, "HadarE's reduction", "zero"),
                unit="%",
            )
        )
    return claims


def asrpt_claims(runs: pd.DataFrame) -> list[dict]:
    claims: list[dict] = []
    pv = _pivot(runs, "jct_mean_h")
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
            _claim(
                "asrpt",
                f"A-SRPT (RF) vs {base}: mean JCT reduction",
                "lower JCT than the baselines (third-party summary: 23-41% better 'scheduling efficiency')",
                f"1 - JCT A-SRPT (RF) / {base}",
                red,
                _verdict_diff(red, "A-SRPT's reduction", "zero"),
                unit="%",
            )
        )
    if "A-SRPT (RF), noisy features" in pv:
        red = t_interval(pv["A-SRPT (RF), noisy features"] / pv[ref] - 1.0)
        claims.append(
            _claim(
                "asrpt",
                "feature noise: JCT of A-SRPT (RF) with noisy features over clean",
                "(not reported)",
                "JCT noisy / clean - 1",
                red,
                _verdict_diff(red, "the noise cost", "zero"),
                unit="%",
            )
        )
    if "oracle-SRPT bound" in pv:
        gap = t_interval(pv[ref] / pv["oracle-SRPT bound"])
        claims.append(
            _claim(
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
                    _claim(
                        "asrpt",
                        f"{label}: median |log(predicted / true iterations)| at arrival",
                        "(not reported)",
                        "median abs log error",
                        iv,
                        f"a factor {math.exp(iv.mean):.2f} off in the median",
                    )
                )
    return claims


def jps_claims(runs: pd.DataFrame) -> tuple[list[dict], pd.DataFrame]:
    claims: list[dict] = []
    methods = runs[runs["method"] != "optimum"]
    per_seed = (
        methods.groupby(["method", "seed"], sort=False)
        .agg(
            mean_gap=("gap", "mean"),
            within=("gap", lambda g: float(np.mean(g <= JPS_THRESHOLD))),
            jain=("jain", "mean"),
        )
        .reset_index()
    )
    summary_rows = []
    for method, grp in per_seed.groupby("method", sort=False):
        gap, within, jain = t_interval(grp["mean_gap"]), t_interval(grp["within"]), t_interval(grp["jain"])
        every = methods.loc[methods["method"] == method, "gap"]
        summary_rows.append(
            {
                "method": method,
                "mean_gap": gap.mean,
                "mean_gap_ci": gap.half_width,
                "share_within_2.04pct": within.mean,
                "share_within_ci": within.half_width,
                "max_gap": float(every.max()),
                "jain": jain.mean,
                "jain_ci": jain.half_width,
                "instances": int(every.size),
            }
        )
        if method == "JPS beta=1" or str(method).endswith("samples"):
            claims.append(
                _claim(
                    "jps",
                    f"{method}: mean gap to the optimum",
                    "within 2.04% of the optimal JCT",
                    "avg JCT / optimum - 1 (mean over instances)",
                    gap,
                    _verdict_below(gap, JPS_THRESHOLD),
                    unit="%",
                )
            )
            claims.append(
                _claim(
                    "jps",
                    f"{method}: share of instances within 2.04%",
                    "within 2.04% of the optimal JCT",
                    "share of instances with gap <= 2.04%",
                    within,
                    f"{100 * (1 - within.mean):.0f}% of instances are beyond 2.04% "
                    f"(worst {100 * float(every.max()):.1f}%)",
                    unit="%",
                )
            )
    summary = pd.DataFrame(summary_rows)
    default = runs[runs["method"] == "JPS beta=1"]
    more = runs[runs["method"].astype(str).str.endswith("samples")]
    if not default.empty and not more.empty:
        keys = ["seed", "num_jobs", "num_workers", "instance"]
        both = default.merge(more[[*keys, "gap"]], on=keys, suffixes=("", "_more"))
        tail = both[both["gap"] > JPS_THRESHOLD]
        body = both[both["gap"] <= JPS_THRESHOLD]
        fixed = float(np.mean(tail["gap_more"] <= JPS_THRESHOLD)) if len(tail) else math.nan
        n_more = int(more["n_samples"].iloc[0])
        left = both[both["gap_more"] > JPS_THRESHOLD]
        # Where the larger sample covers every category, what is left of the gap is not sampling.
        all_seen = float(np.mean(left["categories"] <= n_more)) if len(left) else math.nan
        claims.append(
            {
                "study": "jps",
                "claim": "the tail: instances beyond 2.04% with 40 samples that come within 2.04% with 10x samples",
                "scope": "",
                "paper": "(not reported)",
                "metric": "share of the tail instances",
                "estimate": fixed,
                "ci_low": math.nan,
                "ci_high": math.nan,
                "n_seeds": int(default["seed"].nunique()),
                "unit": "%",
                "note": f"{len(tail)} of {len(both)} instances in the tail; their mean gap "
                f"{_pct(tail['gap'].mean())} with 40 samples, {_pct(tail['gap_more'].mean())} with 10x; the "
                f"optimal category was unsampled in {_pct(_share_unsampled(tail))} of them and in "
                f"{_pct(_share_unsampled(body))} of the others (the local search recovers most of those); "
                f"{len(left)} instances stay beyond 2.04% with {n_more} samples, {_pct(all_seen)} of them with every "
                "category evaluated (there the gap is the matching's valuation, not sampling)",
            }
        )
    return claims, summary


def _share_unsampled(rows: pd.DataFrame) -> float:
    """Share of ``rows`` whose optimal category was not among the sampled ones (NaN if none)."""
    if rows.empty:
        return math.nan
    return float(np.mean(~rows["optimal_category_sampled"].astype(bool)))


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%" if math.isfinite(v) else "-"


def _fmt(v: float, unit: str = "") -> str:
    if not math.isfinite(v):
        return "-"
    if unit == "%":
        return f"{100 * v:.1f}%"
    if unit == "x":
        return f"{v:.2f}x"
    return f"{v:.3f}"


def _verdict_diff(iv: Interval, what: str, other: str) -> str:
    if iv.n < 2 or not math.isfinite(iv.half_width):
        return "too few seeds for an interval"
    if iv.low > 0:
        return f"{what} is above {other}: the interval excludes zero"
    if iv.high < 0:
        return f"{what} is below {other}: the interval excludes zero"
    return f"{what} and {other} are not told apart: the interval contains zero"


def _verdict_rel(iv: Interval, paper: float) -> str:
    if iv.n < 2 or not math.isfinite(iv.half_width):
        return "too few seeds for an interval"
    if iv.low > paper:
        return f"above the paper's lower figure ({100 * paper:.1f}%)"
    if iv.high < paper:
        return f"below the paper's lower figure ({100 * paper:.1f}%): not reproduced in this setting"
    return f"the interval contains the paper's lower figure ({100 * paper:.1f}%)"


def _verdict_ratio(iv: Interval, who: str) -> str:
    if iv.n < 2 or not math.isfinite(iv.half_width):
        return "too few seeds for an interval"
    if iv.low > 1:
        return f"{who} is better: the interval lies above 1"
    if iv.high < 1:
        return f"{who} is worse: the interval lies below 1"
    return "no difference told apart: the interval contains 1"


def _verdict_below(iv: Interval, threshold: float) -> str:
    if iv.n < 2 or not math.isfinite(iv.half_width):
        return "too few seeds for an interval"
    if iv.high <= threshold:
        return f"on average within {100 * threshold:.2f}% (the whole interval)"
    if iv.low > threshold:
        return f"on average beyond {100 * threshold:.2f}%"
    return f"the interval straddles {100 * threshold:.2f}%"


# ============================================================================================
# Figures


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: Path) -> None:
    """Save ``fig`` as a PNG under a temporary name, then rename it."""
    if fig._suptitle is None:
        fig.suptitle(
            "bars: mean and 95% t interval over seeds (per policy; the page's comparisons are paired)", fontsize=9
        )
    try:
        atomic_write(
            path,
            lambda tmp: fig.savefig(tmp, dpi=110, bbox_inches="tight", metadata={"Software": None}),
            keep_suffix=True,
        )
    finally:
        _plt().close(fig)


def _bars(ax: Any, labels: Sequence[str], ivs: Sequence[Interval], highlight: str | None = None) -> None:
    x = np.arange(len(labels))
    means = [iv.mean for iv in ivs]
    errs = [0.0 if not math.isfinite(iv.half_width) else iv.half_width for iv in ivs]
    colors = ["tab:red" if lab == highlight else "tab:blue" for lab in labels]
    ax.bar(x, means, yerr=errs, capsize=3, color=colors)
    ax.set_xticks(x, labels, rotation=45, ha="right", fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def plot_dancer(runs: pd.DataFrame, path: Path) -> None:
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharey=True)
    for ax, kind in zip(axes, ("homogeneous", "heterogeneous"), strict=True):
        pv = _pivot(runs[runs["cluster_kind"] == kind], "dsr")
        labels = list(pv.columns)
        _bars(ax, labels, [t_interval(pv[p]) for p in labels], "dancer")
        ax.set_title(f"{kind} clusters: DSR, mean over traces (95% CI over seeds)", fontsize=10)
    axes[0].set_ylabel("deadline satisfactory ratio")
    save_figure(fig, path)


def plot_hadar(runs: pd.DataFrame, path: Path) -> None:
    plt = _plt()
    fig, axes = plt.subplots(1, 4, figsize=(16, 4.2))
    panels = [(m, p) for p in (30.0, 0.0) for m in ("makespan_h", "jct_sum_h")]
    for ax, (metric, penalty) in zip(axes, panels, strict=True):
        pv = _pivot(runs[runs["restart_penalty_s"] == penalty], metric)
        labels = list(pv.columns)
        _bars(ax, labels, [t_interval(pv[p]) for p in labels], "hadar")
        ax.set_title(
            f"{'makespan' if metric == 'makespan_h' else 'summed JCT'} (h), penalty {penalty:g} s", fontsize=10
        )
    save_figure(fig, path)


def plot_simple(runs: pd.DataFrame, metrics: Sequence[tuple[str, str]], highlight: str, path: Path) -> None:
    plt = _plt()
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.5 * len(metrics), 4.2), squeeze=False)
    for ax, (metric, title) in zip(axes[0], metrics, strict=True):
        pv = _pivot(runs.dropna(subset=[metric]), metric)
        labels = list(pv.columns)
        _bars(ax, labels, [t_interval(pv[p]) for p in labels], highlight)
        ax.set_title(title, fontsize=10)
    save_figure(fig, path)


def plot_jps(runs: pd.DataFrame, summary: pd.DataFrame, path: Path) -> None:
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    sweep = summary[summary["method"].str.match(r"^JPS beta=[0-9.]+$")]
    ax = axes[0]
    ax.errorbar(
        100 * sweep["mean_gap"], sweep["jain"], xerr=100 * sweep["mean_gap_ci"], yerr=sweep["jain_ci"], fmt="o-"
    )
    for _, row in sweep.iterrows():
        ax.annotate(row["method"].replace("JPS ", ""), (100 * row["mean_gap"], row["jain"]), fontsize=8)
    ax.set_xlabel("mean gap to the optimal average JCT (%)")
    ax.set_ylabel("Jain index of JCT / JCT under the equal category")
    ax.set_title("fairness knob beta (95% CI over seeds)", fontsize=10)
    ax = axes[1]
    for method in [m for m in runs["method"].unique() if m != "optimum" and ("beta=1" in m)]:
        gaps = np.sort(100 * runs.loc[runs["method"] == method, "gap"].to_numpy())
        ax.step(gaps, np.arange(1, gaps.size + 1) / gaps.size, where="post", label=method)
    ax.axvline(100 * JPS_THRESHOLD, color="red", linestyle="--", label="2.04%")
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(left=0.0)
    ax.set_xlabel("gap to the optimum (%)")
    ax.set_ylabel("share of instances")
    ax.legend(fontsize=8)
    fig.suptitle("JPS on instances from measured throughputs: the fairness knob and the gap's distribution", fontsize=9)
    save_figure(fig, path)


# ============================================================================================
# Page


PAPER_SETTINGS: dict[str, tuple[str, str]] = {
    "dancer": (
        "Dancer (Zhang et al., IEEE TCC 2025)",
        "Paper (abstract): trace-driven simulation on real-world DL workloads in heterogeneous clusters; DSR "
        "+58.9% to +74.2% over state-of-the-art approaches. Baselines, GPU types and cluster sizes not "
        "retrieved; likely ElasticFlow's traces and deadline rule (POLICIES.md section 2.10).",
    ),
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
    "asrpt": (
        "A-SRPT (Luo et al., INFOCOM 2025)",
        "Paper: mixed-parallelism (DP/PP/TP) jobs, most recurring; graph-based placement minimising "
        "inter-server traffic; random-forest iteration predictor; testbed and simulation. Figures not in "
        "the abstract (a third-party summary mentions 23-41%).",
    ),
    "jps": (
        "JPS (Liu et al., IEEE TPDS 2024)",
        "Paper: real DNN benchmarks on heterogeneous clusters; within 2.04% of the optimal JCT, "
        "orders-of-magnitude faster than exhaustive search, sampling improves fairness.",
    ),
}


def _table(
    frame: pd.DataFrame, columns: Sequence[str], formats: Mapping[str, Callable[[Any], str]] | None = None
) -> list[str]:
    formats = formats or {}
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for _, row in frame.iterrows():
        cells = []
        for c in columns:
            v = row.get(c, "")
            f = formats.get(c)
            if f is not None:
                cells.append(f(v))
            elif isinstance(v, float):
                cells.append("-" if not math.isfinite(v) else f"{v:.3f}")
            else:
                cells.append(str(v))
        out.append("| " + " | ".join(cells) + " |")
    return out


def _claims_table(claims: pd.DataFrame) -> list[str]:
    rows = []
    for _, c in claims.iterrows():
        unit = c["unit"]
        est = _fmt(c["estimate"], unit)
        ci = f"[{_fmt(c['ci_low'], unit)}, {_fmt(c['ci_high'], unit)}]" if math.isfinite(c["ci_low"]) else "-"
        rows.append(
            {
                "claim": c["claim"],
                "paper": c["paper"],
                "measured": est,
                "95% CI": ci,
                "seeds": c["n_seeds"],
                "difference": c["note"],
            }
        )
    return _table(pd.DataFrame(rows), ["claim", "paper", "measured", "95% CI", "seeds", "difference"])


def write_page(
    page: Path,
    out: Path,
    settings: Settings,
    claims: pd.DataFrame,
    tables: Mapping[str, pd.DataFrame],
    meta: Mapping[str, Any],
) -> None:
    rel = os.path.relpath(out, page.parent)
    if settings.label in ("full", "quick"):
        flag = "" if settings.label == "full" else " --quick"
        command = f"Generated by `python scripts/reproduce/reproduce_papers.py{flag}`"
    else:
        command = f"Generated by the test setting `{settings.label}` of `scripts/reproduce/reproduce_papers.py`"
    lines = [
        "# The five papers in their own settings",
        "",
        f"{command} (**{settings.label} run**: {meta['tasks']} tasks on {meta['workers']} worker processes, "
        f"{meta['wall_s']:.0f} s "
        f"on a {meta['cpus']}-CPU machine shared with other work). Every figure below comes from that run; "
        f"the per-run rows are the CSV files in [{rel}/]({rel}/). Intervals are 95% Student-t intervals "
        f"of the mean over {len(settings.seeds)} seeds; comparisons of two policies use the per-seed "
        "paired differences or ratios (both policies ran on the same workload). The policies are "
        "reconstructions from the papers' abstracts (see the policy guides); nothing is tuned to a paper's number.",
        "",
    ]
    for study in STUDIES:
        part = claims[claims["study"] == study] if not claims.empty else claims
        if part.empty and study not in tables:
            continue
        title, paper = PAPER_SETTINGS[study]
        lines += [f"## {title}", "", paper, "", f"Ours: {meta['ours'][study]}", ""]
        if not part.empty:
            lines += [*_claims_table(part), ""]
        extra = tables.get(study)
        if extra is not None and not extra.empty:
            lines += [*_extra_table(study, extra), ""]
        if (out / f"{study}.png").exists():
            lines += [f"![{study}]({rel}/{study}.png)", ""]
    text = "\n".join(lines).rstrip() + "\n"
    atomic_write(page, lambda tmp: tmp.write_text(text))


def _extra_table(study: str, frame: pd.DataFrame) -> list[str]:
    if study == "dancer":
        cols = (
            ["cluster_kind", "trace", "cluster"]
            + [c for c in frame.columns if c.startswith("dsr_")]
            + ["best_baseline", "relative_improvement"]
        )
        fmt = {"relative_improvement": lambda v: _fmt(v, "%")}
        return ["DSR per trace (mean over seeds):", "", *_table(frame, cols, fmt)]
    if study == "jps":
        cols = ["method", "mean_gap", "share_within_2.04pct", "max_gap", "jain", "instances"]
        fmt = {c: (lambda v: _fmt(v, "%")) for c in ("mean_gap", "share_within_2.04pct", "max_gap")}
        return ["Per method (means over seeds):", "", *_table(frame, cols, fmt)]
    return ["Means over seeds:", "", *_table(frame, list(frame.columns))]


def ours_text(settings: Settings, source: str, runs: Mapping[str, pd.DataFrame]) -> dict[str, str]:
    clusters = ""
    if "dancer" in runs and not runs["dancer"].empty:
        d = runs["dancer"]
        homog = d[d["cluster_kind"] == "homogeneous"].drop_duplicates(["trace", "seed"])
        counts = homog["cluster"].value_counts()
        order = sorted(counts.index, key=lambda c: int(c.split("-n")[1].split("g")[0]))
        clusters = ", ".join(f"{c} {counts[c]}x" for c in order)
    _, missing_d = available(DANCER_BASELINES)
    _, missing_h = available(HADAR_BASELINES)
    inv = lambda items: " + ".join(f"{n}x{g} {t.upper()}" for t, n, g in items)  # noqa: E731
    return {
        "dancer": (
            f"the published raw ElasticFlow traces {', '.join(settings.traces)}; seed s draws, in each trace, a window "
            f"of {settings.window_jobs} consecutive jobs (real arrival times, GPU counts and run times on A100, "
            "rebased to 0) and their deadlines by ElasticFlow's rule (submit + U(0.5, 1.5) x run time). Each "
            "window runs on the ElasticFlow cluster (1 to 64 servers of 8 A100) on which its offered load is closest "
            f"to {EF_TARGET_LOAD} (mean GPU demand, each job holding its GPUs for its run time from its submission, "
            f"over the cluster's GPUs; windows per cluster: {clusters}), "
            "and on that cluster's heterogeneous version: the same GPU count in servers of 4, half A100, the other "
            "half V100 and T4 servers alternately (V100 only for the one-server cluster), run times on the slower "
            "types from the embedded throughput table. Baselines: "
            + ", ".join(DANCER_BASELINES)
            + (f" (not available here: {', '.join(missing_d)})" if missing_d else "")
            + ". Default knobs, 30 s restart penalty. DSR counts rejected jobs as misses."
        ),
        "hadar": (
            f"{settings.hadar_jobs} Gavel-Philly jobs submitted at t = 0 on {inv(settings.hadar_inventory)} GPUs "
            "(servers x GPUs), seed s drawing the jobs; 360 s rounds; restart penalty 30 s and 0 s. Hadar with its "
            'default utility (relative slowdown) and with `utility="avg_jct"` (the average-JCT objective); '
            "baselines "
            + ", ".join(HADAR_BASELINES)
            + (f" (not available here: {', '.join(missing_h)})" if missing_h else "")
            + ". Total time duration = makespan; also summed JCT."
        ),
        "hadare": (
            f"{settings.hadare_jobs} Gavel-Philly jobs (at most one node's GPUs each) submitted together on six nodes, "
            f"{inv(settings.hadare_inventory)}; seed s draws the models and lengths; fork efficiency 1.0, 30 s penalty."
        ),
        "asrpt": (
            f"recurring mixed-parallel jobs (`hetgym.workloads.recurring`, DP/PP/TP, 60% recurring) at offered load "
            f'{settings.asrpt_load} on 16 x 8 A100 with 300 GB/s NVLink and 25 Gb/s NICs, `comm="bandwidth"`; '
            f"{settings.asrpt_history} past jobs train the forest, the next {settings.asrpt_jobs} are simulated; "
            "seed s "
            f"draws the trace. Noisy features: {100 * NOISE_RENAMED:.0f}% of jobs lose their template id (renamed "
            f"resubmissions), learning rate x lognormal(0, {NOISE_LR_SIGMA}), data-set size x lognormal(0, "
            f"{NOISE_SAMPLES_SIGMA}), in history and arrivals. Bound: the larger of the mean run time alone and the "
            "mean completion of preemptive SRPT on one machine of 128 GPU-seconds per second."
        ),
        "jps": (
            f"per seed, {settings.jps_instances} instance(s) of each (jobs, GPUs) in "
            f"{', '.join(f'({s}, {k})' for s, k in settings.jps_sizes)}: V100/P100/K80 workers (at least one each), "
            "each job a "
            "Gavel model and batch measured on all three types, per-worker samples/s from the embedded measured table, "
            "NICs 100/25/10 Gb/s, iterations log-uniform in [1e3, 1e5]. The exact optimum by the dynamic programme. "
            f"JPS with {settings.jps_samples} sampled categories for each beta in "
            f"{', '.join(f'{b:g}' for b in settings.jps_betas)}, "
            f"and with {settings.jps_more_samples} to test whether the tail is sampling. Fairness: Jain's index of "
            "each job's JCT over its JCT under the equal category (the quantity JPS's score weighs with 1 - beta)."
        ),
    }


# ============================================================================================
# Main


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False, float_format="%.6g"))


def reproduce(
    settings: Settings, studies: Sequence[str], out: Path, page: Path, source: str, workers: int, progress: bool = True
) -> pd.DataFrame:
    """Run the studies, write the CSVs, figures and the page; return the claims table."""
    out.mkdir(parents=True, exist_ok=True)
    page.parent.mkdir(parents=True, exist_ok=True)
    tasks = build_tasks(settings, studies, source)
    started = time.perf_counter()
    runs = run_tasks(tasks, workers, progress)
    wall_s = time.perf_counter() - started
    claims: list[dict] = []
    tables: dict[str, pd.DataFrame] = {}
    if "dancer" in runs:
        c, per_trace = dancer_claims(runs["dancer"])
        claims += c
        tables["dancer"] = per_trace
        write_csv(per_trace, out / "dancer_per_trace.csv")
        plot_dancer(runs["dancer"], out / "dancer.png")
    if "hadar" in runs:
        claims += hadar_claims(runs["hadar"])
        tables["hadar"] = (
            runs["hadar"]
            .groupby(["restart_penalty_s", "policy"], sort=False)[["makespan_h", "jct_sum_h", "utilisation"]]
            .mean()
            .reset_index()
        )
        plot_hadar(runs["hadar"], out / "hadar.png")
    if "hadare" in runs:
        claims += hadare_claims(runs["hadare"])
        tables["hadare"] = (
            runs["hadare"]
            .groupby("policy", sort=False)[["makespan_h", "jct_mean_h", "utilisation"]]
            .mean()
            .reset_index()
        )
        plot_simple(
            runs["hadare"],
            [("utilisation", "utilisation"), ("makespan_h", "total time duration (h)")],
            "hadare",
            out / "hadare.png",
        )
    if "asrpt" in runs:
        claims += asrpt_claims(runs["asrpt"])
        cols = [
            c
            for c in ("jct_mean_h", "jct_p95_h", "median_abs_log_error", "share_over_8_gpus", "share_tp")
            if c in runs["asrpt"]
        ]
        tables["asrpt"] = runs["asrpt"].groupby("policy", sort=False)[cols].mean().reset_index()
        plot_simple(runs["asrpt"], [("jct_mean_h", "mean JCT (h)")], "A-SRPT (RF)", out / "asrpt.png")
    if "jps" in runs:
        c, summary = jps_claims(runs["jps"])
        claims += c
        tables["jps"] = summary
        plot_jps(runs["jps"], summary, out / "jps.png")
    for study, frame in runs.items():
        write_csv(frame, out / f"{study}_runs.csv")
    claim_frame = pd.DataFrame(claims)
    write_csv(claim_frame, out / "claims.csv")
    meta = {
        "tasks": len(tasks),
        "workers": workers,
        "wall_s": wall_s,
        "cpus": os.cpu_count(),
        "ours": ours_text(settings, source, runs),
    }
    write_page(page, out, settings, claim_frame, tables, meta)
    return claim_frame


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="the same studies and seeds on smaller sizes (under 5 min)"
    )
    parser.add_argument("--only", nargs="+", choices=STUDIES, help="run only these studies")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "papers", help="CSV and PNG folder")
    parser.add_argument("--page", type=Path, default=ROOT / "docs" / "results" / "papers.md", help="the page to write")
    parser.add_argument(
        "--elasticflow-traces",
        type=Path,
        default=DATA_DIR / "elasticflow_traces" / "raw-traces.tar.gz",
        help="the published raw-traces.tar.gz, or a folder of cluster*.csv",
    )
    parser.add_argument("--workers", type=int, default=2, help="worker processes, 1 or 2 (default 2)")
    args = parser.parse_args(argv)
    if args.workers not in (1, 2):
        parser.error(f"--workers={args.workers}; give 1 or 2")
    studies = args.only or list(STUDIES)
    if "dancer" in studies and not args.elasticflow_traces.exists():
        parser.error(
            f"--elasticflow-traces {args.elasticflow_traces} does not exist; give the published raw-traces.tar.gz "
            "(ElasticFlow's artifact) or a folder of cluster*.csv, or leave the Dancer study out with --only"
        )
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    settings = settings_for("quick" if args.quick else "full")
    studies = args.only or list(STUDIES)
    print(f"# {settings.label} run of {', '.join(studies)} on {platform.node()} ({os.cpu_count()} CPUs)", flush=True)
    claims = reproduce(settings, studies, args.out, args.page, str(args.elasticflow_traces), args.workers)
    pd.set_option("display.width", 200)
    if not claims.empty:
        print(claims[["study", "claim", "estimate", "ci_low", "ci_high", "n_seeds"]].to_string(index=False))
    print(f"wrote {args.page} and {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
