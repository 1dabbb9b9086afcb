"""Stable-Baselines3 callbacks: per-episode scheduling metrics and the gap to the reference, and checkpoints.

:class:`EpisodeMetricsCallback` reads the final ``info["metrics"]`` of every episode the environment
ends during training and records, next to SB3's own losses, ``episode/dsr``, ``episode/jct_mean_h``,
``episode/utilisation`` and ``episode/num_reconfigs``; with a reference policy (the expert the agent is
measured against: a PPO run's ``--reference``) it also runs the reference on the same workload (the raw
simulator, cached by workload seed) and records ``episode/dsr_gap_to_reference`` and
``episode/jct_gap_to_reference_h`` (positive DSR gap: the agent met more deadlines). "Reference", not
"teacher": PPO from scratch learns from no teacher.

:class:`PeriodicCheckpoint` saves the weights ``model_<steps>.pt`` into the run folder every ``every`` steps,
next to the run's ``agent.json``, so ``hetgym evaluate RUN/model_<steps>.pt`` finds the environment and the
network; ``model.pt`` is updated with it.

:class:`CriticWarmup` freezes the actor for the first steps of a fine-tuning run, so the critic (fitted
to the teacher's returns, under another discount) is fitted to the clone's own returns before its
advantages move the policy (critic pre-training before RL fine-tuning of a cloned policy).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch as th
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.policies import ActorCriticPolicy

from agents.common import AgentMeta, save_agent
from hetgym.progress import ProgressReport


class TeacherReference:
    """The reference policy's metrics on a workload seed (run once per seed on the raw simulator, then cached)."""

    def __init__(self, teacher: str, env_id: str, env_kwargs: dict[str, Any]) -> None:
        self.teacher = teacher
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs)
        self._cache: dict[int, dict[str, float]] = {}

    def metrics(self, seed: int) -> dict[str, float]:
        hit = self._cache.get(seed)
        if hit is None:
            from agents.evaluation import evaluate_expert

            row = evaluate_expert(self.teacher, self.env_id, self.env_kwargs, [seed]).iloc[0]
            hit = self._cache[seed] = {str(k): float(v) for k, v in row.items() if k != "seed"}
        return hit


def episode_record(metrics: dict[str, float], teacher: dict[str, float] | None) -> dict[str, float]:
    """The scalars logged for one finished episode."""
    out = {
        "dsr": metrics.get("dsr", math.nan),
        "jct_mean_h": metrics.get("jct_mean_s", math.nan) / 3600,
        "utilisation": metrics.get("utilisation", math.nan),
        "num_reconfigs": metrics.get("num_reconfigs", math.nan),
    }
    if teacher is not None:
        out["dsr_gap_to_reference"] = out["dsr"] - teacher.get("dsr", math.nan)
        out["jct_gap_to_reference_h"] = out["jct_mean_h"] - teacher.get("jct_mean_s", math.nan) / 3600
    return out


class EpisodeMetricsCallback(BaseCallback):
    """Log each finished episode's DSR, average JCT, utilisation and gap to the reference (see module).

    Args:
        teacher: A :class:`TeacherReference` (the reference policy's metrics), or ``None`` for no gap.
        verbose: SB3 verbosity.

    Attributes:
        episodes: Every logged record (with ``timesteps`` and ``workload_seed``).
    """

    def __init__(self, teacher: TeacherReference | None = None, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.teacher = teacher
        self.episodes: list[dict[str, float]] = []

    def _on_step(self) -> bool:
        infos = self.locals.get("infos", [])
        dones = self.locals.get("dones", [])
        for done, info in zip(dones, infos, strict=False):
            if not done or "metrics" not in info:
                continue
            seed = info.get("workload_seed")
            ref = self.teacher.metrics(int(seed)) if (self.teacher is not None and seed is not None) else None
            record = episode_record(info["metrics"], ref)
            for key, value in record.items():
                if math.isfinite(value):
                    self.logger.record_mean(f"episode/{key}", value)
            record.update(timesteps=float(self.num_timesteps), workload_seed=float(seed) if seed is not None else -1.0)
            self.episodes.append(record)
        return True


class PeriodicCheckpoint(BaseCallback):
    """Save the model as ``<folder>/model_<steps>.pt`` every ``every`` steps, and as ``model.pt`` too.

    ``model.pt`` and ``agent.json`` (``results["stage"] == "checkpoint"``, with the steps done) then always
    hold the latest checkpoint, so a run stopped at any point leaves a usable agent in its folder.
    """

    def __init__(self, folder: str | Path, meta: AgentMeta, every: int, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.folder = Path(folder)
        self.meta = meta
        self.every = int(every)
        self._last = 0
        self.saved: list[Path] = []

    def _on_step(self) -> bool:
        if self.every > 0 and self.num_timesteps - self._last >= self.every:
            self._last = self.num_timesteps
            self.meta.results = {"stage": "checkpoint", "timesteps": int(self.num_timesteps)}
            self.saved.append(save_agent(self.model, self.meta, self.folder, f"model_{self.num_timesteps}.pt"))
            save_agent(self.model, self.meta, self.folder)
        return True


def actor_parameters(policy: ActorCriticPolicy | MaskableActorCriticPolicy, obs: Any) -> list[th.nn.Parameter]:
    """The trainable parameters the action distribution depends on, for the observation batch ``obs``.

    Found from the autograd graph, not from module names: a parameter belongs to the actor when the
    distribution's entropy is a function of it (shared feature extractors included), so it works for every
    policy class of ``agents.policies``/``agents.set_policy`` and SB3's own.
    """
    params = [p for p in policy.parameters() if p.requires_grad]
    obs_t, _ = policy.obs_to_tensor(obs)
    with th.enable_grad():
        entropy = policy.get_distribution(obs_t).entropy()
        if entropy is None:  # pragma: no cover - every distribution of a discrete action space has one
            raise ValueError("the policy's distribution has no entropy; cannot find the actor's parameters")
        grads = th.autograd.grad(entropy.sum(), params, allow_unused=True)
    return [p for p, g in zip(params, grads, strict=True) if g is not None]


class CriticWarmup(BaseCallback):
    """Train only the critic for the first ``steps`` environment steps (the actor's parameters frozen).

    The actor is every parameter the action distribution depends on (:func:`actor_parameters`), so a
    feature extractor shared with the critic is frozen too and the policy is exactly the saved clone's
    until ``steps`` is reached; then every parameter trains. ``frozen_updates`` counts the rollouts trained
    with the actor frozen.
    """

    def __init__(self, steps: int, verbose: int = 0) -> None:
        super().__init__(verbose)
        if steps < 0:
            raise ValueError(f"critic warm-up steps={steps}: give 0 (none) or a positive number of steps")
        self.steps = int(steps)
        self.frozen: list[th.nn.Parameter] = []
        self.frozen_updates = 0

    def _on_training_start(self) -> None:
        if self.steps <= 0:
            return
        policy = self.model.policy
        if not isinstance(policy, ActorCriticPolicy | MaskableActorCriticPolicy):
            raise TypeError(f"critic warm-up needs an actor-critic policy, not {type(policy).__name__}")
        self.frozen = actor_parameters(policy, self.model._last_obs)
        for p in self.frozen:
            p.requires_grad_(False)

    def _on_rollout_end(self) -> None:
        if not self.frozen:
            return
        if self.num_timesteps >= self.steps:
            for p in self.frozen:
                p.requires_grad_(True)
            self.frozen = []
        else:
            self.frozen_updates += 1

    def _on_training_end(self) -> None:
        for p in self.frozen:
            p.requires_grad_(True)
        self.frozen = []

    def _on_step(self) -> bool:
        return True


class ProgressCallback(BaseCallback):
    """Advances the progress report by one step per environment step."""

    def __init__(self, bar: ProgressReport) -> None:
        super().__init__()
        self.bar = bar

    def _on_step(self) -> bool:
        self.bar.advance(self.training_env.num_envs if self.training_env is not None else 1)
        return True


__all__ = [
    "CriticWarmup",
    "EpisodeMetricsCallback",
    "PeriodicCheckpoint",
    "ProgressCallback",
    "TeacherReference",
    "actor_parameters",
    "episode_record",
]
