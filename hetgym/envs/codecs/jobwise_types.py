"""The job-at-a-time codec with several GPU types a job (``codec="jobwise-types"``).

The ``jobwise`` codec (:mod:`hetgym.envs.codecs.jobwise`) gives each window job one GPU type, so it cannot
express an expert that spreads a job over types: HadarE forks a job into copies on every type that has
room (on ``HetCluster-v1`` about a fifth of its running jobs hold two to four types). This codec keeps
``jobwise``'s action numbering, so the same networks apply (the set network of :mod:`agents.set_policy`),
and changes one thing: a set action no longer ends the current job's *turn*.

Action layout (``Discrete(T * (C - 1) * M + 3 [+ 1])``, as ``jobwise``):

* ``((t * (C - 1)) + (c - 1)) * M + m``: the current job runs on ``levels[c]`` GPUs of type ``t`` in mode
  ``m``. The first set action of a turn replaces the job's draft row by that one type; each later one adds
  its type to what the turn gave so far. A type can be given once a turn, and every set action of a turn
  uses the first one's mode (the mask says so). The cursor stays on the job;
* ``keep``: end the job's turn with what the draft gives it (the turn's set actions, or, when there were
  none, its GPUs before the epoch unless a more urgent job took them);
* ``none``: the job gets no GPUs (whatever the turn gave it), and its turn ends;
* ``reject`` (with ``allow_reject``): the job is refused for good, and its turn ends;
* ``done`` (the last index): commit now; the jobs not yet presented keep what the draft gives them.

Ending the last job's turn commits. A masked-out action is treated as ``keep``. Every action either ends
a turn or gives the current job a type it did not have this turn, so an epoch takes at most
``K * (T + 1) + 1`` steps and no action sequence can stall it. GPUs held by jobs not yet presented count
as available to the current job and are preempted, least urgent first, when it takes more than the free
GPUs (as in ``jobwise``).

The inverse map (:meth:`JobwiseTypesCodec.encode`) gives a job whose target differs from its draft its
types in decreasing order of count (ties: type order), then ``keep``; it is exact for every allocation on
the count levels in one of the codec's modes. From a state a learner reached (DAgger), a turn that
already gave a type the wrong count is finished with the target's other types and reported as inexact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hetgym.envs.codecs.base import CodecStep, discrete_index, register_codec
from hetgym.envs.codecs.jobwise import JobwiseCodec
from hetgym.envs.state import DecisionState


@register_codec()
class JobwiseTypesCodec(JobwiseCodec):
    """One job at a time, several GPU types a job: set actions add types to the current job until ``keep``."""

    name = "jobwise-types"

    def mask(self, state: DecisionState) -> np.ndarray:
        out = super().mask(state)
        slot = self.current_slot(state)
        given = state.cursor_types
        if given and slot < self._num_jobs(state):
            # A type once a turn, in the turn's mode.
            taken = ((given >> self._type) & 1).astype(bool)
            out[: self.num_set] &= ~taken
            if len(self.modes) > 1:
                out[: self.num_set] &= self._mode == state.draft_mode[slot]
        return out

    def apply(self, state: DecisionState, action: Any, mask: np.ndarray) -> CodecStep:
        a = discrete_index(action, self.n, self.name)
        if a == self.done:
            return CodecStep(commit=True)
        slot = self.current_slot(state)
        jobs = self._num_jobs(state)
        if slot >= jobs:  # an empty window: any action commits
            return CodecStep(commit=True)
        invalid = not mask[a]
        state.num_actions += 1
        if not invalid and a < self.num_set:
            t, count, m = self._set_list[a]
            row = [0] * self.num_types if not state.cursor_types else state.draft[slot].tolist()
            row[t] = count
            state.set_row(slot, row)
            if len(self.modes) > 1:
                state.set_mode(slot, m)
            self._preempt_later(state, slot, t)
            state.cursor_types |= 1 << t
            mask[:] = self.mask(state)
            return CodecStep(commit=False)
        if not invalid and a == self.none:
            state.set_row(slot, [0] * self.num_types)
        elif not invalid and a == self.reject_action:
            state.reject(slot)
        state.cursor += 1
        state.cursor_types = 0
        commit = state.cursor >= jobs
        if not commit:
            mask[:] = self.mask(state)
        return CodecStep(commit=commit, invalid=invalid)

    # ----------------------------------------------------------------------------------------
    def steps_bound(self) -> int:
        """The most steps an epoch takes: each ends a turn or gives a new type, K * (T + 1) + 1."""
        return self.num_slots * (self.num_types + 1) + 1

    def _action_for(
        self, state: DecisionState, slot: int, row: np.ndarray, reject: bool, mode: int, notes: list[str]
    ) -> int:
        """The next action of the job at ``slot`` towards its target ``row`` (see the module docstring)."""
        draft = state.draft[slot]
        given = state.cursor_types
        same_mode = len(self.modes) == 1 or state.draft_mode[slot] == mode
        if reject:
            return self.reject_action if self.allow_reject else self.none
        if not row.any():
            return self.none if draft.any() else self.keep
        if not given and np.array_equal(draft, row) and same_mode:
            return self.keep
        m = mode if len(self.modes) > 1 else 0
        if given and len(self.modes) > 1:
            m = int(state.draft_mode[slot])
        # The target's types still to give this turn, largest count first.
        order = sorted(range(self.num_types), key=lambda t: (-int(row[t]), t))
        for t in order:
            if row[t] == 0 or (given >> t) & 1:
                continue
            return self.set_action(t, int(self.floor_index[row[t]]), m)
        if given and not np.array_equal(draft, row):
            notes.append(
                f"job {int(state.ids[slot])}: its turn already gave it {draft.tolist()} GPUs per type, "
                f"the target is {row.tolist()}; a type is given once a turn"
            )
        return self.keep
