"""The base of action codecs, and their registry: what every codec gives the environment and experts.

The environment talks to its codec only through :class:`ActionCodec`'s methods (:meth:`~ActionCodec.mask`,
:meth:`~ActionCodec.apply`, :meth:`~ActionCodec.noop`, :meth:`~ActionCodec.step_info`) and experts only
through :meth:`~ActionCodec.encode` and :meth:`~ActionCodec.encode_next`, so a codec registered with
:func:`register_codec` works with every part of the environment and with every expert, by name
(``gym.make(..., codec="name")``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
from gymnasium import spaces

from hetgym.envs.exactness import Encoding, explain_gap
from hetgym.envs.state import DecisionState
from hetgym.sim.allocation import Allocation
from hetgym.sim.registry import Knobs, Registry

if TYPE_CHECKING:
    from hetgym.envs.settings import EnvSettings


@dataclass(frozen=True)
class CodecStep:
    """What one action did.

    Attributes:
        commit: The draft is to be committed now (the simulator advances).
        invalid: The action was masked out and ignored (sequential) or needed repair (one-shot).
        repaired: Number of one-shot entries changed by the repair.
    """

    commit: bool
    invalid: bool = False
    repaired: int = 0


#: The steps that repair nothing, by ``(commit, invalid)``: shared instances (a step is immutable), so codecs
#: need not build one for every action.
PLAIN_STEPS: dict[tuple[bool, bool], CodecStep] = {
    (commit, invalid): CodecStep(commit=commit, invalid=invalid)
    for commit in (False, True)
    for invalid in (False, True)
}


class ActionCodec(ABC):
    """Base class of action codecs (pluggable: decorate a subclass with :func:`register_codec`).

    A codec defines the action space over the K-slot window of :class:`~hetgym.envs.state.DecisionState`,
    turns each action into edits of the draft allocation (:meth:`apply`; the environment commits the
    draft when the returned :class:`CodecStep` says so), and maps an expert's allocation back to actions
    (:meth:`encode`, :meth:`encode_next`).

    Args:
        state: The environment's decision state (fixes K, the GPU types and the modes).
        settings: The environment-wide settings a codec reads: the GPU count levels, whether actions can
            reject a job, the per-epoch cap on actions (:class:`~hetgym.envs.config.EnvSettings`).
        knobs: The codec's own knobs, an instance of :attr:`knobs` (``codec_knobs={...}`` in the
            configuration), or ``None`` when the codec declares none.

    Attributes:
        name: Registry name (``codec="name"``).
        knobs: The frozen :class:`~hetgym.sim.registry.Knobs` dataclass of the codec's own knobs, or
            ``None``. Of the built-in codecs ``score`` and ``jobwise`` have knobs; everything else they read
            is environment-wide (see :class:`~hetgym.envs.config.EnvSettings`).
        knob_values: The knob values this instance was built with (``None`` without knobs).
        slot_by_slot: Each action decides the window slot at ``state.cursor`` (``jobwise``, ``jobwise-types``); the
            observation then carries a ``slot_cursor`` key marking it. ``False`` for the other codecs.
    """

    name: ClassVar[str]
    knobs: ClassVar[type[Knobs] | None] = None
    slot_by_slot: ClassVar[bool] = False

    def __init__(self, state: DecisionState, settings: EnvSettings, knobs: Knobs | None = None) -> None:
        self.settings = settings
        self.knob_values = knobs
        self.num_slots = state.num_slots
        self.num_types = len(state.types)
        self.types = state.types
        self.modes = state.modes
        self.levels = np.asarray(settings.levels, dtype=np.int64)
        self.level_set = frozenset(int(v) for v in self.levels)
        self.allow_reject = bool(settings.allow_reject)
        self.max_actions = int(settings.max_actions)
        top = int(max(state.capacity.max(), self.levels.max()))
        counts = np.arange(top + 1)
        #: Index of the largest level <= n, for n = 0..top.
        self.floor_index = (np.searchsorted(self.levels, counts, side="right") - 1).astype(np.int64)

    @property
    @abstractmethod
    def space(self) -> spaces.Space[Any]:
        """The action space."""

    @abstractmethod
    def mask(self, state: DecisionState) -> np.ndarray:
        """Valid actions (bool; for ``MultiDiscrete``, the per-dimension masks concatenated)."""

    @abstractmethod
    def apply(self, state: DecisionState, action: Any, mask: np.ndarray) -> CodecStep:
        """Apply ``action`` to the draft.

        ``mask`` is the current :meth:`mask`; when the step does not commit, the codec updates it in
        place so that it stays equal to :meth:`mask` of the new draft (cheaper than recomputing it).
        """

    @abstractmethod
    def encode(self, state: DecisionState, target: Allocation) -> Encoding:
        """The actions that express ``target`` from the current draft (the inverse map)."""

    @abstractmethod
    def noop(self, state: DecisionState) -> Any:
        """An action that leaves every allocation as it is and commits."""

    def encode_next(self, state: DecisionState, target: Allocation) -> Any:
        """The next action towards ``target`` from the current draft (what an expert does now).

        The default is the first action of :meth:`encode`; a codec with a cheaper way (one that need not
        explain an inexact expression) overrides it.
        """
        return self.encode(state, target).actions[0]

    def step_info(self, step: CodecStep, info: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Add this codec's own entries to the ``info`` of the step that ``step`` describes (default: none)."""

    # ----------------------------------------------------------------------------------------
    def level_floor(self, num_gpus: int) -> int:
        """The largest level <= ``num_gpus``."""
        n = min(int(num_gpus), len(self.floor_index) - 1)
        return int(self.levels[self.floor_index[n]])

    def target_rows(
        self, state: DecisionState, target: Allocation
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``target`` per window slot: counts ``(K, T)`` rounded down to levels (0 on a type the job may not
        use), reject flags (all ``False`` without ``allow_reject``), mode indices (the draft's where the
        target's mode is not offered) and whether the slot gets GPUs."""
        k_slots, n_types = self.num_slots, self.num_types
        counts = np.zeros((k_slots, n_types), dtype=np.int64)
        reject = np.zeros(k_slots, dtype=bool)
        mode = state.draft_mode.copy()
        type_index = state.type_index
        for slot, job in enumerate(state.jobs):
            jid = job.job_id
            if jid in target.reject:
                reject[slot] = True
                continue
            ja = target.jobs.get(jid)
            if not ja:
                continue
            for t, n in ja.counts:
                ti = type_index.get(t)
                if ti is not None and state.allowed[slot, ti]:
                    counts[slot, ti] = self.level_floor(n)
            mi = state.mode_index.get(ja.mode)
            if mi is not None:
                mode[slot] = mi
        if not self.allow_reject:
            reject[:] = False
        has_gpus = np.asarray(counts.sum(axis=1) > 0)
        return counts, reject, mode, has_gpus

    def make_encoding(
        self,
        state: DecisionState,
        target: Allocation,
        actions: tuple[Any, ...],
        expressed: Allocation,
        notes: Sequence[str] = (),
    ) -> Encoding:
        """The :class:`~hetgym.envs.exactness.Encoding` of ``target`` by ``actions``, which commit ``expressed``.

        Exact when ``expressed`` leaves the simulator as ``target`` would and there are no ``notes``
        (extra reasons, e.g. an action cap that cuts the actions short); otherwise the reasons say why.
        """
        reasons = ([] if expressed == target else explain_gap(self, state, expressed, target)) + list(notes)
        return Encoding(actions, expressed, not reasons, tuple(reasons))


#: Every registered action codec class, by ``codec=`` name (see :mod:`hetgym.sim.registry`).
CODECS: Registry[type[ActionCodec]] = Registry(
    "action codec", "Register one with @hetgym.envs.register_codec(); list them with hetgym.envs.CODECS.describe()."
)
_C = TypeVar("_C", bound=type[ActionCodec])


def register_codec(name: str | None = None) -> Callable[[_C], _C]:
    """Class decorator: register an :class:`ActionCodec` subclass as ``codec=name`` (default ``cls.name``).

    The class's ``knobs`` (a frozen :class:`~hetgym.sim.registry.Knobs` dataclass), when set, is recorded
    with the entry; the configuration's ``codec_knobs`` are checked against it.
    """

    def deco(cls: _C) -> _C:
        CODECS.register(name or cls.name, cls, knobs=cls.knobs)
        return cls

    return deco


def make_codec(name: str, state: DecisionState, settings: EnvSettings, knobs: Knobs | None = None) -> ActionCodec:
    """The codec registered as ``name``, with an alias's preset knobs (an unknown name raises, naming the nearest)."""
    return CODECS.get(name)(state, settings, CODECS.knobs_for(name, knobs))


def discrete_index(action: Any, n: int, codec: str) -> int:
    """``action`` as an index of ``Discrete(n)`` (ints, numpy scalars and size-1 arrays); a clear error otherwise."""
    if type(action) is int and 0 <= action < n:  # the common case, kept cheap
        return action
    if isinstance(action, np.integer) and 0 <= action < n:  # a numpy scalar (a vectorised learner's action)
        return int(action)
    value = action
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise ValueError(f"a {codec} action is one integer in [0, {n}), got an array of shape {value.shape}")
        value = value.reshape(()).item()
    if isinstance(value, np.generic):
        value = value.item()
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or int(value) != value
        or not 0 <= value < n
    ):
        raise ValueError(
            f"a {codec} action is an integer in [0, {n}), got {action!r}; pick one the action mask allows, "
            "e.g. env.action_space.sample(mask=info['action_mask'])"
        )
    return int(value)


def multidiscrete_array(action: Any, nvec: np.ndarray, codec: str, hint: str = "") -> np.ndarray:
    """``action`` as an int64 array of ``MultiDiscrete(nvec)``; a clear error naming the codec otherwise.

    Integer arrays and integral float arrays of ``nvec``'s shape are accepted; ``hint`` is appended to a
    shape error (how to build a valid action).
    """
    expected = f"a {codec} action is an integer array of shape {nvec.shape}"
    try:
        a = np.asarray(action)
    except (ValueError, TypeError):  # a ragged nested list
        raise ValueError(f"{expected}, got a ragged sequence {type(action).__name__}{hint}") from None
    if a.shape == nvec.shape and np.issubdtype(a.dtype, np.floating):
        whole = np.isfinite(a) & (np.mod(np.where(np.isfinite(a), a, 0), 1) == 0)
        if not whole.all():
            i = int(np.flatnonzero(~whole)[0])
            raise ValueError(f"{expected}: entry {i} is {float(a[i])!r}, not a finite whole number{hint}")
    integral = np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)
    if np.issubdtype(a.dtype, np.bool_):
        integral = False
    if a.shape != nvec.shape or not integral:
        got = repr(action) if a.ndim == 0 else f"an array of shape {a.shape} and dtype {a.dtype}"
        raise ValueError(f"{expected}, got {got}{hint}")
    a = a.astype(np.int64)
    bad = np.flatnonzero((a < 0) | (a >= nvec))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"a {codec} action is outside the action space ({len(nvec)} entries): "
            f"entry {i} is {int(a[i])}, allowed 0..{int(nvec[i]) - 1}"
        )
    return a
