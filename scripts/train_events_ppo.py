"""MaskablePPO from scratch on the event-driven interface (``HetClusterEvents-v0``), resumable, then evaluated.

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

import time
from dataclasses import dataclass
from pathlib import Path

from agents.events import finish, latest_checkpoint, learn_and_save, make_venv, parse_args, write_args


@dataclass
class Args:
    """The recipe's arguments (logged to ``args.json``)."""

    env_id: str = "HetClusterEvents-v0"
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


def train(args: Args, run: Path) -> Path:
    import torch
    from sb3_contrib import MaskablePPO

    # Seeding block.
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    venv = make_venv(args.env_id, args.n_envs, subproc=args.subproc, seed=args.seed)
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
    return learn_and_save(model, args, run, resumed=resume_from is not None, tb_log_name="ppo")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(Args, argv, __doc__)
    run = Path(args.out)
    write_args(args, run)
    started = time.perf_counter()
    model_path = run / "model.zip" if args.eval_only else train(args, run)
    return finish(args, run, model_path, time.perf_counter() - started)


if __name__ == "__main__":
    raise SystemExit(main())
