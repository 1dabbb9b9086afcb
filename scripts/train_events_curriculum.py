"""MaskablePPO from scratch on the event-driven interface (``HetClusterEvents-v0``) with a curriculum over
episode length and load: short, light workloads first, the flagship scenario last; a held-out evaluation.

The recipe is ``train_events_ppo.py``'s (same network, hyperparameters, seeding, checkpoints, resume and
evaluation) with one change: training runs through ``--stages``, each ``JOBS:RATE:STEPS``, the workload of
every training episode cut to ``JOBS`` jobs arriving at ``RATE`` per hour for ``STEPS`` timesteps
(``gym.make(..., workload={"num_jobs": JOBS, "arrival_rate_per_h": RATE})``), then the next stage. The
default ends on the flagship scenario itself (120 jobs at 12 per hour), where the evaluation runs. A short
episode gives each decision's outcome back within a few dozen decisions, and a light load lets a random
policy meet deadlines often enough to tell better choices from worse ones; the agent then carries what it
learned to the long, loaded episodes.

``--total-timesteps`` is the stages' sum (set from ``--stages``). ``--resume`` continues in the stage the
latest checkpoint is in; ``--max-train-s`` bounds the whole run's wall time.

Usage::

    python scripts/train_events_curriculum.py --stages 30:6:10000,60:9:10000,120:12:20000 --out runs/cur-s0
    python scripts/train_events_curriculum.py --out runs/cur-s0 --resume
    python scripts/train_events_curriculum.py --out runs/cur-s0 --eval-only
"""

from __future__ import annotations

import dataclasses
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

#: The recipe's name in ``agent.json``.
RECIPE = "events-curriculum"


@dataclass
class Args(EventPPOArgs):
    """The recipe's arguments (logged to ``args.json``): MaskablePPO's, and the curriculum's stages."""

    out: str = "runs/events-curriculum"
    stages: str = "30:6:10000,60:9:10000,120:12:20000"


def parse_stages(text: str) -> list[tuple[int, float, int]]:
    """``"30:6:10000,..."`` as ``[(jobs, arrivals per hour, steps), ...]``; a malformed stage raises ``SystemExit``."""
    stages = []
    for part in text.split(","):
        try:
            jobs, rate, steps = part.split(":")
            stage = (int(jobs), float(rate), int(steps))
        except ValueError:
            raise SystemExit(f"--stages: {part!r} is not JOBS:RATE:STEPS (e.g. 30:6:10000)") from None
        if stage[0] < 1 or not 0 < stage[1] <= 1e6 or stage[2] < 1:
            raise SystemExit(f"--stages: {part!r} needs JOBS >= 1, 0 < RATE <= 1e6 arrivals per hour, STEPS >= 1")
        stages.append(stage)
    return stages


def train(args: Args, run: Path) -> Path:
    import torch
    from sb3_contrib import MaskablePPO

    stages = parse_stages(args.stages)
    # Seeding block.
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    resume_from = latest_checkpoint(run / "checkpoints") if args.resume else None
    started = time.perf_counter()
    model = None
    end = 0
    path = run / "model.pt"
    for i, (jobs, rate, steps) in enumerate(stages):
        end += steps
        overrides = env_overrides(args)
        workload = {**overrides.pop("workload", {}), "num_jobs": jobs, "arrival_rate_per_h": rate}
        venv = make_venv(
            args.env_id, args.n_envs, subproc=args.subproc, seed=args.seed + i, workload=workload, **overrides
        )
        if model is None:
            if resume_from is not None:
                model = MaskablePPO.load(resume_from, env=venv, device="cpu")
                print(f"resuming from {resume_from} ({model.num_timesteps} steps)", flush=True)
            else:
                model = new_ppo(MaskablePPO, venv, args, run)
        else:
            model.set_env(venv)
        if model.num_timesteps >= end:
            continue
        left_s = args.max_train_s - (time.perf_counter() - started) if args.max_train_s > 0 else 0.0
        if args.max_train_s > 0 and left_s <= 0:
            break
        print(f"stage {i + 1}/{len(stages)}: {jobs} jobs at {rate:g}/h up to {end} steps", flush=True)
        stage_args = dataclasses.replace(args, total_timesteps=end, max_train_s=left_s)
        resumed = model.num_timesteps > 0
        path = learn_and_save(model, stage_args, run, resumed=resumed, tb_log_name="curriculum", recipe=RECIPE)
    assert model is not None
    if not path.exists():  # every stage was done already (a resumed, finished run)
        path = learn_and_save(model, args, run, resumed=True, tb_log_name="curriculum", recipe=RECIPE)
    return path


def main(argv: list[str] | None = None) -> int:
    args = parse_args(Args, argv, __doc__)
    args.total_timesteps = sum(steps for _, _, steps in parse_stages(args.stages))
    run = Path(args.out)
    write_args(args, run)
    started = time.perf_counter()
    model_path = saved_model(run) if args.eval_only else train(args, run)
    return finish(args, run, model_path, time.perf_counter() - started, recipe=RECIPE)


if __name__ == "__main__":
    raise SystemExit(main())
