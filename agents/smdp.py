"""Discounting by simulated time (a semi-MDP) for PPO and MaskablePPO.

In ``HetCluster`` an agent step that edits the draft costs no simulated time; only a commit advances the
clock, by ``info["reward_components"]["dt_s"]`` seconds. With the usual per-step discount, every extra
zero-time step pushes the (mostly negative) rewards further away and so *raises* the return: the
learned policy pads its epochs with edits. Discounting by time instead, as Decima does (Mao et al.,
"Learning Scheduling Algorithms for Data Processing Clusters", SIGCOMM 2019), each transition's
discount is ``gamma ** (dt_s / time_scale_s)``: a zero-time step is not discounted at all, so the return
of a decision does not depend on how many steps express it.

:class:`TimeDiscountCallback` reads each step's ``dt_s`` from the infos and hands the per-environment
discounts to the rollout buffer (:class:`TimeDiscountedRolloutBuffer`, or
:class:`MaskableTimeDiscountedRolloutBuffer` for MaskablePPO), whose GAE uses them in place of the
constant ``gamma``: ``delta_t = r_t + g_t V(s_{t+1}) - V(s_t)``, ``A_t = delta_t + g_t lambda A_{t+1}``
with ``g_t`` the discount of transition ``t`` (``Dict``-observation variants too). Pass the buffer class
as ``rollout_buffer_class`` (:func:`time_discount_kwargs` picks it) and the callback to ``learn``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.buffers import MaskableDictRolloutBuffer, MaskableRolloutBuffer
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback

from agents.args import AgentError


def step_discounts(dt_s: np.ndarray, gamma: float, time_scale_s: float) -> np.ndarray:
    """``gamma ** (dt_s / time_scale_s)``: the discount of transitions lasting ``dt_s`` simulated seconds."""
    if not 0.0 < gamma <= 1.0:
        raise AgentError(f"gamma={gamma}: a discount per {time_scale_s:g} s of simulated time must be in (0, 1]")
    if not time_scale_s > 0:
        raise AgentError(f"time_scale_s={time_scale_s}: give a positive number of seconds")
    return np.power(gamma, np.maximum(np.asarray(dt_s, dtype=np.float64), 0.0) / time_scale_s).astype(np.float32)


class _RolloutBufferHost:
    """What :class:`_TimeDiscountMixin` calls of the SB3 rollout buffer after it in the bases (one of four
    classes with no common base declaring ``add`` alike), for the type checker only; at run time the
    mixin's base is ``object``."""

    def reset(self) -> None: ...

    def add(self, *args: Any, **kwargs: Any) -> None: ...


if TYPE_CHECKING:
    _BufferHost = _RolloutBufferHost
else:
    _BufferHost = object


class _TimeDiscountMixin(_BufferHost):
    """Per-transition discounts in a rollout buffer (see the module docstring)."""

    buffer_size: int
    n_envs: int
    pos: int
    gae_lambda: float
    rewards: np.ndarray
    values: np.ndarray
    episode_starts: np.ndarray
    advantages: np.ndarray
    returns: np.ndarray

    def reset(self) -> None:
        super().reset()
        self.discounts = np.ones((self.buffer_size, self.n_envs), dtype=np.float32)
        self.pending: np.ndarray | None = None

    def add(self, *args: Any, **kwargs: Any) -> None:
        if self.pending is None:
            raise AgentError(
                "a time-discounted rollout buffer needs TimeDiscountCallback among the callbacks of learn() "
                "(it supplies each step's discount); use agents.smdp.time_discount_kwargs"
            )
        self.discounts[self.pos] = self.pending
        self.pending = None
        super().add(*args, **kwargs)

    def compute_returns_and_advantage(self, last_values: th.Tensor, dones: np.ndarray) -> None:
        last = last_values.clone().cpu().numpy().flatten()
        last_gae_lam = np.zeros(self.n_envs, dtype=np.float32)
        for step in reversed(range(self.buffer_size)):
            if step == self.buffer_size - 1:
                next_non_terminal = 1.0 - dones.astype(np.float32)
                next_values = last
            else:
                next_non_terminal = 1.0 - self.episode_starts[step + 1]
                next_values = self.values[step + 1]
            g = self.discounts[step]
            delta = self.rewards[step] + g * next_values * next_non_terminal - self.values[step]
            last_gae_lam = delta + g * self.gae_lambda * next_non_terminal * last_gae_lam
            self.advantages[step] = last_gae_lam
        self.returns = self.advantages + self.values


class TimeDiscountedRolloutBuffer(_TimeDiscountMixin, RolloutBuffer):
    """SB3's rollout buffer with per-transition discounts (PPO)."""


class MaskableTimeDiscountedRolloutBuffer(_TimeDiscountMixin, MaskableRolloutBuffer):
    """sb3-contrib's maskable rollout buffer with per-transition discounts (MaskablePPO)."""


class TimeDiscountedDictRolloutBuffer(_TimeDiscountMixin, DictRolloutBuffer):
    """SB3's rollout buffer for ``Dict`` observations with per-transition discounts (PPO)."""


class MaskableTimeDiscountedDictRolloutBuffer(_TimeDiscountMixin, MaskableDictRolloutBuffer):
    """sb3-contrib's maskable ``Dict``-observation buffer with per-transition discounts (MaskablePPO)."""


class TimeDiscountCallback(BaseCallback):
    """Hands each step's ``gamma ** (dt_s / time_scale_s)`` to the time-discounted rollout buffer.

    Args:
        gamma: The discount per ``time_scale_s`` of simulated time.
        time_scale_s: The time unit of ``gamma`` (the env's ``time_scale_s``, an hour by default).
    """

    def __init__(self, gamma: float, time_scale_s: float = 3600.0) -> None:
        super().__init__()
        step_discounts(np.zeros(1), gamma, time_scale_s)  # validates
        self.gamma = float(gamma)
        self.time_scale_s = float(time_scale_s)

    def _on_step(self) -> bool:
        infos = self.locals["infos"]
        dt = np.array([info.get("reward_components", {}).get("dt_s", 0.0) for info in infos], dtype=np.float64)
        buffer = getattr(self.model, "rollout_buffer", None)  # on-policy algorithms only
        if not isinstance(buffer, _TimeDiscountMixin):
            raise AgentError("TimeDiscountCallback needs a time-discounted rollout buffer (rollout_buffer_class)")
        buffer.pending = step_discounts(dt, self.gamma, self.time_scale_s)
        return True


def time_discount_kwargs(algo: str, observation_space: spaces.Space[Any]) -> dict[str, Any]:
    """The algorithm keyword arguments that install the time-discounted rollout buffer for ``algo``
    (``ppo`` or ``maskable-ppo``) and the environment's observation space."""
    maskable, as_dict = algo == "maskable-ppo", isinstance(observation_space, spaces.Dict)
    cls: type[Any] = {
        (False, False): TimeDiscountedRolloutBuffer,
        (False, True): TimeDiscountedDictRolloutBuffer,
        (True, False): MaskableTimeDiscountedRolloutBuffer,
        (True, True): MaskableTimeDiscountedDictRolloutBuffer,
    }[(maskable, as_dict)]
    return {"rollout_buffer_class": cls}


__all__ = [
    "MaskableTimeDiscountedDictRolloutBuffer",
    "MaskableTimeDiscountedRolloutBuffer",
    "TimeDiscountCallback",
    "TimeDiscountedDictRolloutBuffer",
    "TimeDiscountedRolloutBuffer",
    "step_discounts",
    "time_discount_kwargs",
]
