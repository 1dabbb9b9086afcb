"""Chronus: deadline-aware, lease-based scheduling with a MILP that picks the SLO jobs to guarantee.

Gao, Ye, Sun, Wen and Zhang, "Chronus: A Novel Deadline-aware Scheduler for Deep Learning Training Jobs",
ACM SoCC 2021. Confirmed [C: abstract; C-code: the ``chronus-scheduler`` ElasticFlow bundles,
``time_aware_with_lease.py``, read for the algorithm]: jobs are SLO jobs (with a deadline) or best-effort
jobs; GPUs are granted in *leases* (time slices) and re-decided at every lease boundary, where all jobs
release their GPUs; a mixed-integer program chooses which SLO jobs get guaranteed leases before their
deadlines; an SLO job the program cannot guarantee is kept as *unaccepted* and runs without a guarantee;
GPUs the guaranteed jobs leave go to the others in the order of the key ``(force, queue priority,
emergence, -submit time)``; placement consolidates jobs. Chronus plans for one GPU type and rigid jobs.

Implemented here [I unless marked]:

* **Leases.** Boundaries every ``lease_s`` seconds (the policy's round, 600 s by default). Lease 0 runs from
  now to the next boundary; lease ``l`` is ``[b_l, b_l+1)``; the program looks ``max_leases`` ahead and
  treats leases beyond that as free.
* **The MILP** (scipy's HiGHS, ``solver="highs"``, or pulp's CBC, ``"cbc"``; at most ``time_limit_s`` per
  solve). Chronus' program counts one GPU type; here it is written per type, as this project's ElasticFlow
  and Dancer are, so that a guarantee on a mixed cluster is one the job's type can keep. For the SLO jobs
  in it (accepted ones and newcomers, earliest deadline first, at most ``max_milp_jobs``), binaries
  ``y_j`` (guaranteed) and ``x_jkl`` (holds its requested GPUs of type ``k`` in lease ``l``):
  ``sum_kl r_jk len_jl x_jkl >= W_j y_j`` (``r_jk``: its rate on type ``k`` at its requested count;
  ``len_jl``: the part of lease ``l`` before its deadline; ``W_j``: its remaining iterations plus one
  restart penalty's worth at its best rate), ``sum_k x_jkl <= 1``, ``sum_j n_j x_jkl <= C_k`` per type and
  lease, the free ``x_jkl`` zero unless ``y_j``; maximise ``sum_j w_j y_j`` minus a tie-break that favours
  early leases. On a single-type cluster this is Chronus' program. Already accepted jobs weigh more than
  all newcomers together, so admitting a job never drops an accepted one. A solve that finds no solution
  in time falls back to a greedy packing of the same model (accepted jobs first, earliest deadline first,
  each in its earliest leases on its fastest type with room).
* **Admission** at arrival: the newcomers join the program over the leases from now on, with the current
  lease's guarantees fixed; those it guarantees are accepted, the others are unaccepted
  (``rejected_jobs="best_effort"``, Chronus' behaviour) or declined (``"drop"``).
* **At each boundary** the program runs over the accepted jobs from now on; the jobs it gives lease 0 are
  *guaranteed* for this lease, on the type it chose. An accepted job it can no longer guarantee becomes
  unaccepted.
* **Order** of the fill: guaranteed jobs (``force``) first, on their type, then unaccepted SLO and
  best-effort jobs before accepted ones not guaranteed this lease (queue priority, as the code's key ranks
  them), then larger *emergence* (remaining run time on the fastest type over the time left to the
  deadline, 0 without one), then earlier submission. Each job gets its requested gang greedily in that
  order with backfilling; jobs without a guarantee take the first type in the cluster's order with room
  (``type_choice="order"``). Inside a lease a running job is never preempted: arrivals and completions
  only start jobs on free GPUs.
* **Placement**: the simulator's ``default`` placer (one server when one has room, else the fewest).

Not implemented: Chronus' local-search placement and its resource turn-off logic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from baselines._common import TYPE_CHOICE_DOC, TYPE_CHOICES, TypeChoice, gang_counts
from baselines._deadline import planning_rate
from hetgym.sim.allocation import Allocation, AllocationBuilder
from hetgym.sim.knob_policy import KnobPolicy
from hetgym.sim.policy import register_policy
from hetgym.sim.registry import Knobs, knob
from hetgym.sim.view import ClusterView, JobView

if TYPE_CHECKING:  # the solvers load when a policy solves, not when the policies are registered
    from scipy import sparse

SOLVERS = ("highs", "cbc")
REJECTED_MODES = ("best_effort", "drop")


@dataclass(frozen=True)
class ChronusKnobs(Knobs):
    """Knobs of :class:`Chronus`."""

    lease_s: float = knob(600.0, low=0.0, low_open=True, doc="lease length in seconds, the policy's round")
    max_leases: int = knob(48, low=1, integer=True, doc="leases the MILP looks ahead")
    max_milp_jobs: int = knob(40, low=1, integer=True, doc="most SLO jobs in one MILP, earliest deadlines first")
    time_limit_s: float = knob(2.0, low=0.0, low_open=True, doc="solver time limit per MILP in seconds")
    solver: str = knob("highs", choices=SOLVERS, doc="``'highs'`` (scipy) or ``'cbc'`` (pulp)")
    rejected_jobs: str = knob(
        "best_effort",
        choices=REJECTED_MODES,
        doc="``'best_effort'`` (unguaranteed newcomers stay, unaccepted) or ``'drop'``",
    )
    type_choice: TypeChoice = knob("order", choices=TYPE_CHOICES, doc=TYPE_CHOICE_DOC)


@dataclass
class LeaseProgram:
    """One MILP instance over jobs, GPU types and leases, and what it needs.

    Attributes:
        job_ids: The SLO jobs in the program.
        num_gpus: ``(J,)`` GPUs each holds in a lease.
        work_iters: ``(J,)`` iterations each still needs.
        rate: ``(J, K)`` iterations/s of each job on each type at its requested count (0: not there).
        length_s: ``(J, L)`` usable seconds of each lease before the job's deadline.
        weight: ``(J,)`` value of guaranteeing each job.
        fixed: ``(J, K, L)`` ``1``/``0`` where ``x_jkl`` is fixed, ``-1`` where free.
        capacity_gpus: ``(K, L)`` (or ``(K,)``, the same in every lease) GPUs of each type free for the
            program in each lease.
    """

    job_ids: list[int]
    num_gpus: np.ndarray
    work_iters: np.ndarray
    rate: np.ndarray
    length_s: np.ndarray
    weight: np.ndarray
    fixed: np.ndarray
    capacity_gpus: np.ndarray


def solve_program(prog: LeaseProgram, solver: str, time_limit_s: float) -> tuple[np.ndarray, np.ndarray]:
    """``(y, x)``: the guaranteed jobs and their ``(J, K, L)`` leases (greedy packing if the solver finds nothing)."""
    from scipy import sparse

    num_j, num_k = prog.rate.shape
    num_l = prog.length_s.shape[1]
    if num_j == 0:
        return np.zeros(0, dtype=bool), np.zeros((0, num_k, num_l), dtype=bool)
    # Variables: y_0..y_{J-1}, then x_jkl in (j, k, l) row-major order.
    nv = num_j + num_j * num_k * num_l
    x_col = num_j + np.arange(num_j * num_k * num_l).reshape(num_j, num_k, num_l)
    eps = 0.5 / (num_j * num_l * num_l + 1.0)
    cost = np.zeros(nv)
    cost[:num_j] = -prog.weight
    cost[num_j:] = eps * np.tile(np.arange(1, num_l + 1, dtype=float), num_j * num_k)
    progress = prog.rate[:, :, None] * prog.length_s[:, None, :]  # iterations per (job, type, lease)
    fixed = prog.fixed.reshape(-1)
    lb, ub = np.zeros(nv), np.ones(nv)
    lb[num_j:][fixed == 1] = 1.0
    ub[num_j:][(fixed == 0) | ((progress.reshape(-1) <= 0) & (fixed != 1))] = 0.0
    r_idx: list[np.ndarray] = []
    c_idx: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    lo: list[np.ndarray] = []
    hi: list[np.ndarray] = []
    row = 0
    for j in range(num_j):
        # Work: sum_kl progress x_jkl >= work_j y_j.
        r_idx.append(np.full(num_k * num_l + 1, row))
        c_idx.append(np.concatenate(([j], x_col[j].reshape(-1))))
        vals.append(np.concatenate(([-prog.work_iters[j]], progress[j].reshape(-1))))
        # Link: the free x_jkl are 0 unless y_j.
        free = x_col[j][prog.fixed[j] != 1]
        r_idx.append(np.full(len(free) + 1, row + 1))
        c_idx.append(np.concatenate(([j], free)))
        vals.append(np.concatenate(([-float(num_k * num_l)], np.ones(len(free)))))
        lo.append(np.array([0.0, -np.inf]))
        hi.append(np.array([np.inf, 0.0]))
        row += 2
    # One type per job and lease.
    for j in range(num_j):
        for ell in range(num_l):
            r_idx.append(np.full(num_k, row))
            c_idx.append(x_col[j, :, ell])
            vals.append(np.ones(num_k))
            row += 1
    lo.append(np.full(num_j * num_l, -np.inf))
    hi.append(np.ones(num_j * num_l))
    # Capacity per type and lease.
    for k in range(num_k):
        for ell in range(num_l):
            r_idx.append(np.full(num_j, row))
            c_idx.append(x_col[:, k, ell])
            vals.append(prog.num_gpus.astype(float))
            row += 1
    lo.append(np.full(num_k * num_l, -np.inf))
    hi.append(_capacity(prog).reshape(-1))
    a = sparse.csr_array((np.concatenate(vals), (np.concatenate(r_idx), np.concatenate(c_idx))), shape=(row, nv))
    solve = _solve_highs if solver == "highs" else _solve_cbc
    values = solve(cost, a, np.concatenate(lo), np.concatenate(hi), lb, ub, time_limit_s)
    if values is None:
        return greedy_program(prog)
    return values[:num_j] > 0.5, values[num_j:].reshape(num_j, num_k, num_l) > 0.5


def _solve_highs(
    cost: np.ndarray,
    a: sparse.csr_array,
    lo: np.ndarray,
    hi: np.ndarray,
    lb: np.ndarray,
    ub: np.ndarray,
    time_limit_s: float,
) -> np.ndarray | None:
    from scipy.optimize import Bounds, LinearConstraint, milp

    res = milp(
        cost,
        integrality=np.ones(len(cost)),
        bounds=Bounds(lb, ub),
        constraints=LinearConstraint(a, lo, hi),
        options={"time_limit": time_limit_s, "disp": False},
    )
    return None if res.x is None else np.asarray(res.x)


def _solve_cbc(
    cost: np.ndarray,
    a: sparse.csr_array,
    lo: np.ndarray,
    hi: np.ndarray,
    lb: np.ndarray,
    ub: np.ndarray,
    time_limit_s: float,
) -> np.ndarray | None:
    import pulp

    prob = pulp.LpProblem("chronus_leases", pulp.LpMinimize)
    v = [pulp.LpVariable(f"v{i}", int(lb[i]), int(ub[i]), pulp.LpBinary) for i in range(len(cost))]
    prob += pulp.lpSum(float(c) * v[i] for i, c in enumerate(cost) if c)
    for r in range(a.shape[0]):
        start, stop = a.indptr[r], a.indptr[r + 1]
        expr = pulp.lpSum(float(c) * v[int(i)] for i, c in zip(a.indices[start:stop], a.data[start:stop], strict=True))
        if math.isfinite(lo[r]):
            prob += expr >= lo[r], f"lo{r}"
        if math.isfinite(hi[r]):
            prob += expr <= hi[r], f"hi{r}"
    prob.solve(pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit_s))
    if prob.sol_status not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        return None
    return np.array([float(var.value() or 0.0) for var in v])


def _capacity(prog: LeaseProgram) -> np.ndarray:
    """``(K, L)`` GPUs of each type free for the program in each lease."""
    num_k, num_l = prog.rate.shape[1], prog.length_s.shape[1]
    cap = np.asarray(prog.capacity_gpus, dtype=float).reshape(num_k, -1)
    return np.broadcast_to(cap, (num_k, num_l))


def greedy_program(prog: LeaseProgram) -> tuple[np.ndarray, np.ndarray]:
    """Guarantee jobs by decreasing weight (ties: the given order), each in its earliest leases on the
    fastest type with room."""
    num_j, num_k = prog.rate.shape
    num_l = prog.length_s.shape[1]
    used = np.zeros((num_k, num_l))
    cap = _capacity(prog)
    y = np.zeros(num_j, dtype=bool)
    x = np.zeros((num_j, num_k, num_l), dtype=bool)
    for j in np.argsort(-prog.weight, kind="stable"):
        mine = np.zeros((num_k, num_l), dtype=bool)
        got = 0.0
        for ell in range(num_l):
            forced = np.flatnonzero(prog.fixed[j, :, ell] == 1)
            if len(forced):
                k = int(forced[0])
            else:
                room = [
                    k
                    for k in np.argsort(-prog.rate[j], kind="stable")
                    if prog.fixed[j, k, ell] != 0
                    and prog.rate[j, k] > 0
                    and used[k, ell] + prog.num_gpus[j] <= cap[k, ell]
                ]
                if not room or prog.length_s[j, ell] <= 0:
                    continue
                k = int(room[0])
            mine[k, ell] = True
            got += prog.rate[j, k] * prog.length_s[j, ell]
            if got >= prog.work_iters[j] * (1.0 - 1e-9):
                break
        if got >= prog.work_iters[j] * (1.0 - 1e-9):
            y[j] = True
            x[j] = mine
            used += mine * prog.num_gpus[j]
    return y, x


@register_policy()
class Chronus(KnobPolicy[ChronusKnobs]):
    """Chronus (Gao et al., SoCC 2021): leases, a MILP guaranteeing SLO jobs, best-effort fill."""

    name = "chronus"
    knobs = ChronusKnobs
    in_default_comparison = False  # a baseline of the papers' studies: name it in --policies
    round_s = 600.0
    keeps_gpus_busy = True  # every job gets its gang greedily in key order, with backfilling

    def _configure(self) -> None:
        self.round_s = float(self.knob_values.lease_s)

    def _reset(self) -> None:
        assert self.cluster is not None
        self._types = self.cluster.gpu_types
        self._capacity = np.array([self.cluster.capacity[t] for t in self._types], dtype=float)
        self._accepted: set[int] = set()
        self._plans: dict[int, dict[int, int]] = {}  # accepted job -> {lease index: type index}
        self._guaranteed: dict[int, str] = {}  # job -> the type of its guarantee in the current lease
        self._lease = -1  # index of the lease the last boundary opened
        self.stats: dict[str, int] = dict.fromkeys(("accepted", "unaccepted", "demoted", "solves"), 0)

    # ------------------------------------------------------------------ planning

    def rates(self, view: ClusterView, job: JobView) -> np.ndarray:
        """``(K,)`` the job's rate on each type at its requested count (0 where not allowed or too small)."""
        out = np.zeros(len(self._types))
        allowed = set(view.allowed_types(job))
        for k, t in enumerate(self._types):
            if t in allowed and view.cluster.capacity[t] >= job.num_gpus:
                out[k] = planning_rate(view.throughput, job.spec, view.cluster, t, job.num_gpus)
        return out

    def emergence(self, view: ClusterView, job: JobView) -> float:
        """Remaining run time on the job's fastest type over the time left to the deadline (0 without one)."""
        if not job.spec.has_deadline:
            return 0.0
        best = float(self.rates(view, job).max(initial=0.0))
        left = job.deadline_s - view.now_s
        if best <= 0 or left <= 0:
            return math.inf
        return (job.remaining_iters / best + view.restart_penalty_s(job)) / left

    def _leases(self, now_s: float) -> tuple[int, np.ndarray]:
        """Index of the lease holding ``now_s`` and the bounds of the leases ahead (the first from now)."""
        first = math.floor(now_s / self.knob_values.lease_s + 1e-9)
        ends = (first + 1 + np.arange(self.knob_values.max_leases)) * self.knob_values.lease_s
        return first, np.concatenate(([now_s], ends))

    def _need(self, view: ClusterView, job: JobView, rate: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, float]:
        """Usable seconds of each lease before the deadline, and the iterations to guarantee in the horizon."""
        length = np.maximum(np.minimum(bounds[1:], job.deadline_s) - bounds[:-1], 0.0)
        beyond_s = max(0.0, job.deadline_s - bounds[-1])  # leases past the horizon count as free
        best = float(rate.max())
        # A running job has paid its restart (or is paying what is left of it); a waiting one will pay one.
        penalty_s = job.penalty_left_s if job.is_running else view.restart_penalty_s(job)
        return length, max(0.0, job.remaining_iters + best * (penalty_s - beyond_s))

    def _residual(self, view: ClusterView, first: int, num_l: int) -> np.ndarray:
        """``(K, L)`` GPUs of each type the cached plans leave free in each lease ahead."""
        capacity = np.repeat(self._capacity[:, None], num_l, axis=1)
        for jid, plan in self._plans.items():
            for m, k in plan.items():
                if 0 <= m - first < num_l:
                    capacity[k, m - first] -= view.job(jid).num_gpus
        return capacity

    def _keep_plans(self, view: ClusterView, first: int, bounds: np.ndarray, at_boundary: bool) -> set[int]:
        """Fit the cached plans to the work left; return the accepted jobs whose plan cannot be made to cover it.

        A plan longer than needed loses its latest leases. A plan that falls short (the horizon moved on, the
        job ran slower than planned) first takes free leases ahead of it, fastest type first, as the MILP's
        capacity allows; only a job still short goes back to the MILP.
        """
        short: set[int] = set()
        num_l = len(bounds) - 1
        for jid in sorted(self._accepted):
            self._plans[jid] = {m: k for m, k in self._plans.get(jid, {}).items() if m >= first}
        residual = self._residual(view, first, num_l)
        for jid in sorted(self._accepted):
            job = view.job(jid)
            plan = self._plans[jid]
            rate = self.rates(view, job)
            length, need = self._need(view, job, rate, bounds)
            gain = {m: rate[k] * length[m - first] for m, k in plan.items() if m - first < num_l}
            total = sum(gain.values())
            if total < need * (1.0 - 1e-9):
                for ell in range(0 if at_boundary else 1, num_l):
                    if first + ell in plan or length[ell] <= 0:
                        continue
                    room = [
                        k for k in np.argsort(-rate, kind="stable") if rate[k] > 0 and residual[k, ell] >= job.num_gpus
                    ]
                    if room:
                        k = int(room[0])
                        plan[first + ell] = k
                        residual[k, ell] -= job.num_gpus
                        gain[first + ell] = rate[k] * length[ell]
                        total += gain[first + ell]
                        if total >= need * (1.0 - 1e-9):
                            break
            if total < need * (1.0 - 1e-9):
                short.add(jid)
                for m, k in self._plans.pop(jid).items():
                    if m - first < num_l:
                        residual[k, m - first] += job.num_gpus
                continue
            for m in sorted(gain, reverse=True):  # release the latest leases it no longer needs
                if m == first or total - gain[m] < need * (1.0 - 1e-9):
                    break
                total -= gain[m]
                residual[plan[m], m - first] += job.num_gpus
                del plan[m]
        return short

    def _program(
        self,
        view: ClusterView,
        jobs: list[JobView],
        weight: dict[int, float],
        first: int,
        bounds: np.ndarray,
        open_now: bool,
    ) -> LeaseProgram:
        num_l, num_k = len(bounds) - 1, len(self._types)
        capacity = self._residual(view, first, num_l)
        runnable = [j for j in jobs if self.rates(view, j).max(initial=0.0) > 0]
        jobs = sorted(runnable, key=lambda j: (j.deadline_s, j.submit_s, j.job_id))[: self.knob_values.max_milp_jobs]
        num_j = len(jobs)
        rate = np.array([self.rates(view, j) for j in jobs]).reshape(num_j, num_k)
        length = np.zeros((num_j, num_l))
        work = np.zeros(num_j)
        fixed = np.full((num_j, num_k, num_l), -1, dtype=np.int64)
        if not open_now:
            fixed[:, :, 0] = 0  # the current lease's guarantees were given at its boundary
        for i, job in enumerate(jobs):
            length[i], work[i] = self._need(view, job, rate[i], bounds)
        return LeaseProgram(
            [j.job_id for j in jobs],
            np.array([j.num_gpus for j in jobs], dtype=float),
            work,
            rate,
            length,
            np.array([weight[j.job_id] for j in jobs]),
            fixed,
            np.maximum(capacity, 0.0),
        )

    # ------------------------------------------------------------------ decisions

    def schedule(self, view: ClusterView) -> Allocation:
        active = view.job_index
        self._accepted &= set(active)
        self._plans = {j: p for j, p in self._plans.items() if j in self._accepted}
        first, bounds = self._leases(view.now_s)
        at_boundary = first != self._lease
        newcomers = {jid for jid in view.arrived if jid in active and active[jid].spec.has_deadline}
        # Accepted jobs keep their cached lease plans (Chronus' cache); only those that fell short of their
        # work are planned again, with the newcomers, in the capacity the others leave.
        short = self._keep_plans(view, first, bounds, at_boundary)
        weight = {j: 1.0 for j in newcomers}
        weight.update({j: 1.0 + len(newcomers) for j in short})
        chosen: set[int] = set()
        if weight:
            prog = self._program(view, [active[j] for j in sorted(weight)], weight, first, bounds, at_boundary)
            if prog.job_ids:
                self.stats["solves"] += 1
                y, x = solve_program(prog, self.knob_values.solver, self.knob_values.time_limit_s)
                for i, jid in enumerate(prog.job_ids):
                    if y[i]:
                        chosen.add(jid)
                        ls, ks = np.nonzero(x[i].T)
                        self._plans[jid] = {first + int(ell): int(k) for ell, k in zip(ls, ks, strict=True)}
        admitted = newcomers & chosen
        self.stats["demoted"] += len(short - chosen)
        self._accepted = (self._accepted - short) | (short & chosen) | admitted
        self.stats["accepted"] += len(admitted)
        self.stats["unaccepted"] += len(newcomers - admitted)
        if at_boundary:
            self._lease = first
            self._guaranteed = {jid: self._types[plan[first]] for jid, plan in self._plans.items() if first in plan}
        else:
            self._guaranteed = {j: t for j, t in self._guaranteed.items() if j in self._accepted}
        rejected = newcomers - admitted if self.knob_values.rejected_jobs == "drop" else set()
        return self._fill(view, at_boundary, rejected)

    def priority(self, view: ClusterView, job: JobView) -> tuple[int, int, float, float]:
        """Chronus' key ``(force, queue priority, emergence, -submit time)``; larger goes first."""
        force = 1 if job.job_id in self._guaranteed else 0
        unaccepted = 0 if job.job_id in self._accepted else 1
        return (force, unaccepted, self.emergence(view, job), -job.submit_s)

    def _fill(self, view: ClusterView, at_boundary: bool, rejected: set[int]) -> Allocation:
        if at_boundary:
            builder = AllocationBuilder(view)
            candidates = [j for j in view.jobs if j.job_id not in rejected]
        else:
            builder = AllocationBuilder.keeping_running(view)  # no preemption inside a lease
            candidates = [j for j in view.waiting if j.job_id not in rejected]
        for jid in rejected:
            builder.reject(jid)
        ordered = sorted(candidates, key=lambda j: (*(-v for v in self.priority(view, j)), j.job_id))
        for job in ordered:
            if not any(builder.free.values()):
                break
            current = job.allocation
            held = self._guaranteed.get(job.job_id)
            if (
                current is not None
                and builder.can_fit(current.as_dict())
                and (held is None or current.counts == ((held, job.num_gpus),))
            ):
                builder.keep(job)
                continue
            if held is not None and builder.free.get(held, 0) >= job.num_gpus:
                builder.assign(job.job_id, {held: job.num_gpus})  # the type of its guarantee
                continue
            counts = gang_counts(view, job, builder.free, job.num_gpus, self.knob_values.type_choice)
            if counts:
                builder.assign(job.job_id, counts)
        return builder.build()
