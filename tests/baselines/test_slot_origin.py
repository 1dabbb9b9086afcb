"""``slot_origin="decision"``: an observed-state Dancer or ElasticFlow decides the same wherever in its slot the
decision falls (the decision is a function of durations only); it needs ``memory="observed"``."""

from __future__ import annotations

import numpy as np
import pytest

from hetgym.sim import SimConfig, Simulator, make_policy
from hetgym.sim.registry import KnobError
from hetgym.sim.view import shift_time
from hetgym.workloads.scenario import get_scenario


@pytest.mark.parametrize("name", ["dancer", "elasticflow", "elasticflow-agnostic"])
def test_decision_origin_needs_observed_memory(name: str) -> None:
    with pytest.raises(KnobError, match="slot_origin='decision' needs memory='observed'"):
        make_policy(name, slot_origin="decision")
    make_policy(name, slot_origin="decision", memory="observed")
    with pytest.raises(KnobError, match="slot_origin"):
        make_policy(name, slot_origin="relative", memory="observed")


def _decision(allocation: object) -> object:
    return {jid: ja.counts for jid, ja in allocation.jobs.items()}, allocation.reject  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["dancer", "elasticflow"])
def test_decision_origin_decides_the_same_under_any_shift(name: str) -> None:
    scenario = get_scenario("tiny")
    cluster = scenario.cluster_spec()
    knobs = {"memory": "observed", "slot_origin": "decision"}
    sim = Simulator(cluster, scenario.workload.build(cluster, seed=1000), config=SimConfig(max_epochs=400))
    policy = make_policy(name, **knobs)
    policy.reset(cluster, rng=np.random.default_rng(0))
    view = sim.reset(round_s=60.0)
    off_boundary = 0
    while view is not None:
        decision = policy.schedule(view)
        off_boundary += view.now_s % 60.0 > 1e-6
        for shift_s in (7.0, 41.0):
            other = make_policy(name, **knobs)
            other.reset(cluster, rng=np.random.default_rng(0))
            assert _decision(other.schedule(shift_time(view, shift_s))) == _decision(decision)
        view = sim.step(decision)
    assert off_boundary >= 10  # arrivals and completions between slot boundaries were decided too


def test_decision_origin_plans_on_boundaries_as_before() -> None:
    # At an epoch on a slot boundary nothing moves: the decision is the absolute-origin one.
    scenario = get_scenario("tiny")
    cluster = scenario.cluster_spec()
    sim = Simulator(cluster, scenario.workload.build(cluster, seed=1001), config=SimConfig(max_epochs=300))
    a = make_policy("dancer", memory="observed")
    b = make_policy("dancer", memory="observed", slot_origin="decision")
    for p in (a, b):
        p.reset(cluster, rng=np.random.default_rng(0))
    view = sim.reset(round_s=60.0)
    on_boundary = 0
    while view is not None:
        decision = a.schedule(view)
        other = b.schedule(view)
        if view.now_s % 60.0 < 1e-9:
            on_boundary += 1
            assert _decision(other) == _decision(decision)
        view = sim.step(decision)
    assert on_boundary >= 100
