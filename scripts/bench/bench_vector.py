"""Benchmark vectorised stepping of HetCluster-v1: one env, Gymnasium's SyncVectorEnv, hetgym's batched
vector env (``gym.make_vec``'s default) and SB3's DummyVecEnv, with CartPole-v1 measured in the same run.

Every mode steps the same sub-envs (seeds ``seed + i``) with a random masked agent (one generator per
sub-env) on one pinned core. Reported per mode and number of envs N, as medians over ``--repeats`` runs:

* ``env_steps_per_cpu_s``: sub-env ``step`` calls (autoreset steps excluded) per CPU second of this process,
  the agent's action choice excluded: the aggregate throughput a trainer gets from the env side;
* ``overhead_us_per_step``: CPU microseconds per sub-env step spent outside ``HetClusterEnv.transition``
  (a step's state change, reward and info, which every mode calls once per sub-env step) and ``reset``:
  the observation's encoding and batching, wrappers, info aggregation, measured by timing those methods.

CartPole-v1 (single env, random agent) gives the reference of what a minimal Gymnasium env costs here.

Usage::

    python scripts/bench/bench_vector.py                    # writes bench/vector.json
    python scripts/bench/bench_vector.py --quick --out /tmp/vector.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym
import numpy as np

import hetgym  # noqa: F401  (registers the ids)
from hetgym.atomic import atomic_write
from hetgym.envs.env import HetClusterEnv

ENV_ID = "HetCluster-v1"
_cpu = time.process_time


class _InnerClock:
    """CPU time spent inside ``HetClusterEnv.transition``/``reset`` and the number of real steps."""

    def __init__(self) -> None:
        self.cpu_s = 0.0
        self.steps = 0
        self._transition = HetClusterEnv.transition
        self._reset = HetClusterEnv.reset

    def __enter__(self) -> _InnerClock:
        clock, transition, reset = self, self._transition, self._reset

        def timed_transition(env: HetClusterEnv, action: Any) -> Any:
            t = _cpu()
            out = transition(env, action)
            clock.cpu_s += _cpu() - t
            clock.steps += 1
            return out

        def timed_reset(env: HetClusterEnv, **kwargs: Any) -> Any:
            t = _cpu()
            out = reset(env, **kwargs)
            clock.cpu_s += _cpu() - t
            return out

        HetClusterEnv.transition = timed_transition  # type: ignore[method-assign]
        HetClusterEnv.reset = timed_reset  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        HetClusterEnv.transition = self._transition  # type: ignore[method-assign]
        HetClusterEnv.reset = self._reset  # type: ignore[method-assign]


def _choose(rngs: list[np.random.Generator], masks: Any) -> np.ndarray:
    return np.array([int(rngs[i].choice(np.flatnonzero(m))) for i, m in enumerate(masks)])


def run_mode(mode: str, num_envs: int, steps_per_env: int, seed: int) -> dict[str, float]:
    """One timed run; see the module docstring for the figures."""
    rngs = [np.random.default_rng(seed + i) for i in range(num_envs)]
    agent_s = 0.0
    with _InnerClock() as clock:
        if mode == "loop":
            envs = [gym.make(ENV_ID) for _ in range(num_envs)]
            infos = [env.reset(seed=seed + i)[1] for i, env in enumerate(envs)]
            clock.cpu_s, clock.steps = 0.0, 0
            t0 = _cpu()
            for _ in range(steps_per_env):
                t = _cpu()
                actions = _choose(rngs, [info["action_mask"] for info in infos])
                agent_s += _cpu() - t
                for i, env in enumerate(envs):
                    _, _, term, trunc, infos[i] = env.step(int(actions[i]))
                    if term or trunc:
                        infos[i] = env.reset()[1]
        elif mode == "dummy":
            from stable_baselines3.common.vec_env import DummyVecEnv

            venv = DummyVecEnv([lambda: gym.make(ENV_ID)] * num_envs)
            venv.seed(seed)
            venv.reset()
            clock.cpu_s, clock.steps = 0.0, 0
            t0 = _cpu()
            for _ in range(steps_per_env):
                t = _cpu()
                actions = _choose(rngs, venv.env_method("action_masks"))
                agent_s += _cpu() - t
                venv.step(actions)
        else:
            vmode = {"sync": "sync", "hetgym": "vector_entry_point"}[mode]
            vec = gym.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode=vmode)
            _, info = vec.reset(seed=seed)
            clock.cpu_s, clock.steps = 0.0, 0
            t0 = _cpu()
            for _ in range(steps_per_env):
                t = _cpu()
                actions = _choose(rngs, info["action_mask"])
                agent_s += _cpu() - t
                _, _, _, _, info = vec.step(actions)
        total_s = _cpu() - t0
    env_side_s = total_s - agent_s
    return {
        "env_steps_per_cpu_s": clock.steps / env_side_s,
        "overhead_us_per_step": 1e6 * (env_side_s - clock.cpu_s) / clock.steps,
    }


def cartpole_steps_per_cpu_s(steps: int, seed: int) -> float:
    env = gym.make("CartPole-v1")
    env.reset(seed=seed)
    env.action_space.seed(seed)
    t0 = _cpu()
    for _ in range(steps):
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            env.reset()
    return steps / (_cpu() - t0)


def _median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/vector.json"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps-per-env", type=int, default=2_000)
    parser.add_argument("--num-envs", type=int, nargs="+", default=[1, 2, 8])
    parser.add_argument("--quick", action="store_true", help="1 repeat, 200 steps per env (a smoke run)")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.steps_per_env = 1, 200
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    load_start = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    rows: list[dict[str, Any]] = []
    cartpole = statistics.median(cartpole_steps_per_cpu_s(50_000, s) for s in range(args.repeats))
    print(f"CartPole-v1 (one env): {cartpole:,.0f} steps/CPU-s")
    for n in args.num_envs:
        for mode in ("loop", "sync", "hetgym", "dummy"):
            # Repeats interleave modes' seeds identically, so every mode steps the same workloads.
            summary = _median([run_mode(mode, n, args.steps_per_env, 100 * r) for r in range(args.repeats)])
            rows.append({"mode": mode, "num_envs": n, **summary})
            print(
                f"N={n:<2} {mode:>7}: {summary['env_steps_per_cpu_s']:>8,.0f} env steps/CPU-s  "
                f"{summary['overhead_us_per_step']:>7.1f} us overhead/step"
            )
    payload = {
        "benchmark": f"{ENV_ID}: vectorised stepping, random masked agent, one pinned core",
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *(argv if argv is not None else sys.argv[1:])]),
        "statistic": f"median of {args.repeats} runs",
        "modes": {
            "loop": "N gym.make envs stepped in a Python loop (Gymnasium's default wrappers)",
            "sync": "gym.make_vec(..., vectorization_mode='sync'): Gymnasium's SyncVectorEnv",
            "hetgym": "gym.make_vec(...): hetgym's HetClusterVectorEnv (vector_entry_point)",
            "dummy": "stable_baselines3 DummyVecEnv over gym.make envs",
        },
        "cartpole_v1_steps_per_cpu_s": cartpole,
        "load_average_at_start": load_start,
        "load_average_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "results": rows,
    }
    atomic_write(args.out, lambda tmp: tmp.write_text(json.dumps(payload, indent=2) + "\n"))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
