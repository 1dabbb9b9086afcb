"""Benchmark where a ``HetCluster-v1`` step goes, committing and non-committing steps apart, beside the stub floor.

A random masked agent steps ``gym.make(ENV_ID)`` on one pinned core. Reported, as medians of ``--repeats``
runs (seeds 0..repeats-1):

* ``steps``: CPU microseconds per ``env.step`` (the agent's choice excluded), over all steps, over the steps
  that commit (the simulator advances, the next epoch's window, features and mask are built) and over the
  others (one action on the draft); the share of steps that commit; for the default ``Dict`` observation and
  for ``FlatObservation`` (:mod:`hetgym.envs.flat`); and the stub floor of ``bench_env.py --floor`` (an env
  with the id's spaces and info keys whose step only copies a fixed observation and info);
* ``non_commit_parts``: the parts of a non-committing step, each wrapped in a timer as in ``bench_env.py``'s
  ``residue`` (a timer adds about a microsecond a call, so the parts sum to more than the untimed step)::

    python scripts/bench/bench_step_split.py             # writes bench/step_split.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym
import numpy as np

from hetgym.envs.flat import FlatObservation


def _bench_env() -> Any:
    """``bench_env.py`` beside this script (its random agent, stub floor and residue parts), loaded by path."""
    spec = importlib.util.spec_from_file_location("bench_env", Path(__file__).resolve().parent / "bench_env.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_env = _bench_env()

ENV_ID = "HetCluster-v1"


def split_steps(make: Callable[[], gym.Env[Any, Any]], steps: int, seed: int) -> dict[str, float]:
    """CPU-us per step over all steps, committing ones and the others; the committing share."""
    env = make()
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    cpu = time.process_time
    spent = {True: 0.0, False: 0.0}
    count = {True: 0, False: 0}
    for _ in range(steps):
        action = bench_env.random_masked_action(env.action_space, info["action_mask"], rng)
        t = cpu()
        _, _, terminated, truncated, info = env.step(action)
        committed = bool(info["committed"])
        spent[committed] += cpu() - t
        count[committed] += 1
        if terminated or truncated:
            _, info = env.reset()
    return {
        "all": (spent[True] + spent[False]) / steps * 1e6,
        "commit": spent[True] / max(count[True], 1) * 1e6,
        "non_commit": spent[False] / max(count[False], 1) * 1e6,
        "commit_share": count[True] / steps,
    }


def stub_us(steps: int, seed: int) -> float:
    """CPU-us per step of the stub floor."""
    env = gym.make("HetClusterStubFloor-v1")
    env.reset(seed=seed)
    t = time.process_time()
    for _ in range(steps):
        env.step(0)
    return (time.process_time() - t) / steps * 1e6


def non_commit_parts(steps: int, seed: int) -> dict[str, float]:
    """The parts of the non-committing steps (``bench_env.RESIDUE_PARTS`` timers), CPU-us per such step."""
    env = gym.make(ENV_ID)
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    cpu = time.process_time
    outer = 0.0
    n = 0
    with bench_env.timed_parts(env.unwrapped) as spent:
        own = dict.fromkeys(spent, 0.0)
        for _ in range(steps):
            action = bench_env.random_masked_action(env.action_space, info["action_mask"], rng)
            before = dict(spent)
            t = cpu()
            _, _, terminated, truncated, info = env.step(action)
            took = cpu() - t
            if not info["committed"]:
                n += 1
                outer += took
                for key in spent:
                    own[key] += spent[key] - before[key]
            if terminated or truncated:
                _, info = env.reset()
    us = {k: v / max(n, 1) * 1e6 for k, v in own.items()}
    inside = us["codec_apply"] + us["info"] + us["commit"] + us["window_load"] + us["epoch_present"]
    return {
        "timed_step": outer / max(n, 1) * 1e6,
        "codec_apply": us["codec_apply"],
        "observation": us["observation"],
        "info": us["info"],
        "transition_rest": us["transition"] - inside,
        "step_rest": us["env_step"] - us["transition"] - us["observation"],
        "gymnasium_wrappers": outer / max(n, 1) * 1e6 - us["env_step"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/step_split.json"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10_000)
    args = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    gym.register("HetClusterStubFloor-v1", entry_point=bench_env.StubEnv)
    start_load = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    ways: dict[str, Callable[[], gym.Env[Any, Any]]] = {
        "dict": lambda: gym.make(ENV_ID),
        "flat": lambda: FlatObservation(gym.make(ENV_ID)),
    }
    runs: list[dict[str, Any]] = []
    for seed in range(args.repeats):
        row: dict[str, Any] = {way: split_steps(make, args.steps, seed) for way, make in ways.items()}
        row["stub"] = stub_us(args.steps, seed)
        row["non_commit_parts"] = non_commit_parts(args.steps, seed)
        runs.append(row)
        print(f"repeat {seed + 1}/{args.repeats} done", flush=True)
    steps = {way: {k: statistics.median(r[way][k] for r in runs) for k in runs[0][way]} for way in ("dict", "flat")}
    parts = {k: statistics.median(r["non_commit_parts"][k] for r in runs) for k in runs[0]["non_commit_parts"]}
    stub = statistics.median(r["stub"] for r in runs)
    for way, row in steps.items():
        print(
            f"{way:>5}: {row['all']:6.1f} CPU-us/step ({row['all'] / stub:.2f}x the stub {stub:.1f}); committing "
            f"{row['commit']:6.1f}, others {row['non_commit']:5.1f} ({row['non_commit'] / stub:.2f}x); "
            f"{row['commit_share']:.1%} commit"
        )
    print("non-committing step, timed parts: " + ", ".join(f"{k} {v:.1f}" for k, v in parts.items()))
    payload = {
        "benchmark": f"{ENV_ID}: committing and non-committing steps apart, Dict and FlatObservation, stub floor",
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *(argv if argv is not None else sys.argv[1:])]),
        "statistic": f"median of {args.repeats} runs (seeds 0..{args.repeats - 1}), {args.steps} steps each, "
        "random masked agent, one pinned core",
        "load_average_at_start": start_load,
        "load_average_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "stub_step_cpu_us": stub,
        "steps": steps,
        "non_commit_parts": parts,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
