"""ElasticFlow: minimum-satisfactory-share admission, leftover GPUs by marginal return, buddy placement.

Gu, Zhao, Zhong, Xiong, Han, Cheng, Yang, Huang, Jin and Liu, "ElasticFlow: An Elastic Serverless
Training Platform for Distributed Deep Learning", ASPLOS 2023 (user guide: ``docs/deadline-policies.md``),
following the public simulator (``ElasticFlow/scheduler/scheduler.py``: ``ef_sim_allocation``,
``estimate_all_jobs``, ``allocate_free_gpus``), generalised to GPU types.

* **Timeline** [C-code]. The future free GPUs per type, piecewise constant between breakpoints aligned
  to the scheduling slot (``round_s``, 60 s), built by planning the admitted jobs one by one in deadline
  order on an empty cluster.
* **Minimum Satisfactory Share** [C-code; I: types]. A job's *levels* are (GPU type, count) pairs with
  power-of-two counts (ElasticFlow's throughput-table keys). Levels are tried in increasing *share*,
  ``count x speed_index(type)`` (the GPUs' worth in V100 units; ties by rate), so slow types serve loose
  deadlines and fast types are kept for tight ones. For a level ``(k, n)`` the timeline is walked back
  from the slot-aligned deadline: in each interval the job gets ``min(n, largest level of type k that is
  free)`` and accumulates ``duration x rate`` (the last interval up to the true deadline). The first level
  whose total reaches the remaining work is the job's share. Its plan, as in the code, runs from now
  forward with the next lower level of that type before the point where the backward walk succeeded and
  the share from that point on, until the work is done (end aligned to the slot); the timeline loses those
  GPUs. One restart penalty is deducted from the first interval (``overhead_aware``; the code charges
  overheads only while executing).
* **Admission** [C-code; I: per job]. Each arriving deadline job is planned with the admitted jobs (all in
  deadline order on a fresh timeline); it is admitted iff it gets a share and no admitted job that had one
  loses it. Otherwise it is declined (``rejected_jobs="drop"``, a deadline miss) or, in the best-effort
  variant (``"best_effort"``), kept without a guarantee. The planning passes share their common prefix:
  the admitted jobs ordered before the arrival plan the same with or without it, so only the jobs after
  it are planned again (same result as planning all of them afresh, bit for bit).
* **Leftover GPUs** [C-code; I: metric]. GPUs free now after every plan go, one level at a time, to the
  job with the highest marginal return: jobs without GPUs first (deadline order), then
  ``leftover_rule="speedup"`` (default: relative speed-up per extra GPU, ``(r_next / r_now - 1) / extra``,
  the paper's diminishing returns) or ``"gputime"`` (the code's literal metric: the increase of the
  remaining GPU-time per extra GPU, largest first). A job grows on the type it holds.
* **Placement** [C: buddy allocation]. The policy decides counts; it declares the simulator's ``buddy``
  placer (:mod:`hetgym.sim.placement.buddy`, ``placement="buddy"``), which re-packs the cluster at every
  decision, or the ``default`` placer (``"default"``).

Re-planning happens at arrivals, completions and the next change point of any plan, as in ElasticFlow's
event loop; between them the allocation stays as it is.

**Memory** [I: teacher mode]. ``memory="history"`` (default) remembers which jobs were admitted, the
last decision and the plans' next change point, as above. ``memory="observed"`` decides from the view
alone, so the allocation is a function of the view (an imitation-learning teacher labelling states it
did not reach): the jobs :func:`~baselines._deadline.new_arrivals` names (arrived at this epoch, never
ran) go through admission; every other active deadline job counts as admitted (it would have left had
it been declined) and is planned, at worst without a share (late, never declined). At epochs with an
arrival or a completion (``view.arrived``, ``view.completed``) the fresh decision is returned. Between
them the allocation in force stands, unless ElasticFlow would not have left it so: a job whose fresh
plan runs now holds no GPUs, or the fresh decision uses more GPUs than are held; then the fresh
decision is returned. Plans' change points need the plan of the last event, so they trigger nothing
(on ElasticFlow's own runs the DSR barely moves, ``docs/results/observed_teachers.md``). Jobs that
``rejected_jobs="best_effort"`` kept count as admitted after their arrival epoch.

**Slot origin** [I: teacher mode]. Slots, and the deadlines rounded up to them, lie on the absolute grid
of ``round_s`` (``slot_origin="absolute"``, default), so a decision between two boundaries depends on
where it falls in its slot. With ``memory="observed"``, ``"decision"`` plans as if the decision fell on a
boundary (every absolute time moved forward to the next one; :mod:`baselines._deadline`).
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass

import numpy as np

from baselines._deadline import (
    MEMORY_MODES,
    SLOT_ORIGINS,
    JobOptions,
    at_slot_start,
    check_slot_origin,
    job_options,
    new_arrivals,
)
from hetgym.sim.allocation import Allocation, JobAllocation
from hetgym.sim.job import JobSpec
from hetgym.sim.policy import Policy, register_policy
from hetgym.sim.registry import Knobs, knob
from hetgym.sim.view import ClusterView, JobView

LEFTOVER_RULES = ("speedup", "gputime")
PLACEMENTS = ("buddy", "default")
REJECTED_MODES = ("drop", "best_effort")


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


@dataclass(frozen=True)
class ElasticFlowKnobs(Knobs):
    """Knobs of :class:`ElasticFlow`."""

    round_s: float = knob(60.0, low=0.0, low_open=True, doc="scheduling slot in seconds")
    rejected_jobs: str = knob("drop", choices=REJECTED_MODES, doc="'drop' or 'best_effort'")
    leftover_rule: str = knob("speedup", choices=LEFTOVER_RULES, doc="'speedup' or 'gputime'")
    placement: str = knob("buddy", choices=PLACEMENTS, doc="'buddy' or 'default' (the simulator's placer)")
    overhead_aware: bool = knob(True, doc="deduct one restart penalty from a plan's first interval")
    max_count: int | None = knob(None, low=1, integer=True, optional=True, doc="cap on any job's GPU count")
    memory: str = knob("history", choices=MEMORY_MODES, doc="'history' or 'observed' (plan from the view)")
    slot_origin: str = knob("absolute", choices=SLOT_ORIGINS, doc="'absolute' or 'decision' (observed memory)")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_slot_origin(type(self).__name__, self.slot_origin, self.memory)


@register_policy()
class ElasticFlow(Policy):
    """ElasticFlow (Gu et al., ASPLOS 2023): MSS admission, marginal-return leftover allocation, buddy placement.

    Paper: "ElasticFlow: An Elastic Serverless Training Platform for Distributed Deep Learning", ASPLOS
    2023. Implemented from the public simulator's ``ef_sim_allocation`` / ``allocate_free_gpus`` and
    generalised to GPU types with levels over (type, count) (see the module docstring). Reconstructions:
    the share order over types (``count x speed_index``), one type per plan, per-job admission, the
    leftover metric, the deducted restart penalty, and buddy placement as an equivalent largest-first
    single-server rule.

    Args:
        round_s: Scheduling slot in seconds (ElasticFlow's ``scheduling_slot``, 60).
        rejected_jobs: ``"drop"`` (default: declined jobs leave) or ``"best_effort"``.
        leftover_rule: ``"speedup"`` (default) or ``"gputime"`` (see the module docstring).
        placement: ``"buddy"`` (default) or ``"default"`` (the simulator's placer).
        overhead_aware: Deduct one restart penalty from a plan's first interval (default ``True``).
        max_count: Cap on any job's GPU count (default: its ``max_gpus`` or the type's capacity).
        memory: ``"history"`` (default: admissions and the last decision persist) or ``"observed"``
            (re-plan from the view at every call; see the module docstring).
        slot_origin: ``"absolute"`` (default: slots of ``round_s`` from time 0) or ``"decision"`` (with
            ``memory="observed"``: plan as if the decision fell on a slot boundary, see
            :mod:`baselines._deadline`).
    """

    name = "elasticflow"
    knobs = ElasticFlowKnobs
    round_s = 60.0
    placer = "buddy"

    def __init__(
        self,
        round_s: float = 60.0,
        rejected_jobs: str = "drop",
        leftover_rule: str = "speedup",
        placement: str = "buddy",
        overhead_aware: bool = True,
        max_count: int | None = None,
        memory: str = "history",
        slot_origin: str = "absolute",
    ) -> None:
        super().__init__()
        # Validate every knob first (a KnobError names the bad one).
        ElasticFlowKnobs.of(locals())
        self.round_s = float(round_s)
        self.rejected_jobs = rejected_jobs
        self.leftover_rule = leftover_rule
        self.placement = placement
        self.placer = placement
        self.overhead_aware = overhead_aware
        self.max_count = max_count
        self.memory = memory
        self.slot_origin = slot_origin

    def _reset(self) -> None:
        assert self.cluster is not None
        self._types = self.cluster.gpu_types
        self._cap = np.array([self.cluster.capacity[t] for t in self._types], dtype=np.int64)
        self._levels: dict[int, tuple[JobSpec, JobLevels]] = {}  # by job (a function of its spec)
        self._kind: dict[int, str] = {}  # admitted | best_effort
        self._decision: dict[int, dict[str, int]] = {}
        self._next_change_s = math.inf
        self._last: Allocation | None = None
        self.stats: dict[str, int] = dict.fromkeys(("admitted", "rejected", "replans", "late"), 0)
        # Per-view cache of each job's levels and first-interval loss (the passes of one decision share it).
        self._inputs_view: ClusterView | None = None
        self._inputs: dict[int, tuple[JobLevels, float]] = {}

    # ----------------------------------------------------------------------------------------

    def levels_of(self, view: ClusterView, job: JobView) -> JobLevels:
        """The job's levels (cached)."""
        hit = self._levels.get(job.job_id)
        if hit is not None and (hit[0] is job.spec or hit[0] == job.spec):
            return hit[1]
        opts = job_options(view.throughput, job.spec, view.cluster, max_count=self.max_count)
        speed = np.array([view.throughput.speed_index.get(t, 1.0) for t in self._types])
        lv = job_levels(opts, speed, self._cap)
        self._levels[job.job_id] = (job.spec, lv)
        return lv

    def _first_loss(self, view: ClusterView, job: JobView) -> float:
        if not self.overhead_aware:
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
                if self.rejected_jobs == "drop":
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

    def _leftover(
        self, view: ClusterView, now_counts: dict[int, tuple[int, int]], free: np.ndarray, order: list[JobView]
    ) -> None:
        """Give the GPUs free now, one level at a time, to the jobs with the highest marginal return."""
        heap: list[tuple[float, int, int]] = []
        free_list = free.tolist()

        def push(rank: int, job: JobView) -> None:
            lv = self.levels_of(view, job)
            k, n = now_counts.get(job.job_id, (-1, 0))
            if n == 0:
                heapq.heappush(heap, (-math.inf, rank, job.job_id))
                return
            cur = lv.index[(k, n)]
            o = int(lv.nxt[cur])
            if o < 0:
                return
            extra = int(lv.count[o]) - n
            r_now, r_next = float(lv.options.rates[cur]), float(lv.options.rates[o])
            if self.leftover_rule == "speedup":
                gain = (r_next / r_now - 1.0) / extra
            else:
                work = job.remaining_iters
                gain = (int(lv.count[o]) * work / r_next - n * work / r_now) / extra
            heapq.heappush(heap, (-gain, rank, job.job_id))

        ranks = {}
        for rank, job in enumerate(order):
            ranks[job.job_id] = rank
            push(rank, job)
        while heap and any(free_list):
            _, rank, jid = heapq.heappop(heap)
            job = view.job(jid)
            lv = self.levels_of(view, job)
            k, n = now_counts.get(jid, (-1, 0))
            if n == 0:
                o = -1
                for cand in lv.order.tolist():
                    if lv.count[cand] <= free_list[lv.type_idx[cand]]:
                        o = cand
                        break
                if o < 0:
                    continue
            else:
                o = int(lv.nxt[lv.index[(k, n)]])
                if lv.count[o] - n > free_list[k]:
                    continue
            k_new = int(lv.type_idx[o])
            free_list[k_new] -= int(lv.count[o]) - n
            now_counts[jid] = (k_new, int(lv.count[o]))
            push(rank, job)
        free[:] = free_list

    def schedule(self, view: ClusterView) -> Allocation:
        if self.slot_origin == "decision":
            view = at_slot_start(view, self.round_s)
        try:
            return self._schedule(view)
        finally:
            self._inputs_view = None  # the cache holds the view
            self._inputs.clear()

    def _schedule(self, view: ClusterView) -> Allocation:
        active = view.job_index
        for jid in [j for j in self._levels if j not in active]:
            self._levels.pop(jid)
        if self.memory == "observed":
            # Forget the admissions and the last decision: everything below follows from the view.
            new = new_arrivals(view)
            fresh = set(new)
            kept = [j for j in view.jobs if j.job_id not in fresh]
            self._kind = {j.job_id: "admitted" if j.spec.has_deadline else "best_effort" for j in kept}
            self._decision = {}
            self._last = None
        else:
            new = list(view.arrived)
            for jid in [j for j in self._kind if j not in active]:
                del self._kind[jid]
                self._decision.pop(jid, None)
        admitted = [j for j in view.jobs if self._kind.get(j.job_id) == "admitted"]
        admitted, rejected, last = self._admit(view, admitted, new)
        if self.memory == "observed":
            last = last if last is not None else self.plan_all(view, admitted)
            self._replan(view, admitted, rejected, last)
            if not (view.arrived or view.completed) and self._stands(view, last[1]):
                # Between events the allocation in force stands, as in ElasticFlow's event loop.
                held = {j.job_id: j.allocation.as_dict() for j in view.running if j.allocation is not None}
                return Allocation({jid: JobAllocation(c, mode="sync") for jid, c in held.items()})
        else:
            replan = bool(view.arrived or view.completed) or view.now_s >= self._next_change_s - 1e-6
            if not replan and self._last is not None:
                return self._last  # nothing happened since the last decision: it stands
            self._replan(view, admitted, rejected, last)
        # Counts only: the declared placer (buddy, or the default) maps them onto servers.
        jobs = {jid: JobAllocation(c, mode="sync") for jid, c in self._decision.items() if c and jid not in rejected}
        self._last = Allocation(jobs)
        return Allocation(jobs, frozenset(rejected))

    def _stands(self, view: ClusterView, plans: dict[int, MSSPlan]) -> bool:
        """``memory="observed"``, between events: whether the allocation in force is one ElasticFlow leaves as is.

        It is not when a job whose fresh plan runs now holds no GPUs, or when the fresh decision would use
        more GPUs than are held (GPUs left idle); then the fresh decision is the answer.
        """
        if any(len(p.counts) and p.counts[0] > 0 and view.job(jid).allocation is None for jid, p in plans.items()):
            return False
        held = sum(j.allocation.total_gpus for j in view.running if j.allocation is not None)
        return sum(sum(c.values()) for c in self._decision.values()) <= held

    def _replan(
        self,
        view: ClusterView,
        admitted: list[JobView],
        rejected: set[int],
        done: tuple[Timeline, dict[int, MSSPlan], set[int]] | None = None,
    ) -> None:
        self.stats["replans"] += 1
        timeline, plans, failed = done if done is not None else self.plan_all(view, admitted)
        self.stats["late"] += len(failed)
        now_counts: dict[int, tuple[int, int]] = {}
        for jid, plan in plans.items():
            if len(plan.counts) and plan.counts[0] > 0:
                now_counts[jid] = (plan.type_idx, int(plan.counts[0]))
        # Completions trigger a re-plan anyway, so plan ends are not change points.
        self._next_change_s = min((p.change_s for p in plans.values()), default=math.inf)
        free = timeline.free[:, 0].copy()
        order = sorted(
            (j for j in view.jobs if j.job_id not in rejected and j.job_id in self._kind),
            key=lambda j: (j.deadline_s, j.submit_s, j.job_id),
        )
        self._leftover(view, now_counts, free, order)
        self._decision = {jid: {self._types[k]: n} for jid, (k, n) in now_counts.items() if n > 0}
