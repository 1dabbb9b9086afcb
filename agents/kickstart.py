"""Kickstarting on the event-driven interface (``HetClusterEvents-v0``): a teacher, its clone, and PPO that is
pulled back towards the clone by an annealed distillation term.

The phases (``hetgym train --algo kickstart``, :mod:`agents.event_recipes`, runs them in order):

1. **Behaviour cloning.** :func:`collect_teacher` plays the teacher (:func:`teacher_rule`) on training
   workload seeds and records the flattened observations, the action masks, the teacher's actions and its
   discounted returns to go; :func:`behaviour_clone` trains the policy's actor by the cross-entropy of the
   teacher's action under the *masked* logits (invalid actions have probability 0 and carry no gradient).
2. **Critic pre-training.** :func:`pretrain_critic` fits the value head (and its own layers) to the
   teacher's returns with the actor frozen (only the critic's parameters are in the optimiser; the head's
   bias starts at the mean return), so that
   PPO starts from advantages measured against the teacher's values rather than against a random critic.
3. **PPO with distillation.** :class:`KickstartPPO` is ``MaskablePPO`` whose loss on each minibatch gains
   ``beta_t * KL(teacher || policy)``, where the teacher distribution is that of the frozen clone after
   phase 1 (a copy of the policy, so the term needs only the rollout buffer's observations and masks and
   works with any teacher and with ``SubprocVecEnv``), and ``beta_t`` falls linearly from
   ``distill_start`` to 0 over ``distill_steps`` timesteps (:func:`distill_beta`). The override is
   ``MaskablePPO.train`` (sb3-contrib 2.x, MIT licence) with the term added; once ``beta_t`` is 0 it is
   plain ``MaskablePPO.train``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from stable_baselines3.common.type_aliases import Schedule
from stable_baselines3.common.utils import explained_variance
from torch.nn import functional as F

from agents.events import make_env
from hetgym.envs.events.actions import AUTO_ACTION
from hetgym.sim.guidance import Directive

#: The teachers given as an action rule (any other name: a registered policy's closest choices).
RULE_TEACHERS = ("elasticflow", "force-any")


def distill_beta(step: int, start: float, steps: int) -> float:
    """The distillation weight after ``step`` PPO timesteps: ``start`` falling linearly to 0 at ``steps``
    (0 throughout when ``steps`` is 0)."""
    if steps <= 0:
        return 0.0
    return float(start) * max(0.0, 1.0 - step / steps)


def teacher_rule(name: str, env: Any) -> Any:
    """The teacher ``name`` in ``env`` (an event-driven environment, possibly wrapped) as a function of no argument that
    returns its action for the pending decision.

    ``elasticflow``: action 0 (the allocator's own choice) always; ``force-any``: force the job on any GPU
    type (action 0, keep, at a late event, where forcing is not allowed); any other name: that registered
    policy's closest choices (:class:`~hetgym.envs.events.experts.EventExpertAgent`).
    """
    u = env.unwrapped
    if name == "elasticflow":
        return lambda: AUTO_ACTION
    if name == "force-any":
        force = u.actions.index(Directive("force"))
        return lambda: force if u.action_masks()[force] else AUTO_ACTION
    from hetgym.envs.events.experts import EventExpertAgent

    agent = EventExpertAgent(name, env)
    return lambda: agent.action_for(0)


@dataclass
class TeacherData:
    """The teacher's episodes, state by state."""

    obs: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    returns: np.ndarray
    dsr: list[float]


def collect_teacher(
    env_id: str, teacher: str, seeds: list[int], gamma: float, overrides: dict[str, Any] | None = None
) -> TeacherData:
    """Play ``teacher`` on each workload seed of ``seeds`` (in ``gym.make(env_id, **overrides)``); its states,
    masks, actions and discounted returns."""
    obs_l, mask_l, act_l, ret_l, dsr = [], [], [], [], []
    for seed in seeds:
        env = make_env(env_id, **(overrides or {}))
        act = teacher_rule(teacher, env)
        obs, info = env.reset(seed=seed, options={"workload_seed": seed})
        rewards: list[float] = []
        while True:
            a = int(act())
            obs_l.append(obs)
            mask_l.append(np.asarray(info["action_mask"], dtype=bool))
            act_l.append(a)
            obs, reward, terminated, truncated, info = env.step(a)
            rewards.append(float(reward))
            if terminated or truncated:
                break
        ret, acc = np.zeros(len(rewards)), 0.0
        for i in range(len(rewards) - 1, -1, -1):
            acc = rewards[i] + gamma * acc
            ret[i] = acc
        ret_l.append(ret)
        dsr.append(float(info["metrics"]["dsr"]))
    return TeacherData(
        obs=np.asarray(obs_l, dtype=np.float32),
        masks=np.asarray(mask_l, dtype=bool),
        actions=np.asarray(act_l, dtype=np.int64),
        returns=np.concatenate(ret_l).astype(np.float32),
        dsr=dsr,
    )


def masked_logits(policy: Any, obs: th.Tensor, masks: th.Tensor | np.ndarray) -> th.Tensor:
    """The policy's action logits with the invalid actions' set to a large negative number."""
    dist = policy.get_distribution(obs, action_masks=masks)
    return dist.distribution.logits


def masked_kl(teacher_logits: th.Tensor, logits: th.Tensor, masks: th.Tensor) -> th.Tensor:
    """``KL(teacher || policy)`` per state over the valid actions (``masks``)."""
    p_t = F.softmax(teacher_logits, dim=-1)
    terms = p_t * (F.log_softmax(teacher_logits, dim=-1) - F.log_softmax(logits, dim=-1))
    return th.where(masks, terms, th.zeros_like(terms)).sum(dim=-1)


def _batches(n: int, batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    order = rng.permutation(n)
    return [order[i : i + batch_size] for i in range(0, n, batch_size)]


def agreement(policy: Any, data: TeacherData) -> float:
    """The share of the teacher's states where the policy's deterministic (masked) action is the teacher's."""
    with th.no_grad():
        logits = masked_logits(policy, th.as_tensor(data.obs), data.masks)
    return float((logits.argmax(dim=-1).numpy() == data.actions).mean())


def behaviour_clone(
    policy: Any, data: TeacherData, *, epochs: int, lr: float, batch_size: int, seed: int, logger: Any = None
) -> float:
    """Train the actor by masked cross-entropy on the teacher's actions; log and return the agreement."""
    actor = list(policy.mlp_extractor.policy_net.parameters()) + list(policy.action_net.parameters())
    actor += list(policy.pi_features_extractor.parameters())
    opt = th.optim.Adam(actor, lr=lr)
    rng = np.random.default_rng(seed)
    obs, acts, masks = th.as_tensor(data.obs), th.as_tensor(data.actions), th.as_tensor(data.masks)
    for epoch in range(epochs):
        losses = []
        for idx in _batches(len(acts), batch_size, rng):
            loss = F.cross_entropy(masked_logits(policy, obs[idx], masks[idx].numpy()), acts[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        if logger is not None:
            logger.record("bc/loss", float(np.mean(losses)))
            logger.record("bc/accuracy", agreement(policy, data))
            logger.dump(step=epoch + 1)
    return agreement(policy, data)


def pretrain_critic(
    policy: Any, data: TeacherData, *, epochs: int, lr: float, batch_size: int, seed: int, logger: Any = None
) -> float:
    """Fit the value head to the teacher's returns with the actor frozen; log and return the last loss."""
    critic = list(policy.mlp_extractor.value_net.parameters()) + list(policy.value_net.parameters())
    if not policy.share_features_extractor:
        critic += list(policy.vf_features_extractor.parameters())
    opt = th.optim.Adam(critic, lr=lr)
    rng = np.random.default_rng(seed)
    obs, returns = th.as_tensor(data.obs), th.as_tensor(data.returns)
    with th.no_grad():  # start the head at the mean return: the returns lie far from 0, Adam's steps are small
        policy.value_net.bias.fill_(float(returns.mean()))
    last = float("nan")
    for epoch in range(epochs):
        losses = []
        for idx in _batches(len(returns), batch_size, rng):
            loss = F.mse_loss(policy.predict_values(obs[idx]).flatten(), returns[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        last = float(np.mean(losses))
        if logger is not None:
            logger.record("critic/pretrain_loss", last)
            logger.dump(step=epoch + 1)
    return last


def scheduled(value: Schedule | float, progress_remaining: float) -> float:
    """A clip range at ``progress_remaining``: PPO's ``_setup_model`` makes each a schedule, though typed
    as either."""
    return float(value(progress_remaining)) if callable(value) else float(value)


def frozen_copy(policy: Any) -> Any:
    """A copy of ``policy`` that no optimiser moves (the distillation teacher)."""
    teacher = copy.deepcopy(policy)
    teacher.set_training_mode(False)
    for p in teacher.parameters():
        p.requires_grad_(False)
    return teacher


class KickstartPPO(MaskablePPO):
    """``MaskablePPO`` with ``beta_t * KL(teacher || policy)`` added to each minibatch's loss (module docstring).

    Set :attr:`teacher` (a frozen policy, :func:`frozen_copy`) before ``learn``; it is not saved with the
    model (a run keeps it in its own file), and without it the algorithm is plain ``MaskablePPO``.
    """

    distill_start: float = 0.0
    distill_steps: int = 0
    teacher: Any = None

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "teacher"]

    def train(self) -> None:
        beta = distill_beta(self.num_timesteps, self.distill_start, self.distill_steps)
        if self.teacher is None or beta <= 0:
            self.logger.record("train/distill_beta", 0.0)
            super().train()
            return
        # From here on: MaskablePPO.train, with the lines marked "distillation" added.
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        clip_range = scheduled(self.clip_range, self._current_progress_remaining)
        clip_range_vf = None
        if self.clip_range_vf is not None:
            clip_range_vf = scheduled(self.clip_range_vf, self._current_progress_remaining)
        entropy_losses, pg_losses, value_losses, clip_fractions, distill_losses = [], [], [], [], []
        approx_kl_divs: list[float] = []
        continue_training = True
        for _ in range(self.n_epochs):
            approx_kl_divs = []
            for rollout_data in self.rollout_buffer.get(self.batch_size):
                actions = rollout_data.actions
                if isinstance(self.action_space, spaces.Discrete):
                    actions = rollout_data.actions.long().flatten()
                masks = rollout_data.action_masks
                values, log_prob, entropy = self.policy.evaluate_actions(
                    rollout_data.observations, actions, action_masks=masks
                )
                values = values.flatten()
                advantages = rollout_data.advantages
                if self.normalize_advantage:
                    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
                ratio = th.exp(log_prob - rollout_data.old_log_prob)
                policy_loss_1 = advantages * ratio
                policy_loss_2 = advantages * th.clamp(ratio, 1 - clip_range, 1 + clip_range)
                policy_loss = -th.min(policy_loss_1, policy_loss_2).mean()
                pg_losses.append(policy_loss.item())
                clip_fractions.append(th.mean((th.abs(ratio - 1) > clip_range).float()).item())
                if clip_range_vf is None:
                    values_pred = values
                else:
                    values_pred = rollout_data.old_values + th.clamp(
                        values - rollout_data.old_values, -clip_range_vf, clip_range_vf
                    )
                value_loss = F.mse_loss(rollout_data.returns, values_pred)
                value_losses.append(value_loss.item())
                entropy_loss = -th.mean(-log_prob) if entropy is None else -th.mean(entropy)
                entropy_losses.append(entropy_loss.item())
                loss = policy_loss + self.ent_coef * entropy_loss + self.vf_coef * value_loss
                # distillation: KL(teacher || policy) on the minibatch's states, over the valid actions.
                valid = masks.bool()
                with th.no_grad():
                    teacher_logits = masked_logits(self.teacher, rollout_data.observations, valid.numpy())
                logits = masked_logits(self.policy, rollout_data.observations, valid.numpy())
                distill = masked_kl(teacher_logits, logits, valid).mean()
                distill_losses.append(distill.item())
                loss = loss + beta * distill
                with th.no_grad():
                    log_ratio = log_prob - rollout_data.old_log_prob
                    approx_kl_div = th.mean((th.exp(log_ratio) - 1) - log_ratio).cpu().numpy()
                    approx_kl_divs.append(float(approx_kl_div))
                if self.target_kl is not None and approx_kl_div > 1.5 * self.target_kl:
                    continue_training = False
                    break
                self.policy.optimizer.zero_grad()
                loss.backward()
                th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
                self.policy.optimizer.step()
            self._n_updates += 1
            if not continue_training:
                break
        buffer = self.rollout_buffer
        explained_var = explained_variance(buffer.values.flatten(), buffer.returns.flatten())
        self.logger.record("train/entropy_loss", np.mean(entropy_losses))
        self.logger.record("train/policy_gradient_loss", np.mean(pg_losses))
        self.logger.record("train/value_loss", np.mean(value_losses))
        self.logger.record("train/approx_kl", np.mean(approx_kl_divs))
        self.logger.record("train/clip_fraction", np.mean(clip_fractions))
        self.logger.record("train/loss", loss.item())
        self.logger.record("train/explained_variance", explained_var)
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/clip_range", clip_range)
        if clip_range_vf is not None:
            self.logger.record("train/clip_range_vf", clip_range_vf)
        self.logger.record("train/distill_beta", beta)  # distillation
        self.logger.record("train/distill_kl", np.mean(distill_losses))  # distillation


__all__ = [
    "RULE_TEACHERS",
    "KickstartPPO",
    "TeacherData",
    "agreement",
    "behaviour_clone",
    "collect_teacher",
    "distill_beta",
    "frozen_copy",
    "masked_kl",
    "masked_logits",
    "pretrain_critic",
]
