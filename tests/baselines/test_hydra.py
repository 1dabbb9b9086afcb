"""Hand-computed scenarios for Hydra (total JCT plus a tardiness penalty, branch and bound) on the toy table.

Toy rates (tests/helpers.py): job type ``a`` runs at 1 it/s per V100 and 0.5 it/s per K80; ``b`` at 1 it/s
on a V100 and 2 it/s on a K80. Restart penalties are 0.
"""

from __future__ import annotations

import math
from itertools import permutations, product

import numpy as np
import pytest

from baselines.hydra import _Job, _TypeState, best_schedule
from hetgym.sim import ClusterSpec, JobSpec, SimConfig, SimulationResult, Simulator, ThroughputModel, make_policy
from hetgym.sim.registry import KnobError

NO_PENALTY = SimConfig(restart_penalty_s=0.0)
MIXED = ClusterSpec.from_inventory("mixed", {"v100": (1, 1), "k80": (1, 1)})


def run(jobs: list[JobSpec], cluster: ClusterSpec, toy: ThroughputModel, **kw: object) -> SimulationResult:
    return Simulator(cluster, jobs, config=NO_PENALTY, throughput=toy).run(make_policy("hydra", **kw))


def col(result: SimulationResult, column: str) -> dict[int, float]:
    return result.jobs.set_index("job_id")[column].to_dict()


def test_each_job_goes_to_the_type_it_runs_fastest_on(toy: ThroughputModel) -> None:
    # Alone: type a ends at 100 s on the V100 (200 s on the K80); type b at 50 s on the K80 (100 s on the V100).
    assert col(run([JobSpec(0, 0.0, "a", 1, 100.0, 1)], MIXED, toy), "finish_s")[0] == pytest.approx(100.0)
    assert col(run([JobSpec(0, 0.0, "b", 1, 100.0, 1)], MIXED, toy), "finish_s")[0] == pytest.approx(50.0)


def test_a_job_waits_for_the_faster_type_when_that_ends_sooner(toy: ThroughputModel) -> None:
    # Job 0 (10 it) holds the V100 until 10. Job 1 (100 it, t=1): on the V100 it starts at 10 and ends at 110
    # (JCT 109); on the idle K80 it would end at 201 (JCT 200). It waits.
    jobs = [JobSpec(0, 0.0, "a", 1, 10.0, 1), JobSpec(1, 1.0, "a", 1, 100.0, 1)]
    r = run(jobs, MIXED, toy)
    assert col(r, "start_s")[1] == pytest.approx(10.0) and col(r, "finish_s")[1] == pytest.approx(110.0)


def test_the_tardiness_penalty_trades_jct_for_a_deadline(toy: ThroughputModel) -> None:
    # One V100. Job 0: 50 it, no deadline; job 1: 100 it, due 110. Shortest first: 0-50, 50-150, total JCT
    # 200, job 1 40 s late. Job 1 first: 0-100, 100-150, total JCT 250, nobody late. With the dynamic
    # penalty (weight 1 x 2 jobs = 2) the first costs 280 > 250: job 1 goes first. With weight 0.5
    # (lambda 1) it costs 240 < 250: shortest first.
    cluster = ClusterSpec.from_inventory("v", {"v100": (1, 1)})
    jobs = [JobSpec(0, 0.0, "a", 1, 50.0, 1), JobSpec(1, 0.0, "a", 1, 100.0, 1, deadline_s=110.0)]
    assert col(run(jobs, cluster, toy), "finish_s") == {0: pytest.approx(150.0), 1: pytest.approx(100.0)}
    light = run(jobs, cluster, toy, penalty_weight=0.5)
    assert col(light, "finish_s") == {0: pytest.approx(50.0), 1: pytest.approx(150.0)}
    # A static penalty of 1 is the same lambda as the dynamic 0.5 here.
    static = run(jobs, cluster, toy, penalty_mode="static")
    assert col(static, "finish_s") == {0: pytest.approx(50.0), 1: pytest.approx(150.0)}


def test_branch_and_bound_finds_the_exhaustive_optimum() -> None:
    # Five one-GPU jobs on two single-GPU types; compare with every order and type choice.
    rng = np.random.default_rng(3)
    jobs = [_Job(i, 1, 0.0, float(rng.uniform(50, 400)), rng.uniform(10, 100, size=2).round(1)) for i in range(5)]
    penalty = 2.0

    def cost_of(order: tuple[int, ...], kinds: tuple[int, ...]) -> float:
        free = [0.0, 0.0]
        total = 0.0
        for i, k in zip(order, kinds, strict=True):
            end = free[k] + jobs[i].run_s[k]
            free[k] = end
            total += end + penalty * max(0.0, end - jobs[i].deadline_s)
        return total

    exhaustive = min(cost_of(order, kinds) for order in permutations(range(5)) for kinds in product((0, 1), repeat=5))
    states = [_TypeState(1, [], 0.0), _TypeState(1, [], 0.0)]
    cost, seq = best_schedule(jobs, states, 0.0, penalty, max_nodes=10**6)
    assert cost == pytest.approx(exhaustive)
    assert sorted(i for i, _, _ in seq) == list(range(5))
    assert math.isfinite(cost)


def test_bad_knobs_are_refused() -> None:
    with pytest.raises(KnobError, match="penalty_mode"):
        make_policy("hydra", penalty_mode="linear")
    with pytest.raises(KnobError, match="max_nodes"):
        make_policy("hydra", max_nodes=0)
