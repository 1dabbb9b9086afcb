"""The ``window-cursor`` observation: ``window-levels`` plus the job being decided and the pressure per GPU type.

With the job-at-a-time codec (``codec="jobwise"``) every action decides one window job, the one at the
*cursor* (slot ``num_actions``). A network reading the flat window must otherwise find that job's
features among K slots from the action counter alone; this encoder copies them into fixed keys, adds
what the job may take, what the jobs still to be decided after it hold, and how much every GPU type is
wanted by the active jobs. It is what a scheduler sizing one job looks at: the job's speed and slack in
each configuration, the GPUs it can get, and the competition for each type.

Keys added to :class:`~hetgym.envs.observations.WindowLevelsObservation`'s (K slots, T GPU types,
C count levels; all float32, 1-D):

==========================  =======  ========  =======================================================
key                         shape    range     meaning
==========================  =======  ========  =======================================================
``cursor_job``              (11,)    [-1, 1]   the cursor job's per-slot features, in the order of
                                               :data:`~hetgym.envs.observations.SLOT_FEATURES`
``cursor_type``             (3T,)    [0, 1]    its ``job_speed``, ``job_current`` and ``job_alloc``
                                               rows (type-major blocks of T)
``cursor_level_rate``       (T*C,)   [0, 1]    its ``job_level_rate`` row
``cursor_level_slack``      (T*C,)   [-1, 1]   its ``job_level_slack`` row
``cursor_avail``            (T,)     [0, 1]    GPUs of each type it may take (free under the draft, its
                                               own, and those of jobs not yet decided) / capacity
``later_held``              (T,)     [0, 1]    GPUs the jobs after the cursor hold in the draft / capacity
``later_jobs``              (2,)     [-1, 1]   jobs after the cursor / K; tanh(their least slack / time
                                               scale), 1 when none
``type_pressure``           (T,)     [0, 1]    squash(GPUs requested by the active jobs whose fastest
                                               type is t / capacity of t)
==========================  =======  ========  =======================================================

The cursor is the slot the observation's ``slot_cursor`` key marks (codecs that decide one slot per
action, ``jobwise``); the ``cursor_*`` and ``later_*`` keys are 0 (``later_jobs[1]`` is 1) when there is
none: with the other codecs, or once every window job is decided. A job's
fastest type is the one of its best rate at its requested count (ties: the first in cluster order).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from hetgym.envs.observations import (
    SLOT_FEATURES,
    ObservationEncoder,
    WindowLevelsObservation,
    _signed,
    register_observation,
    squash,
)
from hetgym.envs.state import DecisionState
from hetgym.sim.rates import RateTable
from hetgym.sim.registry import Knobs

if TYPE_CHECKING:
    from hetgym.envs.config import EnvSettings


@register_observation()
class WindowCursorObservation(WindowLevelsObservation):
    """``window-levels`` plus the job being decided (the cursor) and the pressure on each GPU type."""

    name = "window-cursor"

    def __init__(self, state: DecisionState, settings: EnvSettings, knobs: Knobs | None = None) -> None:
        ObservationEncoder.__init__(self, state, settings, knobs)
        self.levels = np.asarray(settings.levels, dtype=np.int64)
        self.throughput = settings.throughput
        self.cluster = state.cluster
        self.num_levels = len(self.levels)
        k, t, c = state.num_slots, len(state.types), len(self.levels)
        self._build(
            state,
            time_scale_s=settings.time_scale_s,
            allow_reject=settings.allow_reject,
            max_actions=settings.max_actions,
            slot_cursor=settings.slot_cursor,
            extra={
                "job_level_rate": (k * t * c, 0.0),
                "job_level_slack": (k * t * c, -1.0),
                "cursor_job": (len(SLOT_FEATURES), -1.0),
                "cursor_type": (3 * t, 0.0),
                "cursor_level_rate": (t * c, 0.0),
                "cursor_level_slack": (t * c, -1.0),
                "cursor_avail": (t, 0.0),
                "later_held": (t, 0.0),
                "later_jobs": (2, -1.0),
                "type_pressure": (t, 0.0),
            },
        )
        self._rates = {}
        self._rows = {}
        self._server = np.array([self.cluster.max_gpus_per_server[g] for g in state.types], dtype=np.int64)

    def begin_epoch(self, state: DecisionState, statics: RateTable, num_jobs: int) -> None:
        super().begin_epoch(state, statics, num_jobs)
        if state.view is None:
            return
        demand = np.zeros(self.num_types)
        for job in (*state.jobs, *state.outside):
            speed = statics.get(job).speed
            if speed.max() > 0:
                demand[int(np.argmax(speed))] += job.num_gpus
        self._view["type_pressure"][:] = demand / (self.capacity + demand)  # squash(demand / capacity)

    def observe(self, state: DecisionState) -> dict[str, np.ndarray]:
        obs = super().observe(state)
        slot = state.num_actions if self.slot_cursor and state.num_actions < len(state.jobs) else -1
        if slot < 0:
            obs["later_jobs"][1] = 1.0
            return obs
        k, t, c = self.num_slots, self.num_types, self.num_levels
        n = len(state.jobs)
        obs["cursor_job"][:] = self._slot_block[:, slot]
        for i, key in enumerate(("job_speed", "job_current", "job_alloc")):
            obs["cursor_type"][i * t : (i + 1) * t] = obs[key][slot * t : (slot + 1) * t]
        rows = slice(slot * t * c, (slot + 1) * t * c)
        obs["cursor_level_rate"][:] = obs["job_level_rate"][rows]
        obs["cursor_level_slack"][:] = obs["job_level_slack"][rows]
        later = state.draft[slot + 1 : n].sum(axis=0)
        obs["cursor_avail"][:] = np.minimum(1.0, (state.free + state.draft[slot] + later) / self.capacity)
        obs["later_held"][:] = np.minimum(1.0, later / self.capacity)
        rest = n - slot - 1
        obs["later_jobs"][0] = rest / k
        slacks = state.slacks_s[slot + 1 : n]
        least = min(slacks) if slacks else math.inf
        obs["later_jobs"][1] = _signed(least, self.time_scale_s) if slacks else 1.0
        return obs


__all__ = ["WindowCursorObservation", "squash"]
