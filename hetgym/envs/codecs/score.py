"""The priority-score codec (``codec="score"``): per window slot a GPU type, a count level and a priority.

One step per decision epoch, like the one-shot codec, but an action states *preferences* rather than a
complete allocation: a documented, deterministic allocator (:meth:`ScoreCodec.allocate`) resolves
conflicts between them by priority. An agent can therefore ask for more GPUs than there are and let the
priorities decide who gets them, instead of learning to keep every entry within capacity. It is the
"score jobs, then let a fixed rule place them" split of learned schedulers such as Decima (Mao et al.,
SIGCOMM 2019), with the rule made explicit.

Action layout (``MultiDiscrete``, slot-major: ``action.reshape(K, D)`` has one row per slot, D = 3, or 4
with M > 1 execution modes):

* column 0, the *choice* (``T + 1`` values, ``T + 2`` with ``allow_reject``): 0 = no GPUs (the job waits,
  or is preempted), ``1 + t`` = run on GPU type ``t`` (cluster order), ``T + 1`` = reject the job;
* column 1, the *count*: an index into the positive count levels (``levels[1 + c]`` GPUs; ``C - 1``
  values); read only when the choice is a type;
* column 2, the *priority*: ``0 .. P - 1`` (``P`` = the ``priority_levels`` knob), higher served first;
* column 3 (when M > 1), the execution mode index.

The allocator (every step commits):

1. entries of empty slots are ignored;
2. jobs outside the window keep their GPUs; the rest of each type is free;
3. a slot whose choice is *reject* is rejected; a slot whose choice is 0 gets no GPUs;
4. the other slots are served by priority, highest first, ties in window order (most urgent first): a slot
   gets its count on its type when that many GPUs of the type are free; otherwise (the knob ``shrink``,
   default on) the largest count level that still fits on that type, or nothing when none does; with
   ``shrink=False``, nothing. A type the job may not use gives nothing. A job never gets another type than
   the one it chose, so an allocation gives each window job at most one GPU type.

``info["repaired"]`` counts the slots whose request the allocator changed (a disallowed type, a count cut
down or dropped) plus the non-zero entries of empty slots; a non-zero count marks the step invalid (for
``invalid_action_penalty``). The mask (per dimension, concatenated in the order of ``nvec``) marks, for a
slot taken on its own, the types the job may use on which the smallest level fits the GPUs not held
outside the window, the counts that fit the largest such type, and every priority and mode; for an empty
slot only entry 0 of each dimension. Entries that pass the mask can still be cut down when slots compete
for a type: that is what the priorities decide.

The shared greedy fill of the baselines (``baselines._common.greedy_fill``) serves a job's *requested*
gang on the first type with room; this allocator serves the agent's chosen type and count, and the
environment does not import the baselines, so it is written here.

The inverse map (:meth:`ScoreCodec.encode`) gives each window job of the target its type (the type of its
largest share), its count level and the top priority, a job without GPUs choice 0 and priority 0, and a
rejected job the reject choice; it then runs the allocator on a copy of the draft and reports the
encoding exact only when that gives back the target. A feasible target that gives each window job one GPU
type, on the count levels, in one of the codec's modes, is always reproduced (every request fits, so
order does not matter); a job spread over several types is expressed on its largest share and reported
inexact, as in the ``jobwise`` codec.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from hetgym.envs.codecs.base import ActionCodec, CodecStep, multidiscrete_array, register_codec
from hetgym.envs.exactness import Encoding
from hetgym.envs.state import DecisionState
from hetgym.sim.allocation import Allocation
from hetgym.sim.registry import Knobs, knob

if TYPE_CHECKING:
    from hetgym.envs.config import EnvSettings

#: Columns of one slot's row in ``action.reshape(K, D)``.
CHOICE, COUNT, PRIORITY, MODE = 0, 1, 2, 3


@dataclass(frozen=True)
class ScoreKnobs(Knobs):
    """The ``score`` codec's knobs (``codec_knobs={...}``)."""

    priority_levels: int = knob(
        4, integer=True, low=1, doc="P, the number of priority values per slot (1: window order alone decides)"
    )
    shrink: bool = knob(
        True,
        choices=(True, False),
        doc="a request that does not fit gets the largest count level that does (False: nothing)",
    )


@register_codec()
class ScoreCodec(ActionCodec):
    """Per window slot a GPU type (or none, or reject), a count level and a priority; a fixed allocator serves them.

    See the module docstring for the layout, the allocator and the mask.
    """

    name = "score"
    knobs = ScoreKnobs

    def __init__(self, state: DecisionState, settings: EnvSettings, knobs: Knobs | None = None) -> None:
        super().__init__(state, settings, knobs)
        own = knobs if knobs is not None else ScoreKnobs()
        if not isinstance(own, ScoreKnobs):
            raise TypeError(f"the score codec's knobs are a ScoreKnobs, got {type(own).__name__}")
        self.knob_values = own
        self.priority_levels = int(own.priority_levels)
        self.shrink = bool(own.shrink)
        t, c, m = self.num_types, len(self.levels), len(self.modes)
        self.has_modes = m > 1
        #: The choice value that rejects the slot's job (-1 without ``allow_reject``).
        self.reject_choice = t + 1 if self.allow_reject else -1
        self.num_choices = t + (2 if self.allow_reject else 1)
        self.row = np.asarray(
            [self.num_choices, c - 1, self.priority_levels] + ([m] if self.has_modes else []), dtype=np.int64
        )
        self.dims_per_slot = len(self.row)
        self.nvec = np.tile(self.row, self.num_slots)
        self._space = spaces.MultiDiscrete(self.nvec)
        self._positive = self.levels[1:]

    @property
    def space(self) -> spaces.MultiDiscrete:
        return self._space

    def step_info(self, step: CodecStep, info: dict[str, Any]) -> None:
        """``info["repaired"]``: the requests the allocator changed (see the module docstring)."""
        info["repaired"] = step.repaired

    # ----------------------------------------------------------------------------------------
    def rows(self, action: Any) -> np.ndarray:
        """``action`` validated and reshaped to ``(K, D)``: one row (choice, count, priority[, mode]) per slot."""
        hint = f" (one row of {self.row.tolist()} choices per slot, flattened; see hetgym.envs.codecs.score)"
        return multidiscrete_array(action, self.nvec, self.name, hint).reshape(self.num_slots, self.dims_per_slot)

    def mask(self, state: DecisionState) -> np.ndarray:
        used = state.used
        avail = state.capacity - state.outside_held
        k = self.num_slots
        fits = self._positive[0] <= avail  # (T,): the smallest level fits the type at all
        choice = np.zeros((k, self.num_choices), dtype=bool)
        choice[:, 0] = True
        choice[:, 1 : 1 + self.num_types] = state.allowed & fits[None, :] & used[:, None]
        if self.allow_reject:
            choice[:, self.reject_choice] = used
        room = np.where(state.allowed, avail[None, :], 0).max(axis=1)  # (K,): the largest usable type
        count = (self._positive[None, :] <= room[:, None]) & used[:, None]
        count[:, 0] = True
        parts = [choice, count, self._open(used, self.priority_levels)]
        if self.has_modes:
            parts.append(self._open(used, len(self.modes)))
        return np.concatenate(parts, axis=1).reshape(-1)

    @staticmethod
    def _open(used: np.ndarray, n: int) -> np.ndarray:
        """Every value for a used slot, value 0 only for an empty one."""
        out = np.repeat(used[:, None], n, axis=1)
        out[:, 0] = True
        return out

    # ----------------------------------------------------------------------------------------
    def apply(self, state: DecisionState, action: Any, mask: np.ndarray) -> CodecStep:
        repaired = self.allocate(state, self.rows(action))
        state.num_actions += 1
        return CodecStep(commit=True, invalid=repaired > 0, repaired=repaired)

    def allocate(self, state: DecisionState, rows: np.ndarray) -> int:
        """Write the allocator's result for ``rows`` (``(K, D)``, valid) into the draft; return the repairs.

        The steps are those of the module docstring; the draft is rebuilt from scratch (nothing of an
        earlier edit survives), so the same rows always give the same draft.
        """
        used = state.used
        repaired = int(np.count_nonzero(rows[~used]))
        n = len(state.jobs)
        choice = rows[:n, CHOICE].tolist()
        count = self._positive[rows[:n, COUNT]].tolist()
        free = (state.capacity - state.outside_held).tolist()
        allowed = state.allowed
        state.draft[:] = 0
        state.rejected[:] = False
        if self.has_modes:
            state.draft_mode[:n] = rows[:n, MODE]
        served: list[int] = []
        for slot in range(n):
            c = choice[slot]
            if c == self.reject_choice:
                state.rejected[slot] = True
            elif c:
                served.append(slot)
        # Highest priority first; the sort is stable, so ties keep window order (most urgent first).
        priority = rows[:n, PRIORITY].tolist()
        served.sort(key=lambda s: -priority[s])
        for slot in served:
            t = choice[slot] - 1
            want = count[slot]
            if not allowed[slot, t]:
                repaired += 1
                continue
            if want > free[t]:
                repaired += 1
                want = self.level_floor(free[t]) if self.shrink else 0
                if not want:
                    continue
            state.draft[slot, t] = want
            free[t] -= want
        state.free[:] = free
        state.version += 1
        return repaired

    # ----------------------------------------------------------------------------------------
    def encode_rows(
        self,
        state: DecisionState,
        counts: np.ndarray,
        reject: np.ndarray,
        mode: np.ndarray,
        notes: list[str] | None = None,
    ) -> np.ndarray:
        """The action for per-slot counts ``(K, T)`` on the levels, reject flags and mode indices.

        A slot with GPUs chooses the type of its largest share (a note is added when it has several) at the
        top priority; a slot without GPUs chooses 0 at priority 0; entries of empty slots are 0.
        """
        rows = np.zeros((self.num_slots, self.dims_per_slot), dtype=np.int64)
        top = self.priority_levels - 1
        for slot in range(len(state.jobs)):
            if reject[slot] and self.allow_reject:
                rows[slot, CHOICE] = self.reject_choice
                continue
            row = counts[slot]
            t = int(np.argmax(row))
            level = int(self.floor_index[min(int(row[t]), len(self.floor_index) - 1)])
            if not level:  # no GPUs, or fewer than the smallest positive level
                continue
            if notes is not None and np.count_nonzero(row) > 1:
                notes.append(
                    f"job {int(state.ids[slot])}: the target spreads it over {np.count_nonzero(row)} GPU types; "
                    "the score codec gives a job one type (its largest share is expressed)"
                )
            rows[slot, CHOICE] = 1 + t
            rows[slot, COUNT] = level - 1
            rows[slot, PRIORITY] = top
            if self.has_modes:
                rows[slot, MODE] = mode[slot]
        return rows.reshape(-1)

    def noop(self, state: DecisionState) -> np.ndarray:
        """Every window job keeps its GPUs (on its largest type's share, the only one this codec can give)."""
        return self.encode_rows(state, state.current, np.zeros(self.num_slots, dtype=bool), state.draft_mode)

    def encode(self, state: DecisionState, target: Allocation) -> Encoding:
        counts, reject, mode, _ = self.target_rows(state, target)
        notes: list[str] = []
        action = self.encode_rows(state, counts, reject, mode, notes)
        snap = state.copy_draft()
        try:
            self.allocate(state, action.reshape(self.num_slots, self.dims_per_slot))
            expressed = state.allocation()
        finally:
            state.restore_draft(snap)
        return self.make_encoding(state, target, (action,), expressed, notes)


__all__ = ["ScoreCodec", "ScoreKnobs"]
