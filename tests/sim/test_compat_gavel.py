"""``SimConfig(compat="gavel")``: Gavel's rounds, recompute gate, raw throughputs and whole steps per round."""

from __future__ import annotations

import math

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
    # no allocation until the next recompute, 1,920 s or more after the last one: the round at 100 + 6 x 360.
    assert gavel[0][0] == 100.0
    assert gavel[1][0] == 100.0 + 6 * 360.0
    # hetgym's own model starts job 1 at its arrival on a free GPU.
    assert _starts("none")[1][0] == 150.0


def test_whole_steps_per_round_and_raw_figures() -> None:
    raw, default = ThroughputModel.raw(), ThroughputModel.default()
    # LM, batch 5 per GPU on 4 x V100: the measured figure, not the running maximum over counts.
    assert raw.rate("lm", 20, "v100", 4) < 0.5 * default.rate("lm", 20, "v100", 4)
    gavel = _starts("gavel")
    start, finish = gavel[1]
    # Job 1 (1,000 iterations, under one round) finishes at floor(rate x 360) / 360 iterations per second.
    rate = raw.rate("resnet18", 32, "v100", 1)
    floored = math.floor(rate * 360.0) / 360.0
    candidates = [1000.0 / floored] + [
        1000.0 / (math.floor(raw.rate("resnet18", 32, t, 1) * 360) / 360) for t in ("p100", "k80")
    ]
    assert any(math.isclose(finish - start, d, rel_tol=1e-9) for d in candidates)
