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

A second section, ``processes`` (not pinned: the workers may use every core this process may), compares the
vector envs ``hetgym train --vec`` builds (:func:`agents.vec.make_train_venv`): SB3's ``DummyVecEnv``
(``dummy``, in this process) and ``SubprocVecEnv`` (``subproc``, a worker process each, started by forkserver)
for N = 1 and 2 by default, with the random masked agent reading the masks as MaskablePPO does
(``env_method("action_masks")``). Per mode and N, medians over ``--repeats`` runs:

* ``steps_per_wall_s``: sub-env steps per wall second, the agent included (what parallel workers can raise);
* ``steps_per_cpu_s``: sub-env steps per CPU second of this process and its workers together (from
  ``/proc/<pid>/stat``; what the pipes and the extra processes cost);
* ``main_cpu_s`` / ``workers_cpu_s``: those CPU seconds, apart; ``start_wall_s``: building the vector env
  (the workers' start and imports), outside the timed loop.

On a machine whose other cores are busy, ``steps_per_wall_s`` of ``subproc`` cannot show a speed-up: the
load average at the start and end of the run is recorded with the figures.

Usage::

    python scripts/bench/bench_vector.py                    # writes bench/vector.json
    python scripts/bench/bench_vector.py --quick --out /tmp/vector.json
    python scripts/bench/bench_vector.py --sections processes --out bench/vector_processes.json
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


def _proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``; 0.0 where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


def run_processes(mode: str, num_envs: int, steps_per_env: int, seed: int) -> dict[str, float]:
    """One timed run of ``hetgym train``'s vector env ``mode`` (``dummy`` or ``subproc``); see the docstring."""
    from agents.vec import make_train_venv

    rngs = [np.random.default_rng(seed + i) for i in range(num_envs)]
    t_start = time.perf_counter()
    venv = make_train_venv(ENV_ID, {}, num_envs, mode)
    try:
        venv.seed(seed)
        venv.reset()
        start_wall_s = time.perf_counter() - t_start
        pids = [proc.pid for proc in getattr(venv, "processes", [])]
        workers0 = sum(_proc_cpu_s(pid) for pid in pids)
        main0, wall0 = _cpu(), time.perf_counter()
        for _ in range(steps_per_env):
            venv.step(_choose(rngs, venv.env_method("action_masks")))
        wall_s = time.perf_counter() - wall0
        main_s = _cpu() - main0
        workers_s = sum(_proc_cpu_s(pid) for pid in pids) - workers0
    finally:
        venv.close()
    steps = steps_per_env * num_envs
    return {
        "steps_per_wall_s": steps / wall_s,
        "steps_per_cpu_s": steps / (main_s + workers_s),
        "main_cpu_s": main_s,
        "workers_cpu_s": workers_s,
        "start_wall_s": start_wall_s,
    }


def _median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/vector.json"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps-per-env", type=int, default=2_000)
    parser.add_argument("--num-envs", type=int, nargs="+", default=[1, 2, 8])
    parser.add_argument("--process-num-envs", type=int, nargs="+", default=[1, 2], help="N of the processes section")
    parser.add_argument(
        "--sections",
        nargs="+",
        choices=("pinned", "processes"),
        default=["pinned", "processes"],
        help="pinned: the one-core comparison of vector envs; processes: dummy vs subproc (default: both)",
    )
    parser.add_argument("--quick", action="store_true", help="1 repeat, 200 steps per env (a smoke run)")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.steps_per_env = 1, 200
    load_start = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    process_rows: list[dict[str, Any]] = []
    if "processes" in args.sections:
        # First, before this process is pinned: the workers inherit its CPU affinity.
        for n in args.process_num_envs:
            for mode in ("dummy", "subproc"):
                summary = _median([run_processes(mode, n, args.steps_per_env, 100 * r) for r in range(args.repeats)])
                process_rows.append({"mode": mode, "num_envs": n, **summary})
                print(
                    f"N={n:<2} {mode:>7}: {summary['steps_per_wall_s']:>8,.0f} steps/wall-s  "
                    f"{summary['steps_per_cpu_s']:>8,.0f} steps/CPU-s (main {summary['main_cpu_s']:.2f} + "
                    f"workers {summary['workers_cpu_s']:.2f} CPU-s)"
                )
    pinned = "pinned" in args.sections
    if pinned and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    rows: list[dict[str, Any]] = []
    cartpole = statistics.median(cartpole_steps_per_cpu_s(50_000, s) for s in range(args.repeats)) if pinned else None
    if cartpole is not None:
        print(f"CartPole-v1 (one env): {cartpole:,.0f} steps/CPU-s")
    for n in args.num_envs if pinned else []:
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
        "cpu_count": os.cpu_count(),
        "results": rows,
        "processes": {
            "benchmark": f"{ENV_ID}: hetgym train's vector envs (--vec), random masked agent reading the masks "
            "through env_method, not pinned",
            "modes": {
                "dummy": "stable_baselines3 DummyVecEnv (--vec dummy): every env in this process",
                "subproc": "stable_baselines3 SubprocVecEnv (--vec subproc): a worker process per env, forkserver",
            },
            "results": process_rows,
        },
    }
    atomic_write(args.out, lambda tmp: tmp.write_text(json.dumps(payload, indent=2) + "\n"))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
