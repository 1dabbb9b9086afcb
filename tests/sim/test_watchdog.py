"""The engine's watchdog and the load-time checks: no run loops forever, and no job that can never run
(too much work, too many GPUs) is simulated silently."""

from __future__ import annotations

import math
import time

import pytest

from hetgym.sim import (
    Allocation,
    ClusterSpec,
    InvalidJobError,
    JobAllocation,
    JobSpec,
    JobStatus,
    SimConfig,
    Simulator,
    ThroughputModel,
    make_policy,
)
from hetgym.sim.view import ClusterView
from tests.helpers import Scripted


def _alternating(view: ClusterView) -> Allocation:
    """Move every job between one and two V100s at each epoch: a reconfiguration every time."""
    out = {}
    for job in view.jobs:
        n = 2 if job.allocation is not None and job.allocation.total_gpus == 1 else 1
        out[job.job_id] = JobAllocation({"v100": n})
    return Allocation(out)


def test_reconfiguring_faster_than_the_penalty_stalls(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    jobs = [JobSpec(0, 0.0, "a", 1, 100.0, 1, max_gpus=2)]
    cfg = SimConfig(round_s=60.0, restart_penalty_s=120.0, stall_epochs=5)
    started = time.perf_counter()
    r = Simulator(two_by_two, jobs, config=cfg, throughput=toy).run(Scripted(_alternating))
    assert time.perf_counter() - started < 5.0
    assert r.stalled and r.metrics["num_unfinished"] == 1
    assert "no job made progress in simulated work" in r.stall_reason
    assert "faster than their restart penalty" in r.stall_reason
    # It waited out the penalty (plus a round) before giving up, not just stall_epochs epochs.
    assert r.num_epochs * 60.0 > 120.0 + 60.0


def test_a_long_penalty_with_short_rounds_is_not_a_stall(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    jobs = [JobSpec(0, 0.0, "a", 1, 100.0, 1)]
    cfg = SimConfig(round_s=1.0, restart_penalty_s=250.0, stall_epochs=5)
    r = Simulator(two_by_two, jobs, config=cfg, throughput=toy).run(
        Scripted(lambda v: Allocation({j.job_id: j.allocation or JobAllocation({"v100": 1}) for j in v.jobs}))
    )
    assert not r.stalled and r.stall_reason == "" and r.metrics["num_completed"] == 1
    assert r.jobs.loc[0, "finish_s"] == pytest.approx(350.0)


def test_a_policy_that_never_allocates_stalls_after_stall_epochs(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    r = Simulator(
        two_by_two, [JobSpec(0, 0.0, "a", 1, 100.0, 1)], config=SimConfig(stall_epochs=3), throughput=toy
    ).run(Scripted(lambda v: Allocation()))
    assert r.stalled and r.num_epochs == 2 and "no job made progress" in r.stall_reason


def test_more_epochs_than_the_workload_needs_stops_the_run(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    # The job runs one round in fifty: it always progresses a little, so only the epoch bound stops it.
    jobs = [JobSpec(0, 0.0, "a", 1, 1000.0, 1)]
    cfg = SimConfig(round_s=10.0, restart_penalty_s=5.0)

    def rarely(view: ClusterView) -> Allocation:
        return Allocation.from_counts({0: {"v100": 1}} if view.epoch % 50 == 0 else {})

    r = Simulator(two_by_two, jobs, config=cfg, throughput=toy).run(Scripted(rarely))
    assert r.stalled and r.metrics["num_unfinished"] == 1
    # 10 x (2 epochs per job + (2000 s of work on its slowest type, K80 at 0.5 it/s, + 5 s of penalty)
    # / 10 s rounds) + 1000.
    assert r.num_epochs == 10 * (2 + 200.5) + 1000
    assert "the bound derived from the workload" in r.stall_reason


def test_the_env_stops_on_the_watchdog() -> None:
    gym = pytest.importorskip("gymnasium")
    env = gym.make("HetCluster-Tiny-v0", sim={"stall_epochs": 3})
    env.reset(seed=0)
    commit = env.action_space.n - 1
    terminated = truncated = False
    info: dict = {}  # type: ignore[type-arg]
    for _ in range(10_000):
        _, _, terminated, truncated, info = env.step(commit)
        if terminated or truncated:
            break
    assert terminated and info["stop_reason"] == "stalled"
    assert "no job made progress" in info["stall_reason"]


@pytest.mark.parametrize("policy", ["fifo", "tiresias"])
def test_absurd_work_is_rejected_when_the_workload_meets_the_cluster(policy: str) -> None:
    jobs = [JobSpec(0, 0.0, "resnet50", 64, 1000.0, 1), JobSpec(1, 10.0, "resnet50", 64, 1e300, 1)]
    started = time.perf_counter()
    with pytest.raises(InvalidJobError) as info:
        Simulator("tiny", jobs).run(make_policy(policy))
    assert time.perf_counter() - started < 5.0
    message = str(info.value)
    assert "job 1: field 'total_iters' is 1e+300" in message
    assert "max_job_run_s=3.15e+08 s" in message and "fix total_iters in the trace" in message


def test_max_job_run_s_bounds_the_fastest_possible_run() -> None:
    job = JobSpec(0, 0.0, "resnet50", 64, 1e5, 1)
    actual_s = float(Simulator("tiny", [job]).run(make_policy("fifo")).jobs.loc[0, "jct_s"])
    # The fastest possible run is no longer than any real run: a limit at a real run's length admits it.
    assert Simulator("tiny", [job], config=SimConfig(max_job_run_s=actual_s)).specs == (job,)
    with pytest.raises(InvalidJobError, match=r"more than SimConfig.max_job_run_s=10 s"):
        Simulator("tiny", [job], config=SimConfig(max_job_run_s=10.0))


@pytest.mark.parametrize("num_gpus", [9, 10**20])
def test_a_job_larger_than_the_cluster_is_refused_by_default(num_gpus: int) -> None:
    jobs = [JobSpec(0, 0.0, "resnet50", 64, 100.0, 1), JobSpec(1, 0.0, "resnet50", 64, 100.0, num_gpus)]
    with pytest.raises(InvalidJobError) as info:
        Simulator("tiny", jobs)
    message = str(info.value)
    assert f"job 1: field 'num_gpus' is {num_gpus} but cluster 'tiny' has 8 GPUs" in message
    assert "oversize_jobs='reject'" in message and "--oversize-jobs reject" in message


def test_a_job_limited_to_too_few_gpus_is_refused() -> None:
    job = JobSpec(0, 0.0, "resnet50", 64, 100.0, 6, gpu_types=("v100",))
    with pytest.raises(InvalidJobError, match="field 'num_gpus' is 6 but cluster 'tiny' has 4 GPUs of the types"):
        Simulator("tiny", [job])
    with pytest.raises(InvalidJobError, match="may only run on"):
        Simulator("tiny", [JobSpec(0, 0.0, "resnet50", 64, 100.0, 1, gpu_types=("h100",))])


def test_oversize_jobs_reject_drops_them_at_arrival_and_counts_them() -> None:
    jobs = [
        JobSpec(0, 0.0, "resnet50", 64, 100.0, 1),
        JobSpec(1, 5.0, "resnet50", 64, 100.0, 65, deadline_s=1e6),
        JobSpec(2, 10.0, "resnet50", 64, 100.0, 2),
    ]
    sim = Simulator("tiny", jobs, config=SimConfig(oversize_jobs="reject"))
    r = sim.run(make_policy("fifo"))
    status = r.jobs.set_index("job_id")["status"]
    assert status.to_dict() == {0: "completed", 1: "rejected", 2: "completed"}
    assert r.metrics["num_oversize"] == 1 and r.metrics["num_rejected"] == 1 and not r.stalled
    assert (1, 5.0, JobStatus.REJECTED) in sim.ended_log()
    assert math.isclose(r.metrics["dsr"], 0.0)  # the only deadline job could never run


def _needs_two_k80s() -> ThroughputModel:
    """Job type ``a`` as in the toy model; job type ``c`` runs on one V100 but needs two K80s (0 on one)."""
    import pandas as pd

    from hetgym.sim.throughput import table_from_records

    table = table_from_records(
        {
            ("a", 1, "v100", 1): 1.0,
            ("a", 1, "k80", 1): 0.5,
            ("c", 1, "v100", 1): 1.0,
            ("c", 1, "k80", 1): 0.0,
            ("c", 1, "k80", 2): 1.0,
        }
    )
    gpu_types = pd.DataFrame(
        {"gpu_type": ["v100", "k80"], "speed_index": [1.0, 0.5], "mem_gb": [16, 12], "source": ["test"] * 2}
    )
    return ThroughputModel(table, gpu_types)


def _one_k80_for_c(view: ClusterView) -> Allocation:
    """A bad policy: job 0 (type ``a``) on one V100, job 1 (type ``c``) on one K80, where its rate is 0."""
    counts = {0: {"v100": 1}, 1: {"k80": 1}}
    return Allocation.from_counts({j.job_id: counts[j.job_id] for j in view.jobs})


class _StandingOnTicks(Scripted):
    stands_on_ticks = True  # the quiet ticks are passed over in one step (hetgym.sim.fastforward)


@pytest.mark.parametrize("policy_class", [Scripted, _StandingOnTicks])
def test_a_job_held_at_zero_rate_is_named_while_others_progress(
    two_by_two: ClusterSpec, policy_class: type[Scripted]
) -> None:
    # Job 0 progresses all along (the stall watchdog alone would wait for it to finish, 10^6 s); job 1
    # holds a K80 on which it cannot run from t=5 s.
    jobs = [JobSpec(0, 0.0, "a", 1, 1e6, 1), JobSpec(1, 5.0, "c", 1, 100.0, 1)]
    cfg = SimConfig(round_s=60.0, restart_penalty_s=30.0)
    policy = policy_class(_one_k80_for_c)
    r = Simulator(two_by_two, jobs, config=cfg, throughput=_needs_two_k80s()).run(policy)
    assert r.stalled and r.metrics["num_unfinished"] == 2
    reason = " ".join(r.stall_reason.split())
    assert reason.startswith("job 1 holds 1 GPU (1 k80) at zero throughput since t=5 s")
    assert "the rate of its placement is 0 iterations/s" in reason and "for more than 90 s" in reason
    assert "job 0" not in reason
    # Stopped when the patience (the penalty plus a round) ran out, not after job 0's 10^6 s.
    # Stopped at t=95 s: job 0 ran from its penalty's end (30 s) to then, job 1 held its K80 for 90 s.
    assert r.jobs.loc[0, "remaining_iters"] == pytest.approx(1e6 - (95.0 - 30.0))
    assert r.jobs.loc[1, "attained_gpu_s"] == pytest.approx(90.0)
    assert r.jobs.loc[1, "remaining_iters"] == 100.0


def test_a_job_moved_off_a_zero_rate_placement_in_time_is_no_stall(two_by_two: ClusterSpec) -> None:
    # The same bad placement, mended at the first tick (t=60 s, within the 90 s patience): the run ends.
    jobs = [JobSpec(0, 0.0, "a", 1, 200.0, 1), JobSpec(1, 5.0, "c", 1, 100.0, 1)]
    cfg = SimConfig(round_s=60.0, restart_penalty_s=30.0)

    def mends(view: ClusterView) -> Allocation:
        late = view.now_s >= 60.0
        counts = {0: {"v100": 1}, 1: {"v100": 1} if late else {"k80": 1}}
        return Allocation.from_counts({j.job_id: counts[j.job_id] for j in view.jobs})

    r = Simulator(two_by_two, jobs, config=cfg, throughput=_needs_two_k80s()).run(Scripted(mends))
    assert not r.stalled and r.stall_reason == "" and r.metrics["num_completed"] == 2
    assert r.jobs.loc[1, "finish_s"] == pytest.approx(60.0 + 30.0 + 100.0)


def test_a_fork_keeps_its_own_record_of_jobs_held_at_zero_rate(two_by_two: ClusterSpec) -> None:
    # Job 1 is placed where it cannot run; a fork taken then carries that record, and the original mending
    # the placement afterwards leaves the fork's record (and its watchdog) as it was.
    jobs = [JobSpec(0, 0.0, "a", 1, 1e6, 1), JobSpec(1, 5.0, "c", 1, 100.0, 1)]
    sim = Simulator(
        two_by_two, jobs, config=SimConfig(round_s=60.0, restart_penalty_s=30.0), throughput=_needs_two_k80s()
    )
    view = sim.reset(round_s=60.0)
    sim._placements.watch_idle = True  # as Simulator.run sets it for a policy
    while view is not None and 1 not in view.job_index:
        view = sim.step(_one_k80_for_c(view))
    assert view is not None
    view = sim.step(_one_k80_for_c(view))
    assert view is not None and sim._placements.idle_holders == {1: 5.0}
    forked = sim.fork()
    assert forked._placements.idle_holders == {1: 5.0}
    assert forked._placements.idle_holders is not sim._placements.idle_holders
    sim.step(Allocation.from_counts({0: {"v100": 1}, 1: {"v100": 1}}))
    assert sim._placements.idle_holders == {}
    assert forked._placements.idle_holders == {1: 5.0}
