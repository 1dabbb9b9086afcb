"""The masked sequential ``Discrete`` codec (``codec="sequential"``)."""

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
    from hetgym.envs.settings import EnvSettings


@register_codec()
class SequentialCodec(ActionCodec):
    """The masked sequential ``Discrete`` codec.

    Action index layout (K slots, T types, C levels, M modes):

    * ``0 .. K*T*C - 1``: set slot ``k``'s count on type ``t`` to level ``c``, index
      ``(k * T + t) * C + c``; valid when the slot holds a job that is not rejected in the draft, may use
      type ``t``, the level differs from the draft's count, the slot's total stays within its job's
      ``max_gpus``, and the level fits the type's free GPUs plus
      what the slot already holds there;
    * next K (when ``allow_reject``): reject slot ``k``'s job (valid once per job and epoch);
    * next K*M (when M > 1): set slot ``k``'s execution mode to mode ``m`` (valid when it differs);
    * last: commit (always valid).

    A masked-out action is ignored (``info["invalid_action"]``) but counts towards the per-epoch cap;
    the action that reaches the cap commits the draft (after being applied).
    """

    name = "sequential"

    def __init__(self, state: DecisionState, settings: EnvSettings, knobs: Knobs | None = None) -> None:
        super().__init__(state, settings, knobs)
        allow_reject = self.allow_reject
        k, t, c, m = self.num_slots, self.num_types, len(self.levels), len(self.modes)
        self.num_set = k * t * c
        self.reject_offset = self.num_set
        self.num_reject = k if allow_reject else 0
        self.mode_offset = self.reject_offset + self.num_reject
        self.num_mode = k * m if m > 1 else 0
        self.commit = self.mode_offset + self.num_mode
        self.n = self.commit + 1
        self._space = spaces.Discrete(self.n)
        self._tc = t * c
        self._c = c
        # Lookup tables over GPU counts 0..top: which levels are <= n, and which differ from n.
        top = len(self.floor_index) - 1
        counts = np.arange(top + 1)
        self._fits = self.levels[None, :] <= counts[:, None]
        self._differs = self.levels[None, :] != counts[:, None]
        #: ``_valid[limit, held]``: levels that fit ``limit`` (free + held) and differ from ``held``.
        self._valid = self._fits[:, None, :] & self._differs[None, :, :]
        self._modes = np.arange(m)[None, :]
        # The mask lives in one buffer (callers copy it before handing it out); views into it let
        # a count change refresh one type's block in place.
        self._buf = np.zeros(self.n, dtype=bool)
        self._set3d = self._buf[: self.num_set].reshape(k, t, c)
        self._buf_key: tuple[int, int] | None = None
        self._live_allowed = np.zeros((k, t), dtype=bool)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_set3d"]  # a view into _buf: pickle would copy it apart from the buffer
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._set3d = self._buf[: self.num_set].reshape(self.num_slots, self.num_types, self._c)

    @property
    def space(self) -> spaces.Discrete:
        return self._space

    def noop(self, state: DecisionState) -> int:
        return self.commit

    # ----------------------------------------------------------------------------------------
    def mask(self, state: DecisionState) -> np.ndarray:
        """Valid actions; the array is the codec's buffer, updated in place by :meth:`apply`."""
        out = self._buf
        live = state.used & ~state.rejected
        draft = state.draft
        self._live_allowed = state.allowed & live[:, None]
        ok = self._valid[self._limit(state), draft]  # (K, T, C) in one gather
        np.logical_and(ok, self._live_allowed[:, :, None], out=self._set3d)
        if self.num_reject:
            out[self.reject_offset : self.mode_offset] = live
        if self.num_mode:
            mode_ok = self._modes != state.draft_mode[:, None]
            mode_ok &= live[:, None]
            out[self.mode_offset : self.commit] = mode_ok.reshape(-1)
        out[self.commit] = True
        self._buf_key = (id(state), state.version)
        return out

    def decode(self, action: int) -> tuple[str, int, int, int]:
        """``(kind, slot, type_or_mode, level_index)`` of an action index (kind: set/reject/mode/commit)."""
        a = int(action)
        if a < self.num_set:
            k, rem = divmod(a, self._tc)
            t, c = divmod(rem, self._c)
            return "set", k, t, c
        if a < self.mode_offset:
            return "reject", a - self.reject_offset, -1, -1
        if a < self.commit:
            k, m = divmod(a - self.mode_offset, len(self.modes))
            return "mode", k, m, -1
        return "commit", -1, -1, -1

    def set_action(self, slot: int, type_idx: int, level_idx: int) -> int:
        """The index of 'set slot's count on type to level'."""
        return (slot * self.num_types + type_idx) * self._c + level_idx

    def reject_action(self, slot: int) -> int:
        """The index of 'reject slot's job'."""
        if not self.allow_reject:
            raise ValueError("this codec was built with allow_reject=False")
        return self.reject_offset + slot

    def mode_action(self, slot: int, mode_idx: int) -> int:
        """The index of 'set slot's mode'."""
        if not self.num_mode:
            raise ValueError("this codec has a single execution mode; configure modes=(...) to choose one")
        return self.mode_offset + slot * len(self.modes) + mode_idx

    def apply(self, state: DecisionState, action: Any, mask: np.ndarray) -> CodecStep:
        a = discrete_index(action, self.n, "sequential")
        if a == self.commit:
            return CodecStep(commit=True)
        state.num_actions += 1
        at_cap = state.num_actions >= self.max_actions
        if not mask[a]:
            return CodecStep(commit=at_cap, invalid=True)
        if a < self.num_set:
            k, rem = divmod(a, self._tc)
            t, c = divmod(rem, self._c)
            state.set_count(k, t, int(self.levels[c]))
            if not at_cap:
                self._refresh_type(state, mask, t)
        elif a < self.mode_offset:
            state.reject(a - self.reject_offset)
            if not at_cap:
                fresh = self.mask(state)
                if mask is not fresh:
                    mask[:] = fresh
        else:
            k, m = divmod(a - self.mode_offset, len(self.modes))
            state.set_mode(k, m)
            if not at_cap and state.bounded:
                fresh = self.mask(state)  # the mode changes the slot's cap (fork copies are bounded one by one)
                if mask is not fresh:
                    mask[:] = fresh
            elif not at_cap:
                row = mask[self.mode_offset + k * len(self.modes) : self.mode_offset + (k + 1) * len(self.modes)]
                row[:] = True
                row[m] = False
                if mask is self._buf:
                    self._buf_key = (id(state), state.version)
        return CodecStep(commit=at_cap)

    @staticmethod
    def _limit(state: DecisionState) -> np.ndarray:
        """The most GPUs each slot may hold of each type: the free ones plus its own, and no more than
        its job's ``max_gpus`` less what it holds of the other types, int64 ``(K, T)``."""
        draft = state.draft
        limit = state.free + draft
        if state.bounded:
            others = draft.sum(axis=1, keepdims=True) - draft
            limit = np.minimum(limit, np.maximum(state.slot_caps()[:, None] - others, 0))
        return limit

    def _refresh_type(self, state: DecisionState, mask: np.ndarray, t: int) -> None:
        """Recompute the set-actions of type ``t`` (the only ones a count change on ``t`` affects, unless
        a job's ``max_gpus`` ties its types together)."""
        if state.bounded:
            fresh = self.mask(state)
            if mask is not fresh:
                mask[:] = fresh
            return
        draft_t = state.draft[:, t]
        block = self._valid[state.free[t] + draft_t, draft_t]  # (K, C)
        block &= self._live_allowed[:, t, None]
        if mask is self._buf:
            self._set3d[:, t, :] = block
            self._buf_key = (id(state), state.version)
        else:
            mask[: self.num_set].reshape(self.num_slots, self.num_types, self._c)[:, t, :] = block

    # ----------------------------------------------------------------------------------------
    def plan(self, state: DecisionState, target: Allocation) -> list[int]:
        """Actions (without the commit) that turn the current draft into ``target`` as far as it can.

        Order: rejections, then decreases (they free GPUs), then mode changes, then increases, each in
        slot order and type order; every action is valid when taken in this order. Parts that cannot be
        expressed (a count off the levels is rounded down, a job outside the window is left alone, a
        job already rejected in the draft stays rejected) are skipped.
        """
        return self._plan(state, target)[0]

    def _plan(self, state: DecisionState, target: Allocation) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`plan`, plus the draft, modes and rejections it leads to."""
        want, reject, mode, has_gpus = self.target_rows(state, target)
        draft = state.draft.copy()
        free = state.free.copy()
        rejected = state.rejected.copy()
        levels_idx = self.floor_index
        actions: list[int] = []
        n = len(state.jobs)
        num_types = self.num_types
        for k in range(n):
            if reject[k] and not rejected[k]:
                actions.append(self.reject_offset + k)
                free += draft[k]
                draft[k] = 0
                rejected[k] = True
        live = (state.used & ~rejected).tolist()
        want_l = want.tolist()
        draft_l = draft.tolist()
        free_l = free.tolist()
        for k in range(n):
            if not live[k]:
                continue
            row, cur = want_l[k], draft_l[k]
            for t in range(num_types):
                if row[t] < cur[t]:
                    actions.append(self.set_action(k, t, int(levels_idx[row[t]])))
                    free_l[t] += cur[t] - row[t]
                    cur[t] = row[t]
        new_mode = state.draft_mode.copy()
        if self.num_mode:
            for k in range(n):
                if live[k] and has_gpus[k] and mode[k] != new_mode[k]:
                    actions.append(self.mode_action(k, int(mode[k])))
                    new_mode[k] = mode[k]
        for k in range(n):
            if not live[k]:
                continue
            row, cur = want_l[k], draft_l[k]
            for t in range(num_types):
                extra = row[t] - cur[t]
                if 0 < extra <= free_l[t]:
                    actions.append(self.set_action(k, t, int(levels_idx[row[t]])))
                    free_l[t] -= extra
                    cur[t] = row[t]
        return actions, np.asarray(draft_l, dtype=np.int64).reshape(draft.shape), new_mode, rejected

    def encode_next(self, state: DecisionState, target: Allocation) -> int:
        """The next action towards ``target`` from the current draft (the commit when there is none).

        The first action of :meth:`encode`, without explaining an inexact expression (it runs at every
        step an expert takes).
        """
        actions = self.plan(state, target)
        return actions[0] if actions else self.commit

    def encode(self, state: DecisionState, target: Allocation) -> Encoding:
        actions, draft, mode, rejected = self._plan(state, target)
        budget = self.max_actions - state.num_actions
        if len(actions) < budget:
            expressed = state.allocation_of(draft, mode, rejected)
            return self.make_encoding(state, target, (*actions, self.commit), expressed)
        # The cap cuts the plan short (or its last action commits): replay what fits to see what is left.
        notes: list[str] = []
        if len(actions) > budget:
            notes.append(
                f"the target needs {len(actions)} actions but only {budget} remain under the per-epoch cap "
                f"(max_actions_per_epoch={self.max_actions}); the rest are lost"
            )
            actions = actions[:budget]
        if self._buf_key != (id(state), state.version):
            self.mask(state)
        saved_mask, saved_live = self._buf.copy(), self._live_allowed.copy()
        snap = state.copy_draft()
        try:
            for a in actions:
                step = self.apply(state, a, self._buf)
                if step.invalid:  # pragma: no cover - plan() only emits valid actions
                    raise AssertionError(f"plan produced a masked action {self.decode(a)}")
            expressed = state.allocation()
        finally:
            # The mask buffer is shared with the env: put back the draft and its mask.
            state.restore_draft(snap)
            self._buf[:] = saved_mask
            self._live_allowed = saved_live
            self._buf_key = (id(state), state.version)
        return self.make_encoding(state, target, tuple(actions), expressed, notes)
