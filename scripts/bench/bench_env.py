"""Benchmark HetCluster-v0: environment steps per second with a random masked agent.

For each action codec and window size K on the ``default`` preset (64 GPUs of 4 types), a random agent
picks uniformly among the valid actions (``info["action_mask"]``; per dimension for the one-shot
codec) and the env (made with ``gym.make``, so with Gymnasium's default wrappers) is stepped for a
fixed number of steps, resetting when an episode ends. Reported per configuration, as the median of
``--repeats`` runs:

* ``steps_per_s``: steps / wall-clock seconds, agent included;
* ``steps_per_cpu_s``: steps / CPU seconds of this process, agent included (less sensitive to other
  processes on a shared machine);
* ``env_steps_per_cpu_s``: steps / CPU seconds spent inside ``env.step`` only;
* ``commits_per_s``: decision epochs committed per wall-clock second.

The process is pinned to one core. Usage::

    python scripts/bench/bench_env.py                      # writes bench/env.json
    python scripts/bench/bench_env.py --quick --out /tmp/env.json

``--newest`` measures the newest ids instead (``HetCluster-v1`` and ``HetCluster-Tiny-v1``, a random
masked agent, ``gym.make`` with its wrappers): simulator steps per committed decision
(``Simulator.step`` calls / commits), decision epochs per commit (quiet ticks included) and steps per
second, with the quiet-tick fast-forward on and off (``fast_forward = False``: every quiet tick
replayed with its own simulator step) and, with ``--base REV``, on that commit (a temporary git
worktree first on ``PYTHONPATH``). Every side runs in a fresh interpreter, alternately, ``--repeats``
times (repeat r uses seed r), so all sides see the same machine load; figures are medians::

    python scripts/bench/bench_env.py --newest --base HEAD~2     # writes bench/env_newest.json

``--floor`` puts the newest ids beside Python's floor, in one run on one pinned core: CPU microseconds
per ``env.step`` (the agent's choice excluded) of two stub envs, one with ``HetCluster-v2``'s spaces (a flat
``Box`` observation) and one with ``HetCluster-v1``'s (the ``Dict``), each with the id's info keys (its step
copies a fixed observation and info: the least a Gymnasium env with these spaces costs), of ``HetCluster-v2``,
``HetCluster-Tiny-v2``, ``HetCluster-v1`` and ``HetCluster-Tiny-v1`` (random masked agent), and of CartPole-v1,
all through ``gym.make`` (each id against the stub with its spaces); where a step goes above the floor (the
residue: CPU µs per step of the simulator's step, the episode's end, the window's load, the epoch's features
and mask, the observation, the codec, the info, the Gymnasium wrappers; see :func:`residue`); the event-driven
ids' CPU µs per decision (``HetClusterEvents-v1`` with the ``Dict`` and with ``flatten=True``,
``HetClusterEvents-v2``; with ``--base REV`` also on that commit, alternating in fresh interpreters); and the
share of MaskablePPO's ``learn()`` CPU time spent in the env (stepping, resets and action masks) on
``HetCluster-Tiny-v1`` with 8 envs in a ``DummyVecEnv`` and the default ``MultiInputPolicy``, with the
quiet-tick fast-forward on and off (``--ppo-timesteps 0`` skips it)::

    python scripts/bench/bench_env.py --floor                    # writes bench/env_floor.json
    taskset -c 1 python scripts/bench/bench_env.py --floor --base 707fede --ppo-timesteps 0
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym
import numpy as np


def _env_floor() -> Any:
    """``env_floor.py`` beside this script (the ``--floor`` measures and the shared helpers), loaded by path."""
    spec = importlib.util.spec_from_file_location("env_floor", Path(__file__).resolve().parent / "env_floor.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("env_floor", module)
    spec.loader.exec_module(module)
    return module


env_floor = _env_floor()
random_masked_action = env_floor.random_masked_action
machine = env_floor.machine
write_json = env_floor.write_json
StubEnv = env_floor.StubEnv
env_step_us = env_floor.env_step_us
RESIDUE_PARTS = env_floor.RESIDUE_PARTS
timed_parts = env_floor.timed_parts
residue = env_floor.residue
ppo_env_share = env_floor.ppo_env_share
floor_main = env_floor.floor_main
events_child = env_floor.events_child


def run_once(codec: str, slots: int, steps: int, seed: int) -> dict[str, float]:
    env = gym.make("HetCluster-v0", codec=codec, queue_slots=slots)
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    space = env.action_space
    commits = 0
    episodes = 0
    env_cpu = 0.0
    cpu = time.process_time
    wall0, cpu0 = time.perf_counter(), cpu()
    for _ in range(steps):
        action = random_masked_action(space, info["action_mask"], rng)
        t = cpu()
        _, _, terminated, truncated, info = env.step(action)
        env_cpu += cpu() - t
        commits += int(info["committed"])
        if terminated or truncated:
            episodes += 1
            _, info = env.reset()
    wall, total_cpu = time.perf_counter() - wall0, cpu() - cpu0
    return {
        "steps_per_s": steps / wall,
        "steps_per_cpu_s": steps / total_cpu,
        "env_steps_per_cpu_s": steps / env_cpu,
        "commits_per_s": commits / wall,
        "actions_per_epoch": steps / max(commits, 1),
        "episodes_ended": float(episodes),
    }


NEWEST_IDS = ("HetCluster-v1", "HetCluster-Tiny-v1")
#: The sides measured on the working tree: the fast-forward on, and the tick-by-tick replay.
NEWEST_MODES = {"fast_forward": True, "replay": False}


def run_newest(env_id: str, steps: int, seed: int, fast_forward: bool) -> dict[str, float]:
    """A random masked agent on ``env_id`` for ``steps`` steps: speed and simulator steps per commit."""
    from hetgym.sim.engine import Simulator

    env = gym.make(env_id)
    env.unwrapped.fast_forward = fast_forward  # type: ignore[attr-defined]  # a plain attribute before it existed
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    space = env.action_space
    sim_steps = [0]
    # A simulator step is either entry point: an Allocation (step) or the env's arrays (step_counts).
    step, step_counts = Simulator.step, getattr(Simulator, "step_counts", None)

    def counted(sim: Any, *args: Any, **kwargs: Any) -> Any:
        sim_steps[0] += 1
        return step(sim, *args, **kwargs)

    def counted_arrays(sim: Any, *args: Any, **kwargs: Any) -> Any:
        sim_steps[0] += 1
        return step_counts(sim, *args, **kwargs)  # type: ignore[misc]

    Simulator.step = counted  # type: ignore[method-assign,assignment]
    if step_counts is not None:
        Simulator.step_counts = counted_arrays  # type: ignore[method-assign,assignment]
    commits = episodes = 0
    epochs = 0.0
    env_cpu = 0.0
    cpu = time.process_time
    try:
        wall0, cpu0 = time.perf_counter(), cpu()
        for _ in range(steps):
            action = random_masked_action(space, info["action_mask"], rng)
            t = cpu()
            _, _, terminated, truncated, info = env.step(action)
            env_cpu += cpu() - t
            commits += int(info["committed"])
            if terminated or truncated:
                episodes += 1
                epochs += info["metrics"]["num_decisions"]
                _, info = env.reset()
        wall, total_cpu = time.perf_counter() - wall0, cpu() - cpu0
    finally:
        Simulator.step = step  # type: ignore[method-assign]
        if step_counts is not None:
            Simulator.step_counts = step_counts  # type: ignore[method-assign]
    epochs += info["epoch"]
    return {
        "steps_per_s": steps / wall,
        "steps_per_cpu_s": steps / total_cpu,
        "env_steps_per_cpu_s": steps / env_cpu,
        "commits_per_s": commits / wall,
        "sim_steps_per_commit": sim_steps[0] / max(commits, 1),
        "epochs_per_commit": epochs / max(commits, 1),
        "commits": float(commits),
        "episodes_ended": float(episodes),
    }


def newest_child(steps: int, seed: int, modes: list[str]) -> dict[str, dict[str, dict[str, float]]]:
    """Every newest id under every mode, one interpreter (what one side of one repeat measures)."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    return {
        env_id: {mode: run_newest(env_id, steps, seed, NEWEST_MODES[mode]) for mode in modes} for env_id in NEWEST_IDS
    }


def newest_main(args: argparse.Namespace, argv: list[str] | None) -> int:
    """``--newest``: the sides alternately in fresh interpreters, ``--repeats`` times; medians to ``--out``."""
    script = Path(__file__).resolve()
    repo = script.parents[2]
    sides: dict[str, tuple[Path, list[str]]] = {"head": (repo, list(NEWEST_MODES))}
    loads = []
    with env_floor.base_worktree(repo, args.base) as (base_tree, base_rev):
        if base_tree is not None:
            sides = {"base": (base_tree, ["replay"]), **sides}  # before the fast-forward, the ticks are replayed
        runs: dict[str, list[dict[str, dict[str, dict[str, float]]]]] = {side: [] for side in sides}
        for seed in range(args.repeats):
            for side, (tree, modes) in sides.items():
                loads.append(os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan)
                cmd = [sys.executable, str(script), "--newest-child", "--steps", str(args.steps)]
                cmd += ["--seed", str(seed), "--modes", *modes]
                env = {**os.environ, "PYTHONPATH": str(tree)}
                out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=True).stdout
                runs[side].append(json.loads(out.strip().splitlines()[-1]))
                print(f"repeat {seed + 1}/{args.repeats}: {side} done (load {loads[-1]:.2f})", flush=True)
    results = []
    for env_id in NEWEST_IDS:
        for side, (_, modes) in sides.items():
            for mode in modes:
                rows = [run[env_id][mode] for run in runs[side]]
                summary = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
                label = f"{side}:{mode}" if side == "head" else f"base {base_rev}"
                results.append({"env_id": env_id, "side": label, "runs": len(rows), **summary})
                print(
                    f"{env_id:>19} {label:>18}: {summary['sim_steps_per_commit']:6.2f} sim steps/commit "
                    f"({summary['epochs_per_commit']:6.2f} epochs/commit)  {summary['steps_per_s']:>7,.0f} steps/s "
                    f"{summary['env_steps_per_cpu_s']:>7,.0f} env steps/CPU-s"
                )
    payload = {
        "benchmark": "newest ids: simulator steps per committed decision and steps per second, random masked agent",
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *(argv if argv is not None else sys.argv[1:])]),
        "statistic": f"median of {args.repeats} runs (seeds 0..{args.repeats - 1}), {args.steps} steps each, "
        "sides alternating in fresh interpreters pinned to one core",
        "goal": "at most 1.2 simulator steps per committed decision on the newest ids",
        "base": base_rev,
        "machine": machine(),
        "load_average_1min_at_each_run": loads,
        "load_average_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "results": results,
    }
    write_json(args.out, payload)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=None, help="default bench/env.json (--newest: bench/env_newest.json)"
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20_000, help="steps per run (sequential codec)")
    parser.add_argument("--one-shot-steps", type=int, default=2_000, help="steps per run (one-shot codec)")
    parser.add_argument("--slots", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--quick", action="store_true", help="1 repeat, 2,000 / 300 steps (a smoke run)")
    parser.add_argument("--newest", action="store_true", help="the newest ids' simulator steps per commit (above)")
    parser.add_argument("--base", default=None, help="with --newest or --floor: also measure this commit")
    parser.add_argument("--floor", action="store_true", help="the newest ids beside the floor (above)")
    parser.add_argument("--ppo-timesteps", type=int, default=8_192, help="with --floor: MaskablePPO timesteps")
    parser.add_argument("--event-steps", type=int, default=400, help="with --floor: decisions per event-id run")
    parser.add_argument("--newest-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--events-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--modes", nargs="+", default=list(NEWEST_MODES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.newest_child:
        print(json.dumps(newest_child(args.steps, args.seed, args.modes)))
        return 0
    if args.events_child:
        print(json.dumps(events_child(args.steps, args.seed, args.modes)))
        return 0
    if args.newest:
        if args.quick:
            args.repeats, args.steps = 1, 1_000
        args.out = args.out or Path("bench/env_newest.json")
        return newest_main(args, argv)
    if args.floor:
        if args.quick:
            args.repeats, args.steps, args.event_steps = 1, 500, 50
            args.ppo_timesteps = min(args.ppo_timesteps, 2_048)
        args.out = args.out or Path("bench/env_floor.json")
        return floor_main(args, argv)
    args.out = args.out or Path("bench/env.json")
    if args.quick:
        args.repeats, args.steps, args.one_shot_steps = 1, 2_000, 300
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    info = machine()
    results = []
    for codec, steps in (("sequential", args.steps), ("multidiscrete", args.one_shot_steps)):
        for slots in args.slots:
            runs = [run_once(codec, slots, steps, seed) for seed in range(args.repeats)]
            summary = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            row = {"codec": codec, "queue_slots": slots, "steps_per_run": steps, "runs": len(runs), **summary}
            results.append(row)
            print(
                f"{codec:>13} K={slots:<3} {summary['steps_per_s']:>9,.0f} steps/s wall  "
                f"{summary['steps_per_cpu_s']:>9,.0f} steps/CPU-s  {summary['env_steps_per_cpu_s']:>9,.0f} env "
                f"steps/CPU-s  {summary['commits_per_s']:>7,.0f} commits/s"
            )
    payload = {
        "benchmark": "HetCluster-v0 steps per second, random masked agent, default preset",
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *(argv if argv is not None else sys.argv[1:])]),
        "statistic": f"median of {args.repeats} runs (seeds 0..{args.repeats - 1})",
        "pinned_to_one_core": hasattr(os, "sched_setaffinity"),
        "goal": "at least 10,000 sequential-codec steps/s on one core",
        "machine": info,
        "load_average_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "results": results,
    }
    write_json(args.out, payload)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
