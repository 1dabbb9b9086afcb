"""The offline deadline ILP: a hand-checked optimum, both solvers, size and time limits, and its
schedule replayed in the simulator."""

from __future__ import annotations

import math

import pytest
from helpers import toy_model

from baselines.optimal import InstanceTooLargeError, OfflineReplay, count_binaries, solve_offline
from hetgym.sim import ClusterSpec, JobSpec, SimConfig, Simulator, make_policy
from hetgym.workloads import WorkloadConfig

NO_PENALTY = SimConfig(restart_penalty_s=0.0)
ONE_SERVER = ClusterSpec.from_inventory("one", {"v100": (1, 2)})


def hand_jobs() -> list[JobSpec]:
    # Toy job "a": 1 it/s per V100, 2 it/s on both. Jobs 0 and 1 each need both GPUs for the whole first
    # slot; job 2 needs one GPU for one slot before 120 s. Only one of 0 and 1 can make it: optimum 2.
    return [
        JobSpec(0, 0.0, "a", 1, 120.0, 1, deadline_s=60.0, max_gpus=2),
        JobSpec(1, 0.0, "a", 1, 120.0, 1, deadline_s=60.0, max_gpus=2),
        JobSpec(2, 0.0, "a", 1, 60.0, 1, deadline_s=120.0, max_gpus=2),
        JobSpec(3, 0.0, "a", 1, 60.0, 1),  # no deadline: ignored
    ]


@pytest.mark.parametrize("solver", ["cbc", "highs"])
def test_hand_checked_optimum(solver: str) -> None:
    if solver == "highs":
        pytest.importorskip("highspy")
    result = solve_offline(ONE_SERVER, hand_jobs(), toy_model(), slot_s=60.0, solver=solver)
    assert result.status == "optimal"
    assert result.num_met == 2
    assert result.num_deadline_jobs == 3
    assert result.upper_bound == pytest.approx(2.0)
    assert 2 in result.met and len(result.met & {0, 1}) == 1
    assert result.dsr == pytest.approx(2 / 3)
    # The schedule is feasible: per-slot capacity, and each met job's work done inside its window.
    usage: dict[int, int] = {}
    for jid in result.met:
        done = 0.0
        for slot, counts in result.schedule[jid].items():
            n = counts["v100"]
            usage[slot] = usage.get(slot, 0) + n
            done += n * 60.0
        assert done >= hand_jobs()[jid].total_iters - 1e-6
    assert max(usage.values()) <= 2


def test_too_large_instance_is_refused_clearly() -> None:
    jobs = hand_jobs()
    assert count_binaries(ONE_SERVER, jobs, toy_model(), slot_s=60.0) == 3 + 2 * 1 + 2 * 1 + 2 * 2
    with pytest.raises(InstanceTooLargeError, match="max_vars"):
        solve_offline(ONE_SERVER, jobs, toy_model(), slot_s=60.0, max_vars=5)
    with pytest.raises(ValueError, match="solver"):
        solve_offline(ONE_SERVER, jobs, toy_model(), solver="gurobi")


def small_instance(seed: int, n: int = 10) -> tuple[ClusterSpec, list[JobSpec]]:
    cluster = ClusterSpec.from_inventory("small", {"v100": (1, 4), "k80": (1, 4)})
    wl = WorkloadConfig(recipe="elasticflow", num_jobs=n * 6, arrival_rate_per_h=4.0, max_gpus_per_job=4)
    jobs = [j for j in wl.build(cluster, seed=seed).jobs if (j.duration_s or 0) <= 2 * 3600][:n]
    return cluster, jobs


def test_time_limit_returns_a_bounded_result() -> None:
    cluster, jobs = small_instance(0, 10)
    result = solve_offline(cluster, jobs, slot_s=60.0, time_limit_s=0.5)
    assert result.status in ("optimal", "time_limit", "not_solved")
    assert result.upper_bound >= result.num_met
    assert math.isfinite(result.upper_bound)


def test_replaying_the_optimum_meets_the_same_deadlines() -> None:
    cluster, jobs = small_instance(1, 8)
    result = solve_offline(cluster, jobs, slot_s=60.0)
    assert result.status == "optimal" and result.num_met > 0
    # One server per type: the simulator's rates are the ILP's (no multi-server slowdown).
    replay = Simulator(cluster, jobs, config=NO_PENALTY).run(OfflineReplay(result))
    met = set(replay.jobs.loc[replay.jobs["met_deadline"], "job_id"])
    assert met == set(result.met)


def test_online_policies_stay_within_the_bound() -> None:
    cluster, jobs = small_instance(2, 10)
    result = solve_offline(cluster, jobs, slot_s=60.0)
    for name in ("dancer", "elasticflow", "edf-admission"):
        online = Simulator(cluster, jobs, config=NO_PENALTY).run(make_policy(name))
        assert int(online.jobs["met_deadline"].sum()) <= result.upper_bound
