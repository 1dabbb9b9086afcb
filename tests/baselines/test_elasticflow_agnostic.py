"""Hand-computed scenarios for heterogeneity-agnostic ElasticFlow on the toy table.

Toy rates (tests/helpers.py): job type ``a`` runs at 1 it/s per V100 and 0.5 it/s per K80, linearly up
to 4 GPUs on one server. Restart penalties are 0.
"""

from __future__ import annotations

import pytest

from hetgym.sim import ClusterSpec, JobSpec, SimConfig, SimulationResult, Simulator, ThroughputModel, make_policy
from hetgym.sim.registry import KnobError

NO_PENALTY = SimConfig(restart_penalty_s=0.0)


def run(policy: str, jobs: list[JobSpec], cluster: ClusterSpec, toy: ThroughputModel, **kw: object) -> SimulationResult:
    return Simulator(cluster, jobs, config=NO_PENALTY, throughput=toy).run(make_policy(policy, **kw))


def test_placed_blind_on_the_slow_type_it_misses_what_the_aware_planner_meets(toy: ThroughputModel) -> None:
    # K80 first in the cluster's order, V100 the most numerous type (the reference). One rigid 1-GPU job of
    # 100 iterations, due at 150 s: at the V100's 1 it/s it needs 100 s, so the agnostic planner admits it,
    # then puts it on the first type with room, a K80 (0.5 it/s): it ends at 200 s, late. The aware
    # planner gives it a V100 (the K80 level would take 200 s): done at 100 s.
    cluster = ClusterSpec.from_inventory("k80-first", {"k80": (1, 2), "v100": (1, 4)})
    jobs = [JobSpec(0, 0.0, "a", 1, 100.0, 1, deadline_s=150.0, max_gpus=1)]
    blind = run("elasticflow-agnostic", jobs, cluster, toy)
    assert blind.jobs.loc[0, "status"] == "completed"
    assert blind.jobs.loc[0, "finish_s"] == pytest.approx(200.0)
    assert blind.metrics["dsr"] == 0.0
    aware = run("elasticflow", jobs, cluster, toy)
    assert aware.jobs.loc[0, "finish_s"] == pytest.approx(100.0) and aware.metrics["dsr"] == 1.0
    # Told to rank types by the job's rate, the same plan lands on a V100 and meets the deadline.
    fastest = run("elasticflow-agnostic", jobs, cluster, toy, type_choice="fastest")
    assert fastest.jobs.loc[0, "finish_s"] == pytest.approx(100.0)


def test_a_slow_reference_type_declines_what_a_fast_type_could_meet(toy: ThroughputModel) -> None:
    # K80 is now the most numerous type: planned at 0.5 it/s the job needs 200 s > 150 s, so it is
    # declined (a deadline miss), although a V100 would meet it. Naming the V100 as reference admits it.
    cluster = ClusterSpec.from_inventory("k80-many", {"v100": (1, 2), "k80": (1, 4)})
    jobs = [JobSpec(0, 0.0, "a", 1, 100.0, 1, deadline_s=150.0, max_gpus=1)]
    declined = run("elasticflow-agnostic", jobs, cluster, toy)
    assert declined.jobs.loc[0, "status"] == "rejected" and declined.metrics["dsr"] == 0.0
    admitted = run("elasticflow-agnostic", jobs, cluster, toy, reference_type="v100")
    # V100 is first in this cluster's order: it runs there and meets its deadline.
    assert admitted.jobs.loc[0, "finish_s"] == pytest.approx(100.0) and admitted.metrics["dsr"] == 1.0


def test_an_unknown_reference_type_is_refused(toy: ThroughputModel) -> None:
    cluster = ClusterSpec.from_inventory("v", {"v100": (1, 2)})
    with pytest.raises(KnobError, match=r"reference_type='h100'.*give one of \['v100'\]"):
        run("elasticflow-agnostic", [JobSpec(0, 0.0, "a", 1, 10.0, 1)], cluster, toy, reference_type="h100")
