"""Experts on windows of a real ElasticFlow trace on a heterogeneous ElasticFlow cluster.

For each workload seed, the window of ``--num-jobs`` consecutive jobs of the raw trace ``--trace`` (with
ElasticFlow's deadline rule) that ``gym.make("HetClusterEvents-v0", cluster=..., workload=...)`` draws
with ``reset(options={"workload_seed": seed})`` is run:

* through the event environment: action 0 at every event (ElasticFlow's own choices) and the
  ``force`` action (every job admitted with the allocator's guarantee, on any type), each timed;
* on the raw simulator with the same jobs, cluster and simulator settings:
  ElasticFlow, Dancer, HadarE and EDF-with-admission.

It prints one JSON row per seed, then the mean DSR of each with its 95% interval, the mean time per
environment episode and the load average before and after (a shared machine moves the times), and
writes them to ``--out``.

Usage::

    python scripts/trace_window_experts.py --seeds 1000-1019 --out docs/results/trace_window_experts.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import hetgym  # noqa: F401  (registers the ids)
from hetgym.envs.events import AUTO_ACTION
from hetgym.sim import Simulator, make_policy
from hetgym.sim.guidance import Directive
from hetgym.stats import t_interval
from hetgym.sweep.checks import parse_seeds
from hetgym.workloads import elasticflow_window_workload

SIMULATOR_POLICIES = ("elasticflow", "dancer", "hadare", "edf-admission")
DEFAULT_SOURCE = "../shared/data/elasticflow_traces/raw-traces.tar.gz"


def episode(env: Any, seed: int, action: int | None) -> tuple[dict[str, float], float, int]:
    """One episode on workload ``seed`` playing ``action`` (``None``: the ``force`` action) at every event."""
    started = time.perf_counter()
    _, info = env.reset(seed=seed, options={"workload_seed": seed})
    if action is None:
        action = env.unwrapped.actions.index(Directive("force"))
    steps = 0
    while True:
        _, _, terminated, truncated, info = env.step(action)
        steps += 1
        if terminated or truncated:
            return info["metrics"], time.perf_counter() - started, steps


def one_seed(env: Any, seed: int) -> dict[str, Any]:
    row: dict[str, Any] = {"seed": seed}
    metrics, wall, steps = episode(env, seed, AUTO_ACTION)
    row.update(env_elasticflow_dsr=metrics["dsr"], env_elasticflow_s=wall, env_events=steps)
    base = env.unwrapped
    jobs, cluster, sim = base.jobs, base.cluster, base.config.sim
    row["num_jobs"] = len(jobs)
    metrics, wall, _ = episode(env, seed, None)
    row.update(env_force_dsr=metrics["dsr"], env_force_s=wall)
    for policy in SIMULATOR_POLICIES:
        started = time.perf_counter()
        result = Simulator(cluster, jobs, config=sim).run(make_policy(policy))
        row[f"sim_{policy}_dsr"] = float(result.metrics["dsr"])
        row[f"sim_{policy}_s"] = time.perf_counter() - started
    return row


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in rows[0]:
        if key.endswith("_dsr"):
            ci = t_interval([r[key] for r in rows])
            out[key] = {"mean": ci.mean, "ci": [ci.low, ci.high]}
        elif key.endswith("_s"):
            out[f"mean_{key}"] = float(np.mean([r[key] for r in rows]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default=DEFAULT_SOURCE, help="raw-traces.tar.gz, or a folder of clusterNN.csv")
    parser.add_argument("--trace", default="cluster09")
    parser.add_argument("--cluster", default="elasticflow-n4g8-het")
    parser.add_argument("--num-jobs", type=int, default=40)
    parser.add_argument("--seeds", default="1000-1019")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if not Path(args.source).exists():
        parser.error(f"--source {args.source}: no such file or folder (the published raw ElasticFlow traces)")
    workload = elasticflow_window_workload(args.source, args.trace, num_jobs=args.num_jobs)
    env = gym.make("HetClusterEvents-v0", cluster=args.cluster, workload=workload, flatten=True)
    loadavg = os.getloadavg()
    rows = []
    for seed in parse_seeds(args.seeds):
        rows.append(one_seed(env, seed))
        print(json.dumps(rows[-1]), flush=True)
    env.close()
    call = {"cluster": args.cluster, "workload": workload, "flatten": True}
    out = {
        "gym_make": {"id": "HetClusterEvents-v0", **call},
        "seeds": [r["seed"] for r in rows],
        "loadavg_before": loadavg,
        "loadavg_after": os.getloadavg(),
        "summary": summarise(rows),
        "rows": rows,
    }
    print(json.dumps({k: out[k] for k in ("loadavg_before", "loadavg_after", "summary")}, indent=2))
    if args.out is not None:
        args.out.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
