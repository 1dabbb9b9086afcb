"""Gavel's round mechanism: time counters, priorities and the per-round greedy placement.

Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning Workloads",
OSDI 2020: the part of Gavel's ``scheduler/scheduler.py`` that turns a policy's allocation matrix ``X``
into per-round assignments, whatever policy computed ``X`` (an LP of :mod:`baselines.gavel`, or FIFO's
type choice). Per job and GPU type it keeps the time received since the last allocation reset and the
deficits (``_reset_time_run_so_far``), ranks (job, type) entries by ``X / fraction of time received``
(``_update_priorities``) and places them greedily type by type (``_schedule_jobs_on_workers_helper``);
under ``SimConfig(compat="gavel")`` it also reproduces Gavel's micro-task time accounting
(``_done_callback``) and failed micro-tasks. The module docstring of :mod:`baselines.gavel` describes
the mechanism and its reconstructions; :class:`baselines.gavel.GavelPolicy` lists the knobs.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from hetgym.sim.allocation import Allocation, AllocationBuilder, JobAllocation
from hetgym.sim.knob_policy import KnobPolicy
from hetgym.sim.registry import Knobs, knob
from hetgym.sim.view import ClusterView, JobView

#: Gavel's round length (``time_per_iteration``).
GAVEL_ROUND_S = 360.0
#: Gavel's ``minimum_time_between_allocation_resets``.
GAVEL_MIN_RESET_INTERVAL_S = 1920.0
#: Gavel's ``MAX_FAILED_ATTEMPTS``: failed micro-tasks in a row after which a job is failed.
GAVEL_MAX_FAILED_ATTEMPTS = 5
#: Gavel's priority for a job with an allocation that has received no time yet (``X * 1e9``).
_UNSERVED_PRIORITY = 1e9
#: Rows of the per-job matrices at the start (doubled when full).
_FIRST_ROWS = 64


@dataclass(frozen=True)
class GavelRoundKnobs(Knobs):
    """Knobs of the round mechanism, shared by every Gavel policy (each extends them)."""

    min_recompute_interval_s: float = knob(
        GAVEL_MIN_RESET_INTERVAL_S, low=0.0, doc="least time between allocation recomputes (Gavel's 1,920 s)"
    )
    fill_between_rounds: bool = knob(
        True,
        doc="let waiting jobs take free GPUs at arrivals and completions inside a round (no preemption); "
        "``False`` assigns only at round boundaries, as Gavel's simulator",
    )
    global_queue: bool = knob(
        False,
        doc="sort the (job, type) entries of all types together (Gavel's ``enable_global_queue``) instead of "
        "type by type",
    )
    gavel_failures: bool = knob(
        True,
        doc="under ``SimConfig(compat='gavel')`` only: reproduce Gavel's failed micro-tasks. A multi-GPU job whose "
        "remaining steps (iterations x GPUs) are fewer than its GPUs at a round start holds its GPUs for the round "
        "without progress, and is rejected at its fifth such round (``MAX_FAILED_ATTEMPTS``); it counts in "
        "``metrics['num_rejected']`` and ``num_failed``, and is left out of the mean JCT, as Gavel leaves it out. "
        "``False`` lets such jobs finish their last steps",
    )


class GavelRounds(KnobPolicy[GavelRoundKnobs]):
    """Gavel's round mechanism over an allocation matrix that a subclass computes (``_compute_allocation``).

    The subclass resolves :attr:`heterogeneity_aware` (in ``_configure``) and returns from
    ``_compute_allocation`` each schedulable job's row of ``X`` (its share of wall time on each GPU type).

    Attributes:
        heterogeneity_aware: Whether the policy sees the measured per-type throughputs (its knob, or the
            policy's default when the knob is ``None``); otherwise the type order of a round is shuffled.
    """

    heterogeneity_aware: bool
    round_s = GAVEL_ROUND_S
    #: Whether entries of zero priority are never scheduled (Gavel's FIFO).
    skips_zero_priority: ClassVar[bool] = False

    def _positive_first(self) -> bool:
        """Whether every entry with a positive priority comes before any zero-priority one (``zero_priority_last``).

        Gavel's FIFO never schedules a zero-priority entry (:attr:`skips_zero_priority`), so there the order
        of the two kinds makes no difference.
        """
        return False

    def _reset(self) -> None:
        assert self.cluster is not None
        self._types: tuple[str, ...] = self.cluster.gpu_types
        self._type_index = {t: i for i, t in enumerate(self._types)}
        self._capacity = np.array([self.cluster.capacity[t] for t in self._types], dtype=float)
        self._rates: dict[int, np.ndarray] = {}
        self._scale: dict[int, int] = {}  # each active job's requested GPUs (Gavel's scale factor)
        self._weight: dict[int, float] = {}  # each active job's priority weight
        self._job_allocs: dict[tuple[str, int], JobAllocation] = {}
        self._alloc: dict[int, np.ndarray] = {}
        # Per-job state as rows of preallocated matrices (job -> row in ``_row``, rows of departed jobs
        # reused), so that a round gathers its candidates' rows by fancy indexing: time received since
        # the last reset, deficit, allocation, rates and scale factor. ``_job_time`` and ``_deficit``
        # map each active job (in submission order) to its row, a view into these matrices.
        self._row: dict[int, int] = {}
        self._free_rows: list[int] = []
        self._next_row = 0
        k = len(self._types)
        self._time_m = np.zeros((_FIRST_ROWS, k))
        self._deficit_m = np.zeros((_FIRST_ROWS, k))
        self._alloc_m = np.zeros((_FIRST_ROWS, k))
        self._rates_m = np.zeros((_FIRST_ROWS, k))
        self._scale_v = np.zeros(_FIRST_ROWS, dtype=np.int64)
        self._job_time: dict[int, np.ndarray] = {}
        self._type_time = np.zeros(len(self._types))
        self._deficit: dict[int, np.ndarray] = {}
        self._last_now: float | None = None
        self._last_reset_s: float | None = None
        self._need_update = True
        self.num_recomputes = 0
        self._compat: bool | None = None
        self._failures: dict[int, int] = {}
        self._pass_failures = 0
        # compat="gavel": the micro-tasks of the current round as job -> (type index, Gavel's execution
        # time, whether the job completes in it), when the round started, and when the last round that
        # ran something ended (Gavel's round start, 0 before the first).
        self._tasks: dict[int, tuple[int, float, bool]] = {}
        self._round_start_s = 0.0
        self._last_round_end_s = 0.0
        #: Jobs failed as Gavel fails them (``compat="gavel"``, ``gavel_failures``), in failure order.
        self.failed_jobs: list[int] = []
        self._token: object | None = None  # the last view's epoch token (see _sync_jobs)

    def _type_order(self, view: ClusterView) -> list[int]:
        order = sorted(range(len(self._types)), key=lambda i: -view.throughput.speed_index.get(self._types[i], 0.0))
        if not self.heterogeneity_aware:
            if self._compat:
                # Gavel's ``_worker_type_shuffler`` (``random.Random(seed + 5)``), one shuffle per scheduling pass.
                self._shuffler.shuffle(order)
            else:
                self.rng.shuffle(order)
        return order

    def _job_rates(self, view: ClusterView, job: JobView) -> np.ndarray:
        """``T[m, :]``: the job's rate at its requested count on each type, 0 where not allowed or too few GPUs."""
        r = self._rates.get(job.job_id)
        if r is None:
            r = self._rates[job.job_id] = view.rate_table.get(job).fit_rates
        return r

    def _compute_allocation(self, view: ClusterView) -> dict[int, np.ndarray]:
        """Each schedulable active job's row of ``X`` (the policy's allocation), at a recompute."""
        raise NotImplementedError

    def _forget_job(self, job_id: int) -> None:
        """Drop the per-job state of a job that left."""
        self._scale.pop(job_id, None)
        self._weight.pop(job_id, None)
        for store in (self._job_time, self._deficit, self._alloc, self._rates):
            store.pop(job_id, None)
        row = self._row.pop(job_id, None)
        if row is not None:
            self._free_rows.append(row)

    def _new_row(self, job_id: int) -> int:
        """A row of the per-job matrices for ``job_id`` (a departed job's, or the next one, growing them)."""
        if self._free_rows:
            row = self._free_rows.pop()
        else:
            row = self._next_row
            self._next_row += 1
            if row == len(self._scale_v):
                self._grow()
        self._row[job_id] = row
        return row

    def _grow(self) -> None:
        """Double the per-job matrices, pointing the per-job views at the new ones."""
        n = 2 * len(self._scale_v)
        for name in ("_time_m", "_deficit_m", "_alloc_m", "_rates_m", "_scale_v"):
            old = getattr(self, name)
            new = np.zeros((n, *old.shape[1:]), dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)
        for jid, row in self._row.items():
            if jid in self._job_time:
                self._job_time[jid] = self._time_m[row]
                self._deficit[jid] = self._deficit_m[row]

    def _rows_of(self, job_ids: Sequence[int]) -> np.ndarray:
        """The rows of ``job_ids``, in their order."""
        return np.fromiter(map(self._row.__getitem__, job_ids), dtype=np.intp, count=len(job_ids))

    # ----------------------------------------------------------------------------------------
    def _sync_jobs(self, view: ClusterView) -> None:
        """Drop the per-job state of jobs that ended and start it for jobs that arrived.

        When ``view`` directly follows the last view seen (``previous_token``), only its arrivals can
        be new and only its completions and changed jobs (a rejection) can have left, so an epoch
        costs what changed, not the number of active jobs; otherwise every active job is looked at.
        """
        token, self._token = self._token, view.active.token
        if token is not None and view.previous_token is token:
            gone = [jid for jid in view.completed if jid in self._job_time]
            for jid in view.changed:
                if jid in self._job_time and not view.is_active(jid):
                    gone.append(jid)
            new = [view.job(jid) for jid in view.arrived if jid not in self._job_time]
        else:
            active = view.job_index
            gone = [j for j in self._job_time if j not in active]
            new = [job for job in view.jobs if job.job_id not in self._job_time]
        for jid in gone:
            self._forget_job(jid)
        half = self.round_s_in_force(view) / 2.0
        for job in new:
            jid = job.job_id
            row = self._new_row(jid)
            self._scale[jid] = self._scale_v[row] = job.num_gpus
            self._weight[jid] = job.spec.priority_weight
            times = self._job_time[jid] = self._time_m[row]
            times[:] = half
            self._type_time += half
            deficit = self._deficit[jid] = self._deficit_m[row]
            deficit[:] = 0.0
            self._alloc_m[row] = 0.0
            self._rates_m[row] = self._job_rates(view, job)

    def _account(self, view: ClusterView) -> None:
        """Add the time each running job held GPUs since the previous epoch to its counters."""
        self._sync_jobs(view)
        if self._compat:
            self._account_gavel(view)
            return
        if self._last_now is not None:
            dt = view.now_s - self._last_now
            if dt > 0:
                index, job_time, type_time = self._type_index, self._job_time, self._type_time
                for jid, ja in view.running_allocations.items():
                    for t in ja.gpu_types:
                        i = index[t]
                        job_time[jid][i] += dt
                        type_time[i] += dt
        self._last_now = view.now_s

    def _account_gavel(self, view: ClusterView) -> None:
        """Gavel's time counters (``_done_callback``) at the start of a round, for the round before.

        Each micro-task adds its own execution time, ``steps / throughput`` with ``floor(throughput x
        round)`` steps (a little under the round, different from job to job), plus any idle time between
        the end of the last round that ran something and the start of its own round (Gavel measures a
        micro-task from the end of the previous round). Jobs that have had the same number of rounds are
        told apart by these differences, as in Gavel.
        """
        if not (view.is_tick or self._last_reset_s is None) or not self._tasks:
            return
        # Gavel's arithmetic, to the bit: a micro-task ends at its start plus steps / throughput, adds its end
        # minus the end of the last round that ran something, and the round ends with its last micro-task
        # (``max_finish_time``). Ties between jobs fall by the last bits of these sums.
        # The jobs still active are those with time counters (``_sync_jobs`` has just dropped the others).
        # Per type the additions run in the tasks' order (Python floats, the same sums); each job has one task,
        # so its counter gets one addition, made for all of them at once.
        start, since = self._round_start_s, self._last_round_end_s
        rows_of, type_time = self._row, self._type_time.tolist()
        rows: list[int] = []
        cols: list[int] = []
        ran: list[float] = []
        end_s = since
        for jid, (k, exec_s, _) in self._tasks.items():
            finish_s = start + exec_s
            ran_s = finish_s - since
            type_time[k] += ran_s
            row = rows_of.get(jid)
            if row is not None:
                rows.append(row)
                cols.append(k)
                ran.append(ran_s)
            if finish_s > end_s:
                end_s = finish_s
        self._type_time[:] = type_time
        if rows:
            self._time_m[rows, cols] += ran
        self._tasks = {}
        self._last_round_end_s = end_s

    def _record_tasks(
        self,
        view: ClusterView,
        job_ids: Sequence[int],
        types: Sequence[int],
        num_gpus: Sequence[int],
        remaining_iters: Sequence[float],
        rates: np.ndarray,
    ) -> None:
        """Remember the micro-tasks starting now of the jobs ``job_ids`` (in order), each on its type of
        ``types``, with Gavel's execution time; ``rates`` are the jobs' rates on those types.

        Per job, as Gavel counts it: ``floor(T x round)`` whole steps at ``T = rate x GPUs`` steps/s, or
        its steps left when fewer (snapped to a whole number when within 1e-6 of one, as the engine
        counts them), taking ``steps / T``. Elementwise float arithmetic, the same bits as one job at a time.
        """
        gpus = np.array(num_gpus, dtype=np.int64)
        steps_per_s = rates * gpus
        full = np.floor(steps_per_s * self.round_s_in_force(view) + 1e-9)
        left = np.array(remaining_iters, dtype=float) * gpus
        whole = np.round(left)  # half to even, as Python's round()
        left = np.where(np.abs(left - whole) < 1e-6, whole, left)
        exec_s = (np.minimum(full, left) / steps_per_s).tolist()
        completes = (left <= full).tolist()
        tasks = self._tasks
        for jid, k, e, d in zip(job_ids, types, exec_s, completes, strict=True):
            tasks[jid] = (k, e, d)
        self._round_start_s = view.now_s

    @staticmethod
    def round_s_in_force(view: ClusterView) -> float:
        """The round length of this run."""
        return view.round_s

    def _recompute(self, view: ClusterView) -> None:
        """Gavel's ``_reset_time_run_so_far`` (deficits) followed by a new allocation."""
        now = view.now_s
        half = self.round_s_in_force(view) / 2.0
        elapsed = 0.0 if self._last_reset_s is None else now - self._last_reset_s
        rows = self._rows_of(list(self._job_time))
        times = self._time_m[rows]
        # A job without an allocation has a zero row: its deficit changes by ``0 - (times - half)``.
        self._deficit_m[rows] += self._alloc_m[rows] * elapsed - (times - half)
        self._time_m[rows] = half
        self._type_time[:] = half * len(self._job_time)
        self._last_reset_s = now
        self._need_update = False
        self._alloc = self._compute_allocation(view)
        self._alloc_m[:] = 0.0
        for jid, x in self._alloc.items():
            self._alloc_m[self._row[jid]] = x
        self.num_recomputes += 1

    # ----------------------------------------------------------------------------------------
    def priority_matrix(self, job_ids: Sequence[int]) -> np.ndarray:
        """Gavel's priorities ``X / fraction`` (``X * 1e9`` before any service) for ``job_ids`` x types."""
        return self._priority_rows(self._rows_of(job_ids))

    def _priority_rows(self, rows: np.ndarray) -> np.ndarray:
        """:meth:`priority_matrix` of the jobs at ``rows`` of the per-job matrices."""
        times = self._time_m[rows]
        x = self._alloc_m[rows]
        rates = self._rates_m[rows]
        type_time = self._type_time
        fraction = np.divide(times, type_time, out=np.zeros_like(times), where=type_time > 0)
        prio = np.divide(x, fraction, out=x * _UNSERVED_PRIORITY, where=fraction > 0)
        return np.where(rates > 0, prio, 0.0)

    def priorities(self) -> dict[int, np.ndarray]:
        """Gavel's per-(job, type) priorities under the current counters, for every active job."""
        ids = list(self._job_time)
        return dict(zip(ids, self.priority_matrix(ids), strict=True))

    @property
    def num_failed(self) -> int:
        """Jobs failed as Gavel fails them (``compat="gavel"`` with ``gavel_failures``)."""
        return len(self.failed_jobs)

    def _may_recompute(self, now_s: float) -> bool:
        last = self._last_reset_s
        if last is None:
            return True
        # Gavel also resets at any round while its last reset was at t=0 (``_last_reset_time == 0``).
        return now_s - last >= self.knob_values.min_recompute_interval_s or (bool(self._compat) and last == 0.0)

    def schedule(self, view: ClusterView) -> Allocation:
        if self._compat is None:
            self._compat = view.config.compat == "gavel"
            self._shuffler = random.Random(view.config.seed + 5)
        self._account(view)
        if view.arrived or view.completed:
            self._need_update = True
        first = self._last_reset_s is None
        round_start = view.is_tick or first
        if round_start and self._need_update and self._may_recompute(view.now_s):
            self._recompute(view)
        if round_start:
            # Every job is a candidate (in submission order: the per-job state is kept in arrival
            # order); a job given back what it holds is no change, so the engine skips it.
            builder = AllocationBuilder.replacing(view)
            candidates = list(self._job_time)
        else:
            # Inside a round the running jobs keep their GPUs: a decision built from them (the engine
            # then checks and applies only what the fill below changes).
            builder = AllocationBuilder.keeping_running(view)
            if not self.knob_values.fill_between_rounds or self._compat:
                return builder.build()
            candidates = [job.job_id for job in view.iter_waiting()]
        failed = len(self.failed_jobs)
        self._pass_failures = 0
        self._greedy(view, builder, candidates)
        if self._compat and round_start:
            # Rounds of Gavel's simulator that take no time: one that only ran failing micro-tasks ends at
            # once, and one that ran nothing while no job is still to arrive forces a reset.
            for _ in range(len(candidates) * GAVEL_MAX_FAILED_ATTEMPTS + 2):
                if builder.assignments:  # (what builder.build().jobs holds)
                    break
                if not self._pass_failures:
                    if view.num_pending or not self._need_update:
                        break
                    self._last_reset_s = 0.0
                if self._need_update and self._may_recompute(view.now_s):
                    self._recompute(view)
                gone = set(self.failed_jobs[failed:])
                candidates = [j for j in candidates if j not in gone]
                if not candidates:
                    break
                self._pass_failures = 0
                self._greedy(view, builder, candidates)
        return builder.build()

    def _fails(self, num_gpus: int, remaining_iters: float) -> bool:
        """Whether Gavel's micro-task of a job fails this round: fewer steps left than GPUs."""
        if not (self._compat and self.knob_values.gavel_failures) or num_gpus <= 1:
            return False
        steps = remaining_iters * num_gpus
        return 0.0 < steps < num_gpus - 0.5

    def _greedy(self, view: ClusterView, builder: AllocationBuilder, candidates: Sequence[int]) -> None:
        """Gavel's ``_schedule_jobs_on_workers_helper`` over the jobs ``candidates`` (ids, in submission
        order) and the builder's free GPUs. Only the jobs scheduled have their views built."""
        if not candidates:
            return
        rows = self._rows_of(candidates)
        scale_list = self._scale_v[rows].tolist()
        prio = self._priority_rows(rows)
        deficit = self._deficit_m[rows]
        alloc = self._alloc_m[rows]
        rates = self._rates_m[rows]
        n_types = len(self._types)
        order = self._type_order(view)
        # Entries as flat indices c * n_types + k, in Gavel's order.
        if self.knob_values.global_queue:
            cols = np.repeat(np.array(order), len(candidates))
            at = np.tile(np.arange(len(candidates)), len(order))
            idx = np.lexsort((-alloc[at, cols], -deficit[at, cols], -prio[at, cols]))
            flat = at[idx] * n_types + cols[idx]
        else:
            parts = [np.lexsort((-alloc[:, k], -deficit[:, k], -prio[:, k])) * n_types + k for k in order]
            flat = np.concatenate(parts)
            if self._positive_first() and not self._compat:
                positive = prio.ravel()[flat] > 0
                flat = np.concatenate([flat[positive], flat[~positive]])
        usable = (rates.ravel() > 0)[flat]
        if self.skips_zero_priority:
            usable &= prio.ravel()[flat] > 0
        flat = flat[usable]
        free = [builder.free[t] for t in self._types]
        # Once fewer GPUs are free than any candidate needs, no later entry can be placed.
        left, least = sum(free), min(scale_list)
        scheduled = [False] * len(candidates)
        running = view.running_allocations
        # Under compat="gavel" a job without an allocation (arrived since the last recompute) is picked
        # like any entry but given no GPUs, and a failing micro-task holds its GPUs without progress.
        compat, alloc_of = self._compat, self._alloc
        may_fail = bool(compat and self.knob_values.gavel_failures)
        types, job_allocs = self._types, self._job_allocs
        # The micro-tasks started (compat="gavel"): job, type, GPUs, iterations left, candidate row.
        tasks: list[tuple[int, int, int, float, int]] = []
        # A job's progress read without building its view (the snapshot's, as view.remaining_iters reads it).
        remaining_of = view.active.remaining_of
        for c, k in zip((flat // n_types).tolist(), (flat % n_types).tolist(), strict=True):
            if left < least:
                break
            need = scale_list[c]
            if scheduled[c] or need > free[k]:
                continue
            free[k] -= need
            scheduled[c] = True
            left -= need
            jid = candidates[c]
            if compat and jid not in alloc_of:
                continue
            # Only compat mode reads the job's progress (without building its view).
            iters = remaining_of(jid) if compat else None
            if may_fail and need > 1 and iters is not None and self._fails(need, iters):
                self._failures[jid] = self._failures.get(jid, 0) + 1
                self._pass_failures += 1
                self._need_update = True
                if self._failures[jid] >= GAVEL_MAX_FAILED_ATTEMPTS:
                    builder.reject(jid)
                    self.failed_jobs.append(jid)
                continue
            ja = job_allocs.get((types[k], need)) or self._job_allocation(types[k], need)
            current = running.get(jid)
            if current is not None and current.same_resources(ja) and builder.assigned(jid) is None:
                builder.take(jid, current)  # what it holds, servers included: no change
            else:
                builder.assign(jid, ja)
            if iters is not None:
                tasks.append((jid, k, need, iters, c))
        if tasks:
            task_jobs, task_types, task_gpus, task_iters, task_at = zip(*tasks, strict=True)
            self._record_tasks(
                view, task_jobs, task_types, task_gpus, task_iters, rates[list(task_at), list(task_types)]
            )

    def _job_allocation(self, gpu_type: str, num_gpus: int) -> JobAllocation:
        key = (gpu_type, num_gpus)
        ja = self._job_allocs.get(key)
        if ja is None:
            ja = self._job_allocs[key] = JobAllocation({gpu_type: num_gpus})
        return ja


__all__ = ["GAVEL_MAX_FAILED_ATTEMPTS", "GAVEL_MIN_RESET_INTERVAL_S", "GAVEL_ROUND_S", "GavelRounds"]
