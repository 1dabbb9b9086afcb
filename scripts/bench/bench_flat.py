"""Benchmark the opt-in flat observation (``hetgym.envs.flat.FlatObservation``) against the ``Dict`` default.

Three ways to feed a ``HetCluster-Tiny-v1`` env (``gym.make``) to a learner, compared on one pinned core:

* ``dict``: the default ``Dict`` observation (sb3-contrib's MaskablePPO with ``MultiInputPolicy``);
* ``flatten``: ``gymnasium.wrappers.FlattenObservation`` around it (``MlpPolicy``);
* ``flat``: ``FlatObservation`` around it (``MlpPolicy``; the same vector as ``flatten``).

Reported, as medians of ``--repeats`` runs with the ways alternating: CPU microseconds per ``env.step`` of
a random masked agent (the agent's choice excluded), and the CPU seconds and steps per second of
MaskablePPO's ``learn()`` with 8 envs in a ``DummyVecEnv`` (``n_steps=256``, ``device="cpu"``, one torch
thread)::

    python scripts/bench/bench_flat.py                 # writes bench/flat.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym
import numpy as np
from gymnasium.wrappers import FlattenObservation

import hetgym
from hetgym.envs.flat import FlatObservation

ENV_ID = "HetCluster-Tiny-v1"
#: Each way: how to make one env, and the policy MaskablePPO uses on it.
WAYS: dict[str, tuple[Callable[[], gym.Env[Any, Any]], str]] = {
    "dict": (lambda: gym.make(ENV_ID), "MultiInputPolicy"),
    "flatten": (lambda: FlattenObservation(gym.make(ENV_ID)), "MlpPolicy"),
    "flat": (lambda: FlatObservation(gym.make(ENV_ID)), "MlpPolicy"),
}


def step_us(make: Callable[[], gym.Env[Any, Any]], steps: int, seed: int) -> float:
    """CPU microseconds per ``env.step`` of a random masked agent (the choice excluded)."""
    env = make()
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    cpu = time.process_time
    spent = 0.0
    for _ in range(steps):
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        t = cpu()
        _, _, terminated, truncated, info = env.step(action)
        spent += cpu() - t
        if terminated or truncated:
            _, info = env.reset()
    return spent / steps * 1e6


def learn(make: Callable[[], gym.Env[Any, Any]], policy: str, timesteps: int, seed: int) -> dict[str, float]:
    """MaskablePPO's ``learn()`` on 8 envs: CPU seconds and steps per wall-clock second."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([make] * 8)
    model = MaskablePPO(policy, venv, n_steps=256, seed=seed, device="cpu")
    t0, wall0 = time.process_time(), time.perf_counter()
    model.learn(total_timesteps=timesteps)
    cpu, wall = time.process_time() - t0, time.perf_counter() - wall0
    return {"learn_cpu_s": cpu, "learn_steps_per_s": timesteps / wall}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/flat.json"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10_000, help="random-agent steps per run")
    parser.add_argument("--timesteps", type=int, default=8_192, help="MaskablePPO timesteps per learn() run")
    args = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import torch

    torch.set_num_threads(1)
    start_load = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    runs: dict[str, list[dict[str, float]]] = {way: [] for way in WAYS}
    for seed in range(args.repeats):
        for way, (make, policy) in WAYS.items():  # alternating, so the ways see the same load
            row = {"step_cpu_us": step_us(make, args.steps, seed), **learn(make, policy, args.timesteps, seed)}
            runs[way].append(row)
            print(f"repeat {seed + 1}/{args.repeats} {way:>8}: " + ", ".join(f"{k} {v:.2f}" for k, v in row.items()))
    results = []
    for way, rows in runs.items():
        summary = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        results.append({"way": way, "policy": WAYS[way][1], "runs": len(rows), **summary})
        print(
            f"{way:>8}: {summary['step_cpu_us']:7.1f} CPU-us/step, learn() {summary['learn_cpu_s']:6.2f} CPU-s "
            f"({summary['learn_steps_per_s']:,.0f} steps/s)"
        )
    payload = {
        "benchmark": f"{ENV_ID}: the Dict observation, FlattenObservation and FlatObservation; MaskablePPO learn()",
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *(argv if argv is not None else sys.argv[1:])]),
        "statistic": f"median of {args.repeats} runs per way, ways alternating, one pinned core; {args.steps} "
        f"random-agent steps and a learn() of {args.timesteps} timesteps (8 envs, n_steps=256) per run",
        "machine": {
            "platform": platform.platform(),
            "python": sys.version.split()[0],
            "numpy": np.__version__,
            "torch": torch.__version__,
            "hetgym": hetgym.__version__,
            "logical_cpus": os.cpu_count(),
        },
        "load_average_at_start": start_load,
        "load_average_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
