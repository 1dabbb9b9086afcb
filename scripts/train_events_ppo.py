"""MaskablePPO from scratch on the event-driven interface (``HetCluster-v2``), resumable, then a held-out evaluation.

One readable recipe: a dataclass of arguments, a seeding block, a run name; ``n_envs`` environments in one
process (``DummyVecEnv``), observations flattened for an ``MlpPolicy``; a checkpoint every
``checkpoint_steps`` (``--resume`` continues from the latest one in the run folder); at the end the
deterministic policy plays the held-out workload seeds and is compared, paired per seed, with ElasticFlow
and EDF-with-admission on the simulator (the same workloads). Everything is written to the run folder:
``args.json``, ``checkpoints/``, ``model.zip``, TensorBoard logs, ``eval.json``.

Usage::

    python scripts/train_events_ppo.py --total-timesteps 60000 --out runs/events-ppo-s0
    python scripts/train_events_ppo.py --out runs/events-ppo-s0 --resume --total-timesteps 100000
    python scripts/train_events_ppo.py --out runs/events-ppo-s0 --eval-only
    python scripts/train_events_ppo.py --subproc --n-envs 14 --max-train-s 480 --skip-eval --out runs/big
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import baselines  # noqa: F401  (registers the policies)
import hetgym  # noqa: F401  (registers the ids)
from hetgym.sim import Simulator, make_policy
from hetgym.stats import paired_interval

EXPERTS = ("elasticflow", "edf-admission")


def parse_seeds(text: str) -> list[int]:
    """``"1000-1019"`` or ``"1,2,5"`` as a list of seeds."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi) + 1) if hi else [int(lo)])
    return out


@dataclass
class Args:
    """The recipe's arguments (logged to ``args.json``)."""

    env_id: str = "HetCluster-v2"
    out: str = "runs/events-ppo"
    seed: int = 0
    total_timesteps: int = 60_000
    n_envs: int = 4
    n_steps: int = 256
    batch_size: int = 128
    n_epochs: int = 10
    learning_rate: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    ent_coef: float = 0.01
    checkpoint_steps: int = 10_000
    torch_threads: int = 1
    eval_seeds: str = "1000-1019"
    subproc: bool = False
    max_train_s: float = 0.0
    resume: bool = False
    eval_only: bool = False
    skip_eval: bool = False


def make_env(env_id: str) -> gym.Env[Any, Any]:
    return gym.wrappers.FlattenObservation(gym.make(env_id))


def latest_checkpoint(folder: Path) -> Path | None:
    found = sorted(folder.glob("ckpt_*_steps.zip"), key=lambda p: int(p.stem.split("_")[1]))
    return found[-1] if found else None


def train(args: Args, run: Path) -> Path:
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback, CallbackList, CheckpointCallback
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    class StopAfter(BaseCallback):
        """Stops training once ``max_train_s`` seconds of wall time have passed (0: never)."""

        def __init__(self, max_s: float) -> None:
            super().__init__()
            self.max_s = max_s
            self.start = time.perf_counter()

        def _on_step(self) -> bool:
            return not (self.max_s > 0 and time.perf_counter() - self.start > self.max_s)

    # Seeding block.
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    factories = [lambda: Monitor(make_env(args.env_id))] * args.n_envs
    venv = SubprocVecEnv(factories, start_method="fork") if args.subproc else DummyVecEnv(factories)
    venv.seed(args.seed)
    ckpts = run / "checkpoints"
    resume_from = latest_checkpoint(ckpts) if args.resume else None
    if resume_from is not None:
        model = MaskablePPO.load(resume_from, env=venv, device="cpu")
        print(f"resuming from {resume_from} ({model.num_timesteps} steps)", flush=True)
    else:
        model = MaskablePPO(
            "MlpPolicy",
            venv,
            n_steps=args.n_steps,
            batch_size=args.batch_size,
            n_epochs=args.n_epochs,
            learning_rate=args.learning_rate,
            gamma=args.gamma,
            gae_lambda=args.gae_lambda,
            ent_coef=args.ent_coef,
            seed=args.seed,
            device="cpu",
            tensorboard_log=str(run / "tb"),
            verbose=0,
        )
    remaining = args.total_timesteps - model.num_timesteps
    if remaining > 0:
        every = max(args.checkpoint_steps // args.n_envs, 1)
        callback = CallbackList(
            [CheckpointCallback(every, str(ckpts), name_prefix="ckpt"), StopAfter(args.max_train_s)]
        )
        model.learn(remaining, callback=callback, reset_num_timesteps=resume_from is None, tb_log_name="ppo")
    path = run / "model.zip"
    model.save(path)
    return path


def evaluate(args: Args, model_path: Path) -> dict[str, Any]:
    from sb3_contrib import MaskablePPO

    # Schedules are pickled functions: replaced, so a model saved under another Python version loads too.
    constant = {"learning_rate": 0.0, "lr_schedule": lambda _: 0.0, "clip_range": lambda _: 0.0}
    model = MaskablePPO.load(model_path, device="cpu", custom_objects=constant)
    seeds = parse_seeds(args.eval_seeds)
    rows = []
    for seed in seeds:
        env = make_env(args.env_id)
        u = env.unwrapped
        obs, info = env.reset(seed=seed, options={"workload_seed": seed})
        actions: list[int] = []
        while True:
            action, _ = model.predict(obs, action_masks=info["action_mask"], deterministic=True)
            actions.append(int(action))
            obs, _, terminated, truncated, info = env.step(int(action))
            if terminated or truncated:
                break
        row = {
            "seed": seed,
            "agent_dsr": info["metrics"]["dsr"],
            "decisions_per_job": info["metrics"]["decisions_per_job"],
        }
        row["action_counts"] = np.bincount(actions, minlength=u.actions.n).tolist()
        for expert in EXPERTS:
            row[f"{expert}_dsr"] = (
                Simulator(u.cluster, u.jobs, config=u.config.sim).run(make_policy(expert)).metrics["dsr"]
            )
        rows.append(row)
        print(json.dumps(row), flush=True)
    agent = [r["agent_dsr"] for r in rows]
    summary: dict[str, Any] = {"seeds": seeds, "agent_dsr": float(np.mean(agent)), "rows": rows}
    for expert in EXPERTS:
        theirs = [r[f"{expert}_dsr"] for r in rows]
        diff = paired_interval(agent, theirs)
        summary[expert] = {"dsr": float(np.mean(theirs)), "diff_mean": diff.mean, "ci": [diff.low, diff.high]}
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for f in dataclasses.fields(Args):
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            parser.add_argument(flag, action="store_true")
        else:
            parser.add_argument(flag, type=type(f.default), default=f.default)
    args = Args(**vars(parser.parse_args(argv)))
    run = Path(args.out)
    run.mkdir(parents=True, exist_ok=True)
    (run / "args.json").write_text(json.dumps(dataclasses.asdict(args), indent=1) + "\n")
    started = time.perf_counter()
    model_path = run / "model.zip" if args.eval_only else train(args, run)
    trained_s = time.perf_counter() - started
    if args.skip_eval:
        print(json.dumps({"train_wall_s": trained_s, "model": str(model_path)}))
        return 0
    summary = evaluate(args, model_path)
    summary["train_wall_s"] = trained_s
    (run / "eval.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
