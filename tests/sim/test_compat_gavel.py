"""``SimConfig(compat="gavel")``: Gavel's rounds, recompute gate, raw throughputs and whole steps per round."""

from __future__ import annotations

import math

import numpy as np
import pytest

from baselines.gavel import GavelPolicy
from hetgym.sim.config import SimConfig
from hetgym.sim.engine import Simulator
from hetgym.sim.job import JobSpec
from hetgym.sim.policy import make_policy
from hetgym.sim.throughput import ThroughputModel


def _starts(compat: str) -> dict[int, tuple[float, float]]:
    jobs = [JobSpec(0, 100.0, "resnet18", 32, 1e6, 1), JobSpec(1, 150.0, "resnet18", 32, 1000.0, 1)]
    result = Simulator("gavel-108", jobs, config=SimConfig(compat=compat)).run(make_policy("gavel-mmf"))
    return {int(j): (float(s), float(f)) for j, s, f in result.jobs[["job_id", "start_s", "finish_s"]].values}


def test_rounds_start_at_an_arrival_on_an_idle_cluster_and_new_jobs_wait_for_the_recompute() -> None:
    gavel = _starts("gavel")
    # The first round starts when job 0 arrives (not on a grid of 360 s). Job 1 arrives 50 s later but has
    # no allocation until the next recompute, 1,920 s or more after the last one: the seventh round. Each
    # round lasts job 0's micro-task, floor(T x 360) / T (Gavel's max_finish_time), a little under 360 s.
    assert gavel[0][0] == 100.0
    round_s = _gavel_exec_s("resnet18", 32, "v100")
    assert round_s < 360.0
    start = 100.0
    for _ in range(6):
        start = start + round_s
    assert gavel[1][0] == pytest.approx(start, abs=1e-9)
    # hetgym's own model starts job 1 at its arrival on a free GPU.
    assert _starts("none")[1][0] == 150.0


def test_whole_steps_per_round_and_raw_figures() -> None:
    raw, default = ThroughputModel.raw(), ThroughputModel.default()
    # LM, batch 5 per GPU on 4 x V100: the measured figure, not the running maximum over counts.
    assert raw.rate("lm", 20, "v100", 4) < 0.5 * default.rate("lm", 20, "v100", 4)
    gavel = _starts("gavel")
    start, finish = gavel[1]
    # Job 1 (1,000 iterations, under one round) runs its last micro-task at its throughput: it completes
    # 1000 / T after the round starts, as Gavel's task does (steps left / throughput).
    candidates = [1000.0 / raw.rate("resnet18", 32, t, 1) for t in ("v100", "p100", "k80")]
    assert any(math.isclose(finish - start, d, rel_tol=1e-9) for d in candidates)


def _job_times(jobs: list[JobSpec], policy_name: str) -> dict[float, dict[int, np.ndarray]]:
    """Run ``policy_name`` under compat="gavel" and return its per-job time counters at every decision epoch."""
    sim = Simulator("gavel-108", jobs, config=SimConfig(compat="gavel"))
    policy = make_policy(policy_name)
    assert isinstance(policy, GavelPolicy)
    policy.reset(sim.cluster, rng=np.random.default_rng(0))
    view = sim.reset(round_s=policy.round_s, ticks=True)
    seen: dict[float, dict[int, np.ndarray]] = {}
    while view is not None:
        allocation = policy.schedule(view)
        seen[view.now_s] = {jid: times.copy() for jid, times in policy._job_time.items()}
        view = sim.step(allocation)
    return seen


def _gavel_exec_s(job_type: str, batch: int, gpu_type: str, steps_left: float = math.inf) -> float:
    """Gavel's micro-task time on one GPU: ``min(floor(T x 360), steps left) / T``."""
    steps_per_s = ThroughputModel.raw().rate(job_type, batch, gpu_type, 1)
    return min(math.floor(steps_per_s * 360.0), steps_left) / steps_per_s


def test_each_job_counts_its_own_micro_task_time_not_the_round() -> None:
    # Two long jobs of different types: after one round each has its own floor(T x 360) / T, under 360 s,
    # so two jobs that had the same rounds still have different priorities, as in Gavel.
    jobs = [JobSpec(0, 0.0, "resnet18", 32, 1e7, 1), JobSpec(1, 0.0, "lm", 5, 1e7, 1)]
    seen = _job_times(jobs, "gavel-mmf")
    # The round ends with the longer of the two micro-tasks, not at 360 s.
    ends = [_gavel_exec_s("resnet18", 32, t) for t in ("v100", "p100", "k80")]
    ends += [_gavel_exec_s("lm", 5, t) for t in ("v100", "p100", "k80")]
    second = sorted(seen)[1]
    assert second < 360.0 and any(math.isclose(second, e, rel_tol=1e-12) for e in ends)
    after = seen[second]
    v100 = 0  # gavel-108 lists its types fastest first, as does the policy
    assert after[0][v100] == pytest.approx(180.0 + _gavel_exec_s("resnet18", 32, "v100"), abs=1e-9)
    assert after[1][v100] == pytest.approx(180.0 + _gavel_exec_s("lm", 5, "v100"), abs=1e-9)
    assert after[0][v100] < 540.0 and after[1][v100] < 540.0
    assert after[0][v100] != after[1][v100]


def test_an_idle_gap_counts_in_the_next_rounds_time() -> None:
    # Job 0 completes early in the first round; the cluster is idle until job 1 arrives at 5,000 s. Gavel
    # measures job 1's first micro-task from the end of the last round that ran something.
    jobs = [JobSpec(0, 0.0, "resnet18", 32, 100.0, 1), JobSpec(1, 5000.0, "resnet18", 32, 1e7, 1)]
    seen = _job_times(jobs, "gavel-mmf")
    first_end_s = _gavel_exec_s("resnet18", 32, "v100", steps_left=100.0)
    task_s = _gavel_exec_s("resnet18", 32, "v100")
    expected = 180.0 + (5000.0 - first_end_s) + task_s
    # Job 1's round starts at its arrival and ends with its micro-task.
    assert seen[5000.0 + task_s][1][0] == pytest.approx(expected, abs=1e-6)
