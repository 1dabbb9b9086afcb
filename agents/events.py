"""Shared pieces of the event-driven interface's training recipes (``hetgym train --algo
events-ppo|kickstart|curriculum``, :mod:`agents.event_recipes`).

The environment as the recipes see it (``flatten=True``: one observation vector for an ``MlpPolicy``), the
vector env of ``n_envs`` of them, a wall-time limit on training, the latest checkpoint of a run folder,
``agent.json`` beside the model (so that ``hetgym evaluate`` reads the run folder as it reads those of the
window recipes, with the CPU time the run took), and the held-out
evaluation: the deterministic policy plays the held-out workload seeds and is compared, paired per seed, with
ElasticFlow and EDF-with-admission on the simulator (the same workloads).

A run folder keeps the final policy in the safe format, ``model.pt`` with the network described in
``agent.json`` (:mod:`agents.weights`), which :func:`evaluate` and ``hetgym evaluate`` read without
unpickling; and as SB3 archives, ``model.zip`` and ``checkpoints/*.zip``, which keep the optimiser and the
step count for ``--resume``. Those are pickle: resuming unpickles the run folder's own files, so resume
only runs you made (``docs/security.md``).
"""

from __future__ import annotations

import dataclasses
import json
import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

import baselines  # noqa: F401  (registers the policies)
import hetgym  # noqa: F401  (registers the ids)
from agents.args import AgentError, EventPPOArgs, parse_seeds
from agents.callbacks import ProgressCallback
from agents.common import num_actions, simulated
from agents.vec import subproc_start_method
from hetgym.progress import ProgressReport
from hetgym.sim import Simulator, make_policy
from hetgym.stats import paired_interval

#: The experts every recipe is compared with on the held-out workloads.
EXPERTS = ("elasticflow", "edf-admission")
#: The ``gym.make`` arguments of the recipes' environments (kept in ``agent.json``).
ENV_KWARGS: dict[str, Any] = {"flatten": True}


def is_event_id(env_id: str) -> bool:
    """Whether ``env_id`` is a registered id of the event-driven interface (``HetClusterEvents-*``)."""
    entry = str(gym.spec(env_id).entry_point) if env_id in gym.registry else ""
    return "events" in entry


def check_event_id(env_id: str, recipe: str) -> None:
    """Refuse an id that is not of the event interface (before ``flatten`` is passed to it), naming ``recipe``."""
    if not is_event_id(env_id):
        raise AgentError(
            f"env_id={env_id!r}: {recipe} acts in an event-driven environment; give HetClusterEvents-v0 or "
            "HetClusterEvents-Tiny-v0"
        )


def env_overrides(args: EventPPOArgs) -> dict[str, Any]:
    """``args.env``, the ``gym.make`` overrides, refusing ``flatten`` (the recipes always set it)."""
    if "flatten" in args.env:
        raise AgentError("--env flatten=...: the event recipes set flatten=True themselves; leave it out")
    return dict(args.env)


def new_ppo(cls: Any, venv: Any, args: EventPPOArgs, run: Path) -> Any:
    """A new ``cls`` (MaskablePPO or a subclass) with an ``MlpPolicy`` and ``args``' hyperparameters, on the CPU,
    logging to ``run/tb`` (when ``args.track``); an unset learning rate or entropy bonus takes PPO's
    from-scratch value (3e-4, 0.01)."""
    return cls(
        "MlpPolicy",
        venv,
        n_steps=args.n_steps,
        batch_size=args.batch_size,
        n_epochs=args.n_epochs,
        learning_rate=3e-4 if args.learning_rate is None else args.learning_rate,
        gamma=args.gamma,
        gae_lambda=args.gae_lambda,
        ent_coef=0.01 if args.ent_coef is None else args.ent_coef,
        seed=args.seed,
        device="cpu",
        tensorboard_log=str(run / "tb") if args.track else None,
        verbose=0,
    )


def write_args(args: Any, run: Path) -> None:
    """Create the run folder and log the arguments to ``args.json`` in it."""
    run.mkdir(parents=True, exist_ok=True)
    (run / "args.json").write_text(json.dumps(dataclasses.asdict(args), indent=1) + "\n")


def make_env(env_id: str, **overrides: Any) -> gym.Env[Any, Any]:
    """The environment with its observation flattened (``flatten=True``, for an ``MlpPolicy``), with
    ``gym.make`` ``overrides`` (e.g. ``workload={"num_jobs": 30}``)."""
    return gym.make(env_id, **ENV_KWARGS, **overrides)


def cpu_seconds() -> float:
    """User plus system CPU time of this process and its finished children (``SubprocVecEnv`` workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def write_agent_meta(
    args: Any, run: Path, *, recipe: str, teacher: str | None, results: dict[str, Any], model: Any = None
) -> Path:
    """``run/agent.json`` for ``run/model.pt``: the env id and arguments, the recipe, its arguments and
    ``results`` (``cpu_hours`` among them; merged over those already in ``agent.json``), as
    :class:`agents.common.AgentMeta` describes.

    With ``model``, its weights are saved as ``run/model.pt`` and its network described in ``agent.json``
    (:func:`agents.common.save_agent`); without, the description already in ``agent.json`` is kept.
    """
    from agents.common import META_FILE, AgentMeta, save_agent, save_meta

    meta = AgentMeta(
        env_id=args.env_id,
        env_kwargs={**ENV_KWARGS, **env_overrides(args)},
        teacher=teacher,
        recipe=recipe,
        algo="maskable-ppo",
        arch="mlp",
        seed=args.seed,
        args=dataclasses.asdict(args),
        results=results,
        reference="elasticflow",
    )
    path = run / META_FILE
    if path.is_file():  # keep what an earlier write recorded (the network, an earlier session's CPU hours)
        try:
            before = json.loads(path.read_text())
            meta.results = {**dict(before.get("results") or {}), **results}
            meta.model = before.get("model")
        except (ValueError, AttributeError, TypeError):
            meta.model = None
    if model is not None:
        save_agent(model, meta, run)
        return path
    return save_meta(meta, run)


def previous_cpu_hours(run: Path) -> float:
    """The CPU hours an earlier session of this run recorded in ``agent.json`` (0 when none)."""
    path = run / "agent.json"
    if not path.is_file():
        return 0.0
    try:
        return float(json.loads(path.read_text()).get("results", {}).get("cpu_hours", 0.0))
    except (ValueError, AttributeError):
        return 0.0


def make_venv(env_id: str, n_envs: int, *, subproc: bool, seed: int, **overrides: Any) -> Any:
    """``n_envs`` monitored environments (``gym.make`` ``overrides``) in one process (``DummyVecEnv``) or one
    each (``SubprocVecEnv``)."""
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    factories: list[Callable[[], gym.Env[Any, Any]]] = [lambda: Monitor(make_env(env_id, **overrides))] * n_envs
    venv = SubprocVecEnv(factories, start_method=subproc_start_method()) if subproc else DummyVecEnv(factories)
    venv.seed(seed)
    return venv


def latest_checkpoint(folder: Path) -> Path | None:
    """The checkpoint ``ckpt_<steps>_steps.zip`` in ``folder`` with the most steps, if any."""
    found = sorted(folder.glob("ckpt_*_steps.zip"), key=lambda p: int(p.stem.split("_")[1]))
    return found[-1] if found else None


class StopAfter(BaseCallback):
    """Stops training once ``max_s`` seconds of wall time have passed (0: never)."""

    def __init__(self, max_s: float) -> None:
        super().__init__()
        self.max_s = max_s
        self.start = time.perf_counter()

    def _on_step(self) -> bool:
        return not (self.max_s > 0 and time.perf_counter() - self.start > self.max_s)


def learn_and_save(
    model: Any,
    args: Any,
    run: Path,
    *,
    resumed: bool,
    tb_log_name: str,
    recipe: str,
    teacher: str | None = None,
    bar: ProgressReport | None = None,
) -> Path:
    """Train ``model`` up to ``args.total_timesteps`` (a checkpoint in ``run/checkpoints`` every
    ``args.checkpoint_every``, stopped after ``args.max_train_s``), then save ``run/model.zip`` (to resume
    from) and the safe format (``run/model.pt`` + ``agent.json``, :func:`write_agent_meta`), and return
    ``run/model.pt``."""
    from stable_baselines3.common.callbacks import CallbackList, CheckpointCallback

    remaining = args.total_timesteps - model.num_timesteps
    if remaining > 0:
        callbacks: list[BaseCallback] = [StopAfter(args.max_train_s)]
        if bar is not None:
            bar.task(f"{recipe}: training", args.total_timesteps, unit="timesteps")
            bar.update(completed=model.num_timesteps)
            callbacks.append(ProgressCallback(bar))
        if args.checkpoint_every > 0:
            every = max(args.checkpoint_every // args.n_envs, 1)
            callbacks.append(CheckpointCallback(every, str(run / "checkpoints"), name_prefix="ckpt"))
        callback = CallbackList(callbacks)
        model.learn(remaining, callback=callback, reset_num_timesteps=not resumed, tb_log_name=tb_log_name)
    model.save(run / "model.zip")
    write_agent_meta(args, run, recipe=recipe, teacher=teacher, results={"stage": "trained"}, model=model)
    return run / "model.pt"


def evaluate(env_id: str, eval_seeds: str, model_path: Path, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Play the saved ``MaskablePPO`` model deterministically on each held-out workload seed and compare it,
    paired per seed, with the :data:`EXPERTS` on the simulator; print one JSON row per seed.

    ``model_path`` is a ``model.pt`` with ``agent.json`` beside it (:func:`agents.common.load_agent`, nothing
    unpickled) or, in a run folder written before the safe format, the run's own ``model.zip`` (unpickled:
    only a run you made)."""
    if model_path.suffix == ".pt":
        from agents.common import load_agent

        model, _ = load_agent(model_path)
    else:
        from sb3_contrib import MaskablePPO

        # Schedules are pickled functions: replaced, so a model saved under another Python version loads too.
        constant = {"learning_rate": 0.0, "lr_schedule": lambda _: 0.0, "clip_range": lambda _: 0.0}
        model = MaskablePPO.load(model_path, device="cpu", custom_objects=constant)
    seeds = parse_seeds(eval_seeds)
    rows = []
    for seed in seeds:
        env = make_env(env_id, **(overrides or {}))
        u = simulated(env)
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
        row["action_counts"] = np.bincount(actions, minlength=num_actions(env)).tolist()
        for expert in EXPERTS:
            sim = Simulator(u.cluster, u.jobs, config=u.config.sim)
            row[f"{expert}_dsr"] = sim.run(make_policy(expert)).metrics["dsr"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    agent = [r["agent_dsr"] for r in rows]
    summary: dict[str, Any] = {"seeds": seeds, "agent_dsr": float(np.mean(agent)), "rows": rows}
    for expert in EXPERTS:
        theirs = [r[f"{expert}_dsr"] for r in rows]
        diff = paired_interval(agent, theirs)
        summary[expert] = {"dsr": float(np.mean(theirs)), "diff_mean": diff.mean, "ci": [diff.low, diff.high]}
    return summary


def saved_model(run: Path) -> Path:
    """The policy ``--eval-only`` evaluates: ``run/model.pt``, else (a run written before it) ``run/model.zip``."""
    return run / "model.pt" if (run / "model.pt").is_file() or not (run / "model.zip").is_file() else run / "model.zip"


def finish(
    args: EventPPOArgs, run: Path, model_path: Path, trained_s: float, *, recipe: str, teacher: str | None = None
) -> dict[str, Any] | None:
    """After training: write ``agent.json`` (with the CPU hours of training, this session's added to those
    an earlier one recorded), then print the model's path (``args.skip_eval``) or evaluate it, write
    ``eval.json`` and return its summary."""
    if not args.eval_only:
        cpu_hours = previous_cpu_hours(run) * bool(args.resume) + cpu_seconds() / 3600
        write_agent_meta(args, run, recipe=recipe, teacher=teacher, results={"cpu_hours": cpu_hours})
    if args.skip_eval:
        print(json.dumps({"train_wall_s": trained_s, "model": str(model_path)}))
        return None
    summary = evaluate(args.env_id, args.eval_seeds, model_path, env_overrides(args))
    summary["train_wall_s"] = trained_s
    (run / "eval.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}, indent=1))
    return summary


__all__ = [
    "ENV_KWARGS",
    "EXPERTS",
    "StopAfter",
    "check_event_id",
    "cpu_seconds",
    "env_overrides",
    "evaluate",
    "finish",
    "is_event_id",
    "latest_checkpoint",
    "learn_and_save",
    "make_env",
    "make_venv",
    "new_ppo",
    "parse_seeds",
    "previous_cpu_hours",
    "saved_model",
    "write_agent_meta",
    "write_args",
]
