"""Hand-computed scenarios for the classic baselines (FIFO, SRTF, EDF, Tiresias) on the toy table.

Toy rates (tests/helpers.py): job type ``a`` runs at 1 it/s per V100 and 0.5 it/s per K80, linearly;
``b`` runs at 1 it/s on a V100 and 2 it/s on a K80. The cluster is 2 V100 servers and 2 K80 servers
of 2 GPUs each. Restart penalties are 0 unless a test says otherwise.
"""

from __future__ import annotations

import pytest

from hetgym.sim import ClusterSpec, JobSpec, SimConfig, SimulationResult, Simulator, ThroughputModel, make_policy

NO_PENALTY = SimConfig(restart_penalty_s=0.0)


def run(policy: str, jobs: list[JobSpec], cluster: ClusterSpec, toy: ThroughputModel, **kw: object) -> SimulationResult:
    config = kw.pop("config", NO_PENALTY)
    return Simulator(cluster, jobs, config=config, throughput=toy).run(make_policy(policy, **kw))  # type: ignore[arg-type]


def col(result: SimulationResult, column: str) -> dict[int, float]:
    return result.jobs.set_index("job_id")[column].to_dict()


# ------------------------------------------------------------------------------------------ FIFO


def test_strict_fifo_blocks_behind_the_head(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    # Job 0 takes the 4 V100 (type order: v100 first; two servers, factor 0.5): 400 / 2 = 200 s.
    # Job 1 wants 8 GPUs, more than any one type has: it spans types once all 8 are free (t=200) and runs
    # in sync mode at the K80 rate for 8 GPUs (4.0, extrapolated) x the multi-server factor (0.5): 20 s.
    # Job 2 (1 GPU) waits behind job 1 when strict; with backfilling it starts at once on a K80.
    jobs = [JobSpec(0, 0.0, "a", 1, 400.0, 4), JobSpec(1, 1.0, "a", 1, 40.0, 8), JobSpec(2, 2.0, "a", 1, 10.0, 1)]
    strict = col(run("fifo", jobs, two_by_two, toy), "start_s")
    assert strict == {0: 0.0, 1: pytest.approx(200.0), 2: pytest.approx(220.0)}
    backfill = col(run("fifo-backfill", jobs, two_by_two, toy), "start_s")
    assert backfill == {0: 0.0, 1: pytest.approx(200.0), 2: 2.0}


def test_fifo_starts_in_arrival_order_and_never_preempts(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    jobs = [JobSpec(0, 0.0, "a", 1, 100.0, 4), JobSpec(1, 1.0, "a", 1, 100.0, 4), JobSpec(2, 2.0, "a", 1, 1.0, 4)]
    r = run("fifo", jobs, two_by_two, toy)
    start, finish = col(r, "start_s"), col(r, "finish_s")
    # Job 0: 4 V100 (two servers; factor 0.5 from the toy table): 100 / 2 = 50 s.
    assert finish[0] == pytest.approx(50.0)
    # Job 1: 4 K80 (two servers; K80 has no unconsolidated figure: mean factor at 4 GPUs = 0.5): 1 it/s.
    assert start[1] == 1.0 and finish[1] == pytest.approx(101.0)
    # Job 2 waits for job 0's V100s.
    assert start[2] == pytest.approx(50.0)
    assert int(r.metrics["num_reconfigs"]) == 0


def test_fifo_fastest_picks_the_faster_type_for_each_job(two_by_two: ClusterSpec, toy: ThroughputModel) -> None:
    # Job type b is twice as fast on K80: heterogeneity-aware FIFO puts it there; agnostic FIFO on V100.
    jobs = [JobSpec(0, 0.0, "b", 1, 100.0, 1)]
    assert col(run("fifo-fastest", jobs, two_by_two, toy), "finish_s")[0] == pytest.approx(50.0)
    assert col(run("fifo", jobs, two_by_two, toy), "finish_s")[0] == pytest.approx(100.0)


# ------------------------------------------------------------------------------------------ SRTF


def test_srtf_preempts_for_a_shorter_job_and_pays_the_penalty(toy: ThroughputModel) -> None:
    cluster = ClusterSpec.from_inventory("1v100", {"v100": (1, 2)})
    jobs = [JobSpec(0, 0.0, "a", 1, 200.0, 2), JobSpec(1, 50.0, "a", 1, 20.0, 2)]
    r = run("srtf", jobs, cluster, toy, config=SimConfig(restart_penalty_s=5.0))
    start, finish = col(r, "start_s"), col(r, "finish_s")
    # Job 0: penalty 0-5, 2 it/s until 50: 90 done, 110 left (55 s). Job 1 (10 s < 55 s) preempts it:
    # 50-55 penalty, done at 65. Job 0 resumes at 65: 5 s penalty + 55 s = 125.
    assert start[1] == 50.0 and finish[1] == pytest.approx(65.0)
    assert finish[0] == pytest.approx(125.0)
    assert col(r, "num_reconfigs")[0] == 2  # preempted, resumed


def test_srtf_gives_the_fast_type_to_the_shorter_job_then_upgrades(
    two_by_two: ClusterSpec, toy: ThroughputModel
) -> None:
    # Remaining time on the best type: job 1 = 40 / 4 = 10 s, job 0 = 400 / 4 = 100 s. Job 1 takes the
    # V100s (2 servers, factor 0.5: 2 it/s, done at 20 s); job 0 starts on the K80s (1 it/s). At t=20 the
    # V100s free up and are more than 20% faster: job 0 moves (one reconfiguration) and runs at 2 it/s:
    # 380 iterations left, done at 20 + 190 = 210 s.
    jobs = [JobSpec(0, 0.0, "a", 1, 400.0, 4), JobSpec(1, 0.0, "a", 1, 40.0, 4)]
    r = run("srtf", jobs, two_by_two, toy)
    assert col(r, "finish_s") == {0: pytest.approx(210.0), 1: pytest.approx(20.0)}
    assert col(r, "num_reconfigs") == {0: 1, 1: 0}


# ------------------------------------------------------------------------------------------ EDF


def test_edf_serves_the_earliest_deadline_first(toy: ThroughputModel) -> None:
    cluster = ClusterSpec.from_inventory("1v100", {"v100": (1, 1)})
    jobs = [
        JobSpec(0, 0.0, "a", 1, 100.0, 1, deadline_s=1000.0),
        JobSpec(1, 10.0, "a", 1, 20.0, 1, deadline_s=50.0),
    ]
    r = run("edf", jobs, cluster, toy)
    finish = col(r, "finish_s")
    # Job 1's earlier deadline preempts job 0 at t=10: job 1 done at 30, job 0 resumes: 10 + 90 -> 120.
    assert finish[1] == pytest.approx(30.0) and finish[0] == pytest.approx(120.0)
    assert r.metrics["dsr"] == 1.0
    non_preemptive = col(run("edf", jobs, cluster, toy, preemptive=False), "finish_s")
    assert non_preemptive[0] == pytest.approx(100.0) and non_preemptive[1] == pytest.approx(120.0)


def test_edf_admission_rejects_infeasible_deadlines(toy: ThroughputModel) -> None:
    cluster = ClusterSpec.from_inventory("1v100", {"v100": (1, 1)})
    jobs = [
        JobSpec(0, 0.0, "a", 1, 100.0, 1, deadline_s=150.0),  # alone: 100 s, fits
        JobSpec(1, 0.0, "a", 1, 100.0, 1, deadline_s=90.0),  # alone: 100 s > 90 s: rejected
        JobSpec(2, 1.0, "a", 1, 60.0, 1, deadline_s=140.0),  # fits alone, but not with job 0 (demand bound)
    ]
    r = run("edf-admission", jobs, cluster, toy)
    status = r.jobs.set_index("job_id")["status"].to_dict()
    assert status == {0: "completed", 1: "rejected", 2: "rejected"}
    assert r.metrics["dsr"] == pytest.approx(1 / 3)
    plain = run("edf", jobs, cluster, toy)
    assert plain.metrics["num_rejected"] == 0


# ------------------------------------------------------------------------------------------ Tiresias


def test_tiresias_demotes_by_attained_gpu_time(toy: ThroughputModel) -> None:
    cluster = ClusterSpec.from_inventory("1v100", {"v100": (1, 1)})
    # Thresholds of 100 GPU-s: job 0 runs alone to 100 GPU-s, then falls to Q1; job 1 arrives at 150
    # in Q0 and preempts it at once (arrival epoch); rounds of 50 s.
    jobs = [JobSpec(0, 0.0, "a", 1, 1000.0, 1), JobSpec(1, 150.0, "a", 1, 50.0, 1)]
    policy = make_policy("tiresias", thresholds_gpu_s=[100.0], promote_knob=0)
    r = Simulator(cluster, jobs, config=SimConfig(restart_penalty_s=0.0, round_s=50.0), throughput=toy).run(policy)
    finish = col(r, "finish_s")
    assert finish[1] == pytest.approx(200.0)
    assert finish[0] == pytest.approx(1050.0)
    assert policy.queue_of  # the queue function is public for inspection


def test_tiresias_keeps_fifo_order_within_a_queue(toy: ThroughputModel) -> None:
    cluster = ClusterSpec.from_inventory("1v100", {"v100": (1, 1)})
    jobs = [JobSpec(0, 0.0, "a", 1, 50.0, 1), JobSpec(1, 10.0, "a", 1, 50.0, 1)]
    r = run("tiresias", jobs, cluster, toy)
    # Both stay in Q0 (50 GPU-s < 1800): no preemption, arrival order.
    assert col(r, "finish_s") == {0: pytest.approx(50.0), 1: pytest.approx(100.0)}


def test_tiresias_promotes_starving_jobs(toy: ThroughputModel) -> None:
    cluster = ClusterSpec.from_inventory("1v100", {"v100": (1, 1)})
    # Job 0 reaches Q1 (100 GPU-s) at t=100; a stream of 100-s jobs arriving every 100 s keeps Q0 busy,
    # so without promotion job 0 waits until the stream ends (t=700) and finishes at 900. With
    # promote_knob 1 it returns to Q0 once it has waited longer than its last run, and finishes earlier.
    jobs = [JobSpec(0, 0.0, "a", 1, 300.0, 1)] + [JobSpec(k, 100.0 * k, "a", 1, 100.0, 1) for k in range(1, 7)]
    config = SimConfig(restart_penalty_s=0.0, round_s=50.0)
    starved = Simulator(cluster, jobs, config=config, throughput=toy).run(
        make_policy("tiresias", thresholds_gpu_s=[100.0], promote_knob=0)
    )
    promoted = Simulator(cluster, jobs, config=config, throughput=toy).run(
        make_policy("tiresias", thresholds_gpu_s=[100.0], promote_knob=1)
    )
    assert col(starved, "finish_s")[0] == pytest.approx(900.0)
    assert col(promoted, "finish_s")[0] == pytest.approx(600.0)


@pytest.mark.parametrize(
    ("name", "kwargs", "match"),
    [
        ("fifo", {"type_choice": "random"}, "type_choice"),
        ("tiresias", {"thresholds_gpu_s": [10, 5]}, "ascending"),
        ("tiresias", {"promote_knob": -1}, "promote_knob"),
        ("edf-admission", {"capacity_factor": 0}, "capacity_factor"),
    ],
)
def test_bad_knobs_are_rejected(name: str, kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_policy(name, **kwargs)


def test_unknown_policy_and_knob_names_suggest_the_nearest() -> None:
    with pytest.raises(KeyError, match="did you mean 'srtf'"):
        make_policy("srft")
    with pytest.raises(KeyError, match="did you mean 'type_choice'"):
        make_policy("fifo", type_choise="order")
