"""ElasticFlow's admission control: the minimum satisfactory share of each job, planned on the free-GPU timeline.

Gu et al., "ElasticFlow: An Elastic Serverless Training Platform for Distributed Deep Learning", ASPLOS
2023, its admission control (the public simulator's ``ef_sim_allocation`` and ``estimate_all_jobs``):
the :class:`Timeline` of future free GPUs per type, a job's levels (:func:`job_levels`), its minimum
satisfactory share and plan (:func:`mss_plan`), and the planning passes over the admitted jobs in deadline
order that decide whether an arrival is admitted (:class:`ElasticFlowAdmission`, the base of
:class:`~baselines.elasticflow.ElasticFlow`). The resource allocation that follows (leftover GPUs by
marginal return), the placement, the re-planning schedule and the memory modes are
:mod:`baselines.elasticflow`, whose module docstring describes the whole policy.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from baselines._deadline import JobOptions, job_options
from baselines.elasticflow.knobs import ElasticFlowKnobs
from hetgym.sim.job import JobSpec
from hetgym.sim.knob_policy import KnobPolicy
from hetgym.sim.view import ClusterView, JobView


class Timeline:
    """Free GPUs per type over time: ``free[:, i]`` holds on ``[times[i], times[i + 1])``.

    Args:
        now_s: Start of the timeline.
        capacity: ``(K,)`` GPUs per type (all free).
        slot_s: Slot length breakpoints are aligned to.
    """

    def __init__(
        self, now_s: float, capacity: np.ndarray, slot_s: float, breakpoints: np.ndarray | None = None
    ) -> None:
        self.slot_s = slot_s
        self.capacity = capacity.astype(np.int64)
        self.times = np.array([now_s, now_s + slot_s], dtype=float)
        #: Whether no breakpoint lies after ``now_s`` (the horizon is then one slot, not a breakpoint).
        self.default_horizon = True
        if breakpoints is not None and len(breakpoints):
            later = np.unique(np.asarray(breakpoints, dtype=float))
            self.times = np.concatenate(([now_s], later[later > now_s + 1e-9]))
            if len(self.times) == 1:
                self.times = np.array([now_s, now_s + slot_s])
            else:
                self.default_horizon = False
        self.free = np.repeat(self.capacity[:, None], len(self.times) - 1, axis=1)
        #: ``times[0]`` as a Python float (breakpoints are only ever inserted after it).
        self.start_s = float(self.times[0])

    def copy(self) -> Timeline:
        out = Timeline.__new__(Timeline)
        out.slot_s, out.capacity, out.default_horizon = self.slot_s, self.capacity, self.default_horizon
        out.start_s = self.start_s
        out.times, out.free = self.times.copy(), self.free.copy()
        return out

    def aligned(self, t: float) -> float:
        """``t`` rounded up to the slot grid (never before the start)."""
        return max(self.start_s, math.ceil(t / self.slot_s - 1e-9) * self.slot_s)

    def split(self, t: float) -> int:
        """Index of breakpoint ``t``, inserting it (and extending the horizon) as needed."""
        times = self.times
        if t > times[-1] + 1e-9:
            self.times = np.append(times, t)
            self.free = np.hstack([self.free, self.capacity[:, None]])
            return len(self.times) - 1
        i = int(times.searchsorted(t - 1e-9))
        if abs(times[i] - t) <= 1e-9:
            return i
        self.times = np.concatenate((times[:i], (t,), times[i:]))
        free = self.free
        self.free = np.concatenate((free[:, :i], free[:, i - 1 : i], free[:, i:]), axis=1)
        return i


@dataclass
class JobLevels:
    """A job's levels in share order, with lookup tables for vectorised timeline walks.

    Attributes:
        options: The job's options (one GPU type each).
        order: Option indices in increasing share.
        type_idx: ``(O,)`` type of each option.
        count: ``(O,)`` GPUs of each option.
        prev: ``(O,)`` next lower option of the same type (-1 if none).
        nxt: ``(O,)`` next higher option of the same type (-1 if none).
        index: ``{(type_idx, count): option}``.
        floor_count: ``(K, C_max + 1)`` largest count of the job's levels of each type at most ``f``.
        rate_of: ``(O, C_max + 1)`` rate of the option's type at each level count (0 elsewhere).
        rate_at_free: ``(O, C_max + 1)`` rate of option ``o`` capped by ``f`` free GPUs of its type, i.e.
            at ``min(count_o, floor_count[type_o, f])``.
        types: The GPU types the job has levels on.
    """

    options: JobOptions
    order: np.ndarray
    type_idx: np.ndarray
    count: np.ndarray
    prev: np.ndarray
    nxt: np.ndarray
    index: dict[tuple[int, int], int]
    floor_count: np.ndarray
    rate_of: np.ndarray
    rate_at_free: np.ndarray
    types: tuple[int, ...] = ()


def job_levels(options: JobOptions, speed: np.ndarray, capacity: np.ndarray) -> JobLevels:
    """Tables for :func:`mss_plan` (single-type options only)."""
    num = len(options)
    type_idx = options.counts.argmax(axis=1) if num else np.zeros(0, dtype=np.int64)
    count = options.counts.max(axis=1) if num else np.zeros(0, dtype=np.int64)
    share = count * speed[type_idx]
    order = np.lexsort((-options.rates, share)) if num else np.zeros(0, dtype=np.int64)
    cmax = int(capacity.max())
    floor_count = np.zeros((len(capacity), cmax + 1), dtype=np.int64)
    type_rate = np.zeros((len(capacity), cmax + 1))
    prev = np.full(num, -1, dtype=np.int64)
    nxt = np.full(num, -1, dtype=np.int64)
    for k in range(len(capacity)):
        mine = np.flatnonzero(type_idx == k)
        mine = mine[np.argsort(count[mine])]
        for a, b in itertools.pairwise(mine.tolist()):
            prev[b] = a
            nxt[a] = b
        for o in mine:
            floor_count[k, count[o] :] = count[o]
            type_rate[k, count[o]] = options.rates[o]
    rate_of = type_rate[type_idx] if num else np.zeros((0, cmax + 1))
    capped = np.minimum(count[:, None], floor_count[type_idx]) if num else np.zeros((0, cmax + 1), dtype=np.int64)
    rate_at_free = np.take_along_axis(rate_of, capped, axis=1) if num else rate_of
    index = {(int(type_idx[o]), int(count[o])): o for o in range(num)}
    types = tuple(sorted({int(k) for k in type_idx}))
    return JobLevels(options, order, type_idx, count, prev, nxt, index, floor_count, rate_of, rate_at_free, types)


@dataclass
class MSSPlan:
    """A job's plan on the timeline.

    Attributes:
        option: Its share (option index), or -1 when no level meets the deadline.
        type_idx: The share's type.
        counts: ``(S,)`` GPUs of that type per timeline interval from now, up to the plan's end.
        end_s: When the plan completes the work (slot-aligned).
        change_s: When the plan first changes the job's GPU count (``inf``: not before its end).
    """

    option: int
    type_idx: int
    counts: np.ndarray
    end_s: float
    change_s: float = math.inf


_OFFSETS: dict[tuple[int, int], np.ndarray] = {}


def _type_offsets(num_types: int, width: int) -> np.ndarray:
    """``(K, 1)`` offsets ``k * width`` that put each type's free counts in its own histogram bins."""
    key = (num_types, width)
    out = _OFFSETS.get(key)
    if out is None:
        out = _OFFSETS[key] = (np.arange(num_types) * width)[:, None]
    return out


def mss_plan(
    timeline: Timeline,
    levels: JobLevels,
    work: float,
    deadline_s: float,
    first_loss_s: float = 0.0,
    commit: bool = True,
) -> MSSPlan:
    """ElasticFlow's ``ef_sim_allocation`` for one job: find its minimum satisfactory share and plan it.

    Args:
        timeline: Free GPUs (updated in place when ``commit`` and a share exists).
        levels: The job's levels.
        work: Remaining iterations.
        deadline_s: Absolute deadline.
        first_loss_s: Seconds of the first interval lost to a restart penalty.
        commit: Take the plan's GPUs from the timeline.
    """
    if deadline_s <= timeline.start_s + 1e-9 or len(levels.order) == 0:
        return MSSPlan(-1, -1, np.zeros(0, dtype=np.int64), math.inf)
    i_ddl = timeline.split(timeline.aligned(deadline_s))
    times = timeline.times
    usable = np.minimum(times[1 : i_ddl + 1], deadline_s) - times[:i_ddl]
    usable[0] = max(usable[0] - first_loss_s, 0.0)
    rate_at_free = levels.rate_at_free
    width = rate_at_free.shape[1]
    free = timeline.free[:, :i_ddl]  # never above a type's capacity, so a valid column of the tables
    # Each level's work up to the deadline: its rate at each free count, times the time spent at that count
    # (one weighted histogram of free counts per type, offset by type).
    num_k = free.shape[0]
    weights = np.empty((num_k, i_ddl))
    weights[:] = usable
    hist = np.bincount((free + _type_offsets(num_k, width)).ravel(), weights=weights.ravel(), minlength=num_k * width)
    # take() on rows: the same gathers as fancy indexing, without its setup cost (this runs once a job a pass).
    totals = np.add.reduce(rate_at_free * hist.reshape(num_k, width).take(levels.type_idx, axis=0), axis=1)
    target = work * (1.0 - 1e-9)
    ok = totals[levels.order] >= target
    first = int(ok.argmax())
    if not ok[first]:
        return MSSPlan(-1, -1, np.zeros(0, dtype=np.int64), math.inf)
    o = int(levels.order[first])
    k = int(levels.type_idx[o])
    free_k = free[k]
    # The backward walk from the deadline reaches the work at interval `point`.
    iters = rate_at_free[o].take(free_k) * usable
    point = i_ddl - 1 - int((iters[::-1].cumsum() >= target).argmax())
    avail = levels.floor_count[k].take(free_k)
    plan = np.minimum(avail, levels.count[o])
    lower = int(levels.prev[o])
    if point > 0:
        plan[:point] = np.minimum(avail[:point], levels.count[lower]) if lower >= 0 else 0
        # From `point` on the plan runs the share capped by the free GPUs: the rates of `iters`.
        iters[:point] = levels.rate_of[o].take(plan[:point]) * usable[:point]
    done = iters.cumsum()
    e = int((done >= target).argmax())
    before = done[e - 1] if e > 0 else 0.0
    rate_e = levels.rate_of[o, plan[e]]
    start_e = times[e] + (first_loss_s if e == 0 else 0.0)
    end = start_e + (work - before) / rate_e if rate_e > 0 else times[e + 1]
    end_al = min(timeline.aligned(end), times[e + 1])
    counts = plan[: e + 1]
    changed = counts != counts[0]
    step = int(changed.argmax())
    change_s = float(times[step]) if changed[step] else math.inf
    if commit:
        if end_al < times[e + 1] - 1e-9:
            timeline.split(end_al)
        timeline.free[k, : e + 1] -= counts
    return MSSPlan(o, k, counts, float(end_al), change_s)


def _order_key(job: JobView) -> tuple[float, float, int]:
    """The planning order: deadline, then submission, then id."""
    return (job.deadline_s, job.submit_s, job.job_id)


@dataclass
class _Pass:
    """A planning pass in progress: ``jobs`` in deadline order, the first ``pos`` of them planned on ``timeline``."""

    timeline: Timeline
    jobs: list[JobView]
    pos: int
    plans: dict[int, MSSPlan]
    failed: set[int]

    def copy(self) -> _Pass:
        return _Pass(self.timeline.copy(), list(self.jobs), self.pos, dict(self.plans), set(self.failed))

    def result(self) -> tuple[Timeline, dict[int, MSSPlan], set[int]]:
        return self.timeline, self.plans, self.failed


class ElasticFlowAdmission(KnobPolicy[ElasticFlowKnobs]):
    """The admission-control half of :class:`~baselines.elasticflow.ElasticFlow` (its base): levels and planning passes.

    The subclass sets, in ``_reset``, the state read here (``_types``, ``_cap``, ``_levels``, ``_kind``,
    ``stats``, ``_inputs_view``, ``_inputs``).
    """

    round_s: float  # the slot (the knob round_s), never None here
    _types: tuple[str, ...]
    _cap: np.ndarray
    _levels: dict[int, tuple[JobSpec, JobLevels]]
    _kind: dict[int, str]
    stats: dict[str, int]
    _inputs_view: ClusterView | None
    _inputs: dict[int, tuple[JobLevels, float]]

    def levels_of(self, view: ClusterView, job: JobView) -> JobLevels:
        """The job's levels (cached)."""
        hit = self._levels.get(job.job_id)
        if hit is not None and (hit[0] is job.spec or hit[0] == job.spec):
            return hit[1]
        opts = job_options(view.throughput, job.spec, view.cluster, max_count=self.knob_values.max_count)
        speed = np.array([view.throughput.speed_index.get(t, 1.0) for t in self._types])
        lv = job_levels(opts, speed, self._cap)
        self._levels[job.job_id] = (job.spec, lv)
        return lv

    def _first_loss(self, view: ClusterView, job: JobView) -> float:
        if not self.knob_values.overhead_aware:
            return 0.0
        if job.first_start_s is None and not view.config.charge_first_start:
            return 0.0
        return view.restart_penalty_s(job)

    def _start(self, view: ClusterView, jobs: list[JobView]) -> _Pass:
        """A pass over ``jobs`` on an empty timeline with their deadlines as breakpoints, nothing planned yet."""
        slot = self.round_s
        deadlines = [math.ceil(j.deadline_s / slot - 1e-9) * slot for j in jobs if math.isfinite(j.deadline_s)]
        timeline = Timeline(view.now_s, self._cap, slot, np.array(deadlines))
        return _Pass(timeline, sorted(jobs, key=_order_key), 0, {}, set())

    def _advance(
        self, view: ClusterView, state: _Pass, stop: tuple[float, float, int] | None = None, *, through: bool = False
    ) -> None:
        """Plan the pass's next jobs in deadline order, up to (excluding) the first whose key is ``stop`` or later.

        With ``through``, the job whose key is ``stop`` is planned too (the first later one is not).
        """
        jobs, timeline, plans, failed = state.jobs, state.timeline, state.plans, state.failed
        if self._inputs_view is not view:
            self._inputs_view = view
            self._inputs.clear()
        inputs = self._inputs
        pos = state.pos
        while pos < len(jobs) and (
            stop is None or _order_key(jobs[pos]) < stop or (through and _order_key(jobs[pos]) == stop)
        ):
            job = jobs[pos]
            got = inputs.get(job.job_id)
            if got is None:
                got = inputs[job.job_id] = (self.levels_of(view, job), self._first_loss(view, job))
            plan = mss_plan(timeline, got[0], job.remaining_iters, job.deadline_s, got[1])
            if plan.option < 0:
                failed.add(job.job_id)
            else:
                plans[job.job_id] = plan
            pos += 1
        state.pos = pos

    def plan_all(self, view: ClusterView, jobs: list[JobView]) -> tuple[Timeline, dict[int, MSSPlan], set[int]]:
        """Plan ``jobs`` in deadline order on an empty timeline; return it, the plans and the jobs without a share."""
        state = self._start(view, jobs)
        self._advance(view, state)
        return state.result()

    def _trial(
        self, view: ClusterView, base: _Pass, job: JobView, snapshot_at: tuple[float, float, int] | None
    ) -> tuple[_Pass, _Pass | None]:
        """The pass over ``base``'s jobs plus ``job``, run to the end, and a copy of it stopped at ``snapshot_at``.

        ``base`` must be planned up to ``job``'s place in deadline order. A job's plan reads and takes only
        the timeline before its own slot-aligned deadline, so the jobs ordered before ``job`` are planned
        exactly as they are with ``job``'s deadline among the breakpoints: the trial starts from a copy of
        ``base``, adds that breakpoint and goes on from ``job``, with the same result, bit for bit, as
        planning every job again (:meth:`plan_all`). Only the jobs after ``job`` are planned again. While
        no deadline breakpoint exists yet (a one-slot horizon), the pass starts over instead.
        """
        if base.timeline.default_horizon:
            state = self._start(view, [*base.jobs, job])
        else:
            state = base.copy()
            slot = self.round_s
            aligned = math.ceil(job.deadline_s / slot - 1e-9) * slot
            if aligned > view.now_s + 1e-9:
                # The interval it cuts lies after every plan made so far, so it is still all free.
                state.timeline.split(aligned)
            state.jobs.insert(state.pos, job)
        snapshot = None
        if snapshot_at is not None:
            self._advance(view, state, snapshot_at)
            snapshot = state.copy()
        self._advance(view, state)
        return state, snapshot

    def _admit(
        self, view: ClusterView, admitted: list[JobView], arrived: list[int]
    ) -> tuple[list[JobView], set[int], tuple[Timeline, dict[int, MSSPlan], set[int]] | None]:
        """Admit or decline the arrivals; also return the planning pass of the admitted set, if one was made.

        Each deadline arrival is admitted iff it gets a share when planned with the admitted jobs and no
        admitted job that had one loses it. The passes share their common prefix (see :meth:`_trial`):
        the admitted jobs ordered before an arrival are planned once. The pass of the admitted set alone
        (to tell which jobs had a share) goes on from there only as far as the last job the trial left
        without a share: the jobs before the arrival plan alike in both passes, and a job's plan does not
        depend on the jobs after it. It is completed only when it is the result (every arrival declined).
        """
        rejected: set[int] = set()
        arrivals = sorted((view.job(j) for j in arrived), key=_order_key)
        deadline_keys = [_order_key(j) for j in arrivals if j.spec.has_deadline]
        last: _Pass | None = None
        # The pass of the admitted set, planned as far as needed so far (complete after an admission).
        full: _Pass | None = None
        base: _Pass | None = None  # the pass of the admitted set, planned up to the current arrival
        for n, job in enumerate(j for j in arrivals if j.spec.has_deadline):
            if base is None:
                base = self._start(view, admitted)
            self._advance(view, base, _order_key(job))
            following = deadline_keys[n + 1] if n + 1 < len(deadline_keys) else None
            trial, snapshot = self._trial(view, base, job, following)
            ok = job.job_id in trial.plans
            if ok and trial.failed:  # did the newcomer take a share from a job that had one?
                if full is None:
                    full = base.copy()
                self._advance(view, full, max(_order_key(view.job(j)) for j in trial.failed), through=True)
                ok = trial.failed <= full.failed
            if ok:
                self._kind[job.job_id] = "admitted"
                admitted = [*admitted, job]
                last = full = trial
                base = snapshot
                self.stats["admitted"] += 1
            else:
                self.stats["rejected"] += 1
                if self.knob_values.rejected_jobs == "drop":
                    rejected.add(job.job_id)
                else:
                    self._kind[job.job_id] = "best_effort"
        for job in arrivals:
            if not job.spec.has_deadline:
                self._kind[job.job_id] = "best_effort"
        if last is None:
            # Every arrival was declined: finish the pass of the admitted set from where it stopped (the same
            # as planning it afresh).
            last = full if full is not None else base
            if last is not None:
                self._advance(view, last)
        return admitted, rejected, (last.result() if last is not None else None)
