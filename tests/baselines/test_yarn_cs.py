"""Hand-computed scenarios for YARN-CS (FIFO per queue, strict gang, no preemption) on the toy table.

Toy rates (tests/helpers.py): job type ``a`` runs at 1 it/s per V100, linearly up to 4 GPUs on one
server. Restart penalties are 0.
"""

from __future__ import annotations

import pytest

from hetgym.sim import ClusterSpec, JobSpec, SimConfig, SimulationResult, Simulator, ThroughputModel, make_policy
from hetgym.sim.registry import KnobError

NO_PENALTY = SimConfig(restart_penalty_s=0.0)


def run(jobs: list[JobSpec], cluster: ClusterSpec, toy: ThroughputModel, **kw: object) -> SimulationResult:
    return Simulator(cluster, jobs, config=NO_PENALTY, throughput=toy).run(make_policy("yarn-cs", **kw))


def col(result: SimulationResult, column: str) -> dict[int, float]:
    return result.jobs.set_index("job_id")[column].to_dict()


def test_each_user_queue_is_fifo_but_queues_do_not_block_each_other(toy: ThroughputModel) -> None:
    cluster = ClusterSpec.from_inventory("1x4", {"v100": (1, 4)})
    # u1: job 0 (2 GPUs, 100 it: 2 it/s, 0-50) and job 1 (4 GPUs, 40 it: 4 it/s, 10 s), which must wait
    # for the whole server. u2: job 2 (1 GPU, 10 it).
    jobs = [
        JobSpec(0, 0.0, "a", 1, 100.0, 2, user="u1"),
        JobSpec(1, 1.0, "a", 1, 40.0, 4, user="u1"),
        JobSpec(2, 2.0, "a", 1, 10.0, 1, user="u2"),
    ]
    r = run(jobs, cluster, toy)
    # u2's queue is not behind u1's blocked head: job 2 starts at once on a free GPU (2-12); job 1 gets
    # the server when job 0 ends (50-60).
    assert col(r, "start_s") == {0: 0.0, 1: pytest.approx(50.0), 2: 2.0}
    assert col(r, "finish_s") == {0: pytest.approx(50.0), 1: pytest.approx(60.0), 2: pytest.approx(12.0)}
    assert int(r.metrics["num_reconfigs"]) == 0  # never preempted
    # One queue: job 2 waits behind job 1 (strict FIFO), so it starts at 60 and ends at 70.
    single = run(jobs, cluster, toy, queues="single")
    assert col(single, "start_s") == {0: 0.0, 1: pytest.approx(50.0), 2: pytest.approx(60.0)}
    # Without head-of-line blocking job 2 goes ahead even in one queue.
    assert col(run(jobs, cluster, toy, queues="single", strict=False), "start_s")[2] == 2.0


def test_the_least_used_queue_gets_a_freed_gpu_first(toy: ThroughputModel) -> None:
    cluster = ClusterSpec.from_inventory("1x2", {"v100": (1, 2)})
    # u1 holds both GPUs (jobs 0 and 1, 100 and 200 s). At t=100 one GPU frees: u1 still holds one, u2
    # none, so u2's job 3 starts before u1's earlier job 2 (which gets job 1's GPU at 200).
    jobs = [
        JobSpec(0, 0.0, "a", 1, 100.0, 1, user="u1"),
        JobSpec(1, 0.0, "a", 1, 200.0, 1, user="u1"),
        JobSpec(2, 1.0, "a", 1, 10.0, 1, user="u1"),
        JobSpec(3, 2.0, "a", 1, 10.0, 1, user="u2"),
    ]
    start = col(run(jobs, cluster, toy), "start_s")
    assert start[3] == pytest.approx(100.0) and start[2] == pytest.approx(110.0)
    # In one queue FIFO order wins: job 2 at 100, job 3 at 110.
    single = col(run(jobs, cluster, toy, queues="single"), "start_s")
    assert single[2] == pytest.approx(100.0) and single[3] == pytest.approx(110.0)


def test_maximum_capacity_caps_one_queue(toy: ThroughputModel) -> None:
    cluster = ClusterSpec.from_inventory("1x4", {"v100": (1, 4)})
    jobs = [JobSpec(0, 0.0, "a", 1, 100.0, 2), JobSpec(1, 0.0, "a", 1, 100.0, 2)]
    # Both fit (2 it/s each: 50 s); with half the cluster per queue, job 1 waits for job 0.
    assert col(run(jobs, cluster, toy), "start_s") == {0: 0.0, 1: 0.0}
    assert col(run(jobs, cluster, toy, max_queue_share=0.5), "start_s") == {0: 0.0, 1: pytest.approx(50.0)}


def test_bad_knobs_are_refused() -> None:
    with pytest.raises(KnobError, match="queues"):
        make_policy("yarn-cs", queues="per-team")
    with pytest.raises(KnobError, match="max_queue_share"):
        make_policy("yarn-cs", max_queue_share=0.0)
