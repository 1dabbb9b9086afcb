"""The ``levels`` feature group of the window encoder: each window job's speed and slack in every configuration.

What a deadline-aware scheduler compares when it sizes a job: for every slot, GPU type and count level
the sequential codec's actions can choose, the job's rate there and its deadline slack running so. The
knob ``levels=True`` of :class:`~hetgym.envs.observations.WindowObservation` turns it on (the alias
``observation="window-levels"``); the ``cursor`` group (:mod:`hetgym.envs.observations_cursor`) reads
its rows. The encoder contract, the registry and the encoder are :mod:`hetgym.envs.observations`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from hetgym.envs.observations import FeatureGroup
from hetgym.envs.state import DecisionState
from hetgym.sim import portable
from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.rates import RateTable
from hetgym.sim.view import JobView

if TYPE_CHECKING:
    from hetgym.envs.config import EnvSettings


class LevelFeatures(FeatureGroup):
    """Each window job's speed and slack in every configuration it can get (``levels=True``).

    The sequential codec's actions set a slot's count on a type to a count level; this group shows,
    for every (slot, type, level) such action can choose, what the job would get from it. Two keys,
    each ``(K*T*C,)`` for C count levels, slot-major then type then level (entry ``(k*T + t)*C + c``,
    the index layout of the sequential codec's set-actions):

    =========================  =========  ========  ==============================================
    key                        shape      range     meaning
    =========================  =========  ========  ==============================================
    ``job_level_rate``         (K*T*C,)   [0, 1]    rate on type t with level c GPUs / the job's
                                                    fastest such rate (0: level 0, type not
                                                    allowed, or infeasible)
    ``job_level_slack``        (K*T*C,)   [-1, 1]   tanh((deadline - now - remaining iterations /
                                                    that rate) / time scale): > 0 when the job
                                                    finishes in time running so from now on; -1
                                                    where the rate is 0; 1 without a deadline
    =========================  =========  ========  ==============================================

    Rates are the throughput model's single-server rates, times its multi-server factor when the
    level exceeds the type's largest server (the job must then span servers); restart penalties and
    placement are not counted. The other keys are the encoder's own (same keys and values), so an agent
    trained without this group does not read these keys and one trained with it needs them.
    """

    def __init__(self, state: DecisionState, settings: EnvSettings) -> None:
        self.levels = np.asarray(settings.levels, dtype=np.int64)
        self.throughput = settings.throughput
        self.cluster: ClusterSpec = state.cluster
        self.num_levels = len(self.levels)
        #: Rates (T, C) by (job type, batch size): they do not depend on the episode.
        self._rates: dict[tuple[str, int], np.ndarray] = {}
        #: The static rows of :meth:`begin_epoch` by (job type, batch size, allowed types).
        self._rows: dict[tuple[str, int, bytes], _LevelRow] = {}
        self._zero_rates = np.zeros((len(state.types), self.num_levels))
        self._server = np.array([self.cluster.max_gpus_per_server[t] for t in state.types], dtype=np.int64)

    def keys(self, state: DecisionState) -> dict[str, tuple[int, float]]:
        size = state.num_slots * len(state.types) * self.num_levels
        return {"job_level_rate": (size, 0.0), "job_level_slack": (size, -1.0)}

    def _level_rates(self, job: JobView, types: tuple[str, ...]) -> np.ndarray:
        key = (job.job_type, int(job.batch_size))
        hit = self._rates.get(key)
        if hit is not None:
            return hit
        tp = self.throughput
        out = np.zeros((len(types), self.num_levels), dtype=np.float64)
        for ti, gpu in enumerate(types):
            for ci, n in enumerate(self.levels.tolist()):
                if n <= 0:
                    continue
                rate = tp.rate(job.job_type, job.batch_size, gpu, n)
                if rate > 0 and n > self._server[ti]:
                    rate *= tp.consolidation_factor(job.job_type, job.batch_size, gpu, n)
                out[ti, ci] = rate if math.isfinite(rate) and rate > 0 else 0.0
        self._rates[key] = out
        return out

    def _level_row(self, job: JobView, allowed: np.ndarray) -> _LevelRow:
        """The static part of a job's rows: rates (T, C) on its allowed types, normalised, and their sign."""
        key = (job.job_type, int(job.batch_size), allowed.tobytes())
        hit = self._rows.get(key)
        if hit is not None:
            return hit
        rates = self._level_rates(job, self.cluster.gpu_types) * allowed[:, None]
        top = float(rates.max())
        if top <= 0:
            row = _LevelRow(rates, None, None, None)
        else:
            positive = rates > 0
            row = _LevelRow(rates, rates / top, positive, np.where(positive, 1.0, -1.0))
        self._rows[key] = row
        return row

    def begin_epoch(self, state: DecisionState, statics: RateTable) -> None:
        enc = self.enc
        k, t, c = enc.num_slots, enc.num_types, self.num_levels
        rate_out = enc.view_of("job_level_rate").reshape(k, t, c)
        slack_out = enc.view_of("job_level_slack").reshape(k, t, c)
        view = state.view
        if view is None or not state.jobs:
            return
        now = view.now_s
        # The rows that depend only on the job (rates, their normalisation) come from a cache; the slack
        # of every deadline job is computed in one pass over the stacked rates.
        rows = [self._level_row(job, allowed) for job, allowed in zip(state.jobs, state.allowed, strict=False)]
        dated: list[int] = []
        for slot, (job, row) in enumerate(zip(state.jobs, rows, strict=True)):
            if row.normalised is None:
                slack_out[slot] = -1.0
            elif math.isfinite(job.deadline_s):
                dated.append(slot)
            else:
                slack_out[slot] = row.sign
        # Rows of jobs with no usable rate stay 0 (the encoder's begin_epoch cleared the buffer).
        rate_out[: len(rows)] = [self._zero_rates if row.normalised is None else row.normalised for row in rows]
        if not dated:
            return
        jobs = state.jobs
        rates = np.stack([rows[i].rates for i in dated])
        remaining = np.array([jobs[i].remaining_iters for i in dated])[:, None, None]
        left_s = np.array([jobs[i].deadline_s - now for i in dated])[:, None, None]
        positive = np.stack([rows[i].positive for i in dated])  # type: ignore[misc]
        need_s = np.where(positive, remaining / np.maximum(rates, 1e-300), np.inf)
        slack_out[dated] = portable.tanh((left_s - need_s) / enc.time_scale_s)  # tanh(-inf) = -1


class _LevelRow(NamedTuple):
    """A job's per-(type, level) rates (T, C) on its allowed types; the others ``None`` when all are 0."""

    rates: np.ndarray
    normalised: np.ndarray | None  # rates / their maximum
    positive: np.ndarray | None  # rates > 0
    sign: np.ndarray | None  # 1 where rates > 0, else -1 (the slack row of a job without a deadline)
