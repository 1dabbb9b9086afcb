"""The event-driven interface's recipes: ``hetgym train --algo events-ppo|kickstart|curriculum``.

Each is MaskablePPO with an ``MlpPolicy`` on the flat observation of a ``HetClusterEvents`` id (the pieces
they share are in :mod:`agents.events`), resumable from its checkpoints, then compared on the held-out
workload seeds with ElasticFlow and EDF-with-admission on the simulator (paired per seed):

- ``events-ppo`` (:class:`~agents.args.EventPPOArgs`): from scratch.
- ``kickstart`` (:class:`~agents.args.KickstartArgs`, the phases in :mod:`agents.kickstart`): the teacher
  plays ``teacher_seeds``, the actor is cloned from its actions and the critic fitted to its returns; the
  clone, saved as ``clone.zip``, then pulls PPO towards it by ``beta_t * KL(clone || policy)``, ``beta_t``
  falling from ``distill_start`` to 0 over ``distill_steps`` timesteps.
- ``curriculum`` (:class:`~agents.args.CurriculumArgs`): PPO through ``stages``, each ``JOBS:RATE:STEPS``:
  every training episode's workload cut to ``JOBS`` jobs arriving at ``RATE`` per hour for ``STEPS``
  timesteps, the default ending on the flagship scenario (120 jobs at 12 per hour). A short episode gives
  each decision's outcome back within a few dozen decisions, and a light load lets a random policy meet
  deadlines often enough to tell better choices from worse ones. ``total_timesteps`` is the stages' sum.

The run folder ``out_dir/run_name`` holds ``args.json``, ``checkpoints/`` and ``model.zip`` (SB3 archives
to resume from: pickle, so resume only runs you made, ``docs/security.md``), ``model.pt`` + ``agent.json``
(the policy in the safe format, which the evaluation and ``hetgym evaluate`` read), TensorBoard logs and
``eval.json``; kickstarting adds ``teacher.json`` (the teacher's DSR on its seeds, the clone's agreement,
the critic's loss) and ``clone.zip``. ``--resume`` (with the run's ``--run-name``) continues from the
latest checkpoint, ``--eval-only`` evaluates the saved model, ``--max-train-s`` stops training on wall time.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

from agents.args import AgentError, CurriculumArgs, EventPPOArgs, KickstartArgs, parse_seeds
from agents.bc import RunResult
from agents.common import META_FILE, AgentMeta, run_name, seed_everything
from agents.events import (
    EXPERTS,
    check_event_id,
    env_overrides,
    finish,
    latest_checkpoint,
    learn_and_save,
    make_venv,
    new_ppo,
    saved_model,
    write_args,
)
from agents.progress import progress_report
from hetgym.progress import ProgressReport

#: Each recipe's name in ``agent.json`` (and in its default run name).
RECIPE_NAMES: dict[type[EventPPOArgs], str] = {
    EventPPOArgs: "events-ppo",
    KickstartArgs: "events-kickstart",
    CurriculumArgs: "events-curriculum",
}


def parse_stages(text: str) -> list[tuple[int, float, int]]:
    """``"30:6:10000,..."`` as ``[(jobs, arrivals per hour, steps), ...]``; a malformed stage raises."""
    stages = []
    for part in text.split(","):
        try:
            jobs, rate, steps = part.split(":")
            stage = (int(jobs), float(rate), int(steps))
        except ValueError:
            raise AgentError(f"--stages: {part!r} is not JOBS:RATE:STEPS (e.g. 30:6:10000)") from None
        if stage[0] < 1 or not 0 < stage[1] <= 1e6 or stage[2] < 1:
            raise AgentError(f"--stages: {part!r} needs JOBS >= 1, 0 < RATE <= 1e6 arrivals per hour, STEPS >= 1")
        stages.append(stage)
    return stages


def check(args: EventPPOArgs) -> Path:
    """Refuse bad arguments before anything is written; the run folder."""
    check_event_id(args.env_id, f"--algo {args.choice}")
    env_overrides(args)
    parse_seeds(args.eval_seeds)
    if isinstance(args, CurriculumArgs):
        args.total_timesteps = sum(steps for _, _, steps in parse_stages(args.stages))
    if isinstance(args, KickstartArgs):
        held_out = sorted(set(parse_seeds(args.teacher_seeds)) & set(parse_seeds(args.eval_seeds)))
        if held_out:
            raise AgentError(f"--teacher-seeds meet the held-out --eval-seeds: {held_out}; give other seeds")
    if (args.resume or args.eval_only) and not args.run_name:
        flag = "--resume" if args.resume else "--eval-only"
        raise AgentError(f"{flag} continues a saved run: give its --run-name (the folder's name in --out-dir)")
    teacher = args.teacher if isinstance(args, KickstartArgs) else None
    run = Path(args.out_dir) / (args.run_name or run_name(args.env_id, RECIPE_NAMES[type(args)], teacher, args.seed))
    if args.eval_only and not (run / "model.pt").is_file() and not (run / "model.zip").is_file():
        raise AgentError(f"--eval-only: {run} holds no model.pt or model.zip; train it first")
    return run


def train(args: EventPPOArgs, *, progress: bool = False) -> RunResult:
    """Run the recipe ``args`` describes (module docstring); the run folder and its ``agent.json`` (the model
    is saved there, not returned)."""
    run = check(args)
    recipe = RECIPE_NAMES[type(args)]
    teacher = args.teacher if isinstance(args, KickstartArgs) else None
    if not args.eval_only:
        write_args(args, run)
    started = time.perf_counter()
    if args.eval_only:
        model_path = saved_model(run)
    else:
        # Seeding block.
        seed_everything(args.seed, args.torch_threads)
        with progress_report(progress) as bar:
            if isinstance(args, KickstartArgs):
                model_path = _kickstart(args, run, bar)
            elif isinstance(args, CurriculumArgs):
                model_path = _curriculum(args, run, bar)
            else:
                model_path = _ppo(args, run, bar)
    summary = finish(args, run, model_path, time.perf_counter() - started, recipe=recipe, teacher=teacher)
    meta = AgentMeta.from_json((run / META_FILE).read_text(), str(run / META_FILE))
    if summary is not None:  # for the command's table (eval.json holds the whole summary)
        experts = {name: summary[name] for name in EXPERTS}
        meta.results["evaluation"] = {"seeds": summary["seeds"], "dsr": summary["agent_dsr"], "experts": experts}
    return RunResult(run, None, meta)


def _venv(args: EventPPOArgs, seed: int, **overrides: Any) -> Any:
    return make_venv(args.env_id, args.n_envs, subproc=args.vec == "subproc", seed=seed, **overrides)


def _ppo(args: EventPPOArgs, run: Path, bar: ProgressReport) -> Path:
    from sb3_contrib import MaskablePPO

    venv = _venv(args, args.seed, **env_overrides(args))
    resume_from = latest_checkpoint(run / "checkpoints") if args.resume else None
    if resume_from is not None:
        model = MaskablePPO.load(resume_from, env=venv, device="cpu")
        print(f"resuming from {resume_from} ({model.num_timesteps} steps)", flush=True)
    else:
        model = new_ppo(MaskablePPO, venv, args, run)
    resumed = resume_from is not None
    return learn_and_save(model, args, run, resumed=resumed, tb_log_name="ppo", recipe="events-ppo", bar=bar)


def warm_start(args: KickstartArgs, model: Any, run: Path) -> dict[str, Any]:
    """Kickstarting's phases 1-2 on ``model``'s policy: collect the teacher, clone it, fit the critic; logged
    to ``tb/pretrain``."""
    from stable_baselines3.common.logger import configure

    from agents.kickstart import behaviour_clone, collect_teacher, pretrain_critic

    seeds = parse_seeds(args.teacher_seeds)
    started = time.perf_counter()
    data = collect_teacher(args.env_id, args.teacher, seeds, args.gamma, env_overrides(args))
    collect_s = time.perf_counter() - started
    logger = configure(str(run / "tb" / "pretrain"), ["tensorboard"] if args.track else [])
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


def _kickstart(args: KickstartArgs, run: Path, bar: ProgressReport) -> Path:
    from sb3_contrib import MaskablePPO

    from agents.kickstart import KickstartPPO, frozen_copy

    venv = _venv(args, args.seed, **env_overrides(args))
    resume_from = latest_checkpoint(run / "checkpoints") if args.resume else None
    clone: MaskablePPO
    if resume_from is not None:
        model = KickstartPPO.load(resume_from, env=venv, device="cpu")
        clone = MaskablePPO.load(run / "clone.zip", device="cpu")
        print(f"resuming from {resume_from} ({model.num_timesteps} steps)", flush=True)
    else:
        model = new_ppo(KickstartPPO, venv, args, run)
        bar.task(f"kickstart: the teacher's episodes, cloning and the critic's fit ({args.teacher})", None)
        report = warm_start(args, model, run)
        (run / "teacher.json").write_text(json.dumps(report, indent=1) + "\n")
        print(json.dumps(report), flush=True)
        model.save(run / "clone.zip")
        clone = model
    model.teacher = frozen_copy(clone.policy)
    model.distill_start, model.distill_steps = args.distill_start, args.distill_steps
    resumed = resume_from is not None
    return learn_and_save(
        model,
        args,
        run,
        resumed=resumed,
        tb_log_name="kickstart",
        recipe="events-kickstart",
        teacher=args.teacher,
        bar=bar,
    )


def _curriculum(args: CurriculumArgs, run: Path, bar: ProgressReport) -> Path:
    from sb3_contrib import MaskablePPO

    recipe = RECIPE_NAMES[CurriculumArgs]
    stages = parse_stages(args.stages)
    resume_from = latest_checkpoint(run / "checkpoints") if args.resume else None
    started = time.perf_counter()
    model = None
    end = 0
    path = run / "model.pt"
    for i, (jobs, rate, steps) in enumerate(stages):
        end += steps
        overrides = env_overrides(args)
        workload = {**overrides.pop("workload", {}), "num_jobs": jobs, "arrival_rate_per_h": rate}
        venv = _venv(args, args.seed + i, workload=workload, **overrides)
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
        path = learn_and_save(model, stage_args, run, resumed=resumed, tb_log_name="curriculum", recipe=recipe, bar=bar)
    if model is None:
        raise AgentError("--stages names no stage; give e.g. 30:6:10000,120:12:20000")
    if not path.exists():  # every stage was done already (a resumed, finished run)
        path = learn_and_save(model, args, run, resumed=True, tb_log_name="curriculum", recipe=recipe)
    return path


__all__ = ["RECIPE_NAMES", "check", "parse_stages", "train", "warm_start"]
