"""The one-shot ``MultiDiscrete`` codec (``codec="multidiscrete"``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from hetgym.envs.codecs.base import ActionCodec, CodecStep, multidiscrete_array, register_codec
from hetgym.envs.exactness import Encoding
from hetgym.envs.state import DecisionState
from hetgym.sim.allocation import Allocation
from hetgym.sim.registry import Knobs

if TYPE_CHECKING:
    from hetgym.envs.settings import EnvSettings


@register_codec()
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

    def __init__(self, state: DecisionState, settings: EnvSettings, knobs: Knobs | None = None) -> None:
        super().__init__(state, settings, knobs)
        allow_reject = self.allow_reject
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

    def step_info(self, step: CodecStep, info: dict[str, Any]) -> None:
        """``info["repaired"]``: the entries the repair changed (see the class docstring)."""
        info["repaired"] = step.repaired

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
        a = multidiscrete_array(action, self.nvec, self.name)
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
        counts, reject, mode, _ = self.target_rows(state, target)
        action = self.encode_rows(state, counts, reject, mode)
        snap = state.copy_draft()
        try:
            self.apply(state, action, self.mask(state))
            expressed = state.allocation()
        finally:
            state.restore_draft(snap)
        return self.make_encoding(state, target, (action,), expressed)
