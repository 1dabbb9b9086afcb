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

    python scripts/bench_env.py                      # writes bench/env.json
    python scripts/bench_env.py --quick --out /tmp/env.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym
import numpy as np

import hetgym


def random_masked_action(space: gym.Space[Any], mask: np.ndarray, rng: np.random.Generator) -> Any:
    if isinstance(space, gym.spaces.Discrete):
        valid = np.flatnonzero(mask)
        return int(valid[rng.integers(len(valid))])
    assert isinstance(space, gym.spaces.MultiDiscrete)
    out = np.empty(len(space.nvec), dtype=np.int64)
    offset = 0
    for i, n in enumerate(space.nvec.tolist()):
        valid = np.flatnonzero(mask[offset : offset + n])
        out[i] = valid[rng.integers(len(valid))]
        offset += n
    return out


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


def machine() -> dict[str, Any]:
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_model": _cpu_model(),
        "logical_cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "gymnasium": gym.__version__,
        "hetgym": hetgym.__version__,
        "load_average_at_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/env.json"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20_000, help="steps per run (sequential codec)")
    parser.add_argument("--one-shot-steps", type=int, default=2_000, help="steps per run (one-shot codec)")
    parser.add_argument("--slots", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--quick", action="store_true", help="1 repeat, 2,000 / 300 steps (a smoke run)")
    args = parser.parse_args(argv)
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
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=args.out.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(payload, fh, indent=2)
        fh.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
