"""Action codecs: how an agent's actions edit the draft allocation, and the inverse map for experts.

Two codecs, chosen by the ``codec`` option (both act on the K-slot window of
:class:`~hetgym.envs.state.DecisionState`; jobs outside the window keep their GPUs):

* :class:`SequentialCodec` (``sequential``): a masked ``Discrete`` space. One action sets one slot's
  GPU count on one type to a count level, rejects one slot's job, sets one slot's execution mode, or
  commits the draft. Only a commit (or the action that reaches the per-epoch cap) advances the
  simulator. The mask allows exactly the actions the simulator would accept and that change the draft.
* :class:`OneShotCodec` (``multidiscrete``): a ``MultiDiscrete`` space giving, in one step, a count
  level for every slot and type (plus a reject flag and a mode per slot when enabled). Infeasible
  parts are repaired in a fixed order (see the class docstring); every step commits.

Both provide the inverse map :meth:`ActionCodec.encode` from a target :class:`~hetgym.sim.Allocation`
(an expert's decision) to the actions that express it, with an :class:`Encoding` saying whether the
expression is exact, i.e. whether committing it leaves the simulator in the same state as the target
would (same jobs rejected, same GPUs per type, same execution mode, no job moved by an explicit server
placement), and if not, why.
The sequential codec also has :meth:`SequentialCodec.encode_next`, the next action towards the target
from the current draft (a DAgger label).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from hetgym.envs.state import DecisionState
from hetgym.sim.allocation import Allocation, JobAllocation
from hetgym.sim.errors import UnknownNameError


@dataclass(frozen=True)
class Encoding:
    """An expert's target expressed in a codec's actions.

    Attributes:
        actions: The actions, in order (sequential: ints ending with the commit; one-shot: one array).
        expressed: The allocation those actions commit.
        exact: Whether committing ``expressed`` leaves the simulator exactly as ``target`` would.
        reasons: Why not, one line per job that differs (empty when exact).
    """

    actions: tuple[Any, ...]
    expressed: Allocation
    exact: bool
    reasons: tuple[str, ...]


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


class ActionCodec(ABC):
    """Base class of action codecs (pluggable: register subclasses in :data:`CODECS`).

    Args:
        state: The environment's decision state (fixes K, the GPU types and the modes).
        levels: Ascending GPU count levels starting at 0.
        allow_reject: Whether actions can reject a job.
        max_actions: Per-epoch cap on actions (sequential codecs).
    """

    name: ClassVar[str]

    def __init__(self, state: DecisionState, levels: Sequence[int], allow_reject: bool, max_actions: int) -> None:
        self.num_slots = state.num_slots
        self.num_types = len(state.types)
        self.types = state.types
        self.modes = state.modes
        self.levels = np.asarray(levels, dtype=np.int64)
        self.level_set = frozenset(int(v) for v in self.levels)
        self.allow_reject = allow_reject
        self.max_actions = max_actions
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

    # ----------------------------------------------------------------------------------------
    def level_floor(self, num_gpus: int) -> int:
        """The largest level <= ``num_gpus``."""
        n = min(int(num_gpus), len(self.floor_index) - 1)
        return int(self.levels[self.floor_index[n]])

    def _target_rows(
        self, state: DecisionState, target: Allocation
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Target counts (rounded down to levels), reject flags, mode indices and 'has GPUs' per slot."""
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

    def _finish_encoding(
        self,
        state: DecisionState,
        target: Allocation,
        actions: tuple[Any, ...],
        expressed: Allocation,
        notes: list[str],
    ) -> Encoding:
        reasons = ([] if expressed == target else explain_gap(self, state, expressed, target)) + notes
        return Encoding(actions, expressed, not reasons, tuple(reasons))


class SequentialCodec(ActionCodec):
    """The masked sequential ``Discrete`` codec.

    Action index layout (K slots, T types, C levels, M modes):

    * ``0 .. K*T*C - 1``: set slot ``k``'s count on type ``t`` to level ``c``, index
      ``(k * T + t) * C + c``; valid when the slot holds a job that is not rejected in the draft, may use
      type ``t``, the level differs from the draft's count, and the level fits the type's free GPUs plus
      what the slot already holds there;
    * next K (when ``allow_reject``): reject slot ``k``'s job (valid once per job and epoch);
    * next K*M (when M > 1): set slot ``k``'s execution mode to mode ``m`` (valid when it differs);
    * last: commit (always valid).

    A masked-out action is ignored (``info["invalid_action"]``) but counts towards the per-epoch cap;
    the action that reaches the cap commits the draft (after being applied).
    """

    name = "sequential"

    def __init__(self, state: DecisionState, levels: Sequence[int], allow_reject: bool, max_actions: int) -> None:
        super().__init__(state, levels, allow_reject, max_actions)
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
        ok = self._valid[state.free + draft, draft]  # (K, T, C) in one gather
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
        a = _as_index(action, self.n)
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
            if not at_cap:
                row = mask[self.mode_offset + k * len(self.modes) : self.mode_offset + (k + 1) * len(self.modes)]
                row[:] = True
                row[m] = False
                if mask is self._buf:
                    self._buf_key = (id(state), state.version)
        return CodecStep(commit=at_cap)

    def _refresh_type(self, state: DecisionState, mask: np.ndarray, t: int) -> None:
        """Recompute the set-actions of type ``t`` (the only ones a count change on ``t`` affects)."""
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
        want, reject, mode, has_gpus = self._target_rows(state, target)
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
        """The next action towards ``target`` from the current draft (the commit when there is none)."""
        actions = self.plan(state, target)
        return actions[0] if actions else self.commit

    def encode(self, state: DecisionState, target: Allocation) -> Encoding:
        actions, draft, mode, rejected = self._plan(state, target)
        budget = self.max_actions - state.num_actions
        if len(actions) < budget:
            expressed = state.allocation_of(draft, mode, rejected)
            return self._finish_encoding(state, target, (*actions, self.commit), expressed, [])
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
        return self._finish_encoding(state, target, tuple(actions), expressed, notes)


class OneShotCodec(ActionCodec):
    """The one-shot ``MultiDiscrete`` codec: the whole window's allocation in one step.

    Dimensions (flat ``nvec``): ``K*T`` count levels (slot-major: index ``k * T + t``), then K reject
    flags (0/1, when ``allow_reject``), then K mode indices (when M > 1). Every step commits.

    Repair, in this order, so that any action is a valid allocation:

    1. entries of empty slots are ignored;
    2. a slot flagged for rejection is rejected and its counts are ignored;
    3. a count on a type the job may not use becomes 0;
    4. GPUs held by jobs outside the window stay with them; then, type by type, slots are served in
       window order (most urgent first), each receiving its requested level or, when fewer GPUs are
       left, the largest level that still fits.

    ``info["repaired"]`` counts the entries changed by steps 1, 3 and 4 (non-zero entries of empty
    slots included); the mask marks exactly the levels that need no repair taken one at a time
    (a level above the type's capacity left after out-of-window jobs, a disallowed type, an empty slot).
    """

    name = "multidiscrete"

    def __init__(self, state: DecisionState, levels: Sequence[int], allow_reject: bool, max_actions: int) -> None:
        super().__init__(state, levels, allow_reject, max_actions)
        k, t, c, m = self.num_slots, self.num_types, len(self.levels), len(self.modes)
        nvec = [c] * (k * t)
        if allow_reject:
            nvec += [2] * k
        self.has_modes = m > 1
        if self.has_modes:
            nvec += [m] * k
        self.nvec = np.asarray(nvec, dtype=np.int64)
        self._space = spaces.MultiDiscrete(self.nvec)
        self.num_counts = k * t
        self.reject_offset = self.num_counts
        self.mode_offset = self.reject_offset + (k if allow_reject else 0)

    @property
    def space(self) -> spaces.MultiDiscrete:
        return self._space

    def noop(self, state: DecisionState) -> np.ndarray:
        return self.encode_rows(state, state.current, np.zeros(self.num_slots, dtype=bool), state.draft_mode)

    def mask(self, state: DecisionState) -> np.ndarray:
        k, t, c = self.num_slots, self.num_types, len(self.levels)
        avail = state.capacity - state.outside_held
        ok = (
            (self.levels[None, None, :] <= avail[None, :, None]) & state.allowed[:, :, None] & state.used[:, None, None]
        )
        ok[:, :, 0] = True
        parts = [ok.reshape(k * t * c)]
        if self.allow_reject:
            rej = np.ones((k, 2), dtype=bool)
            rej[:, 1] = state.used
            parts.append(rej.reshape(-1))
        if self.has_modes:
            m = len(self.modes)
            md = np.repeat(state.used[:, None], m, axis=1)
            md[:, 0] = True
            parts.append(md.reshape(-1))
        return np.concatenate(parts)

    def encode_rows(self, state: DecisionState, counts: np.ndarray, reject: np.ndarray, mode: np.ndarray) -> np.ndarray:
        """The action for per-slot counts (on levels), reject flags and mode indices."""
        out = np.zeros(len(self.nvec), dtype=np.int64)
        out[: self.num_counts] = self.floor_index[np.minimum(counts, len(self.floor_index) - 1)].reshape(-1)
        if self.allow_reject:
            out[self.reject_offset : self.reject_offset + self.num_slots] = reject
        if self.has_modes:
            out[self.mode_offset :] = mode
        unused = ~state.used
        out[: self.num_counts].reshape(self.num_slots, self.num_types)[unused] = 0
        if self.allow_reject:
            out[self.reject_offset : self.reject_offset + self.num_slots][unused] = 0
        if self.has_modes:
            out[self.mode_offset :][unused] = 0
        return out

    def apply(self, state: DecisionState, action: Any, mask: np.ndarray) -> CodecStep:
        a = np.asarray(action)
        if a.shape != self.nvec.shape or (not np.issubdtype(a.dtype, np.integer) and not _integral(a)):
            raise ValueError(f"a {self.name} action is an integer array of shape {self.nvec.shape}, got {action!r}")
        a = a.astype(np.int64)
        if np.any(a < 0) or np.any(a >= self.nvec):
            raise ValueError(f"action {a.tolist()} is outside the action space {self._space}")
        k_slots, n_types = self.num_slots, self.num_types
        want = self.levels[a[: self.num_counts]].reshape(k_slots, n_types)
        reject = a[self.reject_offset : self.reject_offset + k_slots].astype(bool) if self.allow_reject else None
        modes = a[self.mode_offset :] if self.has_modes else None
        used = state.used
        repaired = int(np.count_nonzero(want[~used]))
        if reject is not None:
            repaired += int(np.count_nonzero(reject[~used]))
        if modes is not None:
            repaired += int(np.count_nonzero(modes[~used]))
        n = len(state.jobs)
        free = state.capacity - state.outside_held
        state.draft[:] = 0
        state.rejected[:] = False
        for k in range(n):
            if reject is not None and reject[k]:
                state.rejected[k] = True
                continue
            if modes is not None:
                state.draft_mode[k] = modes[k]
            row = want[k]
            for t in range(n_types):
                w = int(row[t])
                if not w:
                    continue
                if not state.allowed[k, t]:
                    repaired += 1
                    continue
                f = int(free[t])
                if w > f:
                    repaired += 1
                    w = self.level_floor(f)
                if w:
                    state.draft[k, t] = w
                    free[t] -= w
        state.free[:] = free
        state.num_actions += 1
        return CodecStep(commit=True, invalid=repaired > 0, repaired=repaired)

    def encode(self, state: DecisionState, target: Allocation) -> Encoding:
        counts, reject, mode, _ = self._target_rows(state, target)
        action = self.encode_rows(state, counts, reject, mode)
        snap = state.copy_draft()
        try:
            self.apply(state, action, self.mask(state))
            expressed = state.allocation()
        finally:
            state.restore_draft(snap)
        return self._finish_encoding(state, target, (action,), expressed, [])


#: Codec classes by configuration name (add yours to plug in another action encoding).
CODECS: dict[str, type[ActionCodec]] = {SequentialCodec.name: SequentialCodec, OneShotCodec.name: OneShotCodec}


def make_codec(
    name: str, state: DecisionState, levels: Sequence[int], allow_reject: bool, max_actions: int
) -> ActionCodec:
    """The codec registered as ``name``."""
    if name not in CODECS:
        raise UnknownNameError("action codec", name, CODECS)
    return CODECS[name](state, levels, allow_reject, max_actions)


# --------------------------------------------------------------------------------------------
# Exactness


def _as_index(action: Any, n: int) -> int:
    if type(action) is int and 0 <= action < n:  # the common case, kept cheap
        return action
    value = action
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise ValueError(f"a sequential action is one integer in [0, {n}), got an array of shape {value.shape}")
        value = value.reshape(()).item()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value or not 0 <= value < n:
        raise ValueError(f"a sequential action is an integer in [0, {n}), got {action!r}")
    return int(value)


def _integral(a: np.ndarray) -> bool:
    return bool(np.all(np.mod(a, 1) == 0))


def _describe(ja: JobAllocation | None) -> str:
    if not ja:
        return "no GPUs"
    text = ", ".join(f"{n} {t}" for t, n in ja.counts)
    if ja.mode != "sync":
        text += f" ({ja.mode})"
    if ja.servers is not None:
        text += f" on servers {dict(ja.servers)}"
    return text


def explain_gap(codec: ActionCodec, state: DecisionState, expressed: Allocation, target: Allocation) -> list[str]:
    """Why committing ``expressed`` would not leave the simulator as ``target`` would (empty if it would).

    Two allocations are equivalent when they reject the same jobs and give every job the same GPU
    counts per type and, when it holds GPUs, the same execution mode, and when neither moves a job
    between servers on its own account: the codecs set counts and leave placement to the simulator, so
    a target's explicit server placement is expressible only when it keeps a job exactly where it is
    (what ``AllocationBuilder.keep`` produces). The simulator keeps a job whose counts and mode are
    unchanged on its servers whether or not they are spelled out, so that case is no difference.
    """
    view = state.view
    if view is None:
        return []
    reasons: list[str] = []
    window = {int(j): slot for slot, j in enumerate(state.ids.tolist()) if j >= 0}
    if target.reject != expressed.reject:
        for jid in sorted(target.reject ^ expressed.reject):
            if jid in target.reject:
                why = _why_not(codec, state, window, jid, target)
                reasons.append(f"job {jid}: the target rejects it but the actions do not ({why})")
            else:
                reasons.append(
                    f"job {jid}: the actions reject it but the target does not (rejected earlier in the draft)"
                )
    t_jobs, e_jobs = target.jobs, expressed.jobs
    active = view.job_index
    for jid in sorted(set(t_jobs) | set(e_jobs)):
        if jid in target.reject or jid in expressed.reject:
            continue
        t_ja = t_jobs.get(jid) or None
        e_ja = e_jobs.get(jid) or None
        if t_ja == e_ja:
            continue
        if t_ja is not None and e_ja is not None and t_ja.counts == e_ja.counts and t_ja.mode == e_ja.mode:
            current = active[jid].allocation if jid in active else None
            if (
                current is not None
                and current.counts == t_ja.counts
                and current.mode == t_ja.mode
                and (t_ja.servers is None or t_ja.servers == current.servers)
            ):
                continue  # an unchanged job stays where it is either way
            reasons.append(
                f"job {jid}: target {_describe(t_ja)}, expressible {_describe(e_ja)} (explicit server placements "
                "are not expressible: the codecs set counts and the simulator places them, keeping only an "
                "unchanged job where it is)"
            )
            continue
        why = _why_not(codec, state, window, jid, target)
        reasons.append(f"job {jid}: target {_describe(t_ja)}, expressible {_describe(e_ja)} ({why})")
    return reasons


def _why_not(codec: ActionCodec, state: DecisionState, window: dict[int, int], jid: int, target: Allocation) -> str:
    if jid not in window:
        return f"the job is outside the {state.num_slots}-slot window"
    slot = window[jid]
    if jid in target.reject:
        if not codec.allow_reject:
            return "the codec was built with allow_reject=False"
        return "the job's slot cannot be rejected now"
    if state.rejected[slot]:
        return "the job was already rejected in this epoch's draft"
    ja = target.jobs.get(jid)
    if ja:
        off = [f"{n} {t}" for t, n in ja.counts if n not in codec.level_set]
        if off:
            return f"count {', '.join(off)} is not on the count levels {codec.levels.tolist()}"
        if ja.mode not in state.mode_index:
            return f"execution mode {ja.mode!r} is not among the codec's modes {list(state.modes)}"
        bad = [t for t, _ in ja.counts if t not in state.type_index or not state.allowed[slot, state.type_index[t]]]
        if bad:
            return f"type(s) {bad} are not allowed for the job"
        if ja.servers is not None:
            return "explicit server placements are not expressible"
    return "the GPUs it needs are held by jobs outside the window, or the per-epoch action cap was reached"
