"""The priority-score codec (``codec="score"``): per window slot a GPU type, a count level and a priority.

One step per decision epoch, like the one-shot codec, but an action states *preferences* rather than a
complete allocation: a documented, deterministic allocator (:meth:`ScoreCodec.allocate`) resolves
conflicts between them by priority. An agent can therefore ask for more GPUs than there are and let the
priorities decide who gets them, instead of learning to keep every entry within capacity. It is the
"score jobs, then let a fixed rule place them" split of learned schedulers such as Decima (Mao et al.,
SIGCOMM 2019), with the rule made explicit.

Action layout (``MultiDiscrete``, slot-major: ``action.reshape(K, D)`` has one row per slot, D = 3, or 4
with M > 1 execution modes):

* column 0, the *choice* (``T + 2`` values, ``T + 3`` with ``allow_reject``): 0 = no GPUs (the job waits,
  or is preempted); ``1 + t`` = run on GPU type ``t`` (cluster order); ``T + 1`` = *keep* the GPUs (and
  mode, when the codec offers it) the job holds before the epoch, whatever they are; ``T + 2`` = reject the job;
* column 1, the *count*: an index into the positive count levels (``levels[1 + c]`` GPUs; ``C - 1``
  values); read only when the choice is a type;
* column 2, the *priority*: ``0 .. P - 1`` (``P`` = the ``priority_levels`` knob), higher served first;
* column 3 (when M > 1), the execution mode index; read only when the choice is a type.

The allocator (every step commits):

1. entries of empty slots are ignored;
2. jobs outside the window keep their GPUs; the rest of each type is free;
3. a slot whose choice is *reject* is rejected; a slot whose choice is 0 (or *keep* without GPUs) gets none;
4. the other slots are served by priority, highest first, ties in window order (most urgent first):

   * a *type* slot gets its count on its type when that many GPUs of the type are free; otherwise (the
     knob ``shrink``, default on) the largest count level that still fits on that type, or nothing when
     none does; with ``shrink=False``, nothing. A type the job may not use gives nothing. A job never
     gets a type it did not choose;
   * a *keep* slot gets exactly its GPUs before the epoch (it is not restarted) when all of them are
     still free at its turn, otherwise nothing.

``info["repaired"]`` counts the slots whose request the allocator changed (a disallowed type, a count cut
down or dropped, a keep that could not be honoured) plus the non-zero entries of empty slots; a non-zero
count marks the step invalid (for ``invalid_action_penalty``). The mask (per dimension, concatenated in
the order of ``nvec``) marks, for a slot taken on its own, the types the job may use on which the
smallest level fits the GPUs not held outside the window, *keep* when the job holds GPUs, *reject*, the
counts that fit the largest usable type, and every priority and mode; for an empty slot only entry 0 of
each dimension. Entries that pass the mask can still be cut down when slots compete for a type: that is
what the priorities decide.

The shared greedy fill of the baselines (``baselines._common.greedy_fill``) serves a job's *requested*
gang on the first type with room; this allocator serves the agent's chosen type and count, and the
environment does not import the baselines, so it is written here.

The inverse map (:meth:`ScoreCodec.encode`) gives a window job that the target leaves exactly as it is
*keep*, any other job with GPUs its type (of its largest share) and count level, both at the top priority;
a job without GPUs choice 0 at priority 0, and a rejected job the reject choice. It then runs the
allocator on a copy of the draft and reports the encoding exact only when that gives back the target.
Every request of a feasible target fits whatever the order, so a target is reproduced whenever each
window job it changes gets one GPU type, on the count levels, in one of the codec's modes; a changed job
spread over several types is expressed on its largest share and reported inexact (as in ``jobwise``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from hetgym.envs.codecs.base import ActionCodec, CodecStep, multidiscrete_array, register_codec
from hetgym.envs.exactness import Encoding
from hetgym.envs.state import DecisionState
from hetgym.sim.allocation import Allocation, JobAllocation
from hetgym.sim.registry import Knobs, knob

if TYPE_CHECKING:
    from hetgym.envs.settings import EnvSettings

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
    """Per window slot a GPU type (or none, keep, reject), a count level and a priority; an allocator serves them.

    See the module docstring for the layout, the allocator, the mask and the inverse map.

    Attributes:
        keep_choice: The choice value that keeps a job's GPUs (``T + 1``).
        reject_choice: The choice value that rejects a job (``T + 2``; -1 without ``allow_reject``).
        row: One slot's ``nvec`` (choice, count, priority[, mode]).
        dims_per_slot: D, the length of :attr:`row`.
    """

    name = "score"
    knobs = ScoreKnobs

    def __init__(self, state: DecisionState, settings: EnvSettings, knobs: Knobs | None = None) -> None:
        super().__init__(state, settings, knobs)
        self.knob_values = own = ScoreKnobs.given_or_default(knobs, "the score codec")
        self.priority_levels = int(own.priority_levels)
        self.shrink = bool(own.shrink)
        t, c, m = self.num_types, len(self.levels), len(self.modes)
        self.has_modes = m > 1
        self.keep_choice = t + 1
        self.reject_choice = t + 2 if self.allow_reject else -1
        self.num_choices = t + (3 if self.allow_reject else 2)
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
        k, t = self.num_slots, self.num_types
        fits = self._positive[0] <= avail  # (T,): the smallest level fits the type at all
        choice = np.zeros((k, self.num_choices), dtype=bool)
        choice[:, 0] = True
        choice[:, 1 : 1 + t] = state.allowed & fits[None, :] & used[:, None]
        choice[:, self.keep_choice] = used & state.current.any(axis=1)
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
        current = state.current.tolist()
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
            elif c == self.keep_choice:
                state.draft_mode[slot] = max(int(state.current_mode[slot]), 0)
                if any(current[slot]):
                    served.append(slot)
            elif c:
                served.append(slot)
        # Highest priority first; the sort is stable, so ties keep window order (most urgent first).
        priority = rows[:n, PRIORITY].tolist()
        served.sort(key=lambda s: -priority[s])
        for slot in served:
            if choice[slot] == self.keep_choice:
                held = current[slot]
                if all(h <= f for h, f in zip(held, free, strict=True)):
                    state.draft[slot] = held
                    free = [f - h for h, f in zip(held, free, strict=True)]
                else:
                    repaired += 1
                continue
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
    def noop(self, state: DecisionState) -> np.ndarray:
        """*Keep* for every window job that holds GPUs (all at the top priority: they all fit)."""
        rows = np.zeros((self.num_slots, self.dims_per_slot), dtype=np.int64)
        holds = state.used & state.current.any(axis=1)
        rows[holds, CHOICE] = self.keep_choice
        rows[holds, PRIORITY] = self.priority_levels - 1
        return rows.reshape(-1)

    def encode(self, state: DecisionState, target: Allocation) -> Encoding:
        counts, reject, mode, _ = self.target_rows(state, target)
        notes: list[str] = []
        rows = np.zeros((self.num_slots, self.dims_per_slot), dtype=np.int64)
        top = self.priority_levels - 1
        for slot, job in enumerate(state.jobs):
            if reject[slot]:  # only with allow_reject (target_rows)
                rows[slot, CHOICE] = self.reject_choice
                continue
            if _kept(job.allocation, target.jobs.get(job.job_id)) and state.current_mode[slot] >= 0:
                rows[slot, CHOICE] = self.keep_choice
                rows[slot, PRIORITY] = top
                continue
            row = counts[slot]
            t = int(np.argmax(row))
            if not row[t]:
                continue
            if np.count_nonzero(row) > 1:
                notes.append(
                    f"job {job.job_id}: the target spreads it over {np.count_nonzero(row)} GPU types; "
                    "the score codec gives a job one type (its largest share is expressed)"
                )
            rows[slot, CHOICE] = 1 + t
            rows[slot, COUNT] = int(self.floor_index[row[t]]) - 1
            rows[slot, PRIORITY] = top
            if self.has_modes:
                rows[slot, MODE] = mode[slot]
        action = rows.reshape(-1)
        snap = state.copy_draft()
        try:
            self.allocate(state, rows)
            expressed = state.allocation()
        finally:
            state.restore_draft(snap)
        return self.make_encoding(state, target, (action,), expressed, notes)


def _kept(now: JobAllocation | None, then: JobAllocation | None) -> bool:
    """Whether ``then`` leaves a job holding ``now`` exactly where it is (same counts, mode and servers)."""
    if not now or not then:
        return False
    return now.counts == then.counts and now.mode == then.mode and then.servers in (None, now.servers)


__all__ = ["ScoreCodec", "ScoreKnobs"]
