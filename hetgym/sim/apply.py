"""Applying a policy's decision: release, place and reconfigure only the jobs whose resources change.

:class:`ApplyMixin` holds the part of :class:`~hetgym.sim.engine.Simulator` that turns a validated
:class:`~hetgym.sim.allocation.Allocation` into new placements: rejected jobs end and free their
GPUs; jobs whose counts, mode or explicit servers change are released and placed again (explicit
placements first, the rest by the placer in force, see :mod:`hetgym.sim.placement`); each moved job
is flushed, charged the restart penalty and given its new rate, and its completion is pushed onto the
event heap. The engine owns the state these methods read and write; they are declared here for the
type checker only.
"""

from __future__ import annotations

import heapq
import math
import operator
from collections.abc import Mapping, Sequence

import numpy as np

from hetgym.sim.allocation import Allocation, JobAllocation
from hetgym.sim.cluster import ClusterSpec, ClusterState
from hetgym.sim.comm import placement_rate
from hetgym.sim.config import SimConfig
from hetgym.sim.job import JobSpec, JobStatus
from hetgym.sim.placement import PlacementRequest, Placer
from hetgym.sim.runtime import JobRecord
from hetgym.sim.throughput import ServerGroup, ThroughputModel, allocation_rate
from hetgym.sim.view import JobView

_RANK = operator.attrgetter("rank")  # submission order of job records, in C


class ApplyMixin:
    """Allocation-applying methods of the simulator (mixed into :class:`~hetgym.sim.engine.Simulator`)."""

    # State owned and initialised by the simulator (its __init__ and reset()).
    cluster: ClusterSpec
    config: SimConfig
    throughput: ThroughputModel
    _placer: Placer
    _active: dict[int, JobRecord]  # arrived, not ended, in submission order
    _running: dict[int, JobRecord]  # the active jobs holding GPUs
    _allocs: dict[int, JobAllocation]  # their allocations, in the same order
    _alloc_totals: dict[str, int]  # GPUs per type those hold
    _waiting_views: dict[int, JobView]  # the others' (cached) views, in submission order
    _state: ClusterState
    _jobs: dict[int, JobRecord]
    _rank: dict[int, int]  # each job's place in submission order
    _order_dirty: bool  # running or waiting jobs out of submission order until _restore_order
    _rate_cache: dict[tuple[object, ...], float]  # _rate's results by job kind, mode, type and count (one run)
    _heap: list[tuple[float, int, int, int]]  # (time, seq, job_id, version)
    _seq: int
    _now: float
    _round_s: float
    _gavel_rounds: bool  # compat="gavel" with round ticks: Gavel's micro-tasks set the rates and round ends
    _next_tick_s: float
    _ended: int
    _changed: list[int]  # the jobs this step changed, for the next view
    _ended_log: list[tuple[int, float, JobStatus]]
    _timeline: list[tuple[float, tuple[int, ...]]]

    def _set_alloc(self, jid: int, ja: JobAllocation) -> None:
        """Record a running job's new allocation (it is already in ``_allocs`` or is added after)."""
        old = self._allocs.get(jid)
        totals = self._alloc_totals
        if old is not None:
            for t, n in old.counts:
                totals[t] -= n
        for t, n in ja.counts:
            totals[t] += n
        self._allocs[jid] = ja

    def _drop_alloc(self, jid: int) -> None:
        """Forget a job's allocation (it stopped running)."""
        old = self._allocs.pop(jid, None)
        if old is not None:
            totals = self._alloc_totals
            for t, n in old.counts:
                totals[t] -= n

    def _apply(self, allocation: Allocation, touched: Sequence[int] | None = None) -> None:
        """Apply a validated allocation: only jobs whose resources change are released and re-placed.

        ``touched``, when given, names the only jobs whose allocation may differ from their current one
        (in the order of their last assignment; see ``AllocationBuilder``): the others are not looked at.
        """
        now = self._now
        active = self._active
        for jid in sorted(allocation.reject):
            job = active.pop(jid)
            self._running.pop(jid, None)
            self._drop_alloc(jid)
            self._waiting_views.pop(jid, None)
            job.flush(now)
            for g in job.groups:
                self._state.release(g.server_id, g.num_gpus)
            if job.status == JobStatus.RUNNING:
                job.last_run_s = now - job.run_start_s
            job.status = JobStatus.REJECTED
            job.finish_s = now
            job.alloc, job.groups, job.rate, job.num_gpus_now = None, (), 0.0, 0
            job.version += 1
            job.view = None
            self._changed.append(jid)
            self._ended += 1
            self._ended_log.append((jid, now, JobStatus.REJECTED))

        new = allocation.jobs
        if self._placer.replaces_all:
            moved: dict[int, JobAllocation | None] = {}
            if new or self._running:
                free, placed = self._place_all(new, keep_unchanged=False)
                moved = self._moved(new, placed)
                for jid, target in moved.items():
                    self._reconfigure(active[jid], target, placed.get(jid, ()), now)
                self._state.free = free
            if moved or allocation.reject:
                self._record_usage()
            return
        if touched is None:
            changes: dict[int, JobAllocation | None] = {jid: None for jid in self._running if jid not in new}
            candidates: Mapping[int, JobAllocation] = new
        else:
            # The same changes in the same order, from the touched jobs alone: running jobs left out (in
            # submission order, the running jobs' order), then the changed ones in the allocation's order.
            running = self._running
            gone = [running[jid] for jid in touched if jid in running and jid not in new]
            changes = {job.spec.job_id: None for job in sorted(gone, key=_RANK)}
            candidates = {jid: new[jid] for jid in touched if jid in new}
        for jid, ja in candidates.items():
            cur = active[jid].alloc
            if ja is cur or (
                cur is not None
                and ja.counts == cur.counts
                and ja.mode == cur.mode
                and (ja.servers is None or ja.servers == cur.servers)
            ):
                continue  # unchanged: same resources, and no new placement asked for
            changes[jid] = ja
        if changes:
            free = self._state.free.copy()
            for jid in changes:
                for g in active[jid].groups:
                    free[g.server_id] += g.num_gpus
            found = self._place_changes(changes, free)
            if found is None:
                # An explicit placement claims GPUs that unchanged jobs hold: place everything afresh.
                free, final = self._place_all(new, keep_unchanged=True)
                changes = self._moved(new, final)
            else:
                final = found
            for jid, target in changes.items():
                self._reconfigure(active[jid], target, final.get(jid, ()), now)
            self._state.free = free
        if changes or allocation.reject:
            self._record_usage()

    def _moved(
        self, new: Mapping[int, JobAllocation], final: Mapping[int, tuple[ServerGroup, ...]]
    ) -> dict[int, JobAllocation | None]:
        """The active jobs whose servers or mode differ between now and ``final`` (the new allocation)."""
        return {
            jid: new.get(jid)
            for jid, job in self._active.items()
            if final.get(jid, ()) != job.groups
            or (jid in new and job.alloc is not None and new[jid].mode != job.alloc.mode)
        }

    def _requests(self, pending: Mapping[int, JobAllocation]) -> list[PlacementRequest]:
        active = self._active
        return [
            PlacementRequest(jid, active[jid].spec, ja.counts, ja.mode, active[jid].groups)
            for jid, ja in sorted(pending.items())
        ]

    def _place_changes(
        self, changes: Mapping[int, JobAllocation | None], free: np.ndarray
    ) -> dict[int, tuple[ServerGroup, ...]] | None:
        """Place the changed jobs into ``free`` (modified); ``None`` if an explicit placement conflicts."""
        servers = self.cluster.servers
        final: dict[int, tuple[ServerGroup, ...]] = {}
        pending: dict[int, JobAllocation] = {}
        for jid, ja in changes.items():
            if ja is None:
                continue
            if ja.servers is None:
                pending[jid] = ja
                continue
            for s, n in ja.servers:
                free[s] -= n
                if free[s] < 0:
                    return None
            final[jid] = tuple(ServerGroup(s, servers[s].gpu_type, n) for s, n in ja.servers)
        if pending:
            final.update(self._placer.place(self.cluster, free, self._requests(pending)))
        return final

    def _place_all(
        self, new: Mapping[int, JobAllocation], *, keep_unchanged: bool
    ) -> tuple[np.ndarray, dict[int, tuple[ServerGroup, ...]]]:
        """Place every allocated job from an empty cluster: explicit placements first, then (when
        ``keep_unchanged``) unchanged jobs on their servers where possible, then the rest with the placer."""
        free = np.array([s.num_gpus for s in self.cluster.servers], dtype=np.int64)
        servers = self.cluster.servers
        final: dict[int, tuple[ServerGroup, ...]] = {}
        active = self._active
        if keep_unchanged:
            explicit = {jid for jid, ja in new.items() if ja.servers is not None}
        else:
            # A placer that re-packs the cluster moves kept jobs too: a job's current placement repeated
            # (what keeping it spells out) is no pin, only a new explicit placement is.
            explicit = {
                jid for jid, ja in new.items() if ja.servers is not None and not _repeats(ja, active[jid].alloc)
            }
        for jid in explicit:
            ja = new[jid]
            assert ja.servers is not None
            final[jid] = tuple(ServerGroup(s, servers[s].gpu_type, n) for s, n in ja.servers)
            for s, n in ja.servers:
                free[s] -= n
        pending: dict[int, JobAllocation] = {}
        for jid, ja in new.items():
            if jid in explicit:
                continue
            job = self._active[jid]
            if (
                keep_unchanged
                and ja.same_resources(job.alloc)
                and all(free[g.server_id] >= g.num_gpus for g in job.groups)
            ):
                for g in job.groups:
                    free[g.server_id] -= g.num_gpus
                final[jid] = job.groups
            else:
                pending[jid] = ja
        if pending:
            final.update(self._placer.place(self.cluster, free, self._requests(pending)))
        return free, final

    def _reconfigure(
        self, job: JobRecord, ja: JobAllocation | None, groups: tuple[ServerGroup, ...], now: float
    ) -> None:
        job.flush(now)
        self._changed.append(job.spec.job_id)
        started_before = job.first_start_s is not None
        job.version += 1
        job.view = None
        job.last_change_s = now
        jid = job.spec.job_id
        if groups and ja is not None:
            if started_before:
                job.num_reconfigs += 1
            else:
                job.first_start_s = now
            if job.status != JobStatus.RUNNING:
                job.run_start_s = now
            charge = started_before or self.config.charge_first_start
            job.penalty_until_s = now + (self.config.restart_penalty_for(job.spec.job_type) if charge else 0.0)
            job.alloc = JobAllocation._placed(ja.counts, tuple((g.server_id, g.num_gpus) for g in groups), ja.mode)
            if job.status != JobStatus.RUNNING:
                self._insert_running(job)
            else:
                self._set_alloc(jid, job.alloc)
            job.status = JobStatus.RUNNING
            self._waiting_views.pop(jid, None)
            job.groups = groups
            job.num_gpus_now = sum(g.num_gpus for g in groups)
            job.rate = self._rate(job.spec, groups, ja)
            if job.rate > 0:
                t_done = job.penalty_until_s + job.remaining / job.rate
                self._seq += 1
                heapq.heappush(self._heap, (t_done, self._seq, jid, job.version))
                if len(self._heap) > 2 * len(self._running) + 64:
                    self._prune_heap()
        else:
            job.num_reconfigs += 1  # a preemption
            job.last_run_s = now - job.run_start_s
            job.status = JobStatus.WAITING
            self._running.pop(jid, None)
            self._drop_alloc(jid)
            job.alloc, job.groups, job.rate, job.num_gpus_now = None, (), 0.0, 0
            self._insert_waiting(job, now)

    def _insert_running(self, job: JobRecord) -> None:
        """Add a job to the running ones; out of submission order, :meth:`_restore_order` sorts them."""
        running = self._running
        assert job.alloc is not None
        self._set_alloc(job.spec.job_id, job.alloc)
        if running and not self._order_dirty and next(reversed(running.values())).rank > job.rank:
            self._order_dirty = True
        running[job.spec.job_id] = job

    def _insert_waiting(self, job: JobRecord, now: float) -> None:
        """Put a preempted job's view back among the waiting ones (sorted by :meth:`_restore_order`)."""
        views = self._waiting_views
        if views and not self._order_dirty and self._rank[next(reversed(views))] > job.rank:
            self._order_dirty = True
        views[job.spec.job_id] = job.make_view(now)

    def _restore_order(self) -> None:
        """After a step: the running jobs, their allocations and the waiting jobs' views in submission
        order again (views need no sorting), with one sort per step rather than one per job moved."""
        if not self._order_dirty:
            return
        self._order_dirty = False
        running = sorted(self._running.values(), key=_RANK)
        self._running = {j.spec.job_id: j for j in running}
        allocs = self._allocs
        self._allocs = {jid: allocs[jid] for jid in self._running}
        views = self._waiting_views
        self._waiting_views = {jid: views[jid] for jid in sorted(views, key=self._rank.__getitem__)}

    def _rate(self, spec: JobSpec, groups: tuple[ServerGroup, ...], ja: JobAllocation) -> float:
        comm = self.config.comm_model
        if comm.is_bandwidth and ja.mode != "fork" and spec.model_bytes is not None:
            return placement_rate(self.throughput, self.cluster, comm, spec, groups, ja.mode)
        # Without the bandwidth model the rate of a job on one server depends on its kind, mode, type and
        # count only: those are cached (not forks, whose aggregation time depends on the servers' NICs;
        # not multi-server placements, whose combinations are too many to keep).
        cached = ja.mode != "fork" and len(groups) == 1
        if cached:
            key = (spec.job_type, spec.batch_size, ja.mode, groups[0].gpu_type, groups[0].num_gpus)
            rate = self._rate_cache.get(key)
            if rate is not None:
                return rate
        aggregation_s = 0.0
        if ja.mode == "fork" and self.config.fork_aggregation and spec.model_bytes and len(groups) > 1:
            nic = min(self.cluster.servers[g.server_id].nic_bw_gb_per_s for g in groups)
            aggregation_s = spec.model_bytes / 1e9 / nic
        gavel = self.config.compat == "gavel"
        rate = allocation_rate(
            self.throughput,
            spec.job_type,
            spec.batch_size,
            groups,
            ja.mode,
            aggregation_s=aggregation_s,
            round_s=self._round_s,
            fork_efficiency=self.config.fork_efficiency,
            multi_server_factor=not gavel,
        )
        if gavel and not self._gavel_rounds:
            # Gavel runs whole steps per round: floor(steps/s x round) of them, where one of its steps is one
            # iteration on one of the job's GPUs. (With rounds, _start_gavel_round sets each round's rates.)
            steps_per_round = ja.total_gpus * self._round_s
            rate = math.floor(rate * steps_per_round + 1e-9) / steps_per_round
        if cached:
            self._rate_cache[key] = rate
        return rate

    def _start_gavel_round(self) -> None:
        """Gavel's round (``compat="gavel"`` with ticks), after a tick's decision is applied: each running
        job runs one micro-task, and the round ends when the last of them does.

        A job runs ``floor(T x round_s)`` whole steps at its throughput ``T`` (steps/s, one step being one
        iteration on one of its GPUs), or its steps left when fewer: its micro-task takes ``steps / T``
        (a little under ``round_s``, different from job to job). The round ends at the longest micro-task
        (Gavel's ``max_finish_time``), so it lasts ``max floor(T x round_s) / T``, not ``round_s``. A job
        that completes in the round runs at ``T`` and completes when its micro-task ends; the others are
        given the rate that does their whole steps by the round's end.
        """
        now = self._now
        end = self._gavel_micro_tasks(list(self._running.values()), now, self._round_s, extend=True)
        # (A round whose jobs all run at rate 0, which Gavel's policies never schedule, lasts round_s.)
        self._next_tick_s = end if end > now else now + self._round_s

    def _gavel_micro_tasks(self, jobs: Sequence[JobRecord], now: float, span_s: float, *, extend: bool) -> float:
        """Set the rates of ``jobs`` for Gavel micro-tasks of at most ``span_s`` from ``now``; return the round's
        end: the last micro-task's end when ``extend`` (a round start), else ``now + span_s``."""
        tasks: list[tuple[JobRecord, float, float]] = []  # (job, rate or steps done, completion or -1)
        end = now
        for job in jobs:
            ja = job.alloc
            if ja is None or not job.groups:
                continue
            rate = self._rate(job.spec, job.groups, ja)
            job.flush(now)
            if rate <= 0:
                continue
            gpus = ja.total_gpus
            steps_per_s = rate * gpus
            left = job.remaining * gpus
            whole = round(left)
            if abs(left - whole) < 1e-6:  # whole steps, as Gavel counts them (no drift from float sums)
                left = float(whole)
                job.remaining = left / gpus
            full = math.floor(steps_per_s * span_s + 1e-9)
            if left <= full:
                t_done = now + left / steps_per_s
                tasks.append((job, rate, t_done))
                end = max(end, t_done)
            else:
                tasks.append((job, full / gpus, -1.0))
                end = max(end, now + full / steps_per_s)
        if not extend:
            end = now + span_s
        length = end - now
        heap = self._heap
        for job, x, t_done in tasks:
            if t_done < 0:
                if length <= 0:
                    continue
                if x <= 0:  # under one whole step a round: no progress (Gavel's task would fail)
                    job.rate = 0.0
                    job.version += 1
                    continue
                rate = x / length
                t_done = now + job.remaining / rate
            else:
                rate = x
            job.rate = rate
            job.version += 1
            self._seq += 1
            heapq.heappush(heap, (t_done, self._seq, job.spec.job_id, job.version))
        if len(heap) > 2 * len(self._running) + 64:
            self._prune_heap()
        return end

    def _prune_heap(self) -> None:
        """Drop stale completions (of reconfigured or preempted jobs), which are otherwise only popped
        when they reach the top: without this the heap grows with every reconfiguration, not with the
        jobs. Sequence numbers are unique, so the surviving entries pop in the same order."""
        jobs = self._jobs
        live = [e for e in self._heap if jobs[e[2]].version == e[3] and jobs[e[2]].status == JobStatus.RUNNING]
        heapq.heapify(live)
        self._heap[:] = live

    def _record_usage(self) -> None:
        if not self.config.record_timeline:
            return
        held = self._alloc_totals  # what the servers' used GPUs add up to per type
        used = tuple([held[t] for t in self.cluster.gpu_types])
        timeline = self._timeline
        if timeline and timeline[-1][1] == used:
            return
        if timeline and timeline[-1][0] == self._now:
            timeline[-1] = (self._now, used)
        else:
            timeline.append((self._now, used))


def _repeats(ja: JobAllocation, current: JobAllocation | None) -> bool:
    """Whether ``ja`` spells out ``current`` (same counts, mode and servers)."""
    return current is not None and ja.same_resources(current) and ja.servers == current.servers
