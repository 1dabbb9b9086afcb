"""Simulator and environment speed on fixed seeded scenarios, written to ``bench/results.json``.

In one run (CPU seconds per run are the headline figures: the fairer ones on a shared machine;
medians of ``--repeats`` runs; the load average at the start and end is recorded):

1. ``cases``: FIFO and Tiresias-LAS on a 10,000-job Gavel-Philly workload on ``gavel-108`` and on
   ``large``: wall and CPU time, the wall time inside the policy's ``schedule()`` (``policy_wall_s``) and
   outside it (``engine_wall_s``: events, views, checking and applying decisions), decision epochs and
   events per second, simulated seconds per wall second, and peak memory (tracemalloc, in a separate run
   so tracing does not slow the timed ones);
2. ``memory_scaling``: FIFO's peak memory on ``gavel-108`` from 2,500 to 20,000 jobs;
3. ``scaling``: ``hetgym simulate --policy fifo --num-jobs N --utilisation 0.8`` (the ``default``
   scenario) at 10,000 and 100,000 jobs: CPU time, its ratio, and peak memory;
4. ``policies``: every registered policy on the ``default`` scenario at offered utilisation 0.8 with
   1,000 and 10,000 jobs. A run is cut when its policy has used ``--cut-s`` CPU seconds; the cut is
   recorded (epochs, jobs ended, simulated time reached), and a case stops repeating once its runs
   have used ``2 * --cut-s``, so a policy too slow for 10,000 jobs shows its figure, not a hang;
5. ``env``: HetCluster-v1 with a random masked agent, single and vectorised (8 envs, Gymnasium's sync
   vector env and hetgym's batched one), and CartPole-v1 measured in the same run (the measuring code
   is ``scripts/bench/bench_vector.py``'s).

Usage::

    nice python scripts/bench/bench.py               # the full benchmark (22 minutes on 2 shared cores)
    python scripts/bench/bench.py --quick --out /tmp/results.json   # small sizes, one repeat: checks it works
    python scripts/bench/bench.py --cases-only --case-policies tiresias --clusters gavel-108
        # part 1 alone (some of its cases), printed as JSON; written only to an --out given explicitly
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from hetgym.atomic import atomic_write
from hetgym.sim import SimConfig, Simulator, ThroughputModel, list_policies, make_policy
from hetgym.sim.cluster import get_cluster
from hetgym.sim.errors import HetgymError
from hetgym.workloads import Load, gavel_philly
from hetgym.workloads.scenario import get_scenario

# Offered utilisation of each cluster: high enough that queues form, low enough that the run ends.
UTILISATION = 0.8


def workload(num_jobs: int, cluster: str, seed: int = 0) -> list[Any]:
    return list(gavel_philly(num_jobs, seed=seed, cluster=cluster, load=Load(target_utilisation=UTILISATION)))


#: The policies and clusters of part 1 (``cases``).
CASE_POLICIES: tuple[str, ...] = ("fifo", "tiresias")
CASE_CLUSTERS: tuple[str, ...] = ("gavel-108", "large")


def timed_run(policy: str, cluster: str, jobs: list[Any]) -> dict[str, float]:
    gc.collect()
    sim = Simulator(cluster, jobs, config=SimConfig(record_timeline=True))
    start = time.perf_counter()
    cpu_start = time.process_time()
    result = sim.run(make_policy(policy))
    wall_s = time.perf_counter() - start
    cpu_s = time.process_time() - cpu_start
    policy_wall_s = sum(sim.decision_latencies_s)  # the simulator times every schedule() call
    sim_span_s = float(result.jobs["finish_s"].max() - result.jobs["submit_s"].min())
    return {
        "wall_s": wall_s,
        "cpu_s": cpu_s,
        "policy_wall_s": policy_wall_s,
        "engine_wall_s": wall_s - policy_wall_s,
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


class _Cut(Exception):
    """A run stopped at its CPU budget."""


def default_workload(num_jobs: int, seed: int = 0) -> Any:
    """The workload of ``hetgym simulate --num-jobs N --utilisation 0.8`` (the ``default`` scenario)."""
    return (
        get_scenario("default")
        .with_overrides(workload={"num_jobs": num_jobs, "target_utilisation": UTILISATION, "arrival_rate_per_h": None})
        .workload.build("default", seed=seed)
    )


def cut_run(policy_name: str, jobs: Any, cut_s: float) -> dict[str, Any]:
    """One run of ``policy_name`` on the ``default`` cluster, stopped once it has used ``cut_s`` CPU seconds."""
    gc.collect()
    sim = Simulator("default", jobs)
    policy = make_policy(policy_name)
    schedule = policy.schedule
    cpu_start = time.process_time()
    limit = cpu_start + cut_s

    def guarded(view: Any) -> Any:
        if time.process_time() > limit:
            raise _Cut
        return schedule(view)

    policy.schedule = guarded  # type: ignore[method-assign]
    try:
        result = sim.run(policy)
    except _Cut:
        return {
            "cpu_s": time.process_time() - cpu_start,
            "cut": True,
            "epochs": sim._epoch,
            "ended": sim._ended,
            "sim_time_h": sim.now_s / 3600,
        }
    return {
        "cpu_s": time.process_time() - cpu_start,
        "cut": False,
        "epochs": result.num_epochs,
        "ended": int(result.metrics["num_completed"] + result.metrics.get("num_rejected", 0)),
        "sim_time_h": float(result.jobs["finish_s"].max()) / 3600,
    }


def policy_case(policy_name: str, num_jobs: int, repeats: int, cut_s: float) -> dict[str, Any]:
    jobs = default_workload(num_jobs)
    runs: list[dict[str, Any]] = []
    while len(runs) < repeats:
        runs.append(cut_run(policy_name, jobs, cut_s))
        if runs[-1]["cut"] or sum(r["cpu_s"] for r in runs) > 2 * cut_s:
            break
    case = {
        "policy": policy_name,
        "num_jobs": num_jobs,
        "runs": len(runs),
        "cpu_s_all": [round(r["cpu_s"], 3) for r in runs],
        "median_cpu_s": round(statistics.median(r["cpu_s"] for r in runs), 3),
        "cut": runs[-1]["cut"],
        "epochs": runs[-1]["epochs"],
        "jobs_ended": runs[-1]["ended"],
        "sim_time_h": round(runs[-1]["sim_time_h"], 2),
    }
    if case["cut"]:
        case["cut_note"] = f"cut after {cut_s:g} CPU-s with {case['jobs_ended']} of {num_jobs} jobs ended"
    return case


def cpu_run(policy_name: str, jobs: Any) -> float:
    gc.collect()
    sim = Simulator("default", jobs)
    start = time.process_time()
    sim.run(make_policy(policy_name))
    return time.process_time() - start


def peak_memory_default_mb(policy_name: str, jobs: Any) -> float:
    gc.collect()
    tracemalloc.start()
    Simulator("default", jobs).run(make_policy(policy_name))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def env_part(repeats: int, steps_per_env: int) -> dict[str, Any]:
    """The env single and vectorised and CartPole-v1, with ``scripts/bench/bench_vector.py``'s measuring code."""
    from bench_vector import ENV_ID, cartpole_steps_per_cpu_s, run_mode

    cartpole = statistics.median(cartpole_steps_per_cpu_s(50_000, s) for s in range(repeats))
    rows = []
    for mode, n in (("loop", 1), ("sync", 8), ("hetgym", 8)):
        runs = [run_mode(mode, n, steps_per_env, 100 * r) for r in range(repeats)]
        rows.append(
            {
                "mode": mode,
                "num_envs": n,
                "env_steps_per_cpu_s": round(statistics.median(r["env_steps_per_cpu_s"] for r in runs)),
                "overhead_us_per_step": round(statistics.median(r["overhead_us_per_step"] for r in runs), 1),
            }
        )
        print(f"env {mode:6s} N={n}: {rows[-1]['env_steps_per_cpu_s']:,} env steps/CPU-s", flush=True)
    single = rows[0]["env_steps_per_cpu_s"]
    print(f"CartPole-v1: {cartpole:,.0f} steps/CPU-s", flush=True)
    return {
        "env_id": ENV_ID,
        "agent": "random masked agent, steps of the env only (the agent's choice excluded)",
        "steps_per_env": steps_per_env,
        "repeats": repeats,
        "cartpole_v1_steps_per_cpu_s": round(cartpole),
        "single_over_cartpole": round(single / cartpole, 3),
        "results": rows,
        "vector8_over_single": {r["mode"]: round(r["env_steps_per_cpu_s"] / single, 2) for r in rows[1:]},
    }


def cases_part(
    num_jobs: int, repeats: int, policies: Sequence[str], clusters: Sequence[str], log: TextIO = sys.stdout
) -> list[dict[str, Any]]:
    """Part 1: each policy on a ``num_jobs`` Gavel-Philly workload on each cluster, ``repeats`` runs
    (progress lines to ``log``)."""
    cases: list[dict[str, Any]] = []
    for cluster in clusters:
        jobs = workload(num_jobs, cluster)
        for policy in policies:
            runs = [timed_run(policy, cluster, jobs) for _ in range(repeats)]
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            case = {
                "policy": policy,
                "cluster": cluster,
                "num_jobs": num_jobs,
                "repeats": repeats,
                "wall_s_all": [round(r["wall_s"], 4) for r in runs],
                "cpu_s_all": [round(r["cpu_s"], 4) for r in runs],
                **{f"median_{k}": round(v, 4) for k, v in med.items()},
                "peak_memory_mb": round(peak_memory_mb(policy, cluster, jobs), 2),
            }
            cases.append(case)
            print(
                f"{policy:9s} {cluster:9s} {num_jobs} jobs: median {med['wall_s']:.2f} s wall, "
                f"{med['cpu_s']:.2f} CPU-s ({med['policy_wall_s']:.2f} s in the policy), "
                f"{med['events_per_s']:.0f} events/s, "
                f"{med['sim_s_per_wall_s']:.3g} sim-s/wall-s, peak {case['peak_memory_mb']:.1f} MB",
                file=log,
                flush=True,
            )
    return cases


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes and one repeat (checks that it works)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--num-jobs", type=int, default=10_000)
    parser.add_argument("--cut-s", type=float, default=8.0, help="CPU seconds after which a policy's run is cut")
    parser.add_argument("--out", type=Path, default=None, help="where to write (default bench/results.json)")
    parser.add_argument(
        "--cases-only",
        action="store_true",
        help="run part 1 (cases) alone and print it as JSON; nothing is written unless --out is given",
    )
    parser.add_argument(
        "--case-policies",
        type=_names,
        default=None,
        help=f"with --cases-only: comma-separated policies (default {','.join(CASE_POLICIES)})",
    )
    parser.add_argument(
        "--clusters",
        type=_names,
        default=None,
        help=f"with --cases-only: comma-separated clusters (default {','.join(CASE_CLUSTERS)})",
    )
    args = parser.parse_args()
    if args.repeats < 1 or args.num_jobs < 10 or not args.cut_s > 0:
        parser.error("give --repeats >= 1, --num-jobs >= 10 and --cut-s > 0")
    if (args.case_policies is not None or args.clusters is not None) and not args.cases_only:
        parser.error("--case-policies and --clusters filter part 1 only: give --cases-only with them")
    args.case_policies = CASE_POLICIES if args.case_policies is None else args.case_policies
    args.clusters = CASE_CLUSTERS if args.clusters is None else args.clusters
    if args.cases_only:
        bad = [p for p in args.case_policies if p not in list_policies()]
        if bad or not args.case_policies:
            parser.error(f"--case-policies: unknown or none: {bad}; choose from {sorted(list_policies())}")
        try:
            for cluster in args.clusters:
                get_cluster(cluster)
        except HetgymError as err:
            parser.error(f"--clusters: {err}")
        if not args.clusters:
            parser.error("--clusters: give at least one cluster")
    args.out_given = args.out is not None
    args.out = args.out or Path("bench/results.json")
    num_jobs = 2_000 if args.quick else args.num_jobs
    repeats = 1 if args.quick else args.repeats
    cut_s = min(args.cut_s, 2.0) if args.quick else args.cut_s
    load_start = os.getloadavg()
    ThroughputModel.default()  # load the table outside the timed region
    if args.cases_only:
        part: dict[str, Any] = {
            "benchmark": "simulator speed, part 1 only (scripts/bench/bench.py --cases-only)",
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "load_average_at_start": load_start,
            "cases": cases_part(num_jobs, repeats, args.case_policies, args.clusters, log=sys.stderr),
            "load_average_at_end": os.getloadavg(),
        }
        text = json.dumps(part, indent=2) + "\n"
        if args.out_given:
            atomic_write(args.out, lambda tmp: tmp.write_text(text))
            print(f"wrote {args.out}")
        else:
            print(text, end="")
        return 0
    cases = cases_part(num_jobs, repeats, CASE_POLICIES, CASE_CLUSTERS)

    scaling = []
    sizes = [500, 1_000, 2_000] if args.quick else [2_500, 5_000, 10_000, 20_000]
    for n in sizes:
        jobs = workload(n, "gavel-108")
        scaling.append({"num_jobs": n, "peak_memory_mb": round(peak_memory_mb("fifo", "gavel-108", jobs), 2)})
        print(f"memory: fifo gavel-108 {n} jobs peak {scaling[-1]['peak_memory_mb']:.1f} MB", flush=True)
    per_job_kb = [1024 * s["peak_memory_mb"] / s["num_jobs"] for s in scaling]

    small, big = (1_000, 10_000) if args.quick else (10_000, 100_000)
    linear: dict[str, Any] = {"policy": "fifo", "scenario": "default", "utilisation": UTILISATION}
    for n in (small, big):
        jobs = default_workload(n)
        cpu = [cpu_run("fifo", jobs) for _ in range(repeats)]
        linear[str(n)] = {
            "cpu_s_all": [round(c, 3) for c in cpu],
            "median_cpu_s": round(statistics.median(cpu), 3),
            "peak_memory_mb": round(peak_memory_default_mb("fifo", jobs), 2),
        }
        print(f"fifo default {n} jobs: median {linear[str(n)]['median_cpu_s']:.2f} CPU-s", flush=True)
    linear["time_ratio"] = round(linear[str(big)]["median_cpu_s"] / linear[str(small)]["median_cpu_s"], 2)
    linear["memory_ratio"] = round(linear[str(big)]["peak_memory_mb"] / linear[str(small)]["peak_memory_mb"], 2)

    policies = []
    for n in (100, 300) if args.quick else (1_000, 10_000):
        for name in sorted(list_policies()):
            case = policy_case(name, n, repeats, cut_s)
            policies.append(case)
            print(
                f"{name:24s} {n:6d} jobs: median {case['median_cpu_s']:.2f} CPU-s over {case['runs']} run(s)"
                + (f" ({case['cut_note']})" if case["cut"] else ""),
                flush=True,
            )

    env = env_part(repeats, 200 if args.quick else 2_000)

    report = {
        "benchmark": "simulator speed (scripts/bench/bench.py)",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average_at_start": load_start,
            "load_average_at_end": os.getloadavg(),
        },
        "statistic": f"median of {repeats} runs (fewer where a policy's runs were cut; see policies)",
        "date": time.strftime("%Y-%m-%d"),
        "workload": f"gavel-philly, offered utilisation {UTILISATION}, seed 0",
        "cases": cases,
        "memory_scaling": {"fifo_gavel-108": scaling, "kb_per_job": [round(x, 3) for x in per_job_kb]},
        "scaling": linear,
        "policies": {"scenario": "default", "utilisation": UTILISATION, "cut_cpu_s": cut_s, "cases": policies},
        "env": env,
    }
    atomic_write(args.out, lambda tmp: tmp.write_text(json.dumps(report, indent=2) + "\n"))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
