"""The ``cursor`` feature group of the window encoder: the job being decided and the pressure per GPU type.

With the job-at-a-time codec (``codec="jobwise"``) every action decides one window job, the one at the
*cursor* (slot ``state.cursor``). A network reading the flat window must otherwise find that job's
features among K slots from the action counter alone; this encoder copies them into fixed keys, adds
what the job may take, what the jobs still to be decided after it hold, and how much every GPU type is
wanted by the active jobs. It is what a scheduler sizing one job looks at: the job's speed and slack in
each configuration, the GPUs it can get, and the competition for each type.

The knob ``cursor=True`` of :class:`~hetgym.envs.observations.WindowObservation` turns it on, with
``levels=True`` (whose rows it copies; the alias ``observation="window-cursor"`` presets both). Keys added
after the ``levels`` group's (K slots, T GPU types, C count levels; all float32, 1-D):

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

from typing import TYPE_CHECKING

import numpy as np

from hetgym.envs.features import SLOT_FEATURES, FeatureGroup, signed_scale, squash
from hetgym.envs.state import DecisionState
from hetgym.sim.rates import RateTable

if TYPE_CHECKING:
    from hetgym.envs.observations import WindowObservation
    from hetgym.envs.settings import EnvSettings


class CursorFeatures(FeatureGroup):
    """The job being decided (the cursor), what it may take, the jobs after it, the pressure on each GPU type."""

    def __init__(self, state: DecisionState, settings: EnvSettings) -> None:
        self.num_levels = len(settings.levels)
        #: Each job's fastest type (-1: none), by the key of its rates in the simulator's RateTable.
        self._fastest: dict[tuple[object, ...], int] = {}

    def keys(self, state: DecisionState) -> dict[str, tuple[int, float]]:
        t, c = len(state.types), self.num_levels
        return {
            "cursor_job": (len(SLOT_FEATURES), -1.0),
            "cursor_type": (3 * t, 0.0),
            "cursor_level_rate": (t * c, 0.0),
            "cursor_level_slack": (t * c, -1.0),
            "cursor_avail": (t, 0.0),
            "later_held": (t, 0.0),
            "later_jobs": (2, -1.0),
            "type_pressure": (t, 0.0),
        }

    def bind(self, enc: WindowObservation) -> None:
        super().bind(enc)
        self._gather_dst, self._gather_src = self._cursor_gather(enc)
        self._avail_slice = enc.layout["cursor_avail"]
        self._held_slice = enc.layout["later_held"]
        self._later_jobs = enc.layout["later_jobs"].start
        # write_draft's two writes: the gather's destination is one run of the buffer (the cursor_* keys lie side
        # by side), as are cursor_avail, later_held and later_jobs.
        dst = self._gather_dst
        assert np.array_equal(dst, np.arange(dst[0], dst[-1] + 1))
        self._gather_start, self._gather_stop = int(dst[0]), int(dst[-1]) + 1
        self._gather_rows = list(self._gather_src)
        assert self._avail_slice.stop == self._held_slice.start and self._held_slice.stop == self._later_jobs
        self._tail_start, self._tail_stop = self._avail_slice.start, self._later_jobs + 2

    def begin_epoch(self, state: DecisionState, statics: RateTable) -> None:
        enc = self.enc
        demand = [0] * enc.num_types
        fastest = self._fastest
        for job in (*state.jobs, *state.outside):
            spec = job.spec
            key = (spec.job_type, spec.batch_size, spec.num_gpus, spec.gpu_types)
            best = fastest.get(key)
            if best is None:
                speed = statics.get(job).speed
                best = fastest[key] = int(np.argmax(speed)) if speed.max() > 0 else -1
            if best >= 0:
                demand[best] += job.num_gpus
        need = np.array(demand, dtype=np.float64)
        enc.view_of("type_pressure")[:] = need / (enc.capacity + need)  # squash(demand / capacity)

    def _cursor_gather(self, enc: WindowObservation) -> tuple[np.ndarray, np.ndarray]:
        """Buffer offsets: those of the ``cursor_job``, ``cursor_type``, ``cursor_level_rate`` and
        ``cursor_level_slack`` entries, and for each slot, those of the entries they copy, int64 ``(K, L)``."""
        k, t, c = enc.num_slots, enc.num_types, self.num_levels
        sl = enc.layout
        keys = ("cursor_job", "cursor_type", "cursor_level_rate", "cursor_level_slack")
        dst = np.concatenate([np.arange(sl[key].start, sl[key].stop) for key in keys])
        src = np.empty((k, dst.size), dtype=np.int64)
        for slot in range(k):
            parts = [np.array([sl[f].start + slot for f in SLOT_FEATURES])]
            parts += [sl[key].start + slot * t + np.arange(t) for key in ("job_speed", "job_current", "job_alloc")]
            parts += [sl[key].start + slot * t * c + np.arange(t * c) for key in ("job_level_rate", "job_level_slack")]
            src[slot] = np.concatenate(parts)
        return dst, src

    def write_batch(
        self, rows: np.ndarray, batch: list[DecisionState], drafts: np.ndarray, frees: np.ndarray, out: np.ndarray
    ) -> None:
        enc = self.enc
        counts = [len(st.jobs) for st in batch]
        slots = [st.cursor if enc.slot_cursor and st.cursor < n else -1 for st, n in zip(batch, counts, strict=True)]
        on = [j for j, slot in enumerate(slots) if slot >= 0]
        for j, slot in enumerate(slots):
            if slot < 0:
                out[rows[j], self._later_jobs + 1] = 1.0
        if not on:
            return
        at = np.array(on)
        cursor = np.array([slots[j] for j in on])
        num = np.array([counts[j] for j in on])
        rows_on = rows[at]
        # The cursor slots' features, copied in one gather (after job_alloc, which holds the drafts).
        out[rows_on[:, None], self._gather_dst] = out[rows_on[:, None], self._gather_src[cursor]]
        slot_ids = np.arange(enc.num_slots)
        after = (slot_ids > cursor[:, None]) & (slot_ids < num[:, None])  # the jobs still to decide
        sub = drafts[at]
        later = (sub * after[:, :, None]).sum(axis=1)
        own = sub[np.arange(len(on)), cursor]
        out[rows_on, self._avail_slice] = np.minimum(1.0, (frees[at] + own + later) / enc.capacity)
        out[rows_on, self._held_slice] = np.minimum(1.0, later / enc.capacity)
        out[rows_on, self._later_jobs] = (num - cursor - 1) / enc.num_slots
        for j, r in zip(on, rows_on.tolist(), strict=True):
            st = batch[j]
            slacks = st.slacks_s[slots[j] + 1 : counts[j]]
            out[r, self._later_jobs + 1] = signed_scale(min(slacks), enc.time_scale_s) if slacks else 1.0

    def write_draft(self, state: DecisionState, buf: np.ndarray) -> None:
        enc = self.enc
        n = len(state.jobs)
        slot = state.cursor if enc.slot_cursor and state.cursor < n else -1
        if slot < 0:
            buf[self._later_jobs + 1] = 1.0
            return
        # The cursor slot's features, copied in one gather (after job_alloc, which holds the draft).
        buf[self._gather_start : self._gather_stop] = buf[self._gather_rows[slot]]
        # T numbers each: plain Python is cheaper than numpy calls here (and gives the same float64 values).
        draft = state.draft
        later = np.add.reduce(draft[slot + 1 : n], axis=0).tolist()
        own = draft[slot].tolist()
        cap = enc.capacity_list
        slacks = state.slacks_s[slot + 1 : n]
        # cursor_avail, later_held and later_jobs lie side by side: one write.
        buf[self._tail_start : self._tail_stop] = [
            *[min(1.0, (f + o + x) / c) for f, o, x, c in zip(state.free.tolist(), own, later, cap, strict=True)],
            *[min(1.0, x / c) for x, c in zip(later, cap, strict=True)],
            (n - slot - 1) / enc.num_slots,
            signed_scale(min(slacks), enc.time_scale_s) if slacks else 1.0,
        ]


__all__ = ["CursorFeatures", "squash"]
