"""The job-at-a-time codec (``codec="jobwise"``): one decision per window job, at most K + 1 steps an epoch.

In the line of DeepRM (Mao et al., HotNets 2016) and Decima (Mao et al., SIGCOMM 2019), where each action
schedules one job or says "no more": the environment presents the window's jobs one at a time, most
urgent first, and the agent decides each exactly once. An epoch therefore takes at most K + 1 steps and
no decision can be undone, so the agent cannot pad an epoch with edits that cost no simulated time.

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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from hetgym.envs.codecs.base import ActionCodec, CodecStep, discrete_index, register_codec
from hetgym.envs.exactness import Encoding
from hetgym.envs.state import DecisionState
from hetgym.sim.allocation import Allocation
from hetgym.sim.registry import Knobs

if TYPE_CHECKING:
    from hetgym.envs.config import EnvSettings


@register_codec()
class JobwiseCodec(ActionCodec):
    """One job at a time (DeepRM/Decima): per window job a (type, count, mode), none, keep or reject; then commit."""

    name = "jobwise"
    slot_by_slot = True  # the observation's slot_cursor marks the job being decided (current_slot)

    def __init__(self, state: DecisionState, settings: EnvSettings, knobs: Knobs | None = None) -> None:
        super().__init__(state, settings, knobs)
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
        """The most steps an epoch takes: one a window job, then the commit (K + 1)."""
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
        later = state.draft[slot + 1 : self._num_jobs(state)].sum(axis=0)
        return np.asarray(state.free + state.draft[slot] + later)

    def mask(self, state: DecisionState) -> np.ndarray:
        out = np.zeros(self.n, dtype=bool)
        out[self.done] = True
        slot = self.current_slot(state)
        if slot >= self._num_jobs(state):
            return out
        avail = self._available(state, slot)
        if self._allowed_key != (id(state), state.version_of_load):
            # Per slot and set action, whether the action's type is allowed: fixed for the epoch.
            self._allowed = state.allowed[:, self._type]
            self._allowed_key = (id(state), state.version_of_load)
        out[: self.num_set] = (self._count <= avail[self._type]) & self._allowed[slot]
        out[self.none] = out[self.keep] = True
        if self.allow_reject:
            out[self.reject_action] = True
        return out

    def apply(self, state: DecisionState, action: Any, mask: np.ndarray) -> CodecStep:
        a = discrete_index(action, self.n, "jobwise")
        if a == self.done:
            return CodecStep(commit=True)
        slot = self.current_slot(state)
        jobs = self._num_jobs(state)
        if slot >= jobs:  # an empty window: any action commits
            return CodecStep(commit=True)
        invalid = not mask[a]
        if not invalid and a != self.keep:
            if a < self.num_set:
                t, count, m = self._set_list[a]
                row = [0] * self.num_types
                row[t] = count
                state.set_row(slot, row)
                if len(self.modes) > 1:
                    state.set_mode(slot, m)
                self._preempt_later(state, slot, t)
            elif a == self.none:
                state.set_row(slot, [0] * self.num_types)
            else:
                state.reject(slot)
        state.num_actions += 1
        state.cursor += 1
        commit = state.cursor >= jobs
        if not commit:
            mask[:] = self.mask(state)
        return CodecStep(commit=commit, invalid=invalid)

    def _preempt_later(self, state: DecisionState, slot: int, type_idx: int) -> None:
        """Free GPUs of ``type_idx`` by preempting undecided jobs, least urgent first, until none is owed."""
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
                raise AssertionError(f"{self.name} encoding exceeded its step bound")
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
        if reject:
            return self.reject_action if self.allow_reject else self.none
        if not row.any():
            return self.none if state.draft[slot].any() else self.keep
        if np.array_equal(state.draft[slot], row) and (len(self.modes) == 1 or state.draft_mode[slot] == mode):
            return self.keep
        t = int(np.argmax(row))
        if np.count_nonzero(row) > 1:
            notes.append(
                f"job {int(state.ids[slot])}: the target spreads it over {np.count_nonzero(row)} GPU types; "
                "the jobwise codec gives a job one type (its largest share is expressed)"
            )
        level_idx = int(self.floor_index[row[t]])
        return self.set_action(t, level_idx, mode if len(self.modes) > 1 else 0)
