"""The offline optimum of the deadline problem: Dancer's allocation ILP (reconstructed), whole trace known.

Time is cut into slots of ``slot_s`` seconds. Variables: ``x_i`` (job ``i`` meets its deadline) and
``y_i(t, o)`` (job ``i`` runs configuration ``o``, a power-of-two count of one GPU type, in slot ``t``)::

    max   sum_i x_i
    s.t.  sum_{t, o} y_i(t, o) * rate_i(o) * len_i(t)  >=  W_i * x_i      (work done by the deadline)
          sum_o y_i(t, o) <= 1                            for all i, t    (one configuration per slot)
          sum_{i, o} count_k(o) * y_i(t, o) <= C_k        for all k, t    (per-type capacity)

``len_i(t)`` is the part of slot ``t`` inside ``[submit_i, deadline_i]``, so partial first and last
slots count pro rata. Rates are the planning rates of :mod:`baselines._deadline` (one server, or the
multi-server factor beyond one server), the same ones Dancer and ElasticFlow plan with. Placement,
restart penalties and mid-slot changes are ignored, so on the same slots the ILP bounds what an online
policy can achieve in the simulator (an online policy can only beat it by changing configurations
inside a slot). It sees the whole trace: it is a yardstick, not a policy.

Solved with pulp: CBC (bundled) by default, HiGHS (``solver="highs"``, needs ``highspy``). Instances
with more than ``max_vars`` binaries raise :class:`InstanceTooLargeError`; a time limit returns the best
schedule found with ``status="time_limit"`` and the LP-relaxation bound. :class:`OfflineReplay` plays a
solved schedule in the simulator (it knows the future by construction).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from baselines._deadline import JobOptions, job_options
from hetgym.sim.allocation import Allocation, JobAllocation
from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.errors import HetgymError
from hetgym.sim.job import JobSpec
from hetgym.sim.policy import Policy
from hetgym.sim.throughput import ThroughputModel
from hetgym.sim.view import ClusterView

if TYPE_CHECKING:  # the solvers load when a policy solves, not when the policies are registered
    import pulp

SOLVERS = ("cbc", "highs")


class InstanceTooLargeError(HetgymError, ValueError):
    """The ILP would have more binary variables than allowed."""


@dataclass(frozen=True)
class OfflineResult:
    """The offline optimum (or the best schedule found within the time limit).

    Attributes:
        status: ``optimal``, ``time_limit`` (a feasible schedule, optimality not proven) or ``not_solved``
            (no schedule found in time; ``num_met`` is then 0, the trivial schedule).
        num_met: Jobs the schedule completes by their deadlines.
        num_deadline_jobs: Jobs with a deadline (the DSR denominator).
        upper_bound: An upper bound on ``num_met`` (the LP relaxation, floored), or ``num_met`` when
            optimal and the bound was not computed.
        met: Ids of the jobs meeting their deadlines.
        schedule: ``{job_id: {slot: {gpu_type: n}}}`` for the jobs in ``met``.
        slot_s: Slot length.
        solver: Solver used.
        solve_s: Wall time of the solve.
        num_binaries: Binary variables of the ILP.
    """

    status: str
    num_met: int
    num_deadline_jobs: int
    upper_bound: float
    met: frozenset[int]
    schedule: Mapping[int, Mapping[int, Mapping[str, int]]] = field(repr=False)
    slot_s: float
    solver: str
    solve_s: float
    num_binaries: int

    @property
    def dsr(self) -> float:
        """Deadline satisfactory ratio of the schedule (1.0 when no job has a deadline)."""
        return self.num_met / self.num_deadline_jobs if self.num_deadline_jobs else 1.0

    @property
    def dsr_upper_bound(self) -> float:
        """Upper bound on the DSR of any schedule."""
        return min(1.0, self.upper_bound / self.num_deadline_jobs) if self.num_deadline_jobs else 1.0


def _windows(spec: JobSpec, slot_s: float) -> list[tuple[int, float]]:
    """``(slot, seconds of the slot inside [submit, deadline])`` for every slot the job can use."""
    first = math.floor(spec.submit_s / slot_s + 1e-9)
    last = math.ceil(spec.deadline_s / slot_s - 1e-9) - 1
    out = []
    for t in range(first, last + 1):
        length = min((t + 1) * slot_s, spec.deadline_s) - max(t * slot_s, spec.submit_s)
        if length > 1e-9:
            out.append((t, length))
    return out


def count_binaries(
    cluster: ClusterSpec,
    jobs: Iterable[JobSpec],
    throughput: ThroughputModel | None = None,
    slot_s: float = 60.0,
    max_count: int | None = None,
) -> int:
    """Binary variables the ILP would have (to size an instance before solving)."""
    throughput = throughput or ThroughputModel.default()
    total = 0
    for spec in jobs:
        if spec.has_deadline:
            opts = job_options(throughput, spec, cluster, max_count=max_count)
            total += 1 + len(_windows(spec, slot_s)) * len(opts)
    return total


def solve_offline(
    cluster: ClusterSpec,
    jobs: Iterable[JobSpec],
    throughput: ThroughputModel | None = None,
    slot_s: float = 60.0,
    *,
    solver: str = "cbc",
    time_limit_s: float = 60.0,
    max_vars: int = 60_000,
    max_count: int | None = None,
    lp_bound: bool = True,
    msg: bool = False,
) -> OfflineResult:
    """Solve the offline ILP: the most jobs that can meet their deadlines, knowing the whole trace.

    Args:
        cluster: The cluster.
        jobs: The whole trace (jobs without a deadline, or best-effort ones, are ignored).
        throughput: Throughput model (default: the embedded table).
        slot_s: Slot length in seconds.
        solver: ``"cbc"`` (default) or ``"highs"`` (requires ``highspy``).
        time_limit_s: Solver time limit; on expiry the best schedule found is returned.
        max_vars: Refuse instances with more binaries (raise :class:`InstanceTooLargeError`).
        max_count: Cap on any job's GPU count.
        lp_bound: Also solve the LP relaxation for an upper bound (always done on a time limit).
        msg: Show the solver's log.

    Raises:
        InstanceTooLargeError: More than ``max_vars`` binaries.
        ValueError: Bad ``slot_s`` or ``solver``, or HiGHS requested but not installed.
    """
    if not slot_s > 0:
        raise ValueError(f"slot_s={slot_s}; give a positive slot length in seconds")
    if solver not in SOLVERS:
        raise ValueError(f"solver={solver!r}; use one of {SOLVERS}")
    throughput = throughput or ThroughputModel.default()
    specs = [s for s in jobs if s.has_deadline]
    types = cluster.gpu_types
    options: dict[int, JobOptions] = {}
    windows: dict[int, list[tuple[int, float]]] = {}
    num_bin = 0
    for spec in specs:
        options[spec.job_id] = job_options(throughput, spec, cluster, max_count=max_count)
        windows[spec.job_id] = _windows(spec, slot_s)
        num_bin += 1 + len(windows[spec.job_id]) * len(options[spec.job_id])
    if num_bin > max_vars:
        raise InstanceTooLargeError(
            f"the offline ILP would have {num_bin} binary variables, more than max_vars={max_vars}: "
            f"use fewer or shorter jobs, a longer slot (slot_s={slot_s:g} now), or raise max_vars"
        )
    started = time.perf_counter()
    status, chosen, objective = _solve(specs, options, windows, cluster, types, solver, time_limit_s, msg, False)
    bound = float(objective)
    if lp_bound or status != "optimal":
        _, _, relaxed = _solve(specs, options, windows, cluster, types, solver, time_limit_s, msg, True)
        bound = float(math.floor(relaxed + 1e-6))
        if status == "optimal":
            bound = min(bound, float(objective)) if objective >= bound else bound
    met = frozenset(j for j in chosen)
    schedule = {jid: dict(chosen[jid]) for jid in met}
    return OfflineResult(
        status=status,
        num_met=len(met),
        num_deadline_jobs=len(specs),
        upper_bound=max(bound, float(len(met))),
        met=met,
        schedule=schedule,
        slot_s=slot_s,
        solver=solver,
        solve_s=time.perf_counter() - started,
        num_binaries=num_bin,
    )


def _solve(
    specs: list[JobSpec],
    options: Mapping[int, JobOptions],
    windows: Mapping[int, list[tuple[int, float]]],
    cluster: ClusterSpec,
    types: tuple[str, ...],
    solver: str,
    time_limit_s: float,
    msg: bool,
    relax: bool,
) -> tuple[str, dict[int, dict[int, dict[str, int]]], float]:
    """Build and solve the ILP (or its LP relaxation); return status, schedules of met jobs, objective."""
    import pulp

    cat = "Continuous" if relax else "Binary"
    prob = pulp.LpProblem("offline_deadlines", pulp.LpMaximize)
    x = {s.job_id: pulp.LpVariable(f"x_{s.job_id}", 0, 1, cat) for s in specs}
    y: dict[tuple[int, int, int], pulp.LpVariable] = {}
    usage: dict[tuple[str, int], list[tuple[int, pulp.LpVariable]]] = {}
    for spec in specs:
        jid = spec.job_id
        opts = options[jid]
        work_terms = []
        for t, length in windows[jid]:
            slot_vars = []
            for o in range(len(opts)):
                var = pulp.LpVariable(f"y_{jid}_{t}_{o}", 0, 1, cat)
                y[(jid, t, o)] = var
                slot_vars.append(var)
                work_terms.append((var, float(opts.rates[o]) * length))
                for k, n in opts.as_dict(o).items():
                    usage.setdefault((k, t), []).append((n, var))
            if slot_vars:
                prob += pulp.lpSum(slot_vars) <= 1, f"one_{jid}_{t}"
        prob += (
            pulp.LpAffineExpression(work_terms) >= float(spec.total_iters) * x[jid],
            f"work_{jid}",
        )
    for (k, t), terms in usage.items():
        if sum(n for n, _ in terms) > cluster.capacity[k]:
            prob += pulp.LpAffineExpression([(v, n) for n, v in terms]) <= cluster.capacity[k], f"cap_{k}_{t}"
    prob += pulp.lpSum(x.values())
    if not specs:
        return "optimal", {}, 0.0
    prob.solve(_solver(solver, time_limit_s, msg))
    sol_status = prob.sol_status
    if sol_status == pulp.LpSolutionOptimal:
        status = "optimal"
    elif sol_status == pulp.LpSolutionIntegerFeasible:
        status = "time_limit"
    else:
        status = "not_solved"
    objective = float(pulp.value(prob.objective) or 0.0) if status != "not_solved" else 0.0
    chosen: dict[int, dict[int, dict[str, int]]] = {}
    if relax or status == "not_solved":
        return status, chosen, objective
    for spec in specs:
        jid = spec.job_id
        if (x[jid].value() or 0.0) < 0.5:
            continue
        slots: dict[int, dict[str, int]] = {}
        for t, _ in windows[jid]:
            for o in range(len(options[jid])):
                if (y[(jid, t, o)].value() or 0.0) > 0.5:
                    slots[t] = options[jid].as_dict(o)
        chosen[jid] = slots
    return status, chosen, float(len(chosen))


def _solver(name: str, time_limit_s: float, msg: bool) -> pulp.LpSolver:
    import pulp

    if name == "highs":
        highs = pulp.HiGHS(msg=msg, timeLimit=time_limit_s)
        if not highs.available():
            raise ValueError("solver='highs' needs the highspy package: pip install highspy (or use solver='cbc')")
        return highs
    return pulp.PULP_CBC_CMD(msg=msg, timeLimit=time_limit_s)


class OfflineReplay(Policy):
    """Plays an :class:`OfflineResult` in the simulator. It knows the future: a yardstick, not a policy.

    At every epoch each job in ``result.met`` gets the configuration the ILP chose for the current slot;
    every other deadline job is rejected on arrival. Use ``SimConfig(round_s=result.slot_s)`` or leave the
    round length to this policy (it sets ``round_s`` to the ILP's slot) so decisions fall on slot
    boundaries. Not registered under a name: it needs the solved trace.
    """

    name = "offline-replay"

    def __init__(self, result: OfflineResult) -> None:
        super().__init__()
        self.result = result
        self.round_s = result.slot_s

    def schedule(self, view: ClusterView) -> Allocation:
        slot = math.floor(view.now_s / self.result.slot_s + 1e-9)
        jobs = {}
        for job in view.jobs:
            counts = self.result.schedule.get(job.job_id, {}).get(slot)
            if counts:
                jobs[job.job_id] = JobAllocation(counts, mode="sync")
        reject = frozenset(j for j in view.arrived if view.job(j).spec.has_deadline and j not in self.result.met)
        return Allocation(jobs, reject)
