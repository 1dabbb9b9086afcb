"""The ``levels`` feature group of the window encoder: each window job's speed and slack in every configuration.

What a deadline-aware scheduler compares when it sizes a job: for every slot, GPU type and count level
the sequential codec's actions can choose, the job's rate there and its deadline slack running so. The
knob ``levels=True`` of :class:`~hetgym.envs.observations.WindowObservation` turns it on (the alias
``observation="window-levels"``); the ``cursor`` group (:mod:`hetgym.envs.observations_cursor`) reads
its rows. The encoder contract, the registry and the encoder are :mod:`hetgym.envs.observations`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from hetgym.envs.features import FeatureGroup
from hetgym.envs.state import DecisionState
from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.rates import JobRates, RateTable
from hetgym.sim.view import JobView

if TYPE_CHECKING:
    from hetgym.envs.settings import EnvSettings


#: Up to this many slack entries to compute at an epoch, a Python loop; beyond, numpy over all of them.
_PER_ENTRY = 48


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
        self._width = len(state.types) * self.num_levels
        #: Each window job's row by job id, with the job's rates record (the run's RateTable entry) that fixed it;
        #: cleared when the table changes (a new run), never pickled.
        self._by_job: dict[int, tuple[JobRates, _LevelRow]] = {}
        self._statics: RateTable | None = None

    def keys(self, state: DecisionState) -> dict[str, tuple[int, float]]:
        size = state.num_slots * len(state.types) * self.num_levels
        return {"job_level_rate": (size, 0.0), "job_level_slack": (size, -1.0)}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_by_job"], state["_statics"] = {}, None  # keyed by job ids of one run: rebuilt as needed
        return state

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
        size = rates.size
        if top <= 0:
            # No usable rate: the rate row stays 0 and the slack row is -1 everywhere.
            none = np.zeros(0, np.int64)
            row = _LevelRow(
                rates, None, None, None, np.zeros(size, np.float32), np.full(size, -1.0, np.float32), none, none, 0, ()
            )
        else:
            positive = rates > 0
            sign = np.where(positive, 1.0, -1.0)
            normalised = rates / top
            flat = rates.reshape(-1)
            pos_index = np.flatnonzero(flat > 0)
            pos_rates = np.maximum(flat[pos_index], 1e-300)
            row = _LevelRow(
                rates,
                normalised,
                positive,
                sign,
                normalised.reshape(-1).astype(np.float32),
                sign.reshape(-1).astype(np.float32),
                pos_index,
                pos_rates,
                int(pos_index.size),
                tuple(zip(pos_index.tolist(), pos_rates.tolist(), strict=True)),
            )
        self._rows[key] = row
        return row

    def _rows_of(self, state: DecisionState, statics: RateTable) -> list[_LevelRow]:
        """Each window job's static row, by job id (a job's rates record, ``state.records``, fixes its row; see
        ``_by_job``)."""
        if statics is not self._statics:  # a new run: job ids start over
            self._by_job = {}
            self._statics = statics
        by_job = self._by_job
        rows = []
        for job, rec in zip(state.jobs, state.records, strict=True):
            hit = by_job.get(job.job_id)
            if hit is None or hit[0] is not rec:
                hit = by_job[job.job_id] = (rec, self._level_row(job, rec.allowed))
            rows.append(hit[1])
        return rows

    def begin_epoch(self, state: DecisionState, statics: RateTable) -> None:
        view = state.view
        jobs = state.jobs
        if view is None or not jobs:
            return
        now = view.now_s
        scale = self.enc.time_scale_s
        width = self._width
        used = len(jobs) * width
        # The rows that depend only on the job come from caches: the rate row as is; the slack row of a job
        # without a deadline is its sign (1 where the rate is positive, else -1), that of a job with one is -1
        # (tanh(-inf)) where the rate is 0 and tanh((deadline - now - remaining / rate) / time scale) where it
        # is positive, computed for those entries only, all dated jobs' at once.
        rows = self._rows_of(state, statics)
        enc = self.enc
        enc.view_of("job_level_rate")[:used] = np.concatenate([row.rate_flat for row in rows])
        slack_flat = enc.view_of("job_level_slack")
        slack_flat[:used] = np.concatenate([row.slack_flat for row in rows])
        dated = [
            (slot, job, row)
            for slot, (job, row) in enumerate(zip(jobs, rows, strict=True))
            if row.pos_count and math.isfinite(job.deadline_s)
        ]
        if not dated:
            return
        counts = [row.pos_count for _, _, row in dated]
        tanh = math.tanh  # the same on every CPU (hetgym.sim.portable)
        if sum(counts) <= _PER_ENTRY:
            # Few entries: plain Python (numpy calls cost more than they save here; the same float64 arithmetic).
            index: list[int] = []
            values: list[float] = []
            for slot, job, row in dated:
                left = job.deadline_s - now
                remaining = job.remaining_iters
                base = slot * width
                for i, rate in row.pos:
                    index.append(base + i)
                    values.append(tanh((left - remaining / rate) / scale))
            slack_flat[index] = values
            return
        rates = np.concatenate([row.pos_rates for _, _, row in dated])
        at = np.concatenate([row.pos_index for _, _, row in dated])
        at += np.repeat([slot * width for slot, _, _ in dated], counts)
        left_s = np.repeat([job.deadline_s - now for _, job, _ in dated], counts)
        remaining_iters = np.repeat([job.remaining_iters for _, job, _ in dated], counts)
        arg = ((left_s - remaining_iters / rates) / scale).tolist()
        slack_flat[at] = list(map(tanh, arg))


class _LevelRow(NamedTuple):
    """A job's per-(type, level) rates (T, C) on its allowed types; the next three ``None`` when all are 0."""

    rates: np.ndarray
    normalised: np.ndarray | None  # rates / their maximum
    positive: np.ndarray | None  # rates > 0
    sign: np.ndarray | None  # 1 where rates > 0, else -1 (the slack row of a job without a deadline)
    rate_flat: np.ndarray  # the job_level_rate row as written (float32, T*C; 0 when no rate is usable)
    slack_flat: np.ndarray  # the job_level_slack row of a job without a deadline (sign, or -1 everywhere)
    pos_index: np.ndarray  # the flat indices (int64) where the rate is positive
    pos_rates: np.ndarray  # the rates there, float64 (floored at 1e-300, as the slack's division was)
    pos_count: int  # their number
    pos: tuple[tuple[int, float], ...]  # (index, rate) pairs of pos_index and pos_rates, as Python numbers
