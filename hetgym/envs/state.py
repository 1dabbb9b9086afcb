"""The decision being built at one epoch: the job window and the draft allocation.

At every decision epoch the environment picks up to K active jobs for the window (the observation's
slots and the action space's targets) and starts a *draft*: every job's current GPU counts, execution
mode, and no rejections. Actions edit the draft; committing hands the simulator the rows of the draft
that change, as arrays (:meth:`DecisionState.commit`, a :class:`~hetgym.sim.counts.CountsDelta`), which it
checks once and applies as a delta. Jobs outside the window keep their current allocation (they remain
visible to the agent as aggregates only). :meth:`DecisionState.allocation` gives the same decision as a
complete :class:`~hetgym.sim.Allocation` (what experts' targets are compared with).

Window order (``window_order``, a name in the registry :data:`WINDOW_ORDERS`), most urgent first:

* ``slack``: least deadline slack first, where slack = deadline - now - remaining time at the job's
  best rate over its allowed types with its requested GPU count (jobs without a deadline last, by
  arrival);
* ``deadline``: earliest absolute deadline first (jobs without one last, by arrival);
* ``arrival``: submission order.

Ties go by submission time, then job id, so the window is deterministic. Add an order with
:func:`register_window_order`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hetgym.sim.allocation import Allocation, JobAllocation
from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.counts import CountsDelta
from hetgym.sim.rates import JobRates, RateTable
from hetgym.sim.registry import Registry
from hetgym.sim.throughput import ExecutionMode
from hetgym.sim.view import ClusterView, JobView

#: A job's per-type rates (``speed``, ``allowed``, ``best_rate``, ...): the simulator's shared record.
JobStatics = JobRates
#: The per-run cache of :data:`JobStatics`: the simulator's shared :class:`~hetgym.sim.rates.RateTable`.
JobStaticsCache = RateTable


@dataclass(frozen=True, slots=True)
class Commit:
    """What committing an epoch hands the simulator, and what the environment measures the interval with.

    Attributes:
        delta: The rows of the jobs the commit changes (a :class:`~hetgym.sim.decision.Decision`), for
            :meth:`Simulator.step <hetgym.sim.engine.Simulator.step>`.
        held: ``(job_id, GPUs)`` of every job holding GPUs after the commit, in the allocation's order (the
            window's, then the jobs outside it): the order the interval's busy GPU-seconds are summed in.
        reject: The jobs the commit rejects.
        standing: No job is rejected and every job holding GPUs has one of the configured modes, so the
            same allocation may stand at the quiet ticks that follow.
        jobs: Gives the complete allocation ``{job_id: JobAllocation}`` (built only when asked, before the
            state loads the next epoch).
    """

    delta: CountsDelta
    held: list[tuple[int, int]]
    reject: frozenset[int]
    standing: bool
    jobs: Callable[[], Mapping[int, JobAllocation]]


def slack_s(job: JobView, best_rate: float, now_s: float) -> float:
    """Deadline slack: deadline - now - remaining time at ``best_rate`` (``inf`` without a deadline)."""
    if not math.isfinite(job.deadline_s):
        return math.inf
    remaining_s = job.remaining_iters / best_rate if best_rate > 0 else math.inf
    return job.deadline_s - now_s - remaining_s


#: ``key(job, slack_s, statics) -> tuple``: a job's place in the window, smaller first (see
#: :func:`register_window_order`).
WindowOrder = Callable[[JobView, float, JobStatics], tuple[float, ...]]
#: :meth:`DecisionState.copy_draft`: draft, modes, reject flags, free GPUs, and (num_actions, cursor, cursor_types).
DraftSnapshot = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, tuple[int, int, int]]

#: Every registered window order, by ``window_order=`` name (see :mod:`hetgym.sim.registry`).
WINDOW_ORDERS: Registry[WindowOrder] = Registry(
    "window order",
    "Register one with @hetgym.envs.register_window_order(name); list them with hetgym.envs.WINDOW_ORDERS.describe().",
)


def register_window_order(name: str) -> Callable[[WindowOrder], WindowOrder]:
    """Function decorator: register a sort key as ``window_order=name``.

    The key is called once per active job at every decision epoch as ``key(job, slack_s, statics)``, with
    the job's :class:`~hetgym.sim.view.JobView`, its deadline slack in seconds (``inf`` without a
    deadline; see :func:`slack_s`) and its :class:`JobStatics`, and returns a tuple of numbers: the
    smaller, the more urgent. Ties are broken by submission time, then job id.
    """
    return WINDOW_ORDERS.decorator(name)


@register_window_order("slack")
def slack_order(job: JobView, slack: float, statics: JobStatics) -> tuple[float, ...]:
    """Least deadline slack first (jobs without a deadline last, by arrival)."""
    return (slack,)


@register_window_order("deadline")
def deadline_order(job: JobView, slack: float, statics: JobStatics) -> tuple[float, ...]:
    """Earliest absolute deadline first (jobs without one last, by arrival)."""
    return (job.deadline_s,)


@register_window_order("arrival")
def arrival_order(job: JobView, slack: float, statics: JobStatics) -> tuple[float, ...]:
    """Submission order."""
    return ()


def order_window(
    view: ClusterView, statics: JobStaticsCache, order: str | WindowOrder
) -> tuple[list[JobView], list[float]]:
    """Active jobs sorted most urgent first by ``order`` (a registered name or a key), with each job's slack."""
    return sort_jobs(list(view.jobs), view.now_s, statics, order)


def sort_jobs(
    jobs: list[JobView], now: float, statics: JobStaticsCache, order: str | WindowOrder
) -> tuple[list[JobView], list[float]]:
    """``jobs`` (active at ``now``) in :func:`order_window`'s order, with each job's slack.

    The keys are unique (ties go by submission time, then job id), so any subset of the active jobs comes
    out in the relative order it has in the whole window.
    """
    key = WINDOW_ORDERS.get(order) if isinstance(order, str) else order
    get = statics.get
    if key is slack_order:
        # The default order, with slack_s and the key inlined (the same arithmetic): run at every epoch.
        slacks = []
        for j in jobs:
            deadline = j.deadline_s
            if math.isfinite(deadline):
                best = get(j).best_rate
                slacks.append(deadline - now - (j.remaining_iters / best if best > 0 else math.inf))
            else:
                slacks.append(math.inf)
        keys: list[tuple[float, ...]] = [(s, j.submit_s, j.job_id) for j, s in zip(jobs, slacks, strict=True)]
    else:
        stats = [get(j) for j in jobs]
        slacks = [slack_s(j, st.best_rate, now) for j, st in zip(jobs, stats, strict=True)]
        keys = [(*key(j, s, st), j.submit_s, j.job_id) for j, s, st in zip(jobs, slacks, stats, strict=True)]
    idx = sorted(range(len(jobs)), key=keys.__getitem__)
    return [jobs[i] for i in idx], [slacks[i] for i in idx]


class DecisionState:
    """The window and the draft allocation of the current decision epoch (mutable, env-internal).

    Array shapes use K slots, T GPU types (cluster order) and M modes.

    Attributes:
        view: The epoch's :class:`ClusterView` (``None`` after the episode ended).
        jobs: The window's jobs, slot order (at most K).
        records: Each window job's :data:`JobStatics` (its rates record in the run's table), slot order.
        slacks_s: Each window job's deadline slack.
        outside: Active jobs not in the window.
        used: Slot holds a job, bool ``(K,)``.
        ids: Job id per slot (-1 when empty), int64 ``(K,)``.
        allowed: Job may use type, bool ``(K, T)``.
        current: GPUs per slot and type before the decision, int64 ``(K, T)``.
        slot_min: The job's ``min_gpus`` per slot (1 when empty), int64 ``(K,)``.
        slot_max: The job's ``max_gpus`` per slot (the cluster's GPU count when it has none), int64 ``(K,)``.
        current_mode: Mode index per slot before the decision (-1 when the mode is not one of the
            configured modes), int64 ``(K,)``.
        draft: GPUs per slot and type in the draft, int64 ``(K, T)``.
        draft_mode: Mode index per slot in the draft, int64 ``(K,)``.
        rejected: Slot rejected in the draft, bool ``(K,)``.
        outside_held: GPUs per type held by jobs outside the window, int64 ``(T,)``.
        free: GPUs per type free under the draft, int64 ``(T,)``.
        num_actions: Actions taken in this epoch.
        cursor: The window slot a slot-by-slot codec decides next (``slot_cursor`` in the observation).
        cursor_types: Bit ``t`` set when the job at the cursor was given GPUs of type ``t`` in its current
            turn (``jobwise-types``, where a job's turn may give it several types one at a time).
    """

    def __init__(self, cluster: ClusterSpec, num_slots: int, modes: Sequence[ExecutionMode]) -> None:
        self.cluster = cluster
        self.types = cluster.gpu_types
        self.type_index = {t: i for i, t in enumerate(self.types)}
        self.num_slots = num_slots
        self.modes: tuple[ExecutionMode, ...] = tuple(modes)
        self.mode_index = {m: i for i, m in enumerate(self.modes)}
        self.capacity = np.array([cluster.capacity[t] for t in self.types], dtype=np.int64)
        k, t = num_slots, len(self.types)
        self.view: ClusterView | None = None
        self.jobs: list[JobView] = []
        self.records: list[JobStatics] = []
        self.slacks_s: list[float] = []
        self.outside: list[JobView] = []
        self.used = np.zeros(k, dtype=bool)
        self.ids = np.full(k, -1, dtype=np.int64)
        self.allowed = np.zeros((k, t), dtype=bool)
        self.current = np.zeros((k, t), dtype=np.int64)
        self.current_mode = np.zeros(k, dtype=np.int64)
        self.draft = np.zeros((k, t), dtype=np.int64)
        self.draft_mode = np.zeros(k, dtype=np.int64)
        self.rejected = np.zeros(k, dtype=bool)
        self.slot_min = np.ones(k, dtype=np.int64)
        self._total_gpus = int(self.capacity.sum())
        self.slot_max = np.full(k, self._total_gpus, dtype=np.int64)
        #: Whether some window job has a ``max_gpus`` below the cluster's size (codecs then check totals).
        self.bounded = False
        self.outside_held = np.zeros(t, dtype=np.int64)
        self.free = self.capacity.copy()
        self.num_actions = 0
        self.cursor = 0
        self.cursor_types = 0
        #: Bumped by every change, so codecs can tell whether a cached mask is still current.
        self.version = 0
        #: Bumped by every load (a new epoch), part of the allocation cache key.
        self.version_of_load = 0
        self._alloc: Allocation | None = None
        self._alloc_key: tuple[object, ...] = ()
        #: ``(job_id, GPUs)`` of the jobs outside the window holding GPUs, in window order.
        self.outside_jobs: list[tuple[int, int]] = []
        #: Whether every job outside the window holding GPUs has one of the configured modes.
        self.outside_modes_ok = True
        self._no_rows = (np.zeros(0, dtype=np.int64), np.zeros((0, t), dtype=np.int64), np.zeros(0, dtype=bool))

    def no_rows(self, epoch: object) -> CountsDelta:
        """The delta that changes no job at the epoch ``epoch`` (``view.active.token``)."""
        ids, counts, flags = self._no_rows
        return CountsDelta(epoch, ids, counts, (), flags)

    # ----------------------------------------------------------------------------------------
    def load(self, view: ClusterView | None, statics: JobStaticsCache, order: str | WindowOrder) -> None:
        """Start the decision of a new epoch (``view=None``: the episode has ended).

        ``order`` fills the window: a name in :data:`WINDOW_ORDERS` or a window-order key function.
        """
        self.view = view
        self.num_actions = 0
        self.cursor = 0
        self.cursor_types = 0
        self.version += 1
        self.version_of_load += 1
        self.used[:] = False
        self.ids[:] = -1
        self.allowed[:] = False
        self.current[:] = 0
        self.current_mode[:] = 0
        self.rejected[:] = False
        self.outside_held[:] = 0
        self.slot_min[:] = 1
        self.slot_max[:] = self._total_gpus
        self.bounded = False
        if view is None:
            self.jobs, self.slacks_s, self.outside, self.records = [], [], [], []
            self.outside_jobs, self.outside_modes_ok = [], True
            self.draft[:] = 0
            self.draft_mode[:] = 0
            self.free[:] = self.capacity
            return
        ordered, slacks = order_window(view, statics, order)
        k = self.num_slots
        self.jobs, self.slacks_s, self.outside = ordered[:k], slacks[:k], ordered[k:]
        n = len(self.jobs)
        self.used[:n] = True
        type_index = self.type_index
        get = statics.get
        self.records = [get(job) for job in self.jobs]
        if n:
            self.ids[:n] = [job.job_id for job in self.jobs]
            self.allowed[:n] = [rec.allowed for rec in self.records]
        for slot, job in enumerate(self.jobs):
            spec = job.spec
            self.slot_min[slot] = spec.min_gpus
            if spec.max_gpus is not None and spec.max_gpus < self.slot_max[slot]:
                self.slot_max[slot] = spec.max_gpus
                self.bounded = True
        current = self.current
        for slot, job in enumerate(self.jobs):
            ja = job.allocation
            if ja is not None:
                for t, c in ja.counts:
                    current[slot, type_index[t]] = c
                self.current_mode[slot] = self.mode_index.get(ja.mode, -1)
        outside_jobs: list[tuple[int, int]] = []
        modes_ok = True
        mode_index = self.mode_index
        for job in self.outside:
            ja = job.allocation
            if ja is not None:
                total = 0
                for t, c in ja.counts:
                    self.outside_held[type_index[t]] += c
                    total += c
                if total:
                    outside_jobs.append((job.job_id, total))
                    if ja.mode not in mode_index:
                        modes_ok = False
        self.outside_jobs = outside_jobs
        self.outside_modes_ok = modes_ok
        self.draft[:] = self.current
        self.draft_mode[:] = np.maximum(self.current_mode, 0)
        self.free[:] = self.capacity - self.outside_held - self.current.sum(axis=0)

    # ----------------------------------------------------------------------------------------
    # Draft edits (the codecs check validity before calling these)

    def set_count(self, slot: int, type_idx: int, num_gpus: int) -> None:
        """Give slot ``slot`` ``num_gpus`` GPUs of type ``type_idx`` in the draft."""
        old = int(self.draft[slot, type_idx])
        self.draft[slot, type_idx] = num_gpus
        self.free[type_idx] += old - num_gpus
        self.version += 1

    def set_row(self, slot: int, counts: list[int]) -> None:
        """Give slot ``slot`` ``counts[t]`` GPUs of each type ``t`` in the draft (``set_count`` for every type)."""
        old = self.draft[slot].tolist()
        if old == counts:
            return
        self.draft[slot] = counts
        free = self.free
        for t, (was, now) in enumerate(zip(old, counts, strict=True)):
            if was != now:
                free[t] += was - now
        self.version += 1

    def reject(self, slot: int) -> None:
        """Reject the slot's job in the draft (its GPUs are released)."""
        self.free += self.draft[slot]
        self.draft[slot] = 0
        self.rejected[slot] = True
        self.version += 1

    def set_mode(self, slot: int, mode_idx: int) -> None:
        """Set the slot's execution mode in the draft."""
        self.draft_mode[slot] = mode_idx
        self.version += 1

    def copy_draft(self) -> DraftSnapshot:
        """A snapshot of the draft and the epoch's action counters (to try actions and roll back)."""
        return (
            self.draft.copy(),
            self.draft_mode.copy(),
            self.rejected.copy(),
            self.free.copy(),
            (self.num_actions, self.cursor, self.cursor_types),
        )

    def restore_draft(self, snap: DraftSnapshot) -> None:
        """Undo edits back to a :meth:`copy_draft` snapshot."""
        draft, mode, rejected, free, (num_actions, cursor, cursor_types) = snap
        self.draft[:] = draft
        self.draft_mode[:] = mode
        self.rejected[:] = rejected
        self.free[:] = free
        self.num_actions = num_actions
        self.cursor = cursor
        self.cursor_types = cursor_types
        self.version += 1

    # ----------------------------------------------------------------------------------------
    def allocation(self) -> Allocation:
        """The draft as the complete :class:`Allocation` a commit applies (:meth:`commit` hands it over as arrays).

        A window job whose counts and mode are unchanged keeps its current :class:`JobAllocation`
        (servers included), as does every job outside the window.
        """
        return self.allocation_of(self.draft, self.draft_mode, self.rejected)

    def allocation_of(self, draft: np.ndarray, draft_mode: np.ndarray, rejected: np.ndarray) -> Allocation:
        """The allocation a draft given as arrays (same shapes as the state's) would commit.

        The latest result is cached by content, so the commit that follows an expert's encoding reuses it.
        """
        key = (id(self.view), self.version_of_load, draft.tobytes(), draft_mode.tobytes(), rejected.tobytes())
        if key == self._alloc_key and self._alloc is not None:
            return self._alloc
        out = self._build_allocation(draft, draft_mode, rejected)
        self._alloc, self._alloc_key = out, key
        return out

    def commit(self) -> Commit:
        """The draft as the :class:`Commit` the environment hands the simulator: the rows of the window jobs
        whose GPUs change (as :meth:`allocation` would change them), every other job keeping its allocation."""
        view = self.view
        assert view is not None
        modes = self.modes
        rows = self.draft.tolist()
        current = self.current.tolist()
        mode_idx = self.draft_mode.tolist()
        rejected = self.rejected.tolist()
        zeros = [0] * len(self.types)
        ids: list[int] = []
        counts: list[list[int]] = []
        row_modes: list[ExecutionMode] = []
        flags: list[bool] = []
        held: list[tuple[int, int]] = []
        reject: list[int] = []
        for slot, job in enumerate(self.jobs):
            jid = job.job_id
            ja = job.allocation
            mode = modes[mode_idx[slot]]
            if rejected[slot]:
                reject.append(jid)
                row = zeros
            else:
                row = rows[slot]
                if any(row):
                    if ja is not None and ja.mode == mode and row == current[slot]:
                        held.append((jid, ja.total_gpus))  # kept as it is
                        continue
                    row = self._within_bounds(slot, row, mode)
                if any(row):
                    held.append((jid, sum(row)))
                elif ja is None:
                    continue  # waiting, and still waiting
            ids.append(jid)
            counts.append(row)
            row_modes.append(mode)
            flags.append(bool(rejected[slot]))
        held.extend(self.outside_jobs)
        if ids:
            delta = CountsDelta(
                view.active.token,
                np.array(ids, dtype=np.int64),
                np.array(counts, dtype=np.int64),
                tuple(row_modes),
                np.array(flags, dtype=bool),
            )
        else:
            delta = self.no_rows(view.active.token)
        return Commit(
            delta, held, frozenset(reject), not reject and self.outside_modes_ok, lambda: self.allocation().jobs
        )

    def slot_caps(self) -> np.ndarray:
        """The most GPUs each slot may hold in all under its draft mode, int64 ``(K,)``: its job's
        ``max_gpus``, except in ``fork`` mode, where every server runs a copy and the simulator bounds
        each copy instead."""
        fork = self.mode_index.get("fork")
        if fork is None:
            return self.slot_max
        return np.where(self.draft_mode == fork, self._total_gpus, self.slot_max)

    def _within_bounds(self, slot: int, row: list[int], mode: str) -> list[int]:
        """``row`` (GPUs per type) within the slot's job bounds: GPUs above ``max_gpus`` (outside ``fork``
        mode) are dropped from the last types first (the sequential codec's mask never asks for them;
        the other codecs may), and a total below ``min_gpus`` gives nothing (the job waits)."""
        excess = sum(row) - (self._total_gpus if mode == "fork" else int(self.slot_max[slot]))
        if excess > 0:
            row = list(row)
            for t in reversed(range(len(row))):
                cut = min(excess, row[t])
                row[t] -= cut
                excess -= cut
        if sum(row) < int(self.slot_min[slot]):
            return [0] * len(row)
        return row

    def _build_allocation(self, draft: np.ndarray, draft_mode: np.ndarray, rejected: np.ndarray) -> Allocation:
        jobs: dict[int, JobAllocation] = {}
        reject: list[int] = []
        types = self.types
        modes = self.modes
        rows = draft.tolist()
        current = self.current.tolist()
        mode_idx = draft_mode.tolist()
        rejected_list = rejected.tolist()
        for slot, job in enumerate(self.jobs):
            if rejected_list[slot]:
                reject.append(job.job_id)
                continue
            row = rows[slot]
            if not any(row):
                continue
            ja = job.allocation
            mode = modes[mode_idx[slot]]
            if ja is not None and ja.mode == mode and row == current[slot]:
                jobs[job.job_id] = ja
            else:
                row = self._within_bounds(slot, row, mode)
                if not any(row):
                    continue
                jobs[job.job_id] = JobAllocation({types[t]: n for t, n in enumerate(row) if n}, mode=mode)
        for job in self.outside:
            if job.allocation:
                jobs[job.job_id] = job.allocation
        return Allocation(jobs, frozenset(reject))
