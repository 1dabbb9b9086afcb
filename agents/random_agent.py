"""``RandomMaskedAgent``: a uniformly random choice among the valid actions, with SB3's ``predict`` protocol.

The floor a learned agent must clear. ``hetgym evaluate --random`` puts it in the table beside the models and
the experts, on the same workloads; ``scripts/studies/random_agent.py`` runs it alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from agents.common import AgentError


class RandomMaskedAgent:
    """Pick each action uniformly among those ``action_masks`` allows (per dimension for ``MultiDiscrete``).

    Args:
        action_space: The env's action space (``Discrete`` or ``MultiDiscrete``).
        seed: Seed of the agent's generator (the choices are reproducible for the same sequence of calls).

    ``predict`` follows SB3's protocol (``(action, state)``; a batch of observations gives a batch of actions)
    and needs ``action_masks``: without the mask every action would count as valid.
    """

    #: ``predict`` takes ``action_masks`` (read by :func:`agents.demos.model_learner`).
    uses_action_masks = True

    def __init__(self, action_space: spaces.Space[Any], seed: int = 0) -> None:
        if not isinstance(action_space, (spaces.Discrete, spaces.MultiDiscrete)):
            raise AgentError(
                f"a random masked agent needs a Discrete or MultiDiscrete action space, got {action_space}"
            )
        self.action_space = action_space
        self.rng = np.random.default_rng(seed)
        self._sizes = [int(action_space.n)] if isinstance(action_space, spaces.Discrete) else action_space.nvec.tolist()

    def _one(self, mask: np.ndarray) -> Any:
        if mask.shape != (sum(self._sizes),):
            raise AgentError(f"action mask of shape {mask.shape}; this action space needs ({sum(self._sizes)},)")
        out: list[int] = []
        offset = 0
        for n in self._sizes:
            valid = np.flatnonzero(mask[offset : offset + n])
            if len(valid) == 0:
                raise AgentError(f"no valid action in dimension {len(out)} of the mask")
            out.append(int(valid[self.rng.integers(len(valid))]))
            offset += n
        if isinstance(self.action_space, spaces.Discrete):
            return out[0]
        return np.asarray(out, dtype=np.int64)

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = False,
        action_masks: np.ndarray | None = None,
    ) -> tuple[Any, None]:
        """A random valid action (``(action, None)``); ``action_masks`` of shape ``(mask,)`` or ``(n_envs, mask)``."""
        del observation, state, episode_start, deterministic
        if action_masks is None:
            raise AgentError("RandomMaskedAgent.predict needs action_masks (info['action_mask'] or env.action_masks())")
        masks = np.asarray(action_masks, dtype=bool)
        if masks.ndim == 2:
            return np.stack([np.asarray(self._one(m)) for m in masks]), None
        return self._one(masks), None


__all__ = ["RandomMaskedAgent"]
