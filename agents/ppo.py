"""PPO and MaskablePPO: from scratch, or fine-tuning a cloned policy.

Schulman et al., "Proximal Policy Optimization Algorithms", arXiv:1707.06347, 2017, as implemented by
Stable-Baselines3 (``PPO``) and sb3-contrib (``MaskablePPO``, which applies the environment's
``action_masks()`` to the policy's logits, so it never takes an invalid action).

With ``init`` the run starts from a saved BC or DAgger agent: a new algorithm with this run's
hyperparameters is built with the same policy network, and the saved weights (actor and critic) are
copied into it; the slot network's modules have the same names under PPO and MaskablePPO, so a clone
saved for one fine-tunes under either. Fine-tuning defaults are conservative (a learning rate of 1e-5, a
clip range of 0.1, no entropy bonus) so the first updates, driven by a critic fitted to the teacher's
returns, do not undo the cloning; ``critic_warmup_steps`` goes further and trains the critic alone (the
actor frozen, :class:`~agents.callbacks.CriticWarmup`) until it has seen that many of the clone's own
steps. Without ``init`` the policy starts at random (learning rate 3e-4, a
small entropy bonus): the "from scratch" baseline.

The episodes' workloads are drawn from the environment's seeded generator (a fresh workload per
episode; held-out evaluation seeds are small integers that these draws practically never produce). An
:class:`~agents.callbacks.EpisodeMetricsCallback` logs each finished episode's DSR, JCT, utilisation
and gap to the reference policy beside SB3's losses.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import CallbackList

from agents.args import PPOArgs, check_vec_options
from agents.bc import RunResult, evaluate_against_teacher, log_evaluation, make_logger, new_model
from agents.callbacks import (
    CriticWarmup,
    EpisodeMetricsCallback,
    PeriodicCheckpoint,
    ProgressCallback,
    TeacherReference,
)
from agents.common import (
    AgentError,
    AgentMeta,
    agent_env_kwargs,
    load_agent,
    parse_seeds,
    run_name,
    save_agent,
    save_meta,
    seed_everything,
)
from agents.progress import progress_report
from agents.smdp import TimeDiscountCallback, time_discount_kwargs
from agents.vec import make_train_venv

#: ``gym.make`` settings a fine-tuning run may change: they shape the reward only.
REWARD_ONLY_KEYS = frozenset({"reward", "reward_baseline", "shaping", "shaping_gamma"})


def train(args: PPOArgs, *, progress: bool = False) -> RunResult:
    """Run the PPO / MaskablePPO recipe (see the module docstring)."""
    started = time.perf_counter()
    # Seeding block.
    seed_everything(args.seed, args.torch_threads)
    if args.algo not in ("ppo", "maskable-ppo"):
        raise AgentError(f"algo={args.algo!r}: use 'ppo' or 'maskable-ppo'")
    if args.total_timesteps < 1 or args.n_steps < 1:
        raise AgentError("total_timesteps and n_steps must be >= 1")
    check_vec_options(args.n_envs, args.vec)  # (PPOArgs checks them too; fields may be set after it)
    finetune = args.init is not None
    if args.critic_warmup_steps < 0:
        raise AgentError(f"critic_warmup_steps={args.critic_warmup_steps}: give 0 (none) or a positive step count")
    if args.critic_warmup_steps > 0 and not finetune:
        raise AgentError("critic_warmup_steps needs --init (a clone to fine-tune): from scratch no actor to keep")
    recipe = f"{args.algo}-finetune" if finetune else args.algo
    eval_seeds = parse_seeds(args.eval_seeds) if str(args.eval_seeds).strip() else []  # checked before training
    init_meta: AgentMeta | None = None
    arch, hidden, attention = args.arch, args.hidden, args.attention_layers
    if finetune:
        assert args.init is not None
        init_model, init_meta = load_agent(args.init, trust_pickle=args.trust_pickle)
        env_kwargs = dict(init_meta.env_kwargs)
        changed = sorted(set(args.env) - REWARD_ONLY_KEYS)
        if changed:
            raise AgentError(
                f"a fine-tuning run uses its clone's environment; drop --env {', '.join(changed)} (or clone again "
                f"with it); only the reward settings {sorted(REWARD_ONLY_KEYS)} may change, as they leave the "
                "observations and actions the clone was trained on as they were"
            )
        env_kwargs.update(args.env)
        if init_meta.env_id != args.env_id:
            raise AgentError(f"{args.init} was trained in {init_meta.env_id}, not {args.env_id}")
        arch = init_meta.arch
        hidden = int(init_meta.args.get("hidden", hidden))
        attention = int(init_meta.args.get("attention_layers", attention))
    else:
        env_kwargs = agent_env_kwargs(args.reference, args.env, args.env_id)
    teacher = init_meta.teacher if init_meta is not None else None
    name = args.run_name or run_name(args.env_id, recipe, teacher, args.seed)
    folder = Path(args.out_dir) / name
    lr = args.learning_rate if args.learning_rate is not None else (1e-5 if finetune else 3e-4)
    clip = args.clip_range if args.clip_range is not None else (0.1 if finetune else 0.2)
    ent = args.ent_coef if args.ent_coef is not None else (0.0 if finetune else 0.01)
    # DummyVecEnv or SubprocVecEnv (--vec); MaskablePPO reads the masks through env_method("action_masks").
    venv = make_train_venv(args.env_id, env_kwargs, args.n_envs, args.vec)
    try:
        extra = time_discount_kwargs(args.algo, venv.observation_space) if args.time_discount else {}
        model = new_model(
            args.algo,
            venv,
            arch,
            hidden,
            attention,
            args.seed,
            decoding=getattr(init_model.policy, "decoding", None) if finetune else None,
            learning_rate=lr,
            n_steps=args.n_steps,
            batch_size=args.batch_size,
            n_epochs=args.n_epochs,
            gamma=args.gamma,
            gae_lambda=args.gae_lambda,
            clip_range=clip,
            ent_coef=ent,
            vf_coef=args.vf_coef,
            target_kl=args.target_kl,
            **extra,
        )
        if finetune:
            missing = model.policy.load_state_dict(init_model.policy.state_dict(), strict=True)
            del missing
        logger = make_logger(folder / "tb", args.track)
        model.set_logger(logger)
        meta = AgentMeta(
            env_id=args.env_id,
            env_kwargs=env_kwargs,
            teacher=teacher,
            recipe=recipe,
            algo=args.algo,
            arch=arch,
            seed=args.seed,
            # hidden / attention_layers: the network built (a clone's when fine-tuning), so a run from this
            # one rebuilds it
            args={
                **dataclasses.asdict(args),
                "learning_rate": lr,
                "clip_range": clip,
                "ent_coef": ent,
                "hidden": hidden,
                "attention_layers": attention,
            },
            parent=str(args.init) if finetune else None,
            reference=args.reference,
        )
        reference = TeacherReference(args.reference, args.env_id, env_kwargs) if args.reference else None
        episodes = EpisodeMetricsCallback(reference)
        callbacks: list[Any] = [episodes]
        if args.time_discount:
            time_scale_s = float(venv.get_attr("config", [0])[0].time_scale_s)  # from a worker too
            callbacks.insert(0, TimeDiscountCallback(args.gamma, time_scale_s))
        warmup = CriticWarmup(args.critic_warmup_steps)
        if args.critic_warmup_steps > 0:
            callbacks.append(warmup)
        if args.checkpoint_every > 0:
            callbacks.append(PeriodicCheckpoint(folder, meta, args.checkpoint_every))
        with progress_report(progress) as bar:
            bar.task(f"{recipe}: training", args.total_timesteps, unit="timesteps")
            callbacks.append(ProgressCallback(bar))
            model.learn(total_timesteps=args.total_timesteps, callback=CallbackList(callbacks))
            meta.results = {
                "stage": "trained",
                "timesteps": int(model.num_timesteps),
                "episodes": episodes.episodes,
                "critic_warmup_updates": warmup.frozen_updates,
            }
            if init_meta is not None:
                meta.results["init_evaluation"] = init_meta.results.get("evaluation", {})
            save_agent(model, meta, folder)  # before the evaluation: an interrupted one leaves a usable agent
            if eval_seeds:
                bar.task("evaluating on held-out workloads", None)
            evaluation = evaluate_against_teacher(
                model,
                args.env_id,
                env_kwargs,
                args.reference,
                eval_seeds,
                max_steps=args.max_steps,
                on_step=bar.advance,
            )
            log_evaluation(logger, evaluation, model.num_timesteps)
    finally:
        venv.close()  # a SubprocVecEnv's workers end with it, on an error too
    meta.results.update(stage="evaluated", evaluation=evaluation, wall_s=time.perf_counter() - started)
    save_meta(meta, folder)
    logger.close()
    return RunResult(folder, model, meta)


__all__ = ["REWARD_ONLY_KEYS", "PPOArgs", "train"]
