"""The ``--floor`` measures of ``scripts/bench/bench_env.py`` and the helpers its modes share (not a script).

The stub floors (:class:`StubEnv`), a step's CPU cost through ``gym.make`` (:func:`env_step_us`), where a step goes
(:func:`residue`, :data:`RESIDUE_PARTS`), the event ids' CPU per decision (:func:`event_decision_us`, before and
after with ``--base``) and MaskablePPO's env share (:func:`ppo_env_share`); ``bench_env.py`` loads this module by
its path (scripts are not a package) and re-exports these names. See ``bench_env.py``'s docstring for the command.
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

import gymnasium as gym
import numpy as np

import hetgym

SCRIPT = Path(__file__).resolve().parent / "bench_env.py"


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


@contextlib.contextmanager
def base_worktree(repo: Path, rev: str | None) -> Iterator[tuple[Path | None, str | None]]:
    """A temporary detached git worktree of ``rev`` (``None``: none), as ``(folder, short revision)``; removed
    when the block ends, an error included."""
    if rev is None:
        yield None, None
        return
    short = subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="hetgym-base-") as tmp:
        tree = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(tree), short], cwd=repo, check=True)
        try:
            yield tree, short
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=repo, check=False)


class StubEnv(gym.Env[Any, Any]):
    """The floor: ``env_id``'s spaces and info keys, and a step that only copies them out."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012

    def __init__(self, env_id: str = "HetCluster-v1", **kwargs: Any) -> None:
        real = gym.make(env_id, **kwargs)
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

    def _observe(self) -> Any:
        if isinstance(self._obs, np.ndarray):
            return self._obs.copy()
        return {k: v.copy() for k, v in self._obs.items()}

    def _info_copy(self) -> dict[str, Any]:
        return {
            k: v.copy() if isinstance(v, np.ndarray) else dict(v) if isinstance(v, dict) else v
            for k, v in self._info.items()
        }


def env_step_us(env_id: str, steps: int, seed: int, kwargs: dict[str, Any] | None = None) -> float:
    """CPU microseconds per ``env.step`` of a random masked agent on ``gym.make(env_id, **kwargs)`` (choice
    excluded), resetting as episodes end."""
    env = gym.make(env_id, **(kwargs or {}))
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
    ("observation", "env", "_observe"),
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


#: ``--floor``'s ids: the flat newest ids, then the Dict ids they succeed; and the stub whose spaces each is held to.
FLOOR_IDS = ("HetCluster-v2", "HetCluster-Tiny-v2", "HetCluster-v1", "HetCluster-Tiny-v1")
#: The stub floors: ``HetCluster-v2``'s spaces (flat ``Box``) and ``HetCluster-v1``'s (``Dict``).
STUB_IDS = {"HetClusterStubFloor-v2": "HetCluster-v2", "HetClusterStubFloor-v1": "HetCluster-v1"}
#: The event-driven configurations timed per decision: ``(label, env id, extra kwargs)``; ``head_only`` ids did not
#: exist before the flat ids.
EVENT_CASES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("HetClusterEvents-v1 (Dict)", "HetClusterEvents-v1", {}),
    ("HetClusterEvents-v1 flatten=True", "HetClusterEvents-v1", {"flatten": True}),
    ("HetClusterEvents-v2", "HetClusterEvents-v2", {}),
)


def _floor_of(env_id: str) -> str:
    """The stub an id is held to: the Dict one for a Dict id, else the flat one (CartPole's observation is a Box)."""
    dict_id = env_id.startswith("HetCluster") and env_id.endswith("-v1")
    return "HetClusterStubFloor-v1" if dict_id else "HetClusterStubFloor-v2"


def event_decision_us(env_id: str, kwargs: dict[str, Any], steps: int, seed: int) -> float:
    """CPU microseconds per decision of a random masked agent on ``gym.make(env_id, **kwargs)``."""
    return env_step_us(env_id, steps, seed, kwargs)


def events_child(steps: int, seed: int, labels: list[str]) -> dict[str, float]:
    """Each event case named in ``labels`` that this tree registers, CPU-us per decision (one interpreter)."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    out = {}
    for label, env_id, kwargs in EVENT_CASES:
        if label in labels and env_id in gym.registry:
            out[label] = event_decision_us(env_id, kwargs, steps, seed)
    return out


def events_before_after(args: argparse.Namespace) -> tuple[list[dict[str, Any]], str | None, list[float]]:
    """The event cases on the working tree and (``--base``) on that commit, alternating in fresh interpreters."""
    script = SCRIPT
    repo = script.parents[2]
    labels = [label for label, _, _ in EVENT_CASES]
    sides: dict[str, Path] = {"head": repo}
    loads: list[float] = []
    with base_worktree(repo, args.base) as (tree, base_rev):
        if tree is not None:
            sides = {"base": tree, **sides}
        runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
        for seed in range(args.repeats):
            for side, folder in sides.items():
                loads.append(os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan)
                cmd = [sys.executable, str(script), "--events-child", "--steps", str(args.event_steps)]
                cmd += ["--seed", str(seed), "--modes", *labels]
                env = {**os.environ, "PYTHONPATH": str(folder)}
                # The child runs this script (the working tree's), importing the side's hetgym.
                out = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, check=True).stdout
                runs[side].append(json.loads(out.strip().splitlines()[-1]))
    rows = []
    for label in labels:
        for side in sides:
            values = [run[label] for run in runs[side] if label in run]
            if not values:
                continue
            us = statistics.median(values)
            name = f"base {base_rev}" if side == "base" else "head"
            rows.append({"case": label, "side": name, "decision_cpu_us": us, "runs": len(values)})
            print(f"{label:>34} {name:>12}: {us:8.1f} CPU-us per decision")
    return rows, base_rev, loads


def floor_main(args: argparse.Namespace, argv: list[str] | None) -> int:
    """``--floor``: the stub floors, the newest ids and CartPole-v1, their residues, the event ids per decision,
    then MaskablePPO's env share."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    start_load = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    for stub_id, spaces_of in STUB_IDS.items():
        gym.register(stub_id, entry_point=StubEnv, kwargs={"env_id": spaces_of})
    ids = (*STUB_IDS, *FLOOR_IDS, "CartPole-v1")
    per_id: dict[str, list[float]] = {i: [] for i in ids}
    for seed in range(args.repeats):
        for env_id in ids:  # alternating, so the ids see the same load
            steps = args.steps if env_id != "CartPole-v1" else 5 * args.steps
            per_id[env_id].append(env_step_us(env_id, steps, seed))
    medians = {env_id: statistics.median(values) for env_id, values in per_id.items()}
    steps_rows = []
    for env_id in ids:
        us, floor_id = medians[env_id], _floor_of(env_id)
        floor = medians[floor_id]
        steps_rows.append(
            {
                "env_id": env_id,
                "step_cpu_us": us,
                "floor": floor_id,
                "over_floor": us / floor,
                "runs": len(per_id[env_id]),
            }
        )
        print(f"{env_id:>24}: {us:8.1f} CPU-us/step  {us / floor:6.2f}x {floor_id}")
    residues = []
    for env_id in FLOOR_IDS:
        runs = [residue(env_id, args.steps, seed) for seed in range(max(1, args.repeats // 2))]
        summary = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        residues.append({"env_id": env_id, "runs": len(runs), **summary})
        parts = ", ".join(f"{k} {v:.1f}" for k, v in summary.items() if k not in ("timed_step_cpu_us", "commits"))
        print(f"{env_id:>24}: timed step {summary['timed_step_cpu_us']:.1f} CPU-us = {parts}")
    events, base_rev, event_loads = events_before_after(args)
    ppo = []
    if args.ppo_timesteps > 0:
        import torch

        torch.set_num_threads(1)
        for fast in (True, False):
            runs = [ppo_env_share(args.ppo_timesteps, fast, seed) for seed in range(max(1, args.repeats // 2))]
            summary = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            ppo.append({"env_id": "HetCluster-Tiny-v1", "fast_forward": fast, "runs": len(runs), **summary})
            print(
                f"MaskablePPO on Tiny-v1 (fast_forward={fast}): env share {summary['env_share']:.1%}, "
                f"{summary['learn_steps_per_s']:,.0f} steps/s"
            )
    payload = {
        "benchmark": "newest ids beside the floor: CPU-us per env.step through gym.make; the event ids' CPU-us per "
        "decision; MaskablePPO's env share",
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *(argv if argv is not None else sys.argv[1:])]),
        "statistic": f"median of {args.repeats} runs (seeds 0..{args.repeats - 1}), {args.steps} steps each "
        "(CartPole-v1 five times as many), ids alternating; each id against the stub with its spaces (floor); "
        f"event ids: median of {args.repeats} runs of {args.event_steps} decisions, sides alternating in fresh "
        f"interpreters; MaskablePPO: median of {max(1, args.repeats // 2)} learn() runs of {args.ppo_timesteps} "
        "timesteps (0: not run); one pinned core",
        "goal": "env step at most 3x the stub floor on the newest flat id (HetCluster-v2); MaskablePPO env share at "
        "most 25% on Tiny",
        "machine": machine(),
        "affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "load_average_at_start": start_load,
        "load_average_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "step_cost": steps_rows,
        "residue": residues,
        "residue_note": "CPU-us per step of each part of a timed run (every part wrapped in a timer, which adds "
        "about a microsecond a call: compare the parts with each other, the untimed step is step_cost); each "
        "part less the parts it calls; median over runs; see residue() in the script",
        "events": events,
        "events_base": base_rev,
        "events_load_average_1min_at_each_run": event_loads,
        "maskable_ppo": ppo,
    }
    write_json(args.out, payload)
    return 0
