"""Observation encoders: the decision state as a flat ``Dict`` of bounded, one-dimensional float32 ``Box`` es.

The default :class:`WindowObservation` (``observation="window"``) shows the K-slot job window (see
:mod:`hetgym.envs.state` for which jobs fill it), the cluster per GPU type, the clock, and aggregates
of the active jobs that did not fit in the window. Its knobs (:class:`WindowKnobs`) add feature groups,
each a :class:`FeatureGroup` in its own module: ``levels`` (:mod:`hetgym.envs.observations_levels`),
for every slot, GPU type and count level, the job's speed and its deadline slack in that configuration;
``cursor`` (:mod:`hetgym.envs.observations_cursor`), the job being decided and the pressure per GPU type;
``nodes`` (:mod:`hetgym.envs.observations_nodes`), the free GPUs of every server and each job's servers.
The names ``window-levels``, ``window-cursor`` and ``window-nodes`` are registered aliases of ``window``
with the groups up to that one preset. Every feature is scaled to ``[0, 1]`` or
``[-1, 1]``: counts by capacities, times with ``x / (1 + x)`` (or ``tanh`` for signed slack) of
``seconds / time_scale_s``. Every entry is a 1-D ``Box`` (per-slot-and-type features are slot-major:
index ``k * T + t``), which Stable-Baselines3's ``MultiInputPolicy`` takes as is and
``gymnasium.wrappers.FlattenObservation`` turns into one vector for an ``MlpPolicy``;
:class:`~hetgym.envs.flat.FlatObservation` (opt-in) gives that vector from the encoder's flat buffer without the
``Dict``.

Encoders are chosen by name from the registry :data:`OBSERVATIONS`; add one by subclassing
:class:`ObservationEncoder` and decorating it with :func:`register_observation`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
from gymnasium import spaces

from hetgym.envs.features import (
    CLOCK_FEATURES,
    QUEUE_FEATURES,
    SLOT_FEATURES,
    SLOT_TYPE_FEATURES,
    TYPE_FEATURES,
    FeatureGroup,
    signed_scale,
    squash,
)
from hetgym.envs.state import DecisionState, slack_s
from hetgym.sim.job import JobStatus
from hetgym.sim.rates import JobRates, RateTable
from hetgym.sim.registry import KnobError, Knobs, Registry, knob

if TYPE_CHECKING:
    from hetgym.envs.settings import EnvSettings

#: A window job's features that never change, computed once a run: its rates record (the run's RateTable entry,
#: which the cache checks), its speed row (float32, T), best rate, ``job_request`` and ``job_has_deadline``.
_JobFixed = tuple[JobRates, np.ndarray, float, float, float]


class ObservationEncoder(ABC):
    """Base class of observation encoders (pluggable: decorate a subclass with :func:`register_observation`).

    The environment calls :meth:`begin_epoch` once per decision epoch (after the window is filled) and
    :meth:`observe` after every step; :attr:`space` is fixed at construction.

    Args:
        state: The environment's decision state (fixes K, the GPU types and the modes).
        settings: The environment-wide settings (count levels, ``allow_reject``, the per-epoch action cap,
            the time scale, the throughput model; :class:`~hetgym.envs.config.EnvSettings`).
        knobs: The encoder's own knobs, an instance of :attr:`knobs` (``observation_knobs={...}``), or
            ``None`` when it declares none.

    Attributes:
        name: Registry name (``observation="name"``).
        knobs: The frozen :class:`~hetgym.sim.registry.Knobs` dataclass of the encoder's own knobs, or
            ``None`` (of the built-in encoders, ``window`` has :class:`WindowKnobs`).
        knob_values: The knob values this instance was built with.
    """

    name: ClassVar[str]
    knobs: ClassVar[type[Knobs] | None] = None

    def __init__(self, state: DecisionState, settings: EnvSettings, knobs: Knobs | None = None) -> None:
        del state  # subclasses lay out their space from it
        self.settings = settings
        self.knob_values = knobs

    @property
    @abstractmethod
    def space(self) -> spaces.Dict:
        """The observation space (fixed at construction)."""

    def begin_epoch(self, state: DecisionState, statics: RateTable, num_jobs: int) -> None:  # noqa: B027
        """Compute what stays fixed during a decision epoch (called after ``state.load``; default: nothing)."""

    @abstractmethod
    def observe(self, state: DecisionState) -> dict[str, np.ndarray]:
        """The observation of the current draft (fresh arrays on every call)."""

    @property
    def layout(self) -> dict[str, slice] | None:
        """Where each key lies in one flat float32 array, when the encoder has such a form (``None``:
        it has not, and :meth:`observe_into` is not available; the built-in encoders have one)."""
        return None

    def observe_into(self, state: DecisionState, out: np.ndarray) -> None:
        """Write the observation into ``out`` (float32, flat, keys where :attr:`layout` says).

        The default copies :meth:`observe`'s arrays; encoders that build one flat buffer write it directly.
        """
        layout = self.layout
        if layout is None:
            raise NotImplementedError(f"{type(self).__name__} has no flat layout (its layout is None)")
        obs = self.observe(state)
        for key, sl in layout.items():
            out[sl] = obs[key]


#: Every registered observation encoder class, by ``observation=`` name (see :mod:`hetgym.sim.registry`).
OBSERVATIONS: Registry[type[ObservationEncoder]] = Registry(
    "observation encoder",
    "Register one with @hetgym.envs.register_observation(); list them with hetgym.envs.OBSERVATIONS.describe().",
)
#: The same registry under its earlier name.
ENCODERS = OBSERVATIONS
_E = TypeVar("_E", bound=type[ObservationEncoder])


def register_observation(name: str | None = None) -> Callable[[_E], _E]:
    """Class decorator: register an :class:`ObservationEncoder` subclass as ``observation=name``.

    ``name`` defaults to ``cls.name``; the class's ``knobs`` dataclass, when set, is recorded with the
    entry and the configuration's ``observation_knobs`` are checked against it.
    """

    def deco(cls: _E) -> _E:
        OBSERVATIONS.register(name or cls.name, cls, knobs=cls.knobs)
        return cls

    return deco


@dataclass(frozen=True)
class WindowKnobs(Knobs):
    """The ``window`` encoder's feature groups (``observation_knobs={...}``), each adding keys after the others.

    The aliases preset them: ``window-levels`` (``levels``), ``window-cursor`` (``levels``, ``cursor``) and
    ``window-nodes`` (all three).
    """

    levels: bool = knob(
        False, choices=(False, True), doc="each window job's speed and slack at every GPU type and count level"
    )
    cursor: bool = knob(
        False,
        choices=(False, True),
        doc="the job being decided in fixed keys, what it may take, the jobs after it, the pressure per GPU type "
        "(needs levels)",
    )
    nodes: bool = knob(False, choices=(False, True), doc="the free GPUs of every server and the servers each job holds")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.cursor and not self.levels:
            raise KnobError(
                "WindowKnobs: knob cursor=True needs levels=True (its cursor_level_* keys copy the job's "
                "job_level_* rows); set both"
            )


def _feature_groups(knobs: WindowKnobs, state: DecisionState, settings: EnvSettings) -> list[FeatureGroup]:
    """The groups ``knobs`` turns on, in layout order (their modules are imported only when used)."""
    groups: list[FeatureGroup] = []
    if knobs.levels:
        from hetgym.envs.observations_levels import LevelFeatures

        groups.append(LevelFeatures(state, settings))
    if knobs.cursor:
        from hetgym.envs.observations_cursor import CursorFeatures

        groups.append(CursorFeatures(state, settings))
    if knobs.nodes:
        from hetgym.envs.observations_nodes import NodeFeatures

        groups.append(NodeFeatures(state))
    return groups


@register_observation()
class WindowObservation(ObservationEncoder):
    """The padded K-slot window plus cluster state, clock and out-of-window aggregates; knobs add feature groups.

    Keys (K slots in window order, T GPU types in the cluster's order, M modes); all float32, 1-D;
    empty slots are 0 everywhere:

    =========================  =======  ========  ===================================================
    key                        shape    range     meaning
    =========================  =======  ========  ===================================================
    ``slot_used``              (K,)     {0, 1}    the slot holds a job
    ``job_request``            (K,)     [0, 1]    log(1 + requested GPUs) / log(1 + cluster GPUs)
    ``job_remaining``          (K,)     [0, 1]    squash(remaining time at its best rate / time scale)
    ``job_progress``           (K,)     [0, 1]    fraction of its iterations done
    ``job_slack``              (K,)     [-1, 1]   tanh(deadline slack / time scale); 1 without deadline
    ``job_time_to_deadline``   (K,)     [0, 1]    squash(max(0, deadline - now) / time scale); 1 none
    ``job_has_deadline``       (K,)     {0, 1}    the job counts towards the deadline satisfactory ratio
    ``job_age``                (K,)     [0, 1]    squash((now - submit) / time scale)
    ``job_waiting``            (K,)     [0, 1]    squash(time since it last stopped or arrived / time
                                                  scale); 0 while it runs
    ``job_running``            (K,)     {0, 1}    it holds GPUs before this decision
    ``job_rate``               (K,)     [0, 1]    squash(current rate / best rate at its request)
    ``job_rejected``           (K,)     {0, 1}    rejected in the draft (only with ``allow_reject``)
    ``job_speed``              (K*T,)   [0, 1]    rate on each type at the requested count / best rate
                                                  (0: type not allowed or infeasible)
    ``job_current``            (K*T,)   [0, 1]    GPUs held on each type before this decision / capacity
    ``job_alloc``              (K*T,)   [0, 1]    GPUs on each type in the draft / type capacity
    ``job_mode``               (K*M,)   {0, 1}    one-hot execution mode in the draft (only when M > 1)
    ``slot_cursor``            (K,)     {0, 1}    one-hot slot that the next action decides (only with
                                                  a codec deciding one slot per action, ``jobwise``);
                                                  all 0 once no window job is left to decide
    ``cluster_capacity``       (T,)     [0, 1]    type capacity / cluster GPUs
    ``cluster_free``           (T,)     [0, 1]    GPUs free under the draft / type capacity
    ``cluster_outside``        (T,)     [0, 1]    GPUs held by out-of-window jobs / type capacity
    ``cluster_used``           (T,)     [0, 1]    GPUs in use before this decision / type capacity
    ``clock``                  (4,)     [0, 1]    squash(now / (24 x time scale)); round tick on this
                                                  epoch; actions taken this epoch / per-epoch cap;
                                                  jobs arrived / all jobs
    ``queue``                  (6,)     [-1, 1]   squash(active jobs / K); share of the active jobs
                                                  outside the window; their requested GPUs (waiting
                                                  ones) / cluster GPUs; their held GPUs / cluster
                                                  GPUs; tanh(their least slack / time scale), 1 if
                                                  none; jobs ended / all jobs
    =========================  =======  ========  ===================================================

    A job's best rate is its highest rate over its allowed types with its requested GPU count on one
    server; its slack is deadline - now - remaining iterations / best rate. Keys with (K*T,) shape are
    slot-major: entry ``k * T + t`` is slot k, type t.

    The knobs (:class:`WindowKnobs`) add the keys of their feature groups after these, in the order
    ``levels``, ``cursor``, ``nodes``; each group's module documents its keys.
    """

    name = "window"
    knobs = WindowKnobs

    def __init__(self, state: DecisionState, settings: EnvSettings, knobs: Knobs | None = None) -> None:
        super().__init__(state, settings, knobs)
        self.knob_values = own = WindowKnobs.given_or_default(knobs, "the window encoder")
        self._groups = _feature_groups(own, state, settings)
        extra: dict[str, tuple[int, float]] = {}
        for group in self._groups:
            extra.update(group.keys(state))
        self._build(
            state,
            time_scale_s=settings.time_scale_s,
            allow_reject=settings.allow_reject,
            max_actions=settings.max_actions,
            slot_cursor=settings.slot_cursor,
            extra=extra,
        )
        for group in self._groups:
            group.bind(self)

    def _build(
        self,
        state: DecisionState,
        *,
        time_scale_s: float,
        allow_reject: bool,
        max_actions: int,
        slot_cursor: bool = False,
        extra: dict[str, tuple[int, float]],
    ) -> None:
        """Lay out the buffer and the space; ``extra`` adds keys ``{name: (size, low)}`` after the others."""
        k, t, m = state.num_slots, len(state.types), len(state.modes)
        self.num_slots, self.num_types = k, t
        self.time_scale_s = float(time_scale_s)
        self.max_actions = max_actions
        self.capacity = state.capacity.astype(np.float64)
        self.total_gpus = float(state.capacity.sum())
        self.allow_reject = allow_reject
        self.num_modes = m
        sizes: dict[str, int] = dict.fromkeys(SLOT_FEATURES, k)
        if allow_reject:
            sizes["job_rejected"] = k
        sizes.update(dict.fromkeys(SLOT_TYPE_FEATURES, k * t))
        if m > 1:
            sizes["job_mode"] = k * m
        self.slot_cursor = slot_cursor
        if slot_cursor:
            sizes["slot_cursor"] = k
        sizes.update(dict.fromkeys(TYPE_FEATURES, t))
        sizes["clock"] = len(CLOCK_FEATURES)
        sizes["queue"] = len(QUEUE_FEATURES)
        lows = {key: low for key, (_, low) in extra.items()}
        sizes.update({key: size for key, (size, _) in extra.items()})
        # One contiguous float32 buffer holds every key; the per-slot scalars come first, feature-major,
        # so begin_epoch fills them with a single assignment.
        self._slices: dict[str, slice] = {}
        offset = 0
        for key, size in sizes.items():
            self._slices[key] = slice(offset, offset + size)
            offset += size
        self._buf = np.zeros(offset, dtype=np.float32)
        self._make_views()
        space_map: dict[str, spaces.Space[np.ndarray]] = {}
        for key, size in sizes.items():
            low = np.zeros(size, dtype=np.float32)
            if key == "job_slack":
                low[:] = -1.0
            elif key == "queue":
                low[QUEUE_FEATURES.index("outside_slack")] = -1.0
            elif key in lows:
                low[:] = lows[key]
            space_map[key] = spaces.Box(low, np.ones(size, dtype=np.float32), dtype=np.float32)
        self._space = spaces.Dict(space_map)
        self._keys = list(self._space.spaces)
        self._capacity_share = (self.capacity / self.total_gpus).astype(np.float32)
        self._view["cluster_capacity"][:] = self._capacity_share
        self._log_total = math.log1p(self.total_gpus)
        self._mode_rows = np.arange(k) * m
        # Where observe writes the draft's features (offsets into the buffer).
        self._items = [(key, self._slices[key]) for key in self._keys]
        self.capacity_list: list[float] = self.capacity.tolist()
        self._alloc_slice = self._slices["job_alloc"]
        self._free_slice = self._slices["cluster_free"]
        self._actions_index = self._slices["clock"].start + CLOCK_FEATURES.index("actions_used")
        self._rejected_slice = self._slices.get("job_rejected", slice(0, 0))
        self._mode_offset = self._slices["job_mode"].start if m > 1 else 0
        self._cursor_offset = self._slices["slot_cursor"].start if slot_cursor else 0
        # begin_epoch's GPUs before the decision, per slot then outside the window then in use, and their shares.
        self._held_counts = np.zeros((k + 2, t), dtype=np.int64)
        self._held_shares = np.zeros((k + 2, t), dtype=np.float64)
        self._current_shares = self._held_shares[:-2].reshape(-1)
        self._fixed: dict[int, _JobFixed] = {}
        self._fixed_statics: RateTable | None = None

    def view_of(self, key: str) -> np.ndarray:
        """The epoch buffer's entries of ``key`` (a view: what is written there holds for the epoch)."""
        return self._view[key]

    def _make_views(self) -> None:
        """Per-key views and the per-slot block, all into the one buffer."""
        self._view = {key: self._buf[sl] for key, sl in self._slices.items()}
        self._slot_block = self._buf[: len(SLOT_FEATURES) * self.num_slots].reshape(len(SLOT_FEATURES), self.num_slots)
        self._speed_rows = self._view["job_speed"].reshape(self.num_slots, self.num_types)
        self._speed_flat = self._view["job_speed"]

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_view"], state["_slot_block"], state["_speed_rows"]  # views into _buf: kept apart by pickle
        del state["_speed_flat"], state["_current_shares"]  # views (into _buf, into _held_shares)
        state["_fixed"], state["_fixed_statics"] = {}, None  # by job ids of one run: rebuilt as needed
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._make_views()
        self._current_shares = self._held_shares[:-2].reshape(-1)

    @property
    def space(self) -> spaces.Dict:
        return self._space

    def begin_epoch(self, state: DecisionState, statics: RateTable, num_jobs: int) -> None:
        v = self._view
        self._buf[:] = 0.0
        v["cluster_capacity"][:] = self._capacity_share
        queue, clock = v["queue"], v["clock"]
        view = state.view
        if view is None:
            clock[3] = 1.0
            queue[4] = 1.0
            queue[5] = 1.0
            return
        now = view.now_s
        scale = self.time_scale_s
        inv_scale = 1.0 / scale
        jobs = state.jobs
        fixed = self._fixed_of(state, statics)
        if jobs:
            self._speed_flat[: len(jobs) * self.num_types] = np.concatenate([f[1] for f in fixed])
        columns = []
        running_status = JobStatus.RUNNING
        # squash and signed_scale inlined (the same arithmetic): this runs for every window job at every epoch.
        for job, (_, _, best, request, dated), slack in zip(jobs, fixed, state.slacks_s, strict=False):
            remaining = job.remaining_iters
            deadline = job.deadline_s
            running = job.status == running_status
            if running:
                waiting = 0.0
                rate = squash(job.rate_iters_per_s / best) if best > 0 else 0.0
            else:
                since = job.last_change_s if job.last_change_s is not None else job.submit_s
                waiting = squash((now - since) * inv_scale)
                rate = 0.0
            left = remaining / best * inv_scale if best > 0 else math.inf
            age = (now - job.submit_s) * inv_scale
            if math.isfinite(deadline):
                due = max(0.0, deadline - now) * inv_scale
                due = 0.0 if due <= 0 else (1.0 if due == math.inf else due / (1.0 + due))
            else:
                due = 1.0
            columns.append(
                (
                    1.0,
                    request,
                    0.0 if left <= 0 else (1.0 if left == math.inf else left / (1.0 + left)),
                    min(1.0, max(0.0, 1.0 - remaining / job.total_iters)),
                    math.tanh(slack / scale) if math.isfinite(slack) else (1.0 if slack > 0 else -1.0),
                    due,
                    dated,
                    0.0 if age <= 0 else (1.0 if age == math.inf else age / (1.0 + age)),
                    waiting,
                    1.0 if running else 0.0,
                    rate,
                )
            )
        if columns:
            self._slot_block[:, : len(columns)] = np.array(columns, dtype=np.float64).T
        # GPUs before the decision / capacity, in one division: the window's per slot, those held outside it,
        # all in use.
        held = self._held_counts
        held[:-2] = state.current
        held[-2] = state.outside_held
        held[-1] = np.add.reduce(state.current, axis=0) + state.outside_held
        shares = self._held_shares
        np.divide(held, self.capacity, out=shares)
        v["job_current"][:] = self._current_shares
        v["cluster_outside"][:] = shares[-2]
        v["cluster_used"][:] = shares[-1]
        outside = state.outside
        n_active = len(state.jobs) + len(outside)
        n_all = max(1, num_jobs)
        queue[0] = squash(n_active / state.num_slots)
        queue[1] = len(outside) / n_active if n_active else 0.0
        if outside:
            demand = sum(j.num_gpus for j in outside if j.status != JobStatus.RUNNING)
            queue[2] = min(1.0, demand / self.total_gpus)
            queue[3] = min(1.0, float(state.outside_held.sum()) / self.total_gpus)
            least = min(slack_s(j, statics.get(j).best_rate, now) for j in outside)
            queue[4] = signed_scale(least, scale)
        else:
            queue[4] = 1.0
        queue[5] = min(1.0, view.num_ended / n_all)
        clock[0] = squash(now / (24.0 * scale))
        clock[1] = 1.0 if view.is_tick else 0.0
        clock[3] = min(1.0, (n_all - view.num_pending) / n_all)
        for group in self._groups:
            group.begin_epoch(state, statics)

    def _fixed_of(self, state: DecisionState, statics: RateTable) -> list[_JobFixed]:
        """Each window job's features that never change (:data:`_JobFixed`), kept by job id and checked against
        its rates record (``state.records``, from ``statics``); the cache starts over when the table does (a new
        run: job ids start over), and is not pickled."""
        if statics is not self._fixed_statics:
            self._fixed = {}
            self._fixed_statics = statics
        cache = self._fixed
        get = cache.get
        out = []
        for job, rec in zip(state.jobs, state.records, strict=True):
            hit = get(job.job_id)
            if hit is None or hit[0] is not rec:
                hit = cache[job.job_id] = (
                    rec,
                    rec.speed,
                    rec.best_rate,
                    min(1.0, math.log1p(job.num_gpus) / self._log_total),
                    1.0 if job.spec.has_deadline else 0.0,
                )
            out.append(hit)
        return out

    def observe(self, state: DecisionState) -> dict[str, np.ndarray]:
        buf = self._buf.copy()  # one copy per call: observations never share memory across steps
        self._write_draft(state, buf)
        return {key: buf[sl] for key, sl in self._items}

    def observe_into(self, state: DecisionState, out: np.ndarray) -> None:
        """Write the observation into ``out`` (float32, the flat :attr:`layout`) instead of new arrays."""
        if type(self).observe is not WindowObservation.observe:
            super().observe_into(state, out)  # a subclass with its own observe: copy what it returns
            return
        out[:] = self._buf
        self._write_draft(state, out)

    def observe_batch(self, encoders: list[ObservationEncoder], states: list[DecisionState], out: np.ndarray) -> None:
        """Row ``i`` of ``out`` (float32 ``(N, size)``) = ``encoders[i].observe_into(states[i], ...)``, with the
        draft's features of all rows computed by numpy operations over the batch.

        ``encoders`` are N instances of this class with this one's configuration (a vector env's); they
        hold the epochs' buffers, this one the layout.
        """
        for i, enc in enumerate(encoders):
            out[i] = enc._buf  # type: ignore[attr-defined]
        live = []
        for i, st in enumerate(states):
            if st.view is None:
                self._write_draft(st, out[i])  # the episode has ended: what observe_into writes then
            else:
                live.append(i)
        if not live:
            return
        if self.num_modes > 1:  # rare; per row
            for i in live:
                self._write_draft(states[i], out[i])
            return
        rows = np.array(live)
        batch = [states[i] for i in live]
        drafts = np.stack([st.draft for st in batch])
        frees = np.stack([st.free for st in batch])
        out[rows, self._alloc_slice] = (drafts / self.capacity).reshape(len(batch), -1)
        out[rows, self._free_slice] = frees / self.capacity
        out[rows, self._actions_index] = [min(1.0, st.num_actions / self.max_actions) for st in batch]
        if self.allow_reject:
            out[rows, self._rejected_slice] = np.stack([st.rejected for st in batch])
        self._write_batch_extra(rows, batch, drafts, frees, out)

    def _write_batch_extra(
        self, rows: np.ndarray, batch: list[DecisionState], drafts: np.ndarray, frees: np.ndarray, out: np.ndarray
    ) -> None:
        """:meth:`observe_batch` after the draft's allocation, free GPUs, clock and rejections: the cursor,
        then the feature groups."""
        if self.slot_cursor:
            for r, st in zip(rows.tolist(), batch, strict=True):
                if st.cursor < len(st.jobs):
                    out[r, self._cursor_offset + st.cursor] = 1.0
        for group in self._groups:
            group.write_batch(rows, batch, drafts, frees, out)

    @property
    def layout(self) -> dict[str, slice]:
        """Where each key lies in the flat float32 form of an observation (:meth:`observe_into`)."""
        return dict(self._slices)

    @property
    def size(self) -> int:
        """Number of float32 entries of the flat form."""
        return int(self._buf.shape[0])

    def _write_draft(self, state: DecisionState, buf: np.ndarray) -> None:
        """The features that change with the draft, written into ``buf`` (a copy of the epoch's buffer)."""
        if state.view is not None:
            self._write_own_draft(state, buf)
        for group in self._groups:
            group.write_draft(state, buf)

    def _write_own_draft(self, state: DecisionState, buf: np.ndarray) -> None:
        """:meth:`_write_draft` of the encoder's own keys (while the episode runs)."""
        # float64 quotients, rounded once to the buffer's float32 (the ufunc casts its output); T numbers: plain
        # Python is cheaper than a numpy call for the free GPUs (and gives the same float64 values).
        np.divide(state.draft, self.capacity, out=buf[self._alloc_slice].reshape(self.num_slots, self.num_types))
        buf[self._free_slice] = [f / c for f, c in zip(state.free.tolist(), self.capacity_list, strict=True)]
        buf[self._actions_index] = min(1.0, state.num_actions / self.max_actions)
        if self.allow_reject:
            buf[self._rejected_slice] = state.rejected
        if self.num_modes > 1:
            n = len(state.jobs)
            buf[self._mode_offset + self._mode_rows[:n] + state.draft_mode[:n]] = 1.0
        if self.slot_cursor and state.cursor < len(state.jobs):
            buf[self._cursor_offset + state.cursor] = 1.0


OBSERVATIONS.alias("window-levels", "window", levels=True)
OBSERVATIONS.alias("window-cursor", "window", levels=True, cursor=True)
OBSERVATIONS.alias("window-nodes", "window", levels=True, cursor=True, nodes=True)
