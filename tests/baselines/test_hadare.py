"""HadarE: no idle node while a job is unfinished, summed copy progress."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.hadar import GAVEL_MODEL_BYTES, HadarE, with_model_bytes
from hetgym.sim import ClusterSpec, JobSpec, SimConfig, Simulator, ThroughputModel, make_policy
from hetgym.workloads import WorkloadConfig


def test_no_node_idles_while_jobs_are_unfinished() -> None:
    # 9 nodes (3 per type) and 4 jobs: after every round decision every node hosts some copy.
    cluster = ClusterSpec.from_inventory("nine", {"v100": (3, 2), "p100": (3, 2), "k80": (3, 2)})
    jobs = [
        JobSpec(0, 0.0, "resnet18", 64, 4e6, 1),
        JobSpec(1, 0.0, "lm", 40, 4e6, 2),
        JobSpec(2, 0.0, "transformer", 128, 2e6, 2),
        JobSpec(3, 0.0, "recommendation", 2048, 3e6, 1),
    ]
    sim = Simulator(cluster, jobs, config=SimConfig(max_time_s=360.0 * 40))
    pol = make_policy("hadare")
    pol.reset(cluster, rng=np.random.default_rng(0))
    view = sim.reset(round_s=360.0, placer=pol.placer)  # the declared 'copies' placer lays out the copies
    ticks = 0
    decided_at_round = False
    while view is not None:
        if decided_at_round and view.num_ended == 0:
            # The view after a round decision shows where the simulator placed every job's GPUs.
            busy = {g.server_id for job in view.running for g in job.groups}
            assert busy == set(range(len(cluster.servers))), f"idle nodes at t={view.now_s}"
            assert all(job.allocation.mode == "fork" for job in view.running if len(job.groups) > 1)
            ticks += 1
        decided_at_round = view.is_tick or view.epoch == 0
        view = sim.step(pol.schedule(view))
    assert ticks >= 5


def test_progress_is_the_sum_over_copies(toy: ThroughputModel) -> None:
    # Three 1-GPU V100 nodes, one 1-GPU job of type 'a' (1 it/s per V100): primary + 2 copies run at
    # 3 it/s, so 900 iterations take 300 s (no penalty, no aggregation overhead).
    cluster = ClusterSpec.from_inventory("three", {"v100": (3, 1)})
    jobs = [JobSpec(0, 0.0, "a", 1, 900.0, 1)]
    sim = Simulator(cluster, jobs, config=SimConfig(restart_penalty_s=0.0), throughput=toy)
    result = sim.run(make_policy("hadare"))
    assert result.jobs.loc[0, "finish_s"] == pytest.approx(300.0)
    # Hadar alone: 900 s.
    result = Simulator(cluster, jobs, config=SimConfig(restart_penalty_s=0.0), throughput=toy).run(make_policy("hadar"))
    assert result.jobs.loc[0, "finish_s"] == pytest.approx(900.0)


def test_aggregation_overhead_and_efficiency_reduce_copy_progress(toy: ThroughputModel) -> None:
    cluster = ClusterSpec.from_inventory("three", {"v100": (3, 1)})
    # 1.25 GB over 12.5 GB/s = 0.1 s per 360 s round; efficiency 0.8.
    jobs = [JobSpec(0, 0.0, "a", 1, 900.0, 1, model_bytes=1.25e9)]
    cfg = SimConfig(restart_penalty_s=0.0, fork_efficiency=0.8)
    result = Simulator(cluster, jobs, config=cfg, throughput=toy).run(make_policy("hadare"))
    rate = 0.8 * 3.0 * (1 - 0.1 / 360.0)
    assert result.jobs.loc[0, "finish_s"] == pytest.approx(900.0 / rate)


def test_per_round_progress_equals_the_sum_over_copies_on_real_rates() -> None:
    cluster = ClusterSpec.from_inventory("vpk", {"v100": (1, 4), "p100": (1, 4), "k80": (1, 4)})
    jobs = [JobSpec(0, 0.0, "resnet18", 64, 1e8, 1)]
    sim = Simulator(cluster, jobs, config=SimConfig(restart_penalty_s=0.0))
    pol = make_policy("hadare")
    pol.reset(cluster, rng=np.random.default_rng(0))
    view = sim.reset(round_s=360.0, placer=pol.placer)
    assert view is not None
    alloc = pol.schedule(view)
    ja = alloc.jobs[0]
    assert ja.mode == "fork" and ja.servers is None and ja.total_gpus == 3
    view = sim.step(alloc)
    assert view is not None and view.now_s == pytest.approx(360.0)
    groups = view.job(0).groups
    assert len(groups) == 3  # one copy per node, laid out by the 'copies' placer
    expected = sum(view.rate(view.job(0), g.gpu_type, g.num_gpus) for g in groups) * 360.0
    assert view.job(0).done_iters == pytest.approx(expected)


def test_one_copy_per_job_is_plain_hadar(toy: ThroughputModel) -> None:
    cluster = ClusterSpec.from_inventory("three", {"v100": (3, 1)})
    jobs = [JobSpec(0, 0.0, "a", 1, 900.0, 1)]
    result = Simulator(cluster, jobs, config=SimConfig(restart_penalty_s=0.0), throughput=toy).run(
        make_policy("hadare", max_copies_per_job=1)
    )
    assert result.jobs.loc[0, "finish_s"] == pytest.approx(900.0)


def test_a_gang_that_does_not_fit_starts_as_smaller_copies() -> None:
    # The "all-or-nothing" problem: a 4-GPU job on a cluster of 2-GPU K80 nodes with one node busy.
    cluster = ClusterSpec.from_inventory("k", {"v100": (1, 2), "k80": (1, 2)})
    jobs = [JobSpec(0, 0.0, "resnet18", 64, 1e9, 2), JobSpec(1, 1.0, "resnet18", 256, 1e6, 4)]
    sim = Simulator(cluster, jobs, config=SimConfig(restart_penalty_s=0.0, round_s=360.0))
    pol = make_policy("hadare")
    pol.reset(cluster, rng=np.random.default_rng(0))
    view = sim.reset()
    assert view is not None
    view = sim.step(pol.schedule(view))
    while view is not None and not view.is_tick:
        view = sim.step(pol.schedule(view))
    assert view is not None
    alloc = pol.schedule(view)
    assert 1 in alloc.jobs  # runs as copies on the 2-GPU nodes although it asked for 4 GPUs
    assert alloc.jobs[1].mode == "fork"


def test_with_model_bytes_fills_missing_sizes_only() -> None:
    jobs = [JobSpec(0, 0.0, "resnet50", 64, 10.0, 1), JobSpec(1, 0.0, "resnet18", 64, 10.0, 1, model_bytes=5.0)]
    out = with_model_bytes(jobs)
    assert out[0].model_bytes == GAVEL_MODEL_BYTES["resnet50"]
    assert out[1].model_bytes == 5.0


def test_knobs() -> None:
    pol = make_policy("hadare", max_copies_per_job=2, copy_rule="srpt")
    assert isinstance(pol, HadarE) and pol.knob_values.max_copies_per_job == 2
    with pytest.raises(ValueError, match="max_copies_per_job"):
        make_policy("hadare", max_copies_per_job=0)
    with pytest.raises(ValueError, match="copy_rule"):
        make_policy("hadare", copy_rule="random")


@pytest.mark.parametrize("kwargs", [{}, {"copy_rule": "srpt"}, {"mode": "plan"}])
def test_completes_a_small_online_workload(kwargs: dict[str, object]) -> None:
    jobs = WorkloadConfig(recipe="gavel-philly", num_jobs=20, arrival_rate_per_h=10.0).build("gavel-108", seed=2)
    result = Simulator("gavel-108", with_model_bytes(jobs)).run(make_policy("hadare", **kwargs))
    assert result.metrics["num_completed"] == 20
    assert not result.stalled
