"""The observation encoders' contract and registry: :class:`ObservationEncoder`, :data:`OBSERVATIONS`.

An encoder writes an observation as one float32 vector whose layout names each slice (flat first; see
:mod:`hetgym.envs.observations`, which holds the built-in ``window`` encoder, and
:mod:`hetgym.envs.observations_layout`). This module imports no encoder, so a plug-in can subclass the base
without loading the built-in ones.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Callable
from typing import ClassVar, TypeVar

import numpy as np
from gymnasium import spaces

from hetgym.envs.features import EncoderSettings
from hetgym.envs.observations_layout import ObservationLayout
from hetgym.envs.state import DecisionState
from hetgym.sim.errors import HetgymError
from hetgym.sim.rates import RateTable
from hetgym.sim.registry import Knobs, Registry


class ObservationEncoder(ABC):
    """Base class of observation encoders (pluggable: decorate a subclass with :func:`register_observation`).

    Flat first: an encoder writes an observation as one float32 vector (:meth:`observe_into`) whose
    :attr:`flat_layout` names each slice (:class:`~hetgym.envs.observations_layout.ObservationLayout`);
    the ``Dict`` form (:meth:`observe`, :attr:`space`) is the slices of that vector. The environment calls
    :meth:`begin_epoch` once per decision epoch (after the window is filled) and :meth:`observe_flat` (flat
    ids: a new vector that :meth:`observe_into` fills) or :meth:`observe` (the ``Dict`` ids) after every step;
    a vector env writes rows with :meth:`observe_into`. The spaces are fixed at construction.

    A subclass implements :meth:`observe_into` and :attr:`flat_layout` (the built-in encoders do), or, written
    ``Dict`` first, :meth:`observe` and :attr:`space`: its layout is then the ``Dict``'s keys in order and
    :meth:`observe_into` copies what :meth:`observe` returns.

    Args:
        state: The environment's decision state (fixes K, the GPU types and the modes).
        settings: The environment-wide settings (count levels, ``allow_reject``, the per-epoch action cap,
            the time scale, the throughput model; :class:`~hetgym.envs.config.EnvSettings`).
        knobs: The encoder's own knobs, an instance of :attr:`knobs` (``observation_knobs={...}``), or
            ``None`` when it declares none.

    Attributes:
        name: Registry name (``observation="name"``).
        knobs: The frozen :class:`~hetgym.sim.registry.Knobs` dataclass of the encoder's own knobs, or
            ``None`` (of the built-in encoders, ``window`` has :class:`~hetgym.envs.observations.WindowKnobs`).
        knob_values: The knob values this instance was built with.
    """

    name: ClassVar[str]
    knobs: ClassVar[type[Knobs] | None] = None

    def __init__(self, state: DecisionState, settings: EncoderSettings, knobs: Knobs | None = None) -> None:
        del state  # subclasses lay out their space from it
        cls = type(self)
        if cls.observe_into is ObservationEncoder.observe_into and cls.observe is ObservationEncoder.observe:
            raise HetgymError(
                f"observation encoder {cls.__name__} implements neither observe_into (the flat vector, preferred) "
                "nor observe (the Dict); implement one of them"
            )
        self.settings = settings
        self.knob_values = knobs
        self._dict_layout: ObservationLayout | None = None

    @property
    def flat_layout(self) -> ObservationLayout:
        """Where each feature lies in the flat vector (``name -> (start, stop, shape)``) and its bounds.

        Default: the :attr:`space`'s keys in order (for an encoder written ``Dict`` first).
        """
        if self._dict_layout is None:
            self._dict_layout = ObservationLayout.of_dict_space(self.space)
        return self._dict_layout

    @property
    def space(self) -> spaces.Dict:
        """The ``Dict`` form's space (fixed at construction): the :attr:`flat_layout`'s features."""
        return self.flat_layout.dict_space

    @property
    def flat_space(self) -> spaces.Box:
        """The flat form's space: one float32 ``Box`` of the layout's size and bounds."""
        return self.flat_layout.box

    @property
    def layout(self) -> dict[str, slice]:
        """``{key: slice}`` of the flat vector (the :attr:`flat_layout`'s slices, in its order)."""
        return self.flat_layout.slices

    @property
    def size(self) -> int:
        """Number of float32 entries of the flat form."""
        return self.flat_layout.size

    def begin_epoch(self, state: DecisionState, statics: RateTable, num_jobs: int) -> None:  # noqa: B027
        """Compute what stays fixed during a decision epoch (called after ``state.load``; default: nothing)."""

    def observe_into(self, state: DecisionState, out: np.ndarray) -> None:
        """Write the observation of the current draft into ``out`` (float32, flat, features where
        :attr:`flat_layout` says).

        Default (an encoder written ``Dict`` first): copies :meth:`observe`'s arrays.
        """
        self.flat_layout.from_dict(self.observe(state), out)

    def observe_flat(self, state: DecisionState) -> np.ndarray:
        """The observation of the current draft as a new flat float32 vector."""
        out = np.empty(self.flat_layout.size, dtype=np.float32)
        self.observe_into(state, out)
        return out

    def observe(self, state: DecisionState) -> dict[str, np.ndarray]:
        """The ``Dict`` form of the observation: views into a new flat vector (:meth:`observe_flat`)."""
        return self.flat_layout.as_dict(self.observe_flat(state))


#: Every registered observation encoder class, by ``observation=`` name (see :mod:`hetgym.sim.registry`).
OBSERVATIONS: Registry[type[ObservationEncoder]] = Registry(
    "observation encoder",
    "Register one with @hetgym.envs.register_observation(); list them with hetgym.envs.OBSERVATIONS.describe().",
)
#: The same registry under its earlier name.
ENCODERS = OBSERVATIONS
_E = TypeVar("_E", bound=type[ObservationEncoder])


def register_observation(name: str | None = None) -> Callable[[_E], _E]:
    """Class decorator: register an :class:`ObservationEncoder` subclass as ``observation=name``.

    ``name`` defaults to ``cls.name``; the class's ``knobs`` dataclass, when set, is recorded with the
    entry and the configuration's ``observation_knobs`` are checked against it.
    """

    def deco(cls: _E) -> _E:
        OBSERVATIONS.register(name or cls.name, cls, knobs=cls.knobs)
        return cls

    return deco


__all__ = ["ENCODERS", "OBSERVATIONS", "ObservationEncoder", "register_observation"]
