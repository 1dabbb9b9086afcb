"""DAgger: the learner drives, the expert labels every state it reaches, and the data set grows.

Ross, Gordon and Bagnell, "A Reduction of Imitation Learning and Structured Prediction to No-Regret
Online Learning", AISTATS 2011. Round 0 clones the teacher's own episodes (behaviour cloning, or a
saved clone with ``init``), collected on ``train_seeds`` or loaded with ``demos`` (those a behaviour-cloning
run saved with ``save_demos``, typically the ones the ``init`` clone learned from). In round ``r >= 1``
each step's action is the teacher's with probability ``beta_r`` and the learner's otherwise, the teacher
labels every state visited (:class:`~hetgym.experts.ExpertLabelWrapper` re-plans from whatever the
learner did), the round's episodes join the aggregated data set, and the policy is trained further on
all of it.

Beta schedules (as in the ``imitation`` library): ``linear`` (``beta_r = max(0, 1 - r / rampdown_rounds)``),
``exponential`` (``beta_r = decay ** r``) and ``constant`` (``beta_r = beta``).

Every round's workload seeds follow the training seeds and never touch the held-out ones.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np

from agents.args import DAggerArgs, check_lr_schedule
from agents.bc import (
    RunResult,
    action_agreement,
    evaluate_against_teacher,
    fit,
    imitation_inputs,
    log_evaluation,
    make_logger,
    model_from_args,
)
from agents.common import (
    AgentError,
    AgentMeta,
    load_agent,
    make_env,
    resolve_model_path,
    save_agent,
    save_meta,
    seed_everything,
)
from agents.demos import Demonstrations, Transitions, model_learner, rollout
from agents.progress import EpisodeCounter, collect_with_progress, progress_report

BETA_SCHEDULES: tuple[str, ...] = ("linear", "exponential", "constant")


def beta_at(
    round_index: int, schedule: str, *, rampdown_rounds: int = 3, decay: float = 0.5, beta: float = 0.5
) -> float:
    """The probability that the teacher acts in round ``round_index`` (round 0 is the teacher's alone)."""
    if round_index <= 0:
        return 1.0
    if schedule == "linear":
        if rampdown_rounds < 1:
            raise AgentError(f"rampdown_rounds={rampdown_rounds}: it must be >= 1")
        return max(0.0, 1.0 - round_index / rampdown_rounds)
    if schedule == "exponential":
        if not 0.0 <= decay < 1.0:
            raise AgentError(f"decay={decay}: it must be in [0, 1)")
        return float(decay**round_index)
    if schedule == "constant":
        if not 0.0 <= beta <= 1.0:
            raise AgentError(f"beta={beta}: it must be in [0, 1]")
        return float(beta)
    raise AgentError(f"unknown beta schedule {schedule!r}; use one of {BETA_SCHEDULES}")


def later_round_seeds(first: int, rounds: int, per_round: int, held_out: set[int]) -> list[list[int]]:
    """The workload seeds of rounds 1.. of a DAgger loop: ``per_round`` each, counting up from ``first`` and
    skipping the ``held_out`` ones."""
    out: list[list[int]] = []
    next_seed = first
    for _ in range(rounds):
        seeds: list[int] = []
        while len(seeds) < per_round:
            if next_seed not in held_out:
                seeds.append(next_seed)
            next_seed += 1
        out.append(seeds)
    return out


def train(args: DAggerArgs, *, progress: bool = False) -> RunResult:
    """Run the DAgger recipe (see the module docstring)."""
    started = time.perf_counter()
    # Seeding block.
    seed_everything(args.seed, args.torch_threads)
    rng = np.random.default_rng(args.seed)
    beta_at(1, args.beta_schedule, rampdown_rounds=args.rampdown_rounds, decay=args.decay, beta=args.beta)
    check_lr_schedule(args.lr_schedule)
    if args.rounds < 0 or args.episodes_per_round < 1:
        raise AgentError(f"rounds={args.rounds}, episodes_per_round={args.episodes_per_round}: need >= 0 and >= 1")
    if args.first_round_seed is not None and args.first_round_seed < 0:
        raise AgentError(f"first_round_seed={args.first_round_seed}: a workload seed is >= 0")
    # Round 0's demonstrations: loaded (they bring their own seeds) or collected on train_seeds.
    folder, env_kwargs, demos, train_seeds, val_seeds, eval_seeds = imitation_inputs(args, "dagger")
    held_out = set(val_seeds) | set(eval_seeds)
    if args.first_round_seed is not None:
        next_seed = args.first_round_seed
    else:
        next_seed = max(train_seeds) + 1 if train_seeds else 0
    round_seeds = later_round_seeds(next_seed, args.rounds, args.episodes_per_round, held_out)
    if set(train_seeds) & held_out:
        raise AgentError(f"seeds {sorted(set(train_seeds) & held_out)} are both training and held-out seeds")
    env = make_env(args.env_id, env_kwargs)
    parent = None
    run_args = dataclasses.asdict(args)
    if args.init:
        # the clone's env id first, from its record: loading it into another env's spaces fails with the two
        # spaces printed in full and no word of --env-id
        init_env_id = AgentMeta.from_json(resolve_model_path(args.init)[1].read_text()).env_id
        if init_env_id != args.env_id:
            raise AgentError(
                f"{args.init} was trained in {init_env_id}, not {args.env_id}: give --env-id {init_env_id}"
            )
        model, init_meta = load_agent(args.init, env=env, decoding=args.decoding, trust_pickle=args.trust_pickle)
        if init_meta.env_kwargs != env_kwargs or init_meta.env_id != args.env_id:
            raise AgentError(f"{args.init} was trained in {init_meta.env_id} {init_meta.env_kwargs}, not {env_kwargs}")
        parent = str(args.init)
        arch = init_meta.arch
        # the network is the clone's, not this run's --hidden / --attention-layers defaults: recorded as such,
        # so a run fine-tuning this one (ppo --init) builds the same network
        run_args.update({k: init_meta.args[k] for k in ("hidden", "attention_layers") if k in init_meta.args})
    else:
        arch = args.arch
        model = model_from_args(args, env)
    logger = make_logger(folder / "tb", args.track)  # after the checks above, so a refused run writes nothing
    model.set_logger(logger)
    rounds_log: list[dict[str, Any]] = []
    meta = AgentMeta(
        env_id=args.env_id,
        env_kwargs=env_kwargs,
        teacher=args.teacher,
        reference=args.teacher,
        recipe="dagger",
        algo="maskable-ppo" if "Maskable" in type(model).__name__ else "ppo",
        arch=arch,
        seed=args.seed,
        args=run_args,
        parent=parent,
    )

    def checkpoint(stage: str, agree: dict[str, float]) -> None:
        """Save the agent as it is now (after each round, and before the evaluation)."""
        meta.results = {"stage": stage, "agreement": agree, "rounds": rounds_log}
        save_agent(model, meta, folder)

    fit_kwargs: dict[str, Any] = {
        "batch_size": args.batch_size,
        "lr": args.lr,
        "lr_schedule": args.lr_schedule,
        "ent_weight": args.ent_weight,
        "l2_weight": args.l2_weight,
        "value_weight": args.value_weight,
    }
    with progress_report(progress) as bar:
        if demos is None:
            demos = collect_with_progress(
                bar, args.env_id, env_kwargs, args.teacher, train_seeds, "round 0", args.obs_dtype
            )
        data_set = demos
        val = collect_with_progress(bar, args.env_id, env_kwargs, args.teacher, val_seeds, "held-out states")
        val_data = val.transitions(args.gamma)
        epoch_counter = [0]

        def on_epoch(_epoch: int, stats: dict[str, float]) -> None:
            epoch_counter[0] += 1
            for key, value in stats.items():
                logger.record(f"bc/{key}", value)
            agree = action_agreement(model.policy, val_data)
            for key, value in agree.items():
                if key != "states" and math.isfinite(value):
                    logger.record(f"bc/val_{key}", value)
            logger.dump(epoch_counter[0])

        data: Transitions | None = None
        if not args.init:
            data = data_set.transitions(args.gamma)
            bar.task(f"round 0: cloning {len(data)} states", args.epochs * len(data), unit="states")
            fit(
                model.policy,
                data,
                epochs=args.epochs,
                seed=args.seed,
                on_batch=bar.advance,
                on_epoch=on_epoch,
                **fit_kwargs,
            )
        agree = action_agreement(model.policy, val_data)
        rounds_log.append({"round": 0, "beta": 1.0, "states": len(data_set), "agreement": agree})
        bar.log(f"round 0: {len(data_set)} states, held-out agreement {agree['agreement']:.4f}")
        checkpoint("checkpoint", agree)
        env_labelled = make_env(args.env_id, env_kwargs, teacher=args.teacher)
        try:
            for r, seeds in enumerate(round_seeds, start=1):
                beta = beta_at(
                    r, args.beta_schedule, rampdown_rounds=args.rampdown_rounds, decay=args.decay, beta=args.beta
                )
                bar.task(f"round {r}: beta {beta:.2f}, episodes", len(seeds), unit="workloads")
                counter = EpisodeCounter(bar)
                trajs = rollout(
                    env_labelled,
                    seeds,
                    learner=model_learner(model),
                    beta=beta,
                    rng=rng,
                    max_steps=args.max_steps,
                    on_step=counter,
                    obs_dtype=args.obs_dtype,
                )
                counter.close()
                new = Demonstrations(trajs, args.teacher, args.env_id, env_kwargs)
                data_set.extend(new)
                learner_share = float(np.mean(np.concatenate([~t.infos["expert_acted"] for t in trajs])))
                dsrs = [t.metrics.get("dsr", math.nan) for t in trajs]
                # Drop the previous round's flattened copy first: flattening the aggregate beside it held
                # two copies of every observation (7 GB each by round 3 of a DAgger run from 60 v1 workloads).
                data = None
                data = data_set.transitions(args.gamma)
                bar.task(f"round {r}: training on {len(data)} states", args.epochs_per_round * len(data), unit="states")
                fit(
                    model.policy,
                    data,
                    epochs=args.epochs_per_round,
                    seed=args.seed + r,
                    on_batch=bar.advance,
                    on_epoch=on_epoch,
                    **fit_kwargs,
                )
                agree = action_agreement(model.policy, val_data)
                entry = {
                    "round": r,
                    "beta": beta,
                    "seeds": seeds,
                    "states": len(data_set),
                    "learner_action_share": learner_share,
                    "rollout_dsr": dsrs,
                    "rollout_terminal": [t.terminal for t in trajs],
                    "agreement": agree,
                }
                rounds_log.append(entry)
                logger.record("dagger/beta", beta)
                logger.record("dagger/states", len(data_set))
                logger.record("dagger/learner_action_share", learner_share)
                if all(math.isfinite(d) for d in dsrs):
                    logger.record("dagger/rollout_dsr", float(np.mean(dsrs)))
                logger.record("dagger/val_agreement", agree["agreement"])
                logger.dump(epoch_counter[0])
                ended = [d for d in dsrs if math.isfinite(d)]  # an episode cut at max_steps has no DSR
                bar.log(
                    f"round {r}: beta {beta:.2f}, rollout DSR "
                    + (f"{np.mean(ended):.3f}, " if ended else "- (episodes cut at max_steps), ")
                    + f"{len(data_set)} states, held-out agreement {agree['agreement']:.4f}"
                )
                checkpoint("checkpoint", agree)
        finally:
            env_labelled.close()
        checkpoint("trained", agree)
        if eval_seeds:
            bar.task("evaluating on held-out workloads", None)
        evaluation = evaluate_against_teacher(
            model, args.env_id, env_kwargs, args.teacher, eval_seeds, max_steps=args.max_steps, on_step=bar.advance
        )
        log_evaluation(logger, evaluation, epoch_counter[0])
    meta.results.update(stage="evaluated", evaluation=evaluation, wall_s=time.perf_counter() - started)
    save_meta(meta, folder)
    logger.close()
    return RunResult(folder, model, meta)


__all__ = ["BETA_SCHEDULES", "DAggerArgs", "beta_at", "later_round_seeds", "train"]
