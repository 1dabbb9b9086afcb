"""The base of action codecs: what every codec provides to the environment and to experts."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from hetgym.envs.exactness import Encoding, explain_gap
from hetgym.envs.state import DecisionState
from hetgym.sim.allocation import Allocation


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
