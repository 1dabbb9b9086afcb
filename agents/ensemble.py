"""``EnsembleAgent``: several saved agents acting as one, by the mean of their action probabilities.

Members trained on different data or from different initialisations err in different states; averaging
their (masked) action distributions and acting on the mean is the plain policy ensemble of imitation
learning (e.g. Menda et al., "EnsembleDAgger", IROS 2019, who use the members' disagreement as well; here
only the mean). The agent follows SB3's ``predict`` protocol with ``action_masks``, so ``hetgym evaluate
RUN_A RUN_B --ensemble`` scores it beside the experts like any model.

Members must act in the same environment (the same id and ``gym.make`` overrides) with a ``Discrete``
action space (the ``sequential`` and ``jobwise`` codecs). The deterministic action is the argmax of the
mean probabilities, or, with ``decoding="kind-first"`` for set-network members, the likeliest kind of
action first (:func:`agents.set_policy.kind_first_argmax`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

from agents.common import AgentError
from agents.set_policy import check_decoding, jobwise_num_set, kind_first_argmax

#: Log-probability given to actions the mask rules out before decoding.
_MASKED = -1e8


class EnsembleAgent:
    """Act on the mean action distribution of ``models`` (SB3 algorithms or policies' owners).

    Args:
        models: Two or more SB3 models with the same ``Discrete`` action space.
        decoding: Deterministic decoding of the mean: ``argmax``, ``kind-first`` (set-network members
            only), or ``None``: the members' own (they must agree).
        seed: Seed of the generator that samples when ``deterministic=False``.

    ``predict(observation, deterministic=..., action_masks=...)`` takes one observation (a dict of arrays)
    or a batch of them, as SB3's does, and returns ``(action, None)``.
    """

    #: ``predict`` takes ``action_masks`` (read by :func:`agents.demos.model_learner`).
    uses_action_masks = True

    def __init__(self, models: Sequence[Any], *, decoding: str | None = None, seed: int = 0) -> None:
        if len(models) < 2:
            raise AgentError(f"an ensemble needs at least two models, got {len(models)}")
        space = models[0].policy.action_space
        if not isinstance(space, spaces.Discrete):
            raise AgentError(f"an ensemble averages Discrete action distributions; this action space is {space}")
        for i, model in enumerate(models[1:], start=1):
            other = model.policy.action_space
            if other != space or model.policy.observation_space != models[0].policy.observation_space:
                raise AgentError(f"model {i} acts in another space ({other}) than model 0 ({space}): one env for all")
        own = {getattr(m.policy, "decoding", "argmax") for m in models}
        if decoding is None:
            if len(own) > 1:
                raise AgentError(f"the members decode differently ({sorted(own)}); choose one with decoding=")
            decoding = own.pop()
        try:
            self.decoding = check_decoding(decoding)
        except ValueError as exc:
            raise AgentError(str(exc)) from exc
        self.num_set = 0
        if self.decoding == "kind-first":
            layout = getattr(models[0].policy, "slot_layout", None)
            if layout is None or not hasattr(models[0].policy, "decoding"):
                raise AgentError("decoding='kind-first' needs set-network members (arch 'set', codec 'jobwise')")
            self.num_set = jobwise_num_set(layout)
        self.models = list(models)
        self.action_space = space
        self.rng = np.random.default_rng(seed)

    def action_probabilities(self, observation: Any, action_masks: np.ndarray) -> np.ndarray:
        """The members' mean probabilities, ``(batch, n)``, of the actions ``action_masks`` allows."""
        masks = np.atleast_2d(np.asarray(action_masks, dtype=bool))
        n = int(self.action_space.n)
        if masks.shape[1] != n:
            raise AgentError(f"action mask of shape {np.shape(action_masks)}; this action space needs ({n},)")
        if not masks.any(axis=1).all():
            raise AgentError("an action mask allows no action")
        total = np.zeros(masks.shape, dtype=np.float64)
        for model in self.models:
            policy = model.policy
            policy.set_training_mode(False)
            obs_t, _ = policy.obs_to_tensor(observation)
            with th.no_grad():
                if isinstance(policy, MaskableActorCriticPolicy):
                    dist = policy.get_distribution(obs_t, action_masks=masks)
                else:
                    dist = policy.get_distribution(obs_t)
                categorical = dist.distribution
                if not isinstance(categorical, th.distributions.Categorical):
                    raise AgentError("an ensemble averages one Discrete action's probabilities; this model has several")
                probs = categorical.probs.cpu().numpy().astype(np.float64)
            probs = np.where(masks, probs, 0.0)
            total += probs / np.maximum(probs.sum(axis=1, keepdims=True), 1e-300)
        return total / len(self.models)

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = False,
        action_masks: np.ndarray | None = None,
    ) -> tuple[Any, None]:
        """The ensemble's action (``(action, None)``); a batch of observations gives a batch of actions."""
        del state, episode_start
        if action_masks is None:
            raise AgentError("EnsembleAgent.predict needs action_masks (info['action_mask'] or env.action_masks())")
        batched = np.asarray(action_masks).ndim == 2
        probs = self.action_probabilities(observation, action_masks)
        if deterministic:
            logits = th.as_tensor(np.log(np.maximum(probs, 1e-300))).masked_fill(th.as_tensor(probs <= 0), _MASKED)
            if self.decoding == "kind-first":
                actions = kind_first_argmax(logits, self.num_set).numpy()
            else:
                actions = logits.argmax(dim=-1).numpy()
        else:
            actions = np.array([self.rng.choice(len(p), p=p / p.sum()) for p in probs])
        return (actions if batched else int(actions[0])), None


__all__ = ["EnsembleAgent"]
