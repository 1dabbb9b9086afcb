"""Applying a policy's decision: release, place and reconfigure only the jobs whose resources change.

:class:`Placements` is the simulator's collaborator that holds where the running jobs are and what they
hold: the running jobs and their allocations (in submission order), the GPUs those hold per type, the
free GPUs per server, the waiting jobs' views, and the completion events of the running jobs. It turns
a validated decision into new placements: jobs whose counts, mode or explicit servers change are
released and placed again (explicit placements first, the rest by the placer in force, see
:mod:`hetgym.sim.placement`); each moved job is flushed, charged the restart penalty and given its new
rate, and its completion is pushed onto :attr:`Placements.heap`. The engine
(:class:`~hetgym.sim.engine.Simulator`) owns one per run (made at ``reset``) and keeps the clock, the
arrivals and the ending of jobs; it reads this object's state to build views and pop completions.
"""

from __future__ import annotations

import heapq
import math
import operator
from collections.abc import Mapping, Sequence

import numpy as np

from hetgym.sim.allocation import JobAllocation
from hetgym.sim.cluster import ClusterSpec, ClusterState
from hetgym.sim.comm import placement_rate
from hetgym.sim.config import SimConfig
from hetgym.sim.job import JobSpec, JobStatus
from hetgym.sim.placement import PlacementRequest, Placer
from hetgym.sim.runtime import JobRecord
from hetgym.sim.throughput import ServerGroup, ThroughputModel, allocation_rate
from hetgym.sim.view import JobView

_RANK = operator.attrgetter("rank")  # submission order of job records, in C


class Placements:
    """The running jobs' allocations and placements of one run, and the applying of decisions to them.

    Args:
        cluster, config, throughput: The simulator's.
        placer: The placer in force for the run (already reset).
        round_s: The run's round length (rates under ``compat="gavel"`` depend on it).
        active: The engine's active jobs (arrived, not ended, in submission order), read only here.
        rank: Each job's place in submission order.

    Attributes:
        running: The active jobs holding GPUs, in submission order (after :meth:`restore_order`).
        allocs: Their allocations, in the same order.
        totals: GPUs per type those hold (kept as they change).
        waiting_views: The other active jobs' (cached) views, in submission order.
        servers: Free GPUs per server (:class:`~hetgym.sim.cluster.ClusterState`).
        heap: Completion events ``(time, seq, job_id, version)``; stale ones (a job reconfigured since)
            are dropped when they reach the top, or by :meth:`prune_heap`.
        changed: The jobs whose allocation the current step changed, in order (the next view's ``changed``).
        idle_holders: With :attr:`watch_idle`, the running jobs whose placement has a rate of 0 (they hold
            GPUs and can make no progress until moved), each with the time since which it has held GPUs at
            zero rate: the watchdog stops a run in which one keeps them too long (:mod:`hetgym.sim.fastforward`).
        watch_idle: Whether :attr:`idle_holders` is kept: set by ``Simulator.run`` for a policy; off for
            callers that step the simulator themselves (the Gym environment, whose agents may try such
            placements and whose episodes end by their own rules).
    """

    def __init__(
        self,
        cluster: ClusterSpec,
        config: SimConfig,
        throughput: ThroughputModel,
        placer: Placer,
        round_s: float,
        active: dict[int, JobRecord],
        rank: dict[int, int],
    ) -> None:
        self.cluster = cluster
        self.config = config
        self.throughput = throughput
        self.placer = placer
        self.round_s = round_s
        self.active = active
        self.rank = rank
        # Whether Gavel's rounds are in force (compat="gavel" with round ticks; the simulator sets it at reset):
        # each round's micro-tasks then set the rates and the round's end (start_gavel_round).
        self.gavel_rounds = False
        self.running: dict[int, JobRecord] = {}
        self.allocs: dict[int, JobAllocation] = {}
        self.totals: dict[str, int] = dict.fromkeys(cluster.gpu_types, 0)
        self.waiting_views: dict[int, JobView] = {}
        self.servers = ClusterState(cluster)
        self.heap: list[tuple[float, int, int, int]] = []
        self.changed: list[int] = []
        self.idle_holders: dict[int, float] = {}
        self.watch_idle = False
        self._seq = 0
        self._order_dirty = False  # running or waiting jobs out of submission order until restore_order
        self._rate_cache: dict[tuple[object, ...], float] = {}  # rates by job kind, mode, type and count (one run)

    def __getstate__(self) -> dict[str, object]:
        state = self.__dict__.copy()
        state["_rate_cache"] = {}  # a cache, rebuilt as it is used
        return state

    def fork(self, active: dict[int, JobRecord], placer: Placer) -> Placements:
        """An independent copy for a fork of the simulator, over its ``active`` records and ``placer``.

        The cluster, configuration, throughput model, submission ranks and the rate cache (a pure function
        of its key) are shared; the running jobs, allocations, totals, free GPUs, waiting views, completion
        heap, the step's changes and the jobs held at zero rate are copied (records mapped to the fork's, the
        rest immutable values).
        """
        out = Placements.__new__(Placements)
        out.__dict__.update(self.__dict__)
        out.active = active
        out.placer = placer
        out.running = {jid: active[jid] for jid in self.running}
        out.allocs = dict(self.allocs)
        out.totals = dict(self.totals)
        out.waiting_views = dict(self.waiting_views)
        servers = ClusterState.__new__(ClusterState)
        for name in ClusterState.__slots__:
            setattr(servers, name, getattr(self.servers, name))
        servers.free = self.servers.free.copy()
        out.servers = servers
        out.heap = list(self.heap)
        out.changed = list(self.changed)
        out.idle_holders = dict(self.idle_holders)
        return out

    # ----------------------------------------------------------------------------------------
    # Jobs entering and leaving (called by the engine)

    def arrive(self, job: JobRecord, now: float) -> None:
        """A job arrived: it waits."""
        self.waiting_views[job.spec.job_id] = job.make_view(now)

    def remove(self, job: JobRecord) -> None:
        """A job ended (completed or rejected): free its GPUs and forget it."""
        jid = job.spec.job_id
        for g in job.groups:
            self.servers.release(g.server_id, g.num_gpus)
        self.running.pop(jid, None)
        self.drop_alloc(jid)
        self.waiting_views.pop(jid, None)
        self.idle_holders.pop(jid, None)

    def reject(self, job: JobRecord, now: float) -> None:
        """A job is rejected at ``now`` (the engine has taken it off the active jobs): it ends, its GPUs freed."""
        self.remove(job)
        job.flush(now)
        if job.status == JobStatus.RUNNING:
            job.last_run_s = now - job.run_start_s
        job.status = JobStatus.REJECTED
        job.finish_s = now
        job.alloc, job.groups, job.rate, job.num_gpus_now = None, (), 0.0, 0
        job.placed_rate = 0.0
        job.version += 1
        job.view = None
        self.changed.append(job.spec.job_id)

    def _set_alloc(self, jid: int, ja: JobAllocation) -> None:
        """Record a running job's new allocation (it is already in ``_allocs`` or is added after)."""
        old = self.allocs.get(jid)
        totals = self.totals
        if old is not None:
            for t, n in old.counts:
                totals[t] -= n
        for t, n in ja.counts:
            totals[t] += n
        self.allocs[jid] = ja

    def drop_alloc(self, jid: int) -> None:
        """Forget a job's allocation (it stopped running)."""
        old = self.allocs.pop(jid, None)
        if old is not None:
            totals = self.totals
            for t, n in old.counts:
                totals[t] -= n

    def apply(self, new: Mapping[int, JobAllocation], touched: Sequence[int] | None, now: float) -> bool:
        """Apply a validated decision (its rejected jobs already removed): only jobs whose resources change
        are released and re-placed; whether any job changed.

        ``new`` is the complete decision (``{job_id: JobAllocation}``); ``touched``, when given, names the
        only jobs whose allocation may differ from their current one (in the order of their last
        assignment; see :class:`~hetgym.sim.allocation.AllocationDelta`): the others are not looked at.
        """
        active = self.active
        if self.placer.replaces_all:
            moved: dict[int, JobAllocation | None] = {}
            if new or self.running:
                free, placed = self._place_all(new, keep_unchanged=False)
                moved = self._moved(new, placed)
                for jid, target in moved.items():
                    self._reconfigure(active[jid], target, placed.get(jid, ()), now)
                self.servers.free = free
            return bool(moved)
        if touched is None:
            changes: dict[int, JobAllocation | None] = {jid: None for jid in self.running if jid not in new}
            candidates: Mapping[int, JobAllocation] = new
        else:
            # The same changes in the same order, from the touched jobs alone: running jobs left out (in
            # submission order, the running jobs' order), then the changed ones in the allocation's order.
            running = self.running
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
            free = self.servers.free.copy()
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
            self.servers.free = free
        return bool(changes)

    def _moved(
        self, new: Mapping[int, JobAllocation], final: Mapping[int, tuple[ServerGroup, ...]]
    ) -> dict[int, JobAllocation | None]:
        """The active jobs whose servers or mode differ between now and ``final`` (the new allocation)."""
        return {
            jid: new.get(jid)
            for jid, job in self.active.items()
            if final.get(jid, ()) != job.groups
            or (jid in new and job.alloc is not None and new[jid].mode != job.alloc.mode)
        }

    def _requests(self, pending: Mapping[int, JobAllocation]) -> list[PlacementRequest]:
        active = self.active
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
            final.update(self.placer.place(self.cluster, free, self._requests(pending)))
        return final

    def _place_all(
        self, new: Mapping[int, JobAllocation], *, keep_unchanged: bool
    ) -> tuple[np.ndarray, dict[int, tuple[ServerGroup, ...]]]:
        """Place every allocated job from an empty cluster: explicit placements first, then (when
        ``keep_unchanged``) unchanged jobs on their servers where possible, then the rest with the placer."""
        free = np.array([s.num_gpus for s in self.cluster.servers], dtype=np.int64)
        servers = self.cluster.servers
        final: dict[int, tuple[ServerGroup, ...]] = {}
        active = self.active
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
            job = self.active[jid]
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
            final.update(self.placer.place(self.cluster, free, self._requests(pending)))
        return free, final

    def _reconfigure(
        self, job: JobRecord, ja: JobAllocation | None, groups: tuple[ServerGroup, ...], now: float
    ) -> None:
        job.flush(now)
        self.changed.append(job.spec.job_id)
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
            self.waiting_views.pop(jid, None)
            job.groups = groups
            job.num_gpus_now = sum(g.num_gpus for g in groups)
            job.rate = job.placed_rate = self._rate(job.spec, groups, ja)
            if job.rate > 0:
                t_done = job.penalty_until_s + job.remaining / job.rate
                self._seq += 1
                heapq.heappush(self.heap, (t_done, self._seq, jid, job.version))
                if len(self.heap) > 2 * len(self.running) + 64:
                    self.prune_heap()
                self.idle_holders.pop(jid, None)
            elif self.watch_idle:  # held at zero rate (from the first such placement, if it moves to another)
                self.idle_holders.setdefault(jid, now)
        else:
            job.num_reconfigs += 1  # a preemption
            job.last_run_s = now - job.run_start_s
            job.status = JobStatus.WAITING
            self.running.pop(jid, None)
            self.drop_alloc(jid)
            job.alloc, job.groups, job.rate, job.num_gpus_now = None, (), 0.0, 0
            job.placed_rate = 0.0
            self.idle_holders.pop(jid, None)
            self._insert_waiting(job, now)

    def _insert_running(self, job: JobRecord) -> None:
        """Add a job to the running ones; out of submission order, :meth:`restore_order` sorts them."""
        running = self.running
        assert job.alloc is not None
        self._set_alloc(job.spec.job_id, job.alloc)
        if running and not self._order_dirty and next(reversed(running.values())).rank > job.rank:
            self._order_dirty = True
        running[job.spec.job_id] = job

    def _insert_waiting(self, job: JobRecord, now: float) -> None:
        """Put a preempted job's view back among the waiting ones (sorted by :meth:`restore_order`)."""
        views = self.waiting_views
        if views and not self._order_dirty and self.rank[next(reversed(views))] > job.rank:
            self._order_dirty = True
        views[job.spec.job_id] = job.make_view(now)

    def restore_order(self) -> None:
        """After a step: the running jobs, their allocations and the waiting jobs' views in submission
        order again (views need no sorting), with one sort per step rather than one per job moved."""
        if not self._order_dirty:
            return
        self._order_dirty = False
        running = sorted(self.running.values(), key=_RANK)
        self.running = {j.spec.job_id: j for j in running}
        allocs = self.allocs
        self.allocs = {jid: allocs[jid] for jid in self.running}
        views = self.waiting_views
        self.waiting_views = {jid: views[jid] for jid in sorted(views, key=self.rank.__getitem__)}

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
            round_s=self.round_s,
            fork_efficiency=self.config.fork_efficiency,
            multi_server_factor=not gavel,
        )
        if gavel and not self.gavel_rounds:
            # Gavel runs whole steps per round: floor(steps/s x round) of them, where one of its steps is one
            # iteration on one of the job's GPUs. (With rounds, start_gavel_round sets each round's rates.)
            steps_per_round = ja.total_gpus * self.round_s
            rate = math.floor(rate * steps_per_round + 1e-9) / steps_per_round
        if cached:
            self._rate_cache[key] = rate
        return rate

    def end_gavel_step(self, now: float, next_tick_s: float, *, tick: bool) -> float:
        """Under Gavel's rounds, after a step's decision is applied at ``now``: the time of the next round tick.

        A round in which nothing runs is skipped (the next one starts at the next arrival, as in Gavel's
        simulator); a tick starts a round (:meth:`start_gavel_round`); a job (re)started inside a round runs a
        micro-task up to the round's end, ``next_tick_s``.
        """
        if not self.running:
            return math.inf
        if tick:
            return self.start_gavel_round(now)
        if self.changed and next_tick_s < math.inf:
            running = self.running
            moved = [running[jid] for jid in dict.fromkeys(self.changed) if jid in running]
            if moved:
                self.gavel_micro_tasks(moved, now, next_tick_s - now, extend=False)
        return next_tick_s

    def start_gavel_round(self, now: float) -> float:
        """Gavel's round (``compat="gavel"`` with ticks), after a tick's decision is applied: each running
        job runs one micro-task, and the round ends when the last of them does.

        A job runs ``floor(T x round_s)`` whole steps at its throughput ``T`` (steps/s, one step being one
        iteration on one of its GPUs), or its steps left when fewer: its micro-task takes ``steps / T``
        (a little under ``round_s``, different from job to job). The round ends at the longest micro-task
        (Gavel's ``max_finish_time``), so it lasts ``max floor(T x round_s) / T``, not ``round_s``. A job
        that completes in the round runs at ``T`` and completes when its micro-task ends; the others are
        given the rate that does their whole steps by the round's end.

        Returns:
            The time of the next round tick (the round's end).
        """
        end = self.gavel_micro_tasks(list(self.running.values()), now, self.round_s, extend=True)
        # (A round whose jobs all run at rate 0, which Gavel's policies never schedule, lasts round_s.)
        return end if end > now else now + self.round_s

    def gavel_micro_tasks(self, jobs: Sequence[JobRecord], now: float, span_s: float, *, extend: bool) -> float:
        """Set the rates of ``jobs`` for Gavel micro-tasks of at most ``span_s`` from ``now``; return the round's
        end: the last micro-task's end when ``extend`` (a round start), else ``now + span_s``.

        The arithmetic runs elementwise over the jobs (numpy), each job's the same float operations in the
        same order as one job at a time, so the rates and completion times are the same bits.
        """
        tasked: list[JobRecord] = []
        rates: list[float] = []
        gpus_of: list[int] = []
        remaining: list[float] = []
        for job in jobs:
            if job.alloc is None or not job.groups:
                continue
            rate = job.placed_rate  # the placement's rate (self._rate), kept since the job was placed
            job.flush(now)
            if rate <= 0:
                continue
            tasked.append(job)
            rates.append(rate)
            gpus_of.append(job.num_gpus_now)  # the placed GPUs: the allocation's total
            remaining.append(job.remaining)
        if not tasked:
            return now if extend else now + span_s
        rate_v = np.array(rates)
        gpus = np.array(gpus_of, dtype=np.int64)
        steps_per_s = rate_v * gpus
        left = np.array(remaining) * gpus
        whole = np.round(left)  # half to even, as Python's round()
        snap = np.abs(left - whole) < 1e-6  # whole steps, as Gavel counts them (no drift from float sums)
        left = np.where(snap, whole, left)
        left_iters = np.where(snap, left / gpus, remaining)
        full = np.floor(steps_per_s * span_s + 1e-9)
        completes = left <= full
        # A job that completes in the micro-task runs at its rate and ends when its steps are done; the others
        # do their whole steps by the round's end.
        t_done = now + np.where(completes, left, full) / steps_per_s
        end = max(now, float(t_done.max())) if extend else now + span_s
        length = end - now
        done_v = full / gpus
        heap = self.heap
        for job, left_i, snapped, ends, t, rate, done in zip(
            tasked,
            left_iters.tolist(),
            snap.tolist(),
            completes.tolist(),
            t_done.tolist(),
            rates,
            done_v.tolist(),
            strict=True,
        ):
            if snapped:
                job.remaining = left_i
            if not ends:
                if length <= 0:
                    continue
                if done <= 0:  # under one whole step a round: no progress (Gavel's task would fail)
                    job.rate = 0.0
                    job.version += 1
                    continue
                rate = done / length
                t = now + left_i / rate
            job.rate = rate
            job.version += 1
            self._seq += 1
            heapq.heappush(heap, (t, self._seq, job.spec.job_id, job.version))
        if len(heap) > 2 * len(self.running) + 64:
            self.prune_heap()
        return end

    def prune_heap(self) -> None:
        """Drop stale completions (of reconfigured or preempted jobs), which are otherwise only popped
        when they reach the top: without this the heap grows with every reconfiguration, not with the
        jobs. Sequence numbers are unique, so the surviving entries pop in the same order."""
        running = self.running
        live = [e for e in self.heap if e[2] in running and running[e[2]].version == e[3]]
        heapq.heapify(live)
        self.heap[:] = live


def _repeats(ja: JobAllocation, current: JobAllocation | None) -> bool:
    """Whether ``ja`` spells out ``current`` (same counts, mode and servers)."""
    return current is not None and ja.same_resources(current) and ja.servers == current.servers
