"""Tiresias' discretised two-dimensional least-attained-service (2D-LAS) scheduler.

Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning", NSDI 2019. Attained
service is GPU-time (GPUs x time held). Jobs sit in priority queues by attained service, with
ElasticFlow's DLAS thresholds as the default: Q0 below 30 GPU-minutes, Q1 below 1 GPU-hour, Q2 below
2 GPU-hours, Q3 above. Within a queue jobs go first-come first-served; at every decision epoch GPUs are
given greedily in (queue, arrival) order with backfilling, so jobs in lower queues are preempted when
higher-priority jobs need their GPUs. Starvation guard (reconstruction of Tiresias' PROMOTE_KNOB):
a waiting job whose wait since its last run exceeds ``promote_knob`` times its last run length is put
back in Q0 (its attained service counts from zero again). Heterogeneity-agnostic by default.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from dataclasses import dataclass

from baselines._common import TYPE_CHOICE_DOC, TYPE_CHOICES, TypeChoice, fill_in_order, gang_counts
from hetgym.sim.allocation import Allocation, AllocationBuilder
from hetgym.sim.job import JobSpec, JobStatus
from hetgym.sim.knob_policy import KnobPolicy
from hetgym.sim.policy import register_policy
from hetgym.sim.registry import KnobError, Knobs, knob
from hetgym.sim.view import ClusterView, JobView

#: ElasticFlow's DLAS-GPU thresholds in GPU-seconds: 30 min, 1 h, 2 h.
DEFAULT_THRESHOLDS_GPU_S: tuple[float, ...] = (1800.0, 3600.0, 7200.0)


@dataclass(frozen=True)
class TiresiasKnobs(Knobs):
    """Knobs of :class:`TiresiasLAS`."""

    thresholds_gpu_s: tuple[float, ...] = knob(
        DEFAULT_THRESHOLDS_GPU_S, doc="ascending queue boundaries in GPU-seconds (any sequence; kept as floats)"
    )
    promote_knob: float = knob(
        8.0,
        low=0.0,
        doc="promote a waiting job to Q0 when its wait exceeds this multiple of its last run time; 0 disables "
        "promotion (a reconstruction)",
    )
    type_choice: TypeChoice = knob("order", choices=TYPE_CHOICES, doc=TYPE_CHOICE_DOC)

    def __post_init__(self) -> None:
        # A list or numpy array from a sweep or a file is kept as the tuple of floats the policy reads.
        object.__setattr__(self, "thresholds_gpu_s", tuple(float(x) for x in self.thresholds_gpu_s))
        super().__post_init__()
        t = self.thresholds_gpu_s
        if any(b <= a for a, b in itertools.pairwise(t)) or any(not x > 0 for x in t):
            raise KnobError(
                f"{type(self).__name__}: knob thresholds_gpu_s={t}; give positive, strictly ascending values"
            )


@register_policy()
class TiresiasLAS(KnobPolicy[TiresiasKnobs]):
    """Tiresias discretised 2D-LAS with GPU-time attained service and starvation promotion."""

    name = "tiresias"
    knobs = TiresiasKnobs
    keeps_gpus_busy = True  # greedy fill with backfilling at every epoch

    def _reset(self) -> None:
        self._service_offset: dict[int, float] = {}
        # Incremental state, valid for the epoch whose token is _token (see _sync):
        self._token: object | None = None
        # (queue, submit_s, job_id, spec) of each active job (ids are unique: specs are never compared)
        self._key: dict[int, tuple[int, float, int, JobSpec]] = {}
        self._order: list[tuple[int, float, int, JobSpec]] = []  # the keys, sorted: the walk's priority order
        self._last: Allocation | None = None  # the last decision
        # The keys of the waiting jobs, sorted (the walk tries only these while nothing is preempted).
        self._waiting_order: list[tuple[int, float, int, JobSpec]] = []
        self._waiting_key: dict[int, tuple[int, float, int, JobSpec]] = {}
        # When each job's queue may next change (a running job's service reaching the next threshold, a
        # waiting job's promotion), a little early; a heap of (time, job_id) with _due_s the live entries.
        self._due_heap: list[tuple[float, int]] = []
        self._due_s: dict[int, float] = {}
        self._watch: set[int] = set()  # jobs too close to their change to predict it: checked at every epoch

    def queue_of(self, job: JobView) -> int:
        """Index of the job's queue (0 = highest priority)."""
        service = job.attained_gpu_s - self._service_offset.get(job.job_id, 0.0)
        return bisect.bisect_right(self.knob_values.thresholds_gpu_s, service)

    def _maybe_promote(self, view: ClusterView, job: JobView) -> None:
        if self.knob_values.promote_knob <= 0 or job.status != JobStatus.WAITING or job.last_change_s is None:
            return
        waited = view.now_s - job.last_change_s
        if job.last_run_s > 0 and waited > self.knob_values.promote_knob * job.last_run_s:
            self._service_offset[job.job_id] = job.attained_gpu_s

    def schedule(self, view: ClusterView) -> Allocation:
        moved = self._sync(view)
        if not moved and not view.arrived and not view.completed and self._last_applied(view):
            # The same order over the GPUs the last walk gave: the walk would give them again.
            decision = AllocationBuilder.keeping_running(view).build()
        else:
            decision = self._walk(view)
        self._last = decision
        return decision

    def _walk(self, view: ClusterView) -> Allocation:
        """:func:`greedy_fill` in (queue, submit_s, job_id) order (view.jobs sorted stably by queue).

        With ``order`` types the walk looks at the running jobs only where one may lose its GPUs.
        ``slack`` counts, per type, the GPUs free at this point of the walk beyond what the running
        jobs still ahead hold (at first the GPUs idle now): keeping a running job leaves it unchanged,
        a start takes from it, a running job that loses its GPUs gives them back to it. While no type's
        slack is negative every running job ahead finds its GPUs free, so the running jobs between two
        waiting ones are kept wholesale; otherwise they are walked one by one until it is not.
        """
        order = self._order
        builder = AllocationBuilder.replacing(view)
        if self.knob_values.type_choice != "order":
            allocations = view.running_allocations
            ordered = ((k[2], k[3], allocations.get(k[2])) for k in order)
            return fill_in_order(view, ordered, type_choice=self.knob_values.type_choice, builder=builder)
        free = builder.free
        slack = dict(view.free_gpus)
        start = 0
        for wkey in [*self._waiting_order, None]:
            at = len(order) if wkey is None else bisect.bisect_left(order, wkey, start)
            if not self._keep_running(view, builder, slack, order[start:at], last=wkey is None):
                return builder.build()  # no GPU left: the rest get nothing
            if wkey is None:
                break
            start = at + 1
            if not any(free.values()):
                return builder.build()
            spec = wkey[3]
            counts = gang_counts(view, spec, free, spec.num_gpus, "order")
            if counts:
                builder.assign(wkey[2], counts)
                for t, n in counts.items():
                    slack[t] = slack.get(t, 0) - n
        return builder.build()

    def _keep_running(
        self,
        view: ClusterView,
        builder: AllocationBuilder,
        slack: dict[str, int],
        keys: list[tuple[int, float, int, JobSpec]],
        *,
        last: bool,
    ) -> bool:
        """Walk the running jobs of ``keys`` (see :meth:`_walk`); ``False`` when every GPU is taken
        (the walk stops)."""
        free = builder.free
        allocations = view.running_allocations
        i = 0
        while i < len(keys) and min(slack.values()) < 0:
            if not any(free.values()):
                return False
            jid, spec = keys[i][2], keys[i][3]
            i += 1
            current = allocations[jid]
            if builder.take_if_fits(jid, current):
                continue
            counts = gang_counts(view, spec, free, spec.num_gpus, "order")
            if counts:
                builder.assign(jid, counts)
                for t, n in counts.items():
                    slack[t] = slack.get(t, 0) - n
            for t, n in current.counts:
                slack[t] += n
        if i < len(keys):
            ids = [k[2] for k in keys[i:]]
            # After the last waiting job nothing runs ahead: what stays free is the slack.
            builder.keep_current(ids, free_after=slack if last else None)
        return True

    def _last_applied(self, view: ClusterView) -> bool:
        """Whether the jobs hold what the last decision gave them (per-type counts and mode): it
        changed only jobs the step changed, and those as it said."""
        last = self._last
        touched = None if last is None else last.touched
        if last is None or touched is None:
            return False
        if not set(view.changed).issubset(touched):
            return False
        held, given = view.running_allocations, last.jobs
        for jid in touched:
            now, want = held.get(jid), given.get(jid)
            if now is not want and (now is None or want is None or not now.same_resources(want)):
                return False
        return True

    # ----------------------------------------------------------------------------------------
    # The priority order, kept across epochs: a job's queue is recomputed only when it arrives, its
    # GPUs change, or its service or wait may have crossed a boundary (exactly as the view gives it).

    def _sync(self, view: ClusterView) -> bool:
        """Bring the order up to ``view``: incrementally when it follows the last view seen, else afresh.
        Whether the order changed (or was rebuilt)."""
        token, self._token = self._token, view.active.token
        if token is None or view.previous_token is not token:
            self._rebuild(view)
            return True
        moved = False
        now = view.now_s
        for jid in view.completed:
            moved = self._forget(jid) or moved
        recheck = {*view.arrived, *view.changed, *self._watch}
        heap, due = self._due_heap, self._due_s
        while heap and heap[0][0] <= now:
            t, jid = heapq.heappop(heap)
            if due.get(jid) == t:
                del due[jid]
                recheck.add(jid)
        self._watch = set()
        for jid in sorted(recheck):
            try:
                job = view.job(jid)
            except KeyError:  # ended (rejected) since
                moved = self._forget(jid) or moved
                continue
            moved = self._update(view, job) or moved
        return moved

    def _rebuild(self, view: ClusterView) -> None:
        active = view.job_index
        for jid in [j for j in self._service_offset if j not in active]:
            del self._service_offset[jid]
        self._key, self._order, self._last = {}, [], None
        self._waiting_order, self._waiting_key = [], {}
        self._due_heap, self._due_s, self._watch = [], {}, set()
        for job in view.jobs:
            self._update(view, job)

    def _forget(self, jid: int) -> bool:
        """Drop an ended job; whether it was in the order."""
        key = self._key.pop(jid, None)
        if key is not None:
            order = self._order
            del order[bisect.bisect_left(order, key)]
        self._set_waiting(jid, None)
        self._service_offset.pop(jid, None)
        self._due_s.pop(jid, None)
        self._watch.discard(jid)
        return key is not None

    def _set_waiting(self, jid: int, key: tuple[int, float, int, JobSpec] | None) -> None:
        """Record the job as waiting under ``key``, or as not waiting (``None``)."""
        old = self._waiting_key.get(jid)
        if old is key:
            return
        waiting = self._waiting_order
        if old is not None:
            del waiting[bisect.bisect_left(waiting, old)]
            del self._waiting_key[jid]
        if key is not None:
            bisect.insort(waiting, key)
            self._waiting_key[jid] = key

    def _update(self, view: ClusterView, job: JobView) -> bool:
        """Promote ``job`` if due, place it by its queue, and note when its queue may change next;
        whether its place changed."""
        jid = job.job_id
        self._maybe_promote(view, job)
        offset = self._service_offset.get(jid, 0.0)
        service = job.attained_gpu_s - offset
        thresholds = self.knob_values.thresholds_gpu_s
        queue = bisect.bisect_right(thresholds, service)
        old = self._key.get(jid)
        moved = old is None or old[0] != queue
        if moved:
            key = (queue, job.submit_s, jid, job.spec)
            order = self._order
            if old is not None:
                del order[bisect.bisect_left(order, old)]
            bisect.insort(order, key)
            self._key[jid] = key
        self._set_waiting(jid, None if job.status == JobStatus.RUNNING else self._key[jid])
        # The next change: a running job's service reaches the next threshold (it grows at one GPU-second
        # per GPU per second); a waiting job is promoted once its wait exceeds promote_knob times its last
        # run. Predicted a little early (a margin far above rounding), then checked exactly.
        now = view.now_s
        change_s = math.inf
        if job.status == JobStatus.RUNNING:
            gpus = sum(g.num_gpus for g in job.groups)
            if queue < len(thresholds) and gpus > 0:
                change_s = now + (thresholds[queue] - service) / gpus
        elif (
            self.knob_values.promote_knob > 0
            and job.last_change_s is not None
            and job.last_run_s > 0
            and offset != job.attained_gpu_s  # not promoted already (promoting again changes nothing)
        ):
            change_s = job.last_change_s + self.knob_values.promote_knob * job.last_run_s
        self._due_s.pop(jid, None)
        if change_s == math.inf:
            return moved
        check_s = change_s - (1e-9 * abs(change_s) + 1e-6)
        if check_s <= now:
            self._watch.add(jid)
        else:
            self._due_s[jid] = check_s
            heapq.heappush(self._due_heap, (check_s, jid))
        return moved
