"""The window observation's feature names, scales and feature-group contract: a leaf module.

:mod:`hetgym.envs.observations` (the encoder) and the modules of its feature groups
(:mod:`hetgym.envs.observations_levels`, :mod:`hetgym.envs.observations_cursor`,
:mod:`hetgym.envs.observations_nodes`) import these; this module imports none of them at run time, so the
encoder can import its groups without a circle; a group sees its encoder as a :class:`WindowBuffer`, the
protocol of what it reads there, so this module needs no import of the encoder even for types; and the
encoders see the environment-wide settings as :class:`EncoderSettings` (what
:class:`~hetgym.envs.config.EnvSettings` gives them), so they need no import of the configuration either.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Protocol

import numpy as np

from hetgym.envs.state import DecisionState
from hetgym.sim.rates import RateTable
from hetgym.sim.throughput import ThroughputModel

#: Per-slot scalar features, in the order ``begin_epoch`` fills them; each is a key of shape (K,).
SLOT_FEATURES: tuple[str, ...] = (
    "slot_used",
    "job_request",
    "job_remaining",
    "job_progress",
    "job_slack",
    "job_time_to_deadline",
    "job_has_deadline",
    "job_age",
    "job_waiting",
    "job_running",
    "job_rate",
)
#: Per-slot-and-type features, each a key of shape (K*T,), slot-major.
SLOT_TYPE_FEATURES: tuple[str, ...] = ("job_speed", "job_current", "job_alloc")
#: Per-type features, each a key of shape (T,).
TYPE_FEATURES: tuple[str, ...] = ("cluster_capacity", "cluster_free", "cluster_outside", "cluster_used")
#: Entries of the ``clock`` vector.
CLOCK_FEATURES: tuple[str, ...] = ("time", "tick", "actions_used", "arrived")
#: Entries of the ``queue`` vector (aggregates of the active jobs outside the window).
QUEUE_FEATURES: tuple[str, ...] = (
    "active",
    "outside_share",
    "outside_demand",
    "outside_held",
    "outside_slack",
    "ended",
)


def squash(x: float) -> float:
    """``x / (1 + x)`` for ``x >= 0`` (1 for infinity): a bounded, monotone time scale."""
    if x <= 0:
        return 0.0
    if math.isinf(x):
        return 1.0
    return x / (1.0 + x)


def signed_scale(slack: float, scale: float) -> float:
    """``tanh(slack / scale)`` for a finite slack, else +-1 by its sign: a bounded, signed time scale."""
    if math.isfinite(slack):
        return math.tanh(slack / scale)
    return 1.0 if slack > 0 else -1.0


class EncoderSettings(Protocol):
    """The environment-wide settings an observation encoder reads (:class:`~hetgym.envs.config.EnvSettings`)."""

    @property
    def levels(self) -> tuple[int, ...]:
        """Ascending GPU count levels starting at 0."""

    @property
    def allow_reject(self) -> bool:
        """Whether actions can reject a job."""

    @property
    def max_actions(self) -> int:
        """The per-epoch cap on actions."""

    @property
    def time_scale_s(self) -> float:
        """Time unit of the squashed time features."""

    @property
    def throughput(self) -> ThroughputModel:
        """The throughput model the simulator runs with."""

    @property
    def slot_cursor(self) -> bool:
        """The codec decides one window slot per action."""


class WindowBuffer(Protocol):
    """What a feature group reads of the window encoder it is bound to
    (:class:`~hetgym.envs.observations.WindowObservation` has all of it)."""

    num_slots: int
    num_types: int
    capacity: np.ndarray
    capacity_list: list[float]
    time_scale_s: float
    slot_cursor: bool

    @property
    def layout(self) -> dict[str, slice]:
        """Where each key lies in the encoder's buffer."""

    def view_of(self, key: str) -> np.ndarray:
        """The epoch buffer's entries of ``key`` (a view)."""


class FeatureGroup(ABC):
    """Keys that a :class:`WindowObservation` knob adds after the encoder's own, and the code that fills them.

    The encoder lays out :meth:`keys` in its one buffer, then calls :meth:`bind` (the group keeps the
    encoder as :attr:`enc`); it calls :meth:`begin_epoch` after its own (only while the episode runs),
    :meth:`write_draft` after writing the draft's features of one observation, and :meth:`write_batch`
    after those of a vector env's batch.
    """

    enc: WindowBuffer

    @abstractmethod
    def keys(self, state: DecisionState) -> dict[str, tuple[int, float]]:
        """The added keys, ``{name: (size, low)}`` in layout order (every high is 1)."""

    def bind(self, enc: WindowBuffer) -> None:
        """Keep the encoder, its layout fixed (a group that reads offsets into its buffer extends this)."""
        self.enc = enc

    def begin_epoch(self, state: DecisionState, statics: RateTable) -> None:  # noqa: B027 - optional hook
        """Fill this group's keys that stay fixed during the epoch (default: nothing)."""

    def write_draft(self, state: DecisionState, buf: np.ndarray) -> None:  # noqa: B027 - optional hook
        """Write this group's keys that change with the draft into ``buf`` (default: nothing)."""

    def write_batch(  # noqa: B027 - optional hook
        self, rows: np.ndarray, batch: list[DecisionState], drafts: np.ndarray, frees: np.ndarray, out: np.ndarray
    ) -> None:
        """:meth:`write_draft` for the live rows of a batch (see :meth:`WindowObservation.observe_batch`)."""
