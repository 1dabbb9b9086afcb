"""Kickstarting on the event-driven interface (``HetClusterEvents-v0``): clone a teacher, pre-train the critic on
its returns, then MaskablePPO with an annealed distillation term towards the clone; a held-out evaluation.

One readable recipe (the phases are in ``agents/kickstart.py``):

1. **Warm start.** The teacher (``--teacher``: ``elasticflow``, action 0 at every arrival; ``force-any``,
   force every job on any GPU type; or any registered policy's closest choices, e.g. ``dancer``) plays the
   training workload seeds ``--teacher-seeds`` (which must not meet ``--eval-seeds``); the policy's actor
   is trained by cross-entropy on the teacher's actions under the masked logits.
2. **Critic.** The value head is fitted to the teacher's discounted returns with the actor frozen. The
   policy after phases 1-2 is saved as ``clone.zip`` and is the distillation teacher of phase 3.
3. **PPO with distillation.** ``MaskablePPO`` whose loss gains ``beta_t * KL(clone || policy)`` on each
   minibatch of rollout states, ``beta_t`` falling linearly from ``--distill-start`` to 0 over
   ``--distill-steps`` timesteps, so that fine-tuning starts at the teacher and cannot collapse the clone
   before the critic and the advantages carry it.

As in ``train_events_ppo.py``: a dataclass of arguments logged to ``args.json``, a seeding block,
``n_envs`` environments (``--subproc`` for one process each), a checkpoint every ``checkpoint_steps``
(``--resume`` continues from the latest one and reloads ``clone.zip``), ``--max-train-s`` to stop PPO on
wall time, and the same evaluation against ElasticFlow and EDF-with-admission on the held-out seeds.
The run folder holds ``args.json``, ``teacher.json`` (the teacher's DSR on its seeds, the clone's
agreement, the critic's loss), ``clone.zip``, ``checkpoints/``, ``model.zip`` (SB3 archives to resume from),
``model.pt`` + ``agent.json`` (the policy in the safe format, which the evaluation reads), TensorBoard logs
(``tb/pretrain``: ``bc/accuracy``, ``bc/loss``, ``critic/pretrain_loss`` by epoch; ``tb/kickstart_1``:
PPO's curves with ``train/distill_beta`` and ``train/distill_kl``) and ``eval.json``.

Usage::

    python scripts/train_events_kickstart.py --teacher force-any --total-timesteps 60000 --out runs/kick-s0
    python scripts/train_events_kickstart.py --out runs/kick-s0 --resume --total-timesteps 100000
    python scripts/train_events_kickstart.py --out runs/kick-s0 --eval-only
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.events import (
    EventPPOArgs,
    env_overrides,
    finish,
    latest_checkpoint,
    learn_and_save,
    make_venv,
    new_ppo,
    parse_args,
    parse_seeds,
    saved_model,
    write_args,
)


@dataclass
class Args(EventPPOArgs):
    """The recipe's arguments (logged to ``args.json``): the warm start's, then MaskablePPO's."""

    out: str = "runs/events-kickstart"
    teacher: str = "force-any"
    teacher_seeds: str = "0-39"
    bc_epochs: int = 30
    bc_lr: float = 1e-3
    bc_batch_size: int = 256
    critic_epochs: int = 30
    critic_lr: float = 1e-3
    distill_start: float = 1.0
    distill_steps: int = 30_000


def warm_start(args: Args, model: Any, run: Path) -> dict[str, Any]:
    """Phases 1-2 on ``model``'s policy: collect the teacher, clone it, fit the critic; log to ``tb/pretrain``."""
    from stable_baselines3.common.logger import configure

    from agents.kickstart import behaviour_clone, collect_teacher, pretrain_critic

    seeds = parse_seeds(args.teacher_seeds)
    held_out = sorted(set(seeds) & set(parse_seeds(args.eval_seeds)))
    if held_out:
        raise SystemExit(f"--teacher-seeds meet the held-out --eval-seeds: {held_out}")
    started = time.perf_counter()
    data = collect_teacher(args.env_id, args.teacher, seeds, args.gamma, env_overrides(args))
    collect_s = time.perf_counter() - started
    logger = configure(str(run / "tb" / "pretrain"), ["tensorboard"])
    batch, seed = args.bc_batch_size, args.seed
    accuracy = behaviour_clone(
        model.policy, data, epochs=args.bc_epochs, lr=args.bc_lr, batch_size=batch, seed=seed, logger=logger
    )
    critic_loss = pretrain_critic(
        model.policy, data, epochs=args.critic_epochs, lr=args.critic_lr, batch_size=batch, seed=seed, logger=logger
    )
    logger.close()
    return {
        "teacher": args.teacher,
        "seeds": seeds,
        "states": len(data.actions),
        "teacher_dsr": float(sum(data.dsr) / len(data.dsr)),
        "collect_wall_s": collect_s,
        "bc_accuracy": accuracy,
        "critic_pretrain_loss": critic_loss,
    }


def train(args: Args, run: Path) -> Path:
    import torch
    from sb3_contrib import MaskablePPO

    from agents.kickstart import KickstartPPO, frozen_copy

    # Seeding block.
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    venv = make_venv(args.env_id, args.n_envs, subproc=args.subproc, seed=args.seed, **env_overrides(args))
    ckpts = run / "checkpoints"
    resume_from = latest_checkpoint(ckpts) if args.resume else None
    if resume_from is not None:
        model = KickstartPPO.load(resume_from, env=venv, device="cpu")
        clone = MaskablePPO.load(run / "clone.zip", device="cpu")
        print(f"resuming from {resume_from} ({model.num_timesteps} steps)", flush=True)
    else:
        model = new_ppo(KickstartPPO, venv, args, run)
        report = warm_start(args, model, run)
        (run / "teacher.json").write_text(json.dumps(report, indent=1) + "\n")
        print(json.dumps(report), flush=True)
        model.save(run / "clone.zip")
        clone = model
    model.teacher = frozen_copy(clone.policy)
    model.distill_start, model.distill_steps = args.distill_start, args.distill_steps
    resumed = resume_from is not None
    return learn_and_save(
        model, args, run, resumed=resumed, tb_log_name="kickstart", recipe="events-kickstart", teacher=args.teacher
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(Args, argv, __doc__)
    run = Path(args.out)
    write_args(args, run)
    started = time.perf_counter()
    model_path = saved_model(run) if args.eval_only else train(args, run)
    return finish(args, run, model_path, time.perf_counter() - started, recipe="events-kickstart", teacher=args.teacher)


if __name__ == "__main__":
    raise SystemExit(main())
