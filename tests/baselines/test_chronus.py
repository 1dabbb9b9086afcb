"""Hand-computed scenarios for Chronus (leases, a MILP guaranteeing SLO jobs) on the toy table.

Toy rates (tests/helpers.py): job type ``a`` runs at 1 it/s per V100 and 0.5 it/s per K80, linearly.
Restart penalties are 0; leases are 100 s.
"""

from __future__ import annotations

import numpy as np
import pytest

from baselines.chronus import LeaseProgram, greedy_program, solve_program
from hetgym.sim import ClusterSpec, JobSpec, SimConfig, SimulationResult, Simulator, ThroughputModel, make_policy
from hetgym.sim.registry import KnobError

NO_PENALTY = SimConfig(restart_penalty_s=0.0)


def run(policy: str, jobs: list[JobSpec], cluster: ClusterSpec, toy: ThroughputModel, **kw: object) -> SimulationResult:
    return Simulator(cluster, jobs, config=NO_PENALTY, throughput=toy).run(make_policy(policy, **kw))


def col(result: SimulationResult, column: str) -> dict[int, object]:
    return result.jobs.set_index("job_id")[column].to_dict()


#: Four 2-GPU jobs of 100 s each on one 2-GPU server: one job per lease.
LEASE_JOBS = [
    JobSpec(0, 0.0, "a", 1, 200.0, 2, deadline_s=300.0),
    JobSpec(1, 0.0, "a", 1, 200.0, 2, deadline_s=150.0),
    JobSpec(2, 0.0, "a", 1, 200.0, 2, deadline_s=200.0),
    JobSpec(3, 10.0, "a", 1, 200.0, 2, deadline_s=200.0),
]


@pytest.mark.parametrize("solver", ["highs", "cbc"])
def test_the_milp_guarantees_the_jobs_that_fit_and_keeps_earlier_guarantees(toy: ThroughputModel, solver: str) -> None:
    # At t=0 the only schedule guaranteeing jobs 0-2 is job 1 in lease [0,100) (due 150), job 2 in
    # [100,200), job 0 in [200,300). Job 3 (t=10, due 200) needs [100,200) too: the accepted job 2 weighs
    # more, so job 3 is unaccepted and runs last, after job 0 (300-400), late. DSR 3/4.
    cluster = ClusterSpec.from_inventory("1x2", {"v100": (1, 2)})
    r = run("chronus", LEASE_JOBS, cluster, toy, lease_s=100.0, solver=solver)
    assert col(r, "finish_s") == {
        0: pytest.approx(300.0),
        1: pytest.approx(100.0),
        2: pytest.approx(200.0),
        3: pytest.approx(400.0),
    }
    assert r.metrics["dsr"] == pytest.approx(0.75)
    # EDF serves jobs 2 and 3 (both due 200) before job 0 and so misses two: DSR 2/4.
    assert run("edf", LEASE_JOBS, cluster, toy).metrics["dsr"] == pytest.approx(0.5)


def test_dropping_the_unaccepted_newcomer(toy: ThroughputModel) -> None:
    cluster = ClusterSpec.from_inventory("1x2", {"v100": (1, 2)})
    r = run("chronus", LEASE_JOBS, cluster, toy, lease_s=100.0, rejected_jobs="drop")
    assert col(r, "status") == {0: "completed", 1: "completed", 2: "completed", 3: "rejected"}
    assert r.metrics["dsr"] == pytest.approx(0.75)


def test_a_guarantee_is_on_the_type_the_milp_chose(toy: ThroughputModel) -> None:
    # K80 first in the cluster's order. Job 0 (100 iterations, due 150) can only be guaranteed on the V100
    # (1 it/s: 100 s; the K80's 0.5 it/s needs 200 s): it runs there and ends at 100. Job 1 (no deadline,
    # best effort) takes the first type with room, the K80: 0.5 it/s, ends at 200.
    cluster = ClusterSpec.from_inventory("k80-first", {"k80": (1, 1), "v100": (1, 1)})
    jobs = [JobSpec(0, 0.0, "a", 1, 100.0, 1, deadline_s=150.0), JobSpec(1, 0.0, "a", 1, 100.0, 1)]
    r = run("chronus", jobs, cluster, toy, lease_s=100.0)
    assert col(r, "finish_s") == {0: pytest.approx(100.0), 1: pytest.approx(200.0)}
    # On K80s alone no lease plan meets the deadline: declined with "drop", run late when kept.
    slow = ClusterSpec.from_inventory("k80", {"k80": (1, 1)})
    one = [jobs[0]]
    assert col(run("chronus", one, slow, toy, lease_s=100.0, rejected_jobs="drop"), "status") == {0: "rejected"}
    assert col(run("chronus", one, slow, toy, lease_s=100.0), "finish_s") == {0: pytest.approx(200.0)}


def test_the_milp_beats_earliest_lease_greedy_packing() -> None:
    # One type, 2 GPUs per lease, two leases of 100 s, 1 it/s. Job A (2 GPUs, 100 it) may use either
    # lease; jobs B and C (1 GPU, 100 it each) only lease 0. Greedy in order A, B, C puts A in lease 0 and
    # guarantees only A; the MILP puts A in lease 1 and guarantees all three.
    prog = LeaseProgram(
        job_ids=[0, 1, 2],
        num_gpus=np.array([2.0, 1.0, 1.0]),
        work_iters=np.array([100.0, 100.0, 100.0]),
        rate=np.ones((3, 1)),
        length_s=np.array([[100.0, 100.0], [100.0, 0.0], [100.0, 0.0]]),
        weight=np.array([3.0, 2.0, 1.0]),
        fixed=np.full((3, 1, 2), -1),
        capacity_gpus=np.array([2.0]),
    )
    y, x = greedy_program(prog)
    assert y.tolist() == [True, False, False]
    for solver in ("highs", "cbc"):
        y, x = solve_program(prog, solver, time_limit_s=5.0)
        assert y.tolist() == [True, True, True]
        assert x[:, 0, :].astype(int).tolist() == [[0, 1], [1, 0], [1, 0]]


def test_bad_knobs_are_refused() -> None:
    with pytest.raises(KnobError, match="solver"):
        make_policy("chronus", solver="gurobi")
    with pytest.raises(KnobError, match="time_limit_s"):
        make_policy("chronus", time_limit_s=0)
