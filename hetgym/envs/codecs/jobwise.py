"""The job-at-a-time codec (``codec="jobwise"``, and ``"jobwise-types"``: the same with ``several_types=True``).

In the line of DeepRM (Mao et al., HotNets 2016) and Decima (Mao et al., SIGCOMM 2019), where each action
schedules one job or says "no more": the environment presents the window's jobs one at a time, most
urgent first, and the agent decides each exactly once. An epoch therefore takes at most K + 1 steps and
no decision can be undone, so the agent cannot pad an epoch with edits that cost no simulated time.
With the knob ``several_types=True`` (the alias ``codec="jobwise-types"``) a job's turn may give it several GPU
types, one set action each (see "Several GPU types a job" below).

Action layout (``Discrete(T * (C - 1) * M + 3 [+ 1])``; T GPU types, C count levels including 0, M modes):

* ``((t * (C - 1)) + (c - 1)) * M + m``: the current job runs on ``levels[c]`` GPUs of type ``t`` in mode
  ``m`` (one type per job);
* ``none``: the current job gets no GPUs (it waits, or is preempted);
* ``keep``: the current job keeps what the draft gives it (its GPUs before the epoch, unless a more urgent
  job took them, see below);
* ``reject`` (with ``allow_reject``): the current job is refused for good;
* ``done`` (the last index): commit now; the jobs not yet presented keep what the draft gives them.

Every action but ``done`` decides the current job and moves to the next one; deciding the last job of the
window commits. A masked-out action is treated as ``keep`` (and reported in ``info["invalid_action"]``),
so no action sequence can stall an epoch. GPUs held by jobs not yet presented count as available to the
current job: when it takes more than the free GPUs, jobs not yet presented are preempted in the draft,
least urgent first, until the GPUs suffice (they are decided, and may get GPUs again, when their turn
comes). Jobs outside the window keep their GPUs.

The inverse map (:meth:`JobwiseCodec.encode`) is exact for every allocation that gives each window job at
most one GPU type, on the count levels, in one of the codec's modes; an allocation spreading a job over
several types is expressed with the job on its largest type's share (and reported as inexact).

Several GPU types a job (``several_types=True``, ``codec="jobwise-types"``)
-------------------------------------------------------------------

With one type a job, the codec cannot express an expert that spreads a job over types: HadarE forks a
job into copies on every type that has room (on ``HetCluster-v1`` about a fifth of its running jobs hold
two to four types). With ``several_types=True`` the actions and their numbering stay the same, so the same
networks apply (the set network of :mod:`agents.set_policy`), and one thing changes: a set action no
longer ends the current job's *turn*.

* a set action: the first one of a turn replaces the job's draft row by that one type; each later one
  adds its type to what the turn gave so far. A type can be given once a turn, and every set action of a
  turn uses the first one's mode (the mask says so). The cursor stays on the job;
* ``keep``: end the job's turn with what the draft gives it (the turn's set actions, or, when there were
  none, its GPUs before the epoch unless a more urgent job took them);
* ``none`` and ``reject`` end the turn as above (whatever the turn gave the job); ``done`` commits.

Ending the last job's turn commits. Every action either ends a turn or gives the current job a type it
did not have this turn, so an epoch takes at most ``K * (T + 1) + 1`` steps and no action sequence can
stall it. The inverse map gives a job whose target differs from its draft its types in decreasing order
of count (ties: type order), then ``keep``; it is exact for every allocation on the count levels in one
of the codec's modes. From a state a learner reached (DAgger), a turn that already gave a type the wrong
count is finished with the target's other types and reported as inexact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from hetgym.envs.codecs.base import CODECS, PLAIN_STEPS, ActionCodec, CodecStep, discrete_index, register_codec
from hetgym.envs.exactness import Encoding
from hetgym.envs.state import DecisionState
from hetgym.sim.allocation import Allocation
from hetgym.sim.registry import Knobs, knob

if TYPE_CHECKING:
    from hetgym.envs.settings import EnvSettings


@dataclass(frozen=True)
class JobwiseKnobs(Knobs):
    """The ``jobwise`` codec's knobs (``codec_knobs={...}``; ``codec="jobwise-types"`` presets ``several_types``)."""

    several_types: bool = knob(
        False,
        choices=(False, True),
        doc="a job's turn may give it several GPU types: set actions add types until keep ends the turn",
    )


@register_codec()
class JobwiseCodec(ActionCodec):
    """One job at a time (DeepRM/Decima): per window job a (type, count, mode), none, keep or reject; then commit.

    Attributes:
        several_types: A turn may give the job several GPU types (the knob; see the module docstring).
        label: The name the codec goes by in messages: ``jobwise``, or ``jobwise-types`` with ``several_types``.
    """

    name = "jobwise"
    knobs = JobwiseKnobs
    slot_by_slot = True  # the observation's slot_cursor marks the job being decided (current_slot)

    def __init__(self, state: DecisionState, settings: EnvSettings, knobs: Knobs | None = None) -> None:
        super().__init__(state, settings, knobs)
        self.knob_values = own = JobwiseKnobs.given_or_default(knobs, "the jobwise codec")
        self.several_types = bool(own.several_types)
        self.label = "jobwise-types" if self.several_types else "jobwise"
        t, c, m = self.num_types, len(self.levels), len(self.modes)
        self.num_set = t * (c - 1) * m
        self.none = self.num_set
        self.keep = self.none + 1
        self.reject_action = self.keep + 1 if self.allow_reject else -1
        self.done = self.keep + (2 if self.allow_reject else 1)
        self.n = self.done + 1
        self._space = spaces.Discrete(self.n)
        # Per set action: type, count and mode (vectorised look-ups for the mask).
        idx = np.arange(self.num_set)
        self._type = idx // ((c - 1) * m)
        self._count = self.levels[1:][(idx // m) % (c - 1)]
        self._mode = idx % m
        self._allowed = np.zeros((0, self.num_set), dtype=bool)
        self._allowed_key: tuple[int, int] = (0, -1)
        # The mask's start while a job is to be decided (none, keep, reject and done valid), and once none is.
        self._open = np.zeros(self.n, dtype=bool)
        self._open[self.num_set :] = True
        self._done_only = np.zeros(self.n, dtype=bool)
        self._done_only[self.done] = True
        #: (type, count, mode) of each set action, as Python ints.
        self._set_list: list[tuple[int, int, int]] = list(
            zip(self._type.tolist(), self._count.tolist(), self._mode.tolist(), strict=True)
        )

    @property
    def space(self) -> spaces.Discrete:
        return self._space

    def noop(self, state: DecisionState) -> int:
        return self.done

    def steps_bound(self) -> int:
        """The most steps an epoch takes: one a window job, then the commit (K + 1); with ``several_types``, each
        step ends a turn or gives a new type, K * (T + 1) + 1."""
        if self.several_types:
            return self.num_slots * (self.num_types + 1) + 1
        return self.num_slots + 1

    def current_slot(self, state: DecisionState) -> int:
        """The window slot decided by the next action (``state.cursor`` jobs have been decided)."""
        return int(state.cursor)

    def _num_jobs(self, state: DecisionState) -> int:
        return len(state.jobs)  # the used slots: the window's jobs fill slots 0..n-1

    def set_action(self, type_idx: int, level_idx: int, mode_idx: int = 0) -> int:
        """The index of 'the current job runs on ``levels[level_idx]`` GPUs of ``type_idx`` in ``mode_idx``'."""
        if level_idx < 1:
            raise ValueError("level 0 is the 'none' action")
        return ((type_idx * (len(self.levels) - 1)) + level_idx - 1) * len(self.modes) + mode_idx

    def decode(self, action: int) -> tuple[str, int, int, int]:
        """``(kind, type, count, mode)``; kind is set, none, keep, reject or done."""
        a = int(action)
        if a < self.num_set:
            return "set", int(self._type[a]), int(self._count[a]), int(self._mode[a])
        kind = {self.none: "none", self.keep: "keep", self.reject_action: "reject", self.done: "done"}[a]
        return kind, -1, 0, -1

    # ----------------------------------------------------------------------------------------
    def _available(self, state: DecisionState, slot: int) -> np.ndarray:
        """GPUs per type the job in ``slot`` may take: free, its own, and those of jobs not yet decided."""
        return state.free + np.add.reduce(state.draft[slot : self._num_jobs(state)], axis=0)  # integers: exact

    def mask(self, state: DecisionState) -> np.ndarray:
        slot = state.cursor  # current_slot and _num_jobs inlined: this runs at every step
        n = len(state.jobs)
        if slot >= n:
            return self._done_only.copy()
        key = (id(state), state.version_of_load)
        if self._allowed_key != key:
            # Per slot and set action, whether the action's type is allowed: fixed for the epoch.
            self._allowed = state.allowed[:, self._type]
            self._allowed_key = key
        out = self._open.copy()  # none, keep, reject and done are valid while a job is to be decided
        avail = state.free + np.add.reduce(state.draft[slot:n], axis=0)  # _available (integers: exact)
        sets = out[: self.num_set]
        np.less_equal(self._count, avail[self._type], out=sets)
        sets &= self._allowed[slot]
        given = state.cursor_types
        if given:  # several_types: a type once a turn, in the turn's mode
            sets &= ~((given >> self._type) & 1).astype(bool)
            if len(self.modes) > 1:
                sets &= self._mode == state.draft_mode[slot]
        return out

    def apply(self, state: DecisionState, action: Any, mask: np.ndarray) -> CodecStep:
        a = discrete_index(action, self.n, self.label)
        if a == self.done:
            return PLAIN_STEPS[True, False]
        slot = state.cursor  # current_slot and _num_jobs inlined
        jobs = len(state.jobs)
        if slot >= jobs:  # an empty window: any action commits
            return PLAIN_STEPS[True, False]
        invalid = not mask[a]
        state.num_actions += 1
        if not invalid and a < self.num_set:
            t, count, m = self._set_list[a]
            # A turn's first set action replaces the job's row; with several_types, a later one adds.
            row = state.draft[slot].tolist() if state.cursor_types else [0] * self.num_types
            row[t] = count
            state.set_row(slot, row)
            if len(self.modes) > 1:
                state.set_mode(slot, m)
            self._preempt_later(state, slot, t)
            if self.several_types:  # the turn goes on
                state.cursor_types |= 1 << t
                mask[:] = self.mask(state)
                return PLAIN_STEPS[False, False]
        elif not invalid and a == self.none:
            state.set_row(slot, [0] * self.num_types)
        elif not invalid and a == self.reject_action:
            state.reject(slot)
        state.cursor += 1
        state.cursor_types = 0
        commit = state.cursor >= jobs
        if not commit:
            mask[:] = self.mask(state)
        return PLAIN_STEPS[commit, invalid]

    def _preempt_later(self, state: DecisionState, slot: int, type_idx: int) -> None:
        """Free GPUs of ``type_idx`` by preempting undecided jobs, least urgent first, until none is owed."""
        if state.free[type_idx] >= 0:
            return  # nothing owed (the common case)
        later = self._num_jobs(state) - 1
        while state.free[type_idx] < 0 and later > slot:
            if state.draft[later, type_idx] > 0:
                state.set_row(later, [0] * self.num_types)
            later -= 1

    # ----------------------------------------------------------------------------------------
    def encode(self, state: DecisionState, target: Allocation) -> Encoding:
        want, reject, mode, _ = self.target_rows(state, target)
        notes: list[str] = []
        snap = state.copy_draft()
        actions: list[int] = []
        try:
            jobs = self._num_jobs(state)
            mask = self.mask(state)
            for _ in range(self.steps_bound()):
                slot = self.current_slot(state)
                if slot >= jobs or self._rest_kept(state, slot, want, reject, mode):
                    actions.append(self.done)
                    break
                a = self._action_for(state, slot, want[slot], bool(reject[slot]), int(mode[slot]), notes)
                if not mask[a]:  # a feasible target fits unless it moves jobs outside the window
                    notes.append(f"job {int(state.ids[slot])}: its target does not fit what is left")
                actions.append(a)
                if self.apply(state, a, mask).commit:
                    break
            else:  # pragma: no cover - every action moves towards a commit within the codec's step bound
                raise AssertionError(f"{self.label} encoding exceeded its step bound")
            expressed = state.allocation()
        finally:
            state.restore_draft(snap)
        return self.make_encoding(state, target, tuple(actions), expressed, notes)

    def _rest_kept(
        self, state: DecisionState, slot: int, want: np.ndarray, reject: np.ndarray, mode: np.ndarray
    ) -> bool:
        """Whether every job from ``slot`` on already has its target in the draft (``done`` expresses them)."""
        rows = slice(slot, self._num_jobs(state))
        if reject[rows].any() or not np.array_equal(state.draft[rows], want[rows]):
            return False
        running = want[rows].sum(axis=1) > 0
        return len(self.modes) == 1 or bool(np.array_equal(state.draft_mode[rows][running], mode[rows][running]))

    def _action_for(
        self, state: DecisionState, slot: int, row: np.ndarray, reject: bool, mode: int, notes: list[str]
    ) -> int:
        """The next action of the job at ``slot`` towards its target ``row`` (see the module docstring)."""
        draft = state.draft[slot]
        given = state.cursor_types  # types given this turn (always 0 without ``several_types``)
        multimode = len(self.modes) > 1
        if reject:
            return self.reject_action if self.allow_reject else self.none
        if not row.any():
            return self.none if draft.any() else self.keep
        if not given and np.array_equal(draft, row) and (not multimode or state.draft_mode[slot] == mode):
            return self.keep
        m = (int(state.draft_mode[slot]) if given else mode) if multimode else 0
        if not self.several_types:
            t = int(np.argmax(row))
            if np.count_nonzero(row) > 1:
                notes.append(
                    f"job {int(state.ids[slot])}: the target spreads it over {np.count_nonzero(row)} GPU types; "
                    "the jobwise codec gives a job one type (its largest share is expressed)"
                )
            return self.set_action(t, int(self.floor_index[row[t]]), m)
        # The target's types still to give this turn, largest count first.
        for t in sorted(range(self.num_types), key=lambda t: (-int(row[t]), t)):
            if row[t] > 0 and not (given >> t) & 1:
                return self.set_action(t, int(self.floor_index[row[t]]), m)
        if given and not np.array_equal(draft, row):
            notes.append(
                f"job {int(state.ids[slot])}: its turn already gave it {draft.tolist()} GPUs per type, "
                f"the target is {row.tolist()}; a type is given once a turn"
            )
        return self.keep


#: ``codec="jobwise-types"``: the same codec, a job's turn giving it several GPU types.
CODECS.alias("jobwise-types", "jobwise", several_types=True)
