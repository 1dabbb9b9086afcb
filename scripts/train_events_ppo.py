"""MaskablePPO from scratch on the event-driven interface (``HetClusterEvents-v0``), resumable, then evaluated.

One readable recipe: a dataclass of arguments, a seeding block, a run name; ``n_envs`` environments in one
process (``DummyVecEnv``), observations flattened for an ``MlpPolicy``; a checkpoint every
``checkpoint_steps`` (``--resume`` continues from the latest one in the run folder); at the end the
deterministic policy plays the held-out workload seeds and is compared, paired per seed, with ElasticFlow
and EDF-with-admission on the simulator (the same workloads). Everything is written to the run folder:
``args.json``, ``checkpoints/`` and ``model.zip`` (SB3 archives to resume from), ``model.pt`` + ``agent.json``
(the policy in the safe format, which the evaluation and ``hetgym evaluate`` read), TensorBoard logs, ``eval.json``.

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

from agents.events import (
    EventPPOArgs,
    env_overrides,
    finish,
    latest_checkpoint,
    learn_and_save,
    make_venv,
    new_ppo,
    parse_args,
    saved_model,
    write_args,
)


@dataclass
class Args(EventPPOArgs):
    """The recipe's arguments (logged to ``args.json``): MaskablePPO's, on the event-driven ids."""

    out: str = "runs/events-ppo"


def train(args: Args, run: Path) -> Path:
    import torch
    from sb3_contrib import MaskablePPO

    # Seeding block.
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    venv = make_venv(args.env_id, args.n_envs, subproc=args.subproc, seed=args.seed, **env_overrides(args))
    ckpts = run / "checkpoints"
    resume_from = latest_checkpoint(ckpts) if args.resume else None
    if resume_from is not None:
        model = MaskablePPO.load(resume_from, env=venv, device="cpu")
        print(f"resuming from {resume_from} ({model.num_timesteps} steps)", flush=True)
    else:
        model = new_ppo(MaskablePPO, venv, args, run)
    return learn_and_save(model, args, run, resumed=resume_from is not None, tb_log_name="ppo", recipe="events-ppo")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(Args, argv, __doc__)
    run = Path(args.out)
    write_args(args, run)
    started = time.perf_counter()
    model_path = saved_model(run) if args.eval_only else train(args, run)
    return finish(args, run, model_path, time.perf_counter() - started, recipe="events-ppo")


if __name__ == "__main__":
    raise SystemExit(main())
