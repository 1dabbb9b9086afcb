"""Measure the event-driven interface (``HetClusterEvents-v0``): exactness, decisions per job, experts' gaps, step time.

For each held-out workload seed of the scenario it runs, on the same workload:

* ElasticFlow, Dancer, HadarE and EDF-with-admission on the raw simulator (``Simulator.run``);
* through the interface: action 0 at every event (ElasticFlow's own choices), whether its per-job table is
  identical to ElasticFlow's run; a uniformly random masked agent (seeded with the workload seed); and
  every expert's closest choices (:func:`hetgym.envs.events.experts.expert_choices`: its rejections, its
  other jobs forced, on any type and on the type it used most), with the DSR gap to its own run.

``--timing`` instead times one random masked episode of ``HetClusterEvents-v0`` (with and without the
admission-test features), one episode of action 0 (ElasticFlow) beside ``Simulator.run`` of ElasticFlow,
and ``--v1-steps`` random masked steps of ``HetCluster-v1`` on one workload, and prints the load average
(a shared machine moves the figures).

Usage::

    python scripts/studies/event_interface.py --seeds 1000-1019 --jobs 2 --out docs/results/event_interface.json
    python scripts/studies/event_interface.py --timing
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import hetgym  # noqa: F401  (registers the ids)
from agents.common import parse_seeds
from hetgym.envs.events import AUTO_ACTION
from hetgym.envs.events.experts import expert_choices
from hetgym.sim import Simulator, make_policy
from hetgym.stats import paired_interval, t_interval
from hetgym.sweep import map_runs

EXPERTS = ("elasticflow", "dancer", "hadare", "edf-admission")


def episode(env_id: str, seed: int, choose: Any, **env_kwargs: Any) -> tuple[dict[str, float], Any, float, int]:
    """One episode on workload ``seed``; ``choose(env, info)`` gives each action. Metrics, env, wall s, steps."""
    env = gym.make(env_id, **env_kwargs)
    started = time.perf_counter()
    _, info = env.reset(seed=seed, options={"workload_seed": seed})
    steps = 0
    while True:
        _, _, terminated, truncated, info = env.step(choose(env, info))
        steps += 1
        if terminated or truncated:
            return info["metrics"], env.unwrapped, time.perf_counter() - started, steps


def one_seed(task: tuple[str, str, int]) -> dict[str, Any]:
    env_id, scenario_kwargs, seed = task
    kwargs: dict[str, Any] = json.loads(scenario_kwargs)
    row: dict[str, Any] = {"seed": seed}
    m, u, _, _ = episode(env_id, seed, lambda e, i: AUTO_ACTION, probe=False, **kwargs)
    direct = Simulator(u.cluster, u.jobs, config=u.config.sim).run(make_policy("elasticflow"))
    row["elasticflow_env_dsr"] = m["dsr"]
    row["elasticflow_identical"] = bool(u.result().jobs.equals(direct.jobs))
    row["elasticflow_decisions_per_job"] = m["decisions_per_job"]
    m, _, _, _ = episode(env_id, seed, random_chooser(seed), probe=False, **kwargs)
    row["random_dsr"] = m["dsr"]
    row["random_decisions_per_job"] = m["decisions_per_job"]
    for expert in EXPERTS:
        for types in ("any", "main") if expert != "elasticflow" else ("any",):
            choices, result = expert_choices(expert, u.cluster, u.jobs, u.config.sim, types=types)
            row[f"{expert}_dsr"] = result.metrics["dsr"]

            def choose(e: Any, i: dict[str, Any], choices: Any = choices) -> int:
                base = e.unwrapped
                return int(base.actions.closest(choices[base.job_id], base.usable_types()))

            m, uu, _, _ = episode(env_id, seed, choose, probe=False, **kwargs)
            row[f"{expert}_closest_{types}_dsr"] = m["dsr"]
            if expert == "elasticflow":
                row["elasticflow_closest_identical"] = bool(uu.result().jobs.equals(direct.jobs))
    print(json.dumps(row), flush=True)
    return row


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"seeds": [r["seed"] for r in rows]}
    for key in rows[0]:
        if key.endswith("_dsr") or key.endswith("_per_job"):
            ci = t_interval([r[key] for r in rows])
            out[key] = {"mean": ci.mean, "ci": [ci.low, ci.high]}
    out["elasticflow_identical_all"] = all(r["elasticflow_identical"] for r in rows)
    out["elasticflow_closest_identical_all"] = all(r["elasticflow_closest_identical"] for r in rows)
    for key in [k for k in rows[0] if "_closest_" in k and k.endswith("_dsr")]:
        expert = key.split("_closest_")[0]
        gap = paired_interval([r[key] for r in rows], [r[f"{expert}_dsr"] for r in rows])
        out[f"gap_{key.removesuffix('_dsr')}"] = {"mean": gap.mean, "ci": [gap.low, gap.high]}
    return out


def random_chooser(seed: int) -> Any:
    """A uniformly random masked agent seeded with ``seed``."""
    rng = np.random.default_rng(seed)
    return lambda env, info: int(rng.choice(np.flatnonzero(info["action_mask"])))


def timing(v1_steps: int) -> dict[str, Any]:
    out: dict[str, Any] = {"loadavg": os.getloadavg()}
    seed = 1000
    for probe in (True, False):
        _, _, wall, steps = episode("HetClusterEvents-v0", seed, random_chooser(0), probe=probe)
        out[f"v2_probe_{probe}"] = {"episode_s": wall, "steps": steps, "ms_per_step": 1000 * wall / steps}
    _, u, wall, steps = episode("HetClusterEvents-v0", seed, lambda e, i: AUTO_ACTION)
    out["v2_elasticflow"] = {"episode_s": wall, "steps": steps, "ms_per_step": 1000 * wall / steps}
    started = time.perf_counter()
    Simulator(u.cluster, u.jobs, config=u.config.sim).run(make_policy("elasticflow"))
    out["simulator_elasticflow_s"] = time.perf_counter() - started
    env = gym.make("HetCluster-v1")
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=seed, options={"workload_seed": seed})
    started = time.perf_counter()
    done_steps = 0
    episodes_done = 0
    while done_steps < v1_steps:
        _, _, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        done_steps += 1
        if terminated or truncated:
            episodes_done += 1
            _, info = env.reset(seed=seed, options={"workload_seed": seed})
    wall = time.perf_counter() - started
    out["v1"] = {
        "steps": done_steps,
        "wall_s": wall,
        "ms_per_step": 1000 * wall / done_steps,
        "episodes": episodes_done,
    }
    out["loadavg_after"] = os.getloadavg()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-id", default="HetClusterEvents-v0")
    parser.add_argument("--seeds", default="1000-1019")
    parser.add_argument("--num-jobs", type=int, default=None, help="cut each workload to this many jobs")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--out", default=None, help="write the rows and the summary here (JSON)")
    parser.add_argument("--timing", action="store_true")
    parser.add_argument("--v1-steps", type=int, default=3000)
    args = parser.parse_args(argv)
    if args.timing:
        print(json.dumps(timing(args.v1_steps), indent=1))
        return 0
    kwargs = {"workload": {"num_jobs": args.num_jobs}} if args.num_jobs else {}
    tasks = [(args.env_id, json.dumps(kwargs), s) for s in parse_seeds(args.seeds)]
    rows = map_runs(one_seed, tasks, workers=args.jobs)
    summary = summarise(rows)
    print(json.dumps(summary, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
