"""Hand-computed scenarios for the Gandiva-style policy (time slicing, grow-shrink) on the toy table.

Toy rates (tests/helpers.py): job type ``a`` runs at 1 it/s per V100 and 0.5 it/s per K80, linearly up
to 4 GPUs on one server; ``b`` runs at 1 it/s on a V100 and 2 it/s on a K80. Restart penalties are 0.
"""

from __future__ import annotations

import pytest

from hetgym.sim import ClusterSpec, JobSpec, SimConfig, SimulationResult, Simulator, ThroughputModel, make_policy
from hetgym.sim.registry import KnobError

NO_PENALTY = SimConfig(restart_penalty_s=0.0)


def run(jobs: list[JobSpec], cluster: ClusterSpec, toy: ThroughputModel, **kw: object) -> SimulationResult:
    return Simulator(cluster, jobs, config=NO_PENALTY, throughput=toy).run(make_policy("gandiva", **kw))


def col(result: SimulationResult, column: str) -> dict[int, float]:
    return result.jobs.set_index("job_id")[column].to_dict()


def test_time_slices_rotate_the_gpu_between_jobs(toy: ThroughputModel) -> None:
    # One GPU, two jobs of 150 s, slices of 100 s. 0-100 job 0; at 100 job 0's slice is over and job 1
    # never ran: job 1 runs 100-200 (job 0 suspended with 50 s left). At 200 job 0's slice began longer
    # ago (0 < 100): it runs 200-250 and ends; job 1 resumes 250-300. FIFO would give 150 and 300.
    cluster = ClusterSpec.from_inventory("1x1", {"v100": (1, 1)})
    jobs = [JobSpec(0, 0.0, "a", 1, 150.0, 1), JobSpec(1, 0.0, "a", 1, 150.0, 1)]
    r = run(jobs, cluster, toy, slice_s=100.0, placement="default")
    assert col(r, "finish_s") == {0: pytest.approx(250.0), 1: pytest.approx(300.0)}
    assert col(r, "num_reconfigs") == {0: 2, 1: 2}  # each suspended once and resumed once


def test_a_job_grows_on_an_idle_cluster_and_shrinks_when_another_arrives(toy: ThroughputModel) -> None:
    # One 4-GPU V100 server. Job 0 asks 1 GPU (may take 4) for 400 iterations; alone it doubles twice
    # (1 -> 2 -> 4 GPUs, each doubling doubles the rate): 4 it/s, 200 done at t=50. Job 1 (2 GPUs, 100 it)
    # arrives at 50: job 0 shrinks to its 1 GPU, then regrows onto the one GPU left (2 GPUs, 2 it/s); job 1
    # runs at 2 it/s and ends at 100. Job 0 then has 200 - 100 = 100 left, grows back to 4 GPUs: done at 125.
    cluster = ClusterSpec.from_inventory("1x4", {"v100": (1, 4)})
    jobs = [JobSpec(0, 0.0, "a", 1, 400.0, 1, max_gpus=4), JobSpec(1, 50.0, "a", 1, 100.0, 2)]
    r = run(jobs, cluster, toy, placement="default")
    assert col(r, "finish_s") == {0: pytest.approx(125.0), 1: pytest.approx(100.0)}
    rigid = run(jobs, cluster, toy, placement="default", grow_shrink=False)
    assert col(rigid, "finish_s") == {0: pytest.approx(400.0), 1: pytest.approx(100.0)}


def test_growth_stops_where_it_does_not_pay(toy: ThroughputModel) -> None:
    # On two 2-GPU V100 servers, 4 GPUs span servers at the toy's factor 0.5 (2 it/s, no better than 2 GPUs
    # on one server): the job stops at 2 GPUs. 100 iterations at 2 it/s: 50 s.
    cluster = ClusterSpec.from_inventory("2x2", {"v100": (2, 2)})
    r = run([JobSpec(0, 0.0, "a", 1, 100.0, 1, max_gpus=4)], cluster, toy)
    assert col(r, "finish_s")[0] == pytest.approx(50.0)
    assert col(r, "attained_gpu_s")[0] == pytest.approx(100.0)  # 2 GPUs x 50 s


def test_types_are_taken_in_cluster_order_whatever_the_job_runs_best_on(
    two_by_two: ClusterSpec, toy: ThroughputModel
) -> None:
    # Job type b is twice as fast on a K80, but V100 comes first: 100 iterations at 1 it/s.
    jobs = [JobSpec(0, 0.0, "b", 1, 100.0, 1, max_gpus=1)]
    assert col(run(jobs, two_by_two, toy), "finish_s")[0] == pytest.approx(100.0)
    assert col(run(jobs, two_by_two, toy, type_choice="fastest"), "finish_s")[0] == pytest.approx(50.0)


def test_bad_knobs_are_refused() -> None:
    with pytest.raises(KnobError, match="slice_s"):
        make_policy("gandiva", slice_s=0)
    with pytest.raises(KnobError, match="max_grow_factor"):
        make_policy("gandiva", max_grow_factor=1.5)
