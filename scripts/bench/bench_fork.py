"""Cost of a fork (``env.fork()``, ``Simulator.fork()``) against ``copy.deepcopy``, and ElasticFlow's quiet ticks.

Usage::

    python scripts/bench/bench_fork.py                          # writes bench/fork.json
    python scripts/bench/bench_fork.py --elasticflow-ticks      # writes bench/elasticflow_ticks.json
    python scripts/bench/bench_fork.py --quick --scenario tiny --out /tmp/fork.json   # a check, seconds

**Forks** (default). One ``HetClusterEvents-v0`` episode of ``--scenario`` (workload ``--workload-seed``,
the allocator's own choice, action 0, at every decision) is played; at a few decisions spread over it the
env (``env.unwrapped.fork()``) and its simulator (``Simulator.fork()``) are forked ``--samples`` times and
deep-copied (``copy.deepcopy``) ``--samples // 10`` times (at least 3), alternating in blocks, each copy
timed in CPU time (``time.process_time``); the figures are the medians, in CPU-µs, with the number of
active jobs at that decision.

**ElasticFlow's quiet ticks** (``--elasticflow-ticks``). ElasticFlow's run of the workload
(``Simulator(...).run(make_policy("elasticflow"))``) and the event env's action-0 episode, each with the
fast-forward on and off (``Simulator(fast_forward=False)``, and ``env.unwrapped.sim.fast_forward = False``
after reset: the policy asked at every tick, as before the fast-forward existed), alternating, ``--repeats``
times: CPU-s (medians) and the consultations (``Simulator.num_steps``, the policy's ``schedule`` calls
applied), with the per-job results of the four checked equal; also the env with ``probe=False`` (no admission
probe in the observation), and ElasticFlow's fast run once more with the CPU time inside its planner
(``mss_plan``) measured apart. The load average is recorded at the start and the end. Speeds are never
asserted in tests.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import baselines.elasticflow.admission as _admission
import hetgym  # noqa: F401  (registers the Gym ids)
from hetgym.atomic import atomic_write
from hetgym.sim import Simulator, make_policy

REPO_ROOT = Path(__file__).resolve().parents[2]
ENV_IDS = {"default": "HetClusterEvents-v0", "tiny": "HetClusterEvents-Tiny-v0"}


def _cpu_us(fn: Callable[[], object], count: int) -> list[float]:
    out = []
    for _ in range(count):
        t0 = time.process_time()
        fn()
        out.append((time.process_time() - t0) * 1e6)
    return out


def _median_pair(fast: Callable[[], object], slow: Callable[[], object], samples: int) -> tuple[float, float]:
    """Medians (CPU-µs) of ``samples`` calls of ``fast`` and ``samples // 10`` (>= 3) of ``slow``, in 3 blocks."""
    fast_t: list[float] = []
    slow_t: list[float] = []
    slow_n = max(3, samples // 10)
    for block in range(3):
        fast_t += _cpu_us(fast, samples // 3 + (block < samples % 3))
        slow_t += _cpu_us(slow, slow_n // 3 + (block < slow_n % 3))
    return statistics.median(fast_t), statistics.median(slow_t)


def measure_forks(scenario: str, workload_seed: int, samples: int) -> list[dict[str, Any]]:
    env = gym.make(ENV_IDS[scenario]).unwrapped
    env.reset(seed=0, options={"workload_seed": workload_seed})
    # The number of decisions of the episode, for the points at which forks are timed.
    probe = env.fork()
    n = 0
    while True:
        n += 1
        if any(probe.step(0)[2:4]):
            break
    points = sorted({0, n // 4, n // 2, (3 * n) // 4, n - 1})
    rows = []
    for k in range(n):
        if k in points:
            sim = env.sim
            assert sim is not None and env.view is not None
            env_fork, env_copy = _median_pair(env.fork, lambda: copy.deepcopy(env), samples)
            sim_fork, sim_copy = _median_pair(sim.fork, lambda sim=sim: copy.deepcopy(sim), samples)
            row = {
                "decision": k,
                "now_h": round(env.view.now_s / 3600.0, 3),
                "active_jobs": len(env.view.jobs),
                "env_fork_us": round(env_fork, 1),
                "env_deepcopy_us": round(env_copy, 1),
                "env_speedup": round(env_copy / env_fork, 1) if env_fork > 0 else None,
                "sim_fork_us": round(sim_fork, 1),
                "sim_deepcopy_us": round(sim_copy, 1),
                "sim_speedup": round(sim_copy / sim_fork, 1) if sim_fork > 0 else None,
            }
            rows.append(row)
            print(
                f"decision {k:4d} ({row['active_jobs']:3d} active): env fork {env_fork:9.1f} us, deepcopy "
                f"{env_copy:10.1f} us; simulator fork {sim_fork:9.1f} us, deepcopy {sim_copy:10.1f} us",
                flush=True,
            )
        env.step(0)
    return rows


def _run_policy(env: Any, fast: bool) -> tuple[float, int, int, Any]:
    sim = Simulator(env.cluster, env.jobs, config=env.config.sim, fast_forward=fast)
    t0 = time.process_time()
    result = sim.run(make_policy("elasticflow"))
    return time.process_time() - t0, sim.num_steps, result.num_epochs, result.jobs


def _run_planning(env: Any) -> tuple[float, float, int]:
    """ElasticFlow's run with the fast-forward, and the CPU time inside its minimum-satisfactory-share planner."""
    inside = [0.0, 0]
    plan = _admission.mss_plan

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.process_time()
        try:
            return plan(*args, **kwargs)
        finally:
            inside[0] += time.process_time() - t0
            inside[1] += 1

    _admission.mss_plan = timed  # the module-level name the planning passes call
    try:
        cpu_s = _run_policy(env, True)[0]
    finally:
        _admission.mss_plan = plan
    return cpu_s, inside[0], int(inside[1])


def _run_env(env: Any, workload_seed: int, fast: bool) -> tuple[float, int, int, Any]:
    t0 = time.process_time()
    env.reset(seed=0, options={"workload_seed": workload_seed})
    env.sim.fast_forward = fast
    while not any(env.step(0)[2:4]):
        pass
    cpu_s = time.process_time() - t0
    result = env.result()
    return cpu_s, env.sim.num_steps, result.num_epochs, result.jobs


def measure_ticks(scenario: str, workload_seed: int, repeats: int) -> dict[str, Any]:
    env = gym.make(ENV_IDS[scenario]).unwrapped
    env.reset(seed=0, options={"workload_seed": workload_seed})
    no_probe = gym.make(ENV_IDS[scenario], probe=False).unwrapped
    keys = ("run_on", "run_off", "env_on", "env_off", "env_on_no_probe")
    runs: dict[str, list[tuple[float, int, int, Any]]] = {k: [] for k in keys}
    planning: list[tuple[float, float, int]] = []
    for _ in range(repeats):
        runs["run_off"].append(_run_policy(env, False))
        runs["run_on"].append(_run_policy(env, True))
        runs["env_off"].append(_run_env(env, workload_seed, False))
        runs["env_on"].append(_run_env(env, workload_seed, True))
        runs["env_on_no_probe"].append(_run_env(no_probe, workload_seed, True))
        planning.append(_run_planning(env))
    tables = [r[0][3] for r in runs.values()]
    identical = all(t.equals(tables[0]) for t in tables[1:])
    out: dict[str, Any] = {"identical_per_job_results": identical}
    for key, rows in runs.items():
        out[key] = {
            "cpu_s_median": round(statistics.median(r[0] for r in rows), 4),
            "cpu_s_runs": [round(r[0], 4) for r in rows],
            "consultations": rows[0][1],
            "epochs": rows[0][2],
        }
    # Where the fast run's time goes: ElasticFlow's planner (timed apart, in runs of their own).
    out["run_on_planning"] = {
        "cpu_s_median": round(statistics.median(p[0] for p in planning), 4),
        "mss_plan_cpu_s_median": round(statistics.median(p[1] for p in planning), 4),
        "mss_plan_calls": planning[0][2],
    }
    out["run_speedup"] = round(out["run_off"]["cpu_s_median"] / out["run_on"]["cpu_s_median"], 2)
    out["env_speedup"] = round(out["env_off"]["cpu_s_median"] / out["env_on"]["cpu_s_median"], 2)
    out["env_on_over_run_on"] = round(out["env_on"]["cpu_s_median"] / out["run_on"]["cpu_s_median"], 2)
    for key in runs:
        print(
            f"{key:8s} {out[key]['cpu_s_median']:8.3f} CPU-s  {out[key]['consultations']:6d} consultations  "
            f"{out[key]['epochs']:6d} epochs",
            flush=True,
        )
    row = out["run_on_planning"]
    print(
        f"run_on with the planner timed: {row['cpu_s_median']:.3f} CPU-s, {row['mss_plan_cpu_s_median']:.3f} in "
        f"{row['mss_plan_calls']} mss_plan calls",
        flush=True,
    )
    print(f"per-job results identical: {identical}", flush=True)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="default bench/fork.json (bench/elasticflow_ticks.json)")
    parser.add_argument("--scenario", choices=sorted(ENV_IDS), default="default")
    parser.add_argument("--workload-seed", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=300, help="forks timed per point (default 300)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each with --elasticflow-ticks (default 5)")
    parser.add_argument("--elasticflow-ticks", action="store_true", help="ElasticFlow's quiet ticks instead")
    parser.add_argument("--quick", action="store_true", help="30 samples, 1 repeat")
    args = parser.parse_args(argv)
    if args.quick:
        args.samples, args.repeats = 30, 1
    if args.samples < 3 or args.repeats < 1:
        parser.error("--samples must be >= 3 and --repeats >= 1")
    name = "elasticflow_ticks.json" if args.elasticflow_ticks else "fork.json"
    out_path: Path = args.out or REPO_ROOT / "bench" / name
    loadavg_start = list(os.getloadavg())
    payload: dict[str, Any] = {
        "benchmark": "ElasticFlow's quiet ticks passed over"
        if args.elasticflow_ticks
        else "cost of a fork against copy.deepcopy",
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
        "scenario": args.scenario,
        "workload_seed": args.workload_seed,
    }
    if args.elasticflow_ticks:
        payload["repeats"] = args.repeats
        payload["results"] = measure_ticks(args.scenario, args.workload_seed, args.repeats)
    else:
        payload["samples"] = args.samples
        payload["results"] = measure_forks(args.scenario, args.workload_seed, args.samples)
    payload["loadavg_start"] = loadavg_start
    payload["loadavg_end"] = list(os.getloadavg())
    atomic_write(out_path, lambda tmp: tmp.write_text(json.dumps(payload, indent=2) + "\n"))
    print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
