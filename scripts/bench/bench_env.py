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
per ``env.step`` (the agent's choice excluded) of a stub env with ``HetCluster-v1``'s spaces and info
keys (its step copies a fixed observation and info: the least a Gymnasium env with these spaces
costs), of ``HetCluster-v1`` and ``HetCluster-Tiny-v1`` (random masked agent), and of CartPole-v1, all
through ``gym.make``; and the share of MaskablePPO's ``learn()`` CPU time spent in the env (stepping,
resets and action masks) on ``HetCluster-Tiny-v1`` with 8 envs in a ``DummyVecEnv`` and the default
``MultiInputPolicy``, with the quiet-tick fast-forward on and off; and where a newest id's step goes above the
floor (the residue: CPU µs per step of the simulator's step, the episode's end, the window's load, the epoch's
features and mask, the observation, the codec, the info, the Gymnasium wrappers; see :func:`residue`)::

    python scripts/bench/bench_env.py --floor                    # writes bench/env_floor.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
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
    base_rev = None
    with tempfile.TemporaryDirectory(prefix="hetgym-newest-") as tmp:
        try:
            if args.base is not None:
                base_rev = subprocess.run(
                    ["git", "rev-parse", "--short", args.base], cwd=repo, capture_output=True, text=True, check=True
                ).stdout.strip()
                tree = Path(tmp) / "base"
                subprocess.run(["git", "worktree", "add", "--detach", "-q", str(tree), base_rev], cwd=repo, check=True)
                sides = {"base": (tree, ["replay"]), **sides}  # before the fast-forward, the ticks are replayed
            runs: dict[str, list[dict[str, dict[str, dict[str, float]]]]] = {side: [] for side in sides}
            loads = []
            for seed in range(args.repeats):
                for side, (tree, modes) in sides.items():
                    loads.append(os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan)
                    cmd = [sys.executable, str(script), "--newest-child", "--steps", str(args.steps)]
                    cmd += ["--seed", str(seed), "--modes", *modes]
                    env = {**os.environ, "PYTHONPATH": str(tree)}
                    out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=True).stdout
                    runs[side].append(json.loads(out.strip().splitlines()[-1]))
                    print(f"repeat {seed + 1}/{args.repeats}: {side} done (load {loads[-1]:.2f})", flush=True)
        finally:
            if base_rev is not None:
                subprocess.run(["git", "worktree", "remove", "--force", str(Path(tmp) / "base")], cwd=repo, check=False)
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


class StubEnv(gym.Env[dict[str, np.ndarray], Any]):
    """The floor: ``HetCluster-v1``'s spaces and info keys, and a step that only copies them out."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012

    def __init__(self) -> None:
        real = gym.make("HetCluster-v1")
        obs, _ = real.reset(seed=0)
        _, _, _, _, info = real.step(int(np.flatnonzero(real.unwrapped.action_masks())[0]))  # type: ignore[attr-defined]
        self.observation_space = real.observation_space
        self.action_space = real.action_space
        self._obs = obs
        self._info = info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        return self._observe(), self._info_copy()

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self._observe(), 0.0, False, False, self._info_copy()

    def _observe(self) -> dict[str, np.ndarray]:
        return {k: v.copy() for k, v in self._obs.items()}

    def _info_copy(self) -> dict[str, Any]:
        return {
            k: v.copy() if isinstance(v, np.ndarray) else dict(v) if isinstance(v, dict) else v
            for k, v in self._info.items()
        }


def env_step_us(env_id: str, steps: int, seed: int) -> float:
    """CPU microseconds per ``env.step`` of a random masked agent on ``gym.make(env_id)`` (choice excluded)."""
    env = gym.make(env_id)
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    space = env.action_space
    masked = "action_mask" in info
    cpu = time.process_time
    env_cpu = 0.0
    for _ in range(steps):
        action = random_masked_action(space, info["action_mask"], rng) if masked else space.sample()
        t = cpu()
        _, _, terminated, truncated, info = env.step(action)
        env_cpu += cpu() - t
        if terminated or truncated:
            _, info = env.reset()
    env.close()
    return env_cpu / steps * 1e6


#: The parts of a step that ``residue`` times, ``(label, owner, method)``; the owner is a class, or the attribute
#: of the env that holds the instance whose class it is. Nested parts are subtracted from their parent's time.
RESIDUE_PARTS: tuple[tuple[str, str, str], ...] = (
    ("env_step", "env", "step"),
    ("transition", "env", "transition"),
    ("commit", "env", "_commit"),
    ("simulator_step", "Simulator", "step"),
    ("simulator_step_counts", "Simulator", "step_counts"),
    ("episode_end", "env", "_end_episode"),
    ("window_load", "env", "_load"),
    ("allocation", "state", "allocation"),
    ("epoch_features", "encoder", "begin_epoch"),
    ("epoch_present", "env", "_present"),
    ("observation", "encoder", "observe"),
    ("codec_apply", "codec", "apply"),
    ("info", "env", "_info"),
)


@contextlib.contextmanager
def timed_parts(raw: Any) -> Iterator[dict[str, float]]:
    """Wrap every part of :data:`RESIDUE_PARTS` of the unwrapped env ``raw`` in a CPU timer for the ``with`` block.

    Yields the CPU seconds spent in each part so far (a dict the timers update, keyed by label); the classes'
    methods are restored when the block ends, an error included.
    """
    from hetgym.sim.engine import Simulator

    cpu = time.process_time
    spent = dict.fromkeys((label for label, _, _ in RESIDUE_PARTS), 0.0)
    patched: list[tuple[type, str, Any]] = []
    try:
        for label, owner, name in RESIDUE_PARTS:
            cls = Simulator if owner == "Simulator" else type(raw) if owner == "env" else type(getattr(raw, owner))
            method = cls.__dict__.get(name)
            if method is None:  # inherited: wrap it on the class the instance has
                method = getattr(cls, name)

            def timed(*args: Any, _method: Any = method, _label: str = label, **kwargs: Any) -> Any:
                t = cpu()
                try:
                    return _method(*args, **kwargs)
                finally:
                    spent[_label] += cpu() - t

            patched.append((cls, name, cls.__dict__.get(name)))
            setattr(cls, name, timed)
        yield spent
    finally:
        for cls, name, original in reversed(patched):
            if original is None:
                delattr(cls, name)
            else:
                setattr(cls, name, original)


def residue(env_id: str, steps: int, seed: int) -> dict[str, float]:
    """Where a step of ``gym.make(env_id)`` goes: CPU µs per step of each part (a random masked agent).

    Every part in :data:`RESIDUE_PARTS` is wrapped in a timer (which adds its own cost, about a microsecond a call,
    so the parts sum to more than an untimed step; compare them with each other), and each part's time is its own,
    less the parts it calls: ``simulator_step`` (``Simulator.step`` and ``step_counts``), ``episode_end`` (the run's
    result and final metrics), ``commit_accounting`` (the rest of a commit: interval accounting, quiet ticks),
    ``window_load`` (the next epoch's window and draft), ``allocation`` (the draft as an Allocation),
    ``epoch_features`` and ``epoch_mask`` (the next epoch's fixed observation features and its mask),
    ``observation`` (each step's observation), ``codec_apply`` (the action on the draft, with the mask update),
    ``info``, ``transition_rest`` (the rest of ``transition``: reward, flags) and ``gymnasium_wrappers``
    (``gym.make``'s wrappers around ``env.step``). ``commits`` is the share of steps that commit.
    """
    env = gym.make(env_id)
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    cpu = time.process_time
    commits = 0
    outer = 0.0
    with timed_parts(env.unwrapped) as spent:
        space = env.action_space
        for _ in range(steps):
            action = random_masked_action(space, info["action_mask"], rng)
            t = cpu()
            _, _, terminated, truncated, info = env.step(action)
            outer += cpu() - t
            commits += int(info["committed"])
            if terminated or truncated:
                _, info = env.reset()
    us = {k: v / steps * 1e6 for k, v in spent.items()}
    parts = {
        "simulator_step": us["simulator_step"] + us["simulator_step_counts"],
        "episode_end": us["episode_end"],
        "commit_accounting": us["commit"] - us["simulator_step"] - us["simulator_step_counts"] - us["episode_end"],
        "window_load": us["window_load"],
        "allocation": us["allocation"],
        "epoch_features": us["epoch_features"],
        "epoch_mask": us["epoch_present"] - us["epoch_features"],
        "observation": us["observation"],
        "codec_apply": us["codec_apply"],
        "info": us["info"],
    }
    inside = us["commit"] + us["window_load"] + us["allocation"] + us["epoch_present"] + us["codec_apply"]
    parts["transition_rest"] = us["transition"] - inside - us["info"]
    parts["step_rest"] = us["env_step"] - us["transition"] - us["observation"]
    parts["gymnasium_wrappers"] = outer / steps * 1e6 - us["env_step"]
    return {"timed_step_cpu_us": outer / steps * 1e6, "commits": commits / steps, **parts}


def ppo_env_share(timesteps: int, fast_forward: bool, seed: int) -> dict[str, float]:
    """MaskablePPO's ``learn()`` on 8 ``HetCluster-Tiny-v1`` envs: the env's share of its CPU time."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([lambda: gym.make("HetCluster-Tiny-v1")] * 8)
    for env in venv.envs:
        env.unwrapped.fast_forward = fast_forward  # type: ignore[attr-defined]
    cpu = time.process_time
    env_cpu = [0.0]

    def timed(method: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t = cpu()
            try:
                return method(*args, **kwargs)
            finally:
                env_cpu[0] += cpu() - t

        return wrapper

    venv.step_wait = timed(venv.step_wait)  # type: ignore[method-assign]
    venv.reset = timed(venv.reset)  # type: ignore[method-assign]
    venv.env_method = timed(venv.env_method)  # type: ignore[method-assign]  # the action masks
    model = MaskablePPO("MultiInputPolicy", venv, n_steps=256, seed=seed, device="cpu")
    t0, wall0 = cpu(), time.perf_counter()
    model.learn(total_timesteps=timesteps)
    total, wall = cpu() - t0, time.perf_counter() - wall0
    return {"env_share": env_cpu[0] / total, "learn_steps_per_s": timesteps / wall, "learn_cpu_s": total}


def floor_main(args: argparse.Namespace, argv: list[str] | None) -> int:
    """``--floor``: the stub floor, the newest ids and CartPole-v1, then MaskablePPO's env share."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import torch

    torch.set_num_threads(1)
    gym.register("HetClusterStubFloor-v1", entry_point=StubEnv)
    ids = ("HetClusterStubFloor-v1", *NEWEST_IDS, "CartPole-v1")
    start_load = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    per_id: dict[str, list[float]] = {i: [] for i in ids}
    for seed in range(args.repeats):
        for env_id in ids:  # alternating, so the ids see the same load
            steps = args.steps if env_id != "CartPole-v1" else 5 * args.steps
            per_id[env_id].append(env_step_us(env_id, steps, seed))
    floor = statistics.median(per_id["HetClusterStubFloor-v1"])
    steps_rows = []
    for env_id in ids:
        us = statistics.median(per_id[env_id])
        steps_rows.append({"env_id": env_id, "step_cpu_us": us, "over_floor": us / floor, "runs": len(per_id[env_id])})
        print(f"{env_id:>24}: {us:8.1f} CPU-us/step  {us / floor:6.2f}x the stub floor")
    residues = []
    for env_id in NEWEST_IDS:
        runs = [residue(env_id, args.steps, seed) for seed in range(max(1, args.repeats // 2))]
        summary = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        residues.append({"env_id": env_id, "runs": len(runs), **summary})
        parts = ", ".join(f"{k} {v:.1f}" for k, v in summary.items() if k not in ("timed_step_cpu_us", "commits"))
        print(f"{env_id:>24}: timed step {summary['timed_step_cpu_us']:.1f} CPU-us = {parts}")
    ppo = []
    for fast in (True, False):
        runs = [ppo_env_share(args.ppo_timesteps, fast, seed) for seed in range(max(1, args.repeats // 2))]
        summary = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        ppo.append({"env_id": "HetCluster-Tiny-v1", "fast_forward": fast, "runs": len(runs), **summary})
        print(
            f"MaskablePPO on Tiny-v1 (fast_forward={fast}): env share {summary['env_share']:.1%}, "
            f"{summary['learn_steps_per_s']:,.0f} steps/s"
        )
    payload = {
        "benchmark": "newest ids beside the floor: CPU-us per env.step through gym.make; MaskablePPO's env share",
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *(argv if argv is not None else sys.argv[1:])]),
        "statistic": f"median of {args.repeats} runs (seeds 0..{args.repeats - 1}), {args.steps} steps each "
        "(CartPole-v1 five times as many), ids alternating; MaskablePPO: median of "
        f"{max(1, args.repeats // 2)} learn() runs of {args.ppo_timesteps} timesteps; one pinned core",
        "goal": "env step at most 3x the stub floor on the newest id; MaskablePPO env share at most 25% on Tiny",
        "machine": machine(),
        "load_average_at_start": start_load,
        "load_average_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "step_cost": steps_rows,
        "residue": residues,
        "residue_note": "CPU-us per step of each part of a timed run (every part wrapped in a timer, which adds "
        "about a microsecond a call: compare the parts with each other, the untimed step is step_cost); each "
        "part less the parts it calls; median over runs; see residue() in the script",
        "maskable_ppo": ppo,
    }
    write_json(args.out, payload)
    return 0


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` to ``path`` atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(payload, fh, indent=2)
        fh.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    print(f"wrote {path}")


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
    parser.add_argument("--base", default=None, help="with --newest: also measure this commit")
    parser.add_argument("--floor", action="store_true", help="the newest ids beside the floor (above)")
    parser.add_argument("--ppo-timesteps", type=int, default=8_192, help="with --floor: MaskablePPO timesteps")
    parser.add_argument("--newest-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--modes", nargs="+", default=list(NEWEST_MODES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.newest_child:
        print(json.dumps(newest_child(args.steps, args.seed, args.modes)))
        return 0
    if args.newest:
        if args.quick:
            args.repeats, args.steps = 1, 1_000
        args.out = args.out or Path("bench/env_newest.json")
        return newest_main(args, argv)
    if args.floor:
        if args.quick:
            args.repeats, args.steps, args.ppo_timesteps = 1, 500, 2_048
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
