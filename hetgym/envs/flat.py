"""Between the two forms of an observation: :class:`FlatObservation` (``Dict`` ids to a vector) and
:class:`DictObservation` (flat ids to the ``Dict``).

Every encoder writes one flat float32 vector (:mod:`hetgym.envs.observations_layout`); the flat ids
(``HetCluster-v2``, ``HetClusterEvents-v2``) return it, the earlier ids the ``Dict`` of its slices.
:class:`DictObservation` gives a flat id's observation as that ``Dict`` (views into the vector, the same keys,
bounds and values as the ``Dict`` ids'), for a ``MultiInputPolicy`` or a per-key feature extractor.

``FlatObservation(gym.make("HetCluster-v1"))`` returns what ``gymnasium.wrappers.FlattenObservation`` would
(the same vector: the ``Dict``'s keys in its order, each key's entries in order, the same float32 values,
and the same ``Box`` space), but builds it from the encoder's one flat buffer
(:meth:`~hetgym.envs.observations.ObservationEncoder.observe_into`) and one gather, instead of building a
``Dict`` of per-key arrays and concatenating them again. For an ``MlpPolicy`` (Stable-Baselines3,
sb3-contrib's MaskablePPO) the vector is what the policy reads, so the per-key arrays, the vector env's per-key
buffers and ``MultiInputPolicy``'s per-key extractors are all skipped. The default observation stays the
``Dict``; this wrapper is the opt-in.

It steps the environment itself (:meth:`HetClusterEnv.transition <hetgym.envs.env.HetClusterEnv.transition>`),
so it must wrap the environment directly or over the wrappers ``gymnasium.make`` adds (``OrderEnforcing``,
``PassiveEnvChecker``), which it then bypasses on :meth:`step`; any other wrapper in between is refused (put
it outside). ``action_masks()`` is the environment's, as MaskablePPO reads it. A flat id needs neither: its
observation already is a vector (in its layout's order, not the sorted keys' order ``FlattenObservation`` gives).
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker

from hetgym.envs.observations_layout import ObservationLayout
from hetgym.sim.errors import HetgymError

#: The wrappers ``gymnasium.make`` may add between :class:`FlatObservation` and the environment (bypassed on step).
PASSTHROUGH_WRAPPERS: tuple[type[gym.Wrapper[Any, Any, Any, Any]], ...] = (OrderEnforcing, PassiveEnvChecker)


class FlatObservation(gym.Wrapper[np.ndarray, Any, Any, Any]):
    """``FlattenObservation``'s vector and space for a ``HetCluster`` env, built from the encoder's flat buffer.

    Args:
        env: A ``HetCluster`` environment (``HetClusterEnv``), bare or as ``gymnasium.make`` returns it, whose
            observation encoder has a flat layout (every built-in one).

    Attributes:
        order: For each entry of the vector, its offset in the encoder's flat layout (int64).
    """

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        inner = env
        while isinstance(inner, gym.Wrapper):
            if not isinstance(inner, PASSTHROUGH_WRAPPERS):
                raise HetgymError(
                    f"FlatObservation steps the environment itself and would skip the wrapper "
                    f"{type(inner).__name__}; wrap gym.make(...) directly and put other wrappers outside it"
                )
            inner = inner.env
        encoder = getattr(inner, "encoder", None)
        layout = None if encoder is None else encoder.layout
        if layout is None:
            raise HetgymError("FlatObservation needs a HetCluster env whose observation encoder has a flat layout")
        space = env.observation_space
        if not isinstance(space, spaces.Dict):
            raise HetgymError(
                f"FlatObservation turns a Dict observation into a vector, and this env's is already a "
                f"{type(space).__name__} (a flat id such as HetCluster-v2): use it without the wrapper"
            )
        self._raw: Any = inner
        self._encoder: Any = encoder
        order = [np.arange(layout[key].start, layout[key].stop) for key in space.spaces]
        self.order: np.ndarray = np.concatenate(order)
        self._scratch: np.ndarray = np.empty(max(sl.stop for sl in layout.values()), dtype=np.float32)
        flat = spaces.flatten_space(space)
        assert isinstance(flat, spaces.Box) and flat.shape == self.order.shape
        self.observation_space = flat

    def _flat(self) -> np.ndarray:
        """The current observation as the vector (a fresh array)."""
        self._encoder.observe_into(self._raw.state, self._scratch)
        return self._scratch.take(self.order)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        _, info = self.env.reset(seed=seed, options=options)
        return self._flat(), info

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        reward, terminated, truncated, info = self._raw.transition(action)
        return self._flat(), reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Valid actions now (the environment's ``action_masks()``; MaskablePPO reads it)."""
        masks: np.ndarray = self._raw.action_masks()
        return masks


class DictObservation(gym.ObservationWrapper[dict[str, np.ndarray], Any, np.ndarray]):
    """A flat id's observation as the ``Dict`` of its layout's slices (the earlier ids' form).

    Args:
        env: An environment with a flat ``Box`` observation and a ``layout`` (every ``HetCluster`` and
            ``HetClusterEvents`` env made with ``flatten=True``: the ``-v2`` ids), bare or wrapped.

    The ``Dict``'s values are views into the vector the environment returned (a new one every step), keys in
    the order of the ``Dict`` ids; its space is the layout's :attr:`~ObservationLayout.dict_space`.
    """

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        layout = getattr(env.unwrapped, "layout", None)
        if not isinstance(layout, ObservationLayout) or not isinstance(env.observation_space, spaces.Box):
            raise HetgymError(
                "DictObservation needs an env with a flat Box observation and a layout (a HetCluster or "
                "HetClusterEvents env made with flatten=True, such as HetCluster-v2)"
            )
        if env.observation_space.shape != (layout.size,):
            raise HetgymError(
                f"DictObservation: the observation's shape {env.observation_space.shape} is not the layout's "
                f"({layout.size},); put wrappers that change the observation outside DictObservation"
            )
        self.layout = layout
        dict_space: spaces.Space[Any] = layout.dict_space
        self.observation_space = dict_space

    def observation(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        """The ``Dict`` of ``observation``'s slices (views)."""
        return self.layout.as_dict(observation)


__all__ = ["PASSTHROUGH_WRAPPERS", "DictObservation", "FlatObservation"]
