"""Hand-computed scenarios for the event engine: progress, penalties, modes, ticks, rejection."""

from __future__ import annotations

import math

import pytest
from helpers import Scripted

from hetgym.sim import (
    Allocation,
    ClusterSpec,
    HetgymError,
    InvalidAllocationError,
    InvalidJobError,
    JobAllocation,
    JobSpec,
    SimConfig,
    Simulator,
    ThroughputModel,
    make_policy,
)

NO_PENALTY = SimConfig(restart_penalty_s=0.0)


def give(counts: dict[int, dict[str, int]], mode: str = "sync") -> Scripted:
    """A policy giving each listed active job fixed counts."""
    return Scripted(
        lambda v: Allocation({j: JobAllocation(c, mode=mode) for j, c in counts.items() if j in v.job_index})  # type: ignore[arg-type]
    )


def finish(result, job_id: int) -> float:  # type: ignore[no-untyped-def]
    return float(result.jobs.set_index("job_id").loc[job_id, "finish_s"])


def test_single_job_runs_at_its_rate(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    jobs = [JobSpec(0, 10.0, "a", 1, 100.0, 2)]
    r = Simulator(two_by_two, jobs, config=NO_PENALTY, throughput=toy).run(give({0: {"v100": 2}}))
    assert finish(r, 0) == pytest.approx(10.0 + 100.0 / 2.0)
    assert r.metrics["jct_mean_s"] == pytest.approx(50.0)
    assert r.metrics["num_completed"] == 1


def test_restart_penalty_on_start_and_on_resize(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    jobs = [JobSpec(0, 0.0, "a", 1, 100.0, 2)]

    def decide(v):  # type: ignore[no-untyped-def]
        # 2 V100 until t=360 (the first tick), then 1 V100.
        n = 2 if v.now_s < 360 else 1
        return Allocation({0: JobAllocation({"v100": n})})

    cfg = SimConfig(restart_penalty_s=30.0, round_s=360.0)
    r = Simulator(two_by_two, jobs, config=cfg, throughput=toy).run(Scripted(decide))
    # Start at 0 pays 30 s, then 2 it/s: done at 30 + 50 = 80 s, before the first tick.
    assert finish(r, 0) == pytest.approx(80.0)

    jobs = [JobSpec(0, 0.0, "a", 1, 1000.0, 2)]
    r = Simulator(two_by_two, jobs, config=cfg, throughput=toy).run(Scripted(decide))
    # 0-30 s penalty, 30-360 s at 2 it/s = 660 iters; resize at 360 pays 30 s; 340 iters at 1 it/s.
    assert finish(r, 0) == pytest.approx(360.0 + 30.0 + 340.0)
    assert int(r.jobs.loc[0, "num_reconfigs"]) == 1


def test_first_start_can_be_free(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    cfg = SimConfig(restart_penalty_s=30.0, charge_first_start=False)
    jobs = [JobSpec(0, 0.0, "a", 1, 100.0, 2)]
    r = Simulator(two_by_two, jobs, config=cfg, throughput=toy).run(give({0: {"v100": 2}}))
    assert finish(r, 0) == pytest.approx(50.0)


def test_per_type_penalty_override(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    cfg = SimConfig(restart_penalty_s=30.0, restart_penalty_by_type={"a": 5.0})
    jobs = [JobSpec(0, 0.0, "a", 1, 100.0, 2)]
    r = Simulator(two_by_two, jobs, config=cfg, throughput=toy).run(give({0: {"v100": 2}}))
    assert finish(r, 0) == pytest.approx(55.0)


@pytest.mark.parametrize(
    ("mode", "rate"),
    [("sync", 2.0 * 0.5), ("proportional", 3.0 * 0.5), ("fork", 4.0)],
)
def test_mixed_type_execution_modes(two_by_two: ClusterSpec, toy: ThroughputModel, mode: str, rate: float) -> None:
    # 2 V100 + 2 K80 (two servers). sync: K80 at 4 GPUs bounds (2.0) x factor 0.5. proportional:
    # (4.0 + 2.0) / 2 x 0.5. fork: copies sum 2.0 + 1.0 = 3.0 ... plus nothing lost: see below.
    jobs = [JobSpec(0, 0.0, "a", 1, 120.0, 4)]
    r = Simulator(two_by_two, jobs, config=NO_PENALTY, throughput=toy).run(give({0: {"v100": 2, "k80": 2}}, mode))
    expected_rate = 3.0 if mode == "fork" else rate
    assert finish(r, 0) == pytest.approx(120.0 / expected_rate)


def test_fork_aggregation_overhead_uses_model_bytes(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    # 45 GB over a 12.5 GB/s NIC = 3.6 s per 360 s round: 1% less progress with two copies.
    jobs = [JobSpec(0, 0.0, "a", 1, 120.0, 4, model_bytes=45e9)]
    cfg = SimConfig(restart_penalty_s=0.0, round_s=360.0)
    r = Simulator(two_by_two, jobs, config=cfg, throughput=toy).run(give({0: {"v100": 2, "k80": 2}}, "fork"))
    assert finish(r, 0) == pytest.approx(120.0 / (3.0 * 0.99))


def test_multi_server_job_pays_the_consolidation_factor(toy: ThroughputModel) -> None:
    cluster = ClusterSpec.from_inventory("4x1", {"v100": (4, 1)})
    jobs = [JobSpec(0, 0.0, "a", 1, 100.0, 4)]
    r = Simulator(cluster, jobs, config=NO_PENALTY, throughput=toy).run(give({0: {"v100": 4}}))
    assert finish(r, 0) == pytest.approx(100.0 / (4.0 * 0.5))


def test_ticks_happen_only_while_jobs_are_active(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    jobs = [JobSpec(0, 0.0, "a", 1, 1000.0, 2), JobSpec(1, 100_000.0, "a", 1, 10.0, 1)]
    policy = give({0: {"v100": 2}, 1: {"v100": 1}})
    cfg = SimConfig(restart_penalty_s=0.0, round_s=100.0)
    r = Simulator(two_by_two, jobs, config=cfg, throughput=toy).run(policy)
    times = [v.now_s for v in policy.views]
    # Job 0: arrival at 0, ticks at 100..400, done at 500 (no epoch: nothing left to decide);
    # idle until job 1 arrives at 100000 and completes 10 s later, before the next tick.
    assert times == [0.0, 100.0, 200.0, 300.0, 400.0, 100_000.0]
    assert [v.is_tick for v in policy.views] == [False, True, True, True, True, False]
    assert r.num_epochs == 6


def test_same_time_events_share_one_epoch_in_fixed_order(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    # Job 0 completes exactly at t=100 when job 1 arrives and a round ticks.
    jobs = [JobSpec(0, 0.0, "a", 1, 200.0, 2), JobSpec(1, 100.0, "a", 1, 10.0, 1)]
    policy = give({0: {"v100": 2}, 1: {"v100": 1}})
    Simulator(two_by_two, jobs, config=SimConfig(restart_penalty_s=0.0, round_s=100.0), throughput=toy).run(policy)
    v = policy.views[1]
    assert v.now_s == 100.0 and v.completed == (0,) and v.arrived == (1,) and v.is_tick
    assert [j.job_id for j in v.jobs] == [1]


def test_rejection_counts_as_a_deadline_miss(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    jobs = [JobSpec(0, 0.0, "a", 1, 100.0, 2, deadline_s=1000.0), JobSpec(1, 0.0, "a", 1, 100.0, 2, deadline_s=1e6)]
    policy = Scripted(
        lambda v: Allocation(
            {0: JobAllocation({"v100": 2})} if 0 in v.job_index else {},
            reject=frozenset({1}) if 1 in v.job_index else frozenset(),
        )
    )
    r = Simulator(two_by_two, jobs, config=NO_PENALTY, throughput=toy).run(policy)
    assert r.metrics["dsr"] == pytest.approx(0.5)
    assert r.metrics["num_rejected"] == 1
    assert r.jobs.set_index("job_id").loc[1, "status"] == "rejected"


def test_missed_deadline(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    jobs = [JobSpec(0, 0.0, "a", 1, 100.0, 1, deadline_s=99.0)]
    r = Simulator(two_by_two, jobs, config=NO_PENALTY, throughput=toy).run(give({0: {"v100": 1}}))
    assert r.metrics["dsr"] == 0.0


def test_invalid_allocation_changes_nothing(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    jobs = [JobSpec(0, 0.0, "a", 1, 100.0, 2), JobSpec(1, 0.0, "a", 1, 100.0, 4)]
    sim = Simulator(two_by_two, jobs, config=NO_PENALTY, throughput=toy)
    view = sim.reset()
    assert view is not None
    bad = [
        (Allocation({0: JobAllocation({"v100": 2}), 1: JobAllocation({"v100": 4})}), "over capacity on v100"),
        (Allocation({7: JobAllocation({"v100": 1})}), "unknown job 7"),
        (Allocation({0: JobAllocation({"h100": 1})}), "unknown GPU type 'h100'"),
        (Allocation({0: JobAllocation({"v100": 2}, servers={2: 2})}), "servers"),
        (Allocation({0: JobAllocation({"v100": 3}, servers={0: 3})}), "over capacity on server 0"),
        (Allocation({0: JobAllocation({"v100": 1})}, reject=frozenset({0})), "both"),
    ]
    for allocation, match in bad:
        with pytest.raises(InvalidAllocationError, match=match):
            sim.step(allocation)
    # Still at the first epoch, nothing running; a valid decision then works.
    assert sim.now_s == 0.0 and all(not j.is_running for j in view.jobs)
    nxt = sim.step(Allocation({0: JobAllocation({"v100": 2})}))
    assert nxt is not None and nxt.now_s == pytest.approx(50.0) and nxt.completed == (0,)


def test_policy_must_return_an_allocation(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    sim = Simulator(two_by_two, [JobSpec(0, 0.0, "a", 1, 1.0, 1)], throughput=toy)
    with pytest.raises(InvalidAllocationError, match="must return an Allocation"):
        sim.run(Scripted(lambda v: {0: {"v100": 1}}))


def test_explicit_placement_and_sticky_default_placement(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    jobs = [JobSpec(0, 0.0, "a", 1, 1e6, 1), JobSpec(1, 50.0, "a", 1, 1e6, 1)]

    def decide(v):  # type: ignore[no-untyped-def]
        alloc = {0: JobAllocation({"v100": 1}, servers={1: 1})}
        if 1 in v.job_index:
            alloc[1] = JobAllocation({"v100": 1})
        return Allocation(alloc)

    sim = Simulator(two_by_two, jobs, config=NO_PENALTY, throughput=toy)
    view = sim.reset()
    view = sim.step(decide(view))
    assert view is not None
    assert view.job(0).groups[0].server_id == 1
    view = sim.step(decide(view))
    # Best fit puts job 1 on server 1 (1 free GPU) rather than opening server 0.
    assert view is not None and view.job(1).groups[0].server_id == 1
    first_groups = view.job(1).groups
    view = sim.step(decide(view))
    assert view is not None and view.job(1).groups == first_groups and view.job(1).num_reconfigs == 0


def test_stall_ends_a_run_that_cannot_progress(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    jobs = [JobSpec(0, 0.0, "a", 1, 100.0, 2)]
    r = Simulator(two_by_two, jobs, config=SimConfig(stall_epochs=5), throughput=toy).run(
        Scripted(lambda v: Allocation())
    )
    # The fifth consecutive epoch without progress ends the run before the policy is asked again.
    assert r.stalled and r.metrics["num_unfinished"] == 1 and r.num_epochs == 4


def test_time_cap_marks_active_jobs_unfinished(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    jobs = [JobSpec(0, 0.0, "a", 1, 1000.0, 1, deadline_s=2000.0), JobSpec(1, 5000.0, "a", 1, 1.0, 1)]
    cfg = SimConfig(restart_penalty_s=0.0, max_time_s=500.0)
    r = Simulator(two_by_two, jobs, config=cfg, throughput=toy).run(give({0: {"v100": 1}, 1: {"v100": 1}}))
    row = r.jobs.set_index("job_id").loc[0]
    assert row["status"] == "unfinished" and row["remaining_iters"] == pytest.approx(500.0)
    assert r.metrics["num_not_arrived"] == 1 and r.metrics["dsr"] == 0.0


def test_bad_workloads_are_rejected_up_front(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    with pytest.raises(InvalidJobError, match="job_type"):
        Simulator(two_by_two, [JobSpec(0, 0.0, "nope", 1, 1.0, 1)], throughput=toy)
    with pytest.raises(InvalidJobError, match="duplicate"):
        Simulator(two_by_two, [JobSpec(0, 0.0, "a", 1, 1.0, 1), JobSpec(0, 1.0, "a", 1, 1.0, 1)], throughput=toy)
    with pytest.raises(InvalidJobError, match="may only run on"):
        Simulator(two_by_two, [JobSpec(0, 0.0, "a", 1, 1.0, 1, gpu_types=("a100",))], throughput=toy)
    with pytest.raises(HetgymError, match="reset"):
        Simulator(two_by_two, [JobSpec(0, 0.0, "a", 1, 1.0, 1)], throughput=toy).step(Allocation())


def test_utilisation_and_makespan(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    jobs = [JobSpec(0, 0.0, "a", 1, 100.0, 4)]
    r = Simulator(two_by_two, jobs, config=NO_PENALTY, throughput=toy).run(give({0: {"v100": 2, "k80": 2}}, "fork"))
    t = 100.0 / 3.0
    assert r.metrics["makespan_s"] == pytest.approx(t)
    assert r.metrics["util_v100"] == pytest.approx(0.5) and r.metrics["util_k80"] == pytest.approx(0.5)
    assert r.metrics["utilisation"] == pytest.approx(0.5)
    assert math.isfinite(r.metrics["decision_ms_p50"])


def test_jobs_without_deadlines_are_excluded_from_dsr(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    jobs = [JobSpec(0, 0.0, "a", 1, 10.0, 1), JobSpec(1, 0.0, "a", 1, 10.0, 1, deadline_s=5.0, best_effort=True)]
    r = Simulator(two_by_two, jobs, config=NO_PENALTY, throughput=toy).run(give({0: {"v100": 1}, 1: {"v100": 1}}))
    assert r.metrics["num_with_deadline"] == 0 and math.isnan(r.metrics["dsr"])


def test_policies_without_ticks_schedule_the_same_with_ticks() -> None:
    """Every registered policy that declares ``uses_ticks = False`` gives the same schedule either way."""
    from hetgym.sim import list_policies, policy_class
    from hetgym.workloads import get_scenario

    scenario = get_scenario("tiny")
    jobs = scenario.workload.build(scenario.cluster, seed=1)
    tickless = [name for name in list_policies() if not policy_class(name).uses_ticks]
    assert {"fifo", "srtf", "edf"} <= set(tickless)
    for name in tickless:
        runs = [Simulator(scenario.cluster, jobs).run(make_policy(name), ticks=t) for t in (False, True)]
        cols = ["job_id", "status", "start_s", "finish_s", "num_reconfigs", "attained_gpu_s"]
        assert runs[0].jobs[cols].equals(runs[1].jobs[cols]), name
        assert runs[0].num_epochs < runs[1].num_epochs
