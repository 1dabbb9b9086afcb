"""One decision shape: ``Simulator.step(Decision)`` returns a ``StepReport`` whose ended jobs, deadline outcomes and
busy GPU-seconds add up to the run's own logs; an ``Allocation`` becomes the same decision (``decision_of``); a
policy's physics is resolved once, with the configuration first (``resolve_physics``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hetgym.sim import (
    Decision,
    InvalidAllocationError,
    Physics,
    SimConfig,
    Simulator,
    StepReport,
    decision_of,
    make_policy,
    resolve_physics,
)
from hetgym.sim.errors import ConfigError
from hetgym.sim.metrics import met_deadline
from hetgym.workloads.scenario import get_scenario


def _jobs(num_jobs: int = 40, seed: int = 3) -> Any:
    return get_scenario("default").with_overrides(workload={"num_jobs": num_jobs}).workload.build("default", seed=seed)


def test_reports_add_up_to_the_logs_and_the_timeline() -> None:
    sim = Simulator("default", _jobs(), config=SimConfig(record_timeline=True))
    policy = make_policy("edf")
    policy.reset(sim.cluster, rng=np.random.default_rng(0))
    view = sim.reset(physics=resolve_physics(sim.config, policy, ticks=True))
    ended: list[Any] = []
    outcomes: list[Any] = []
    busy = np.zeros(len(sim.cluster.gpu_types))
    while view is not None:
        decision = decision_of(policy.schedule(view), sim.cluster, view.active.token, view.active.allocations)
        report = sim.step(decision)
        assert isinstance(report, StepReport)
        ended += report.ended
        outcomes += report.deadlines
        busy += np.array(report.busy_gpu_s)
        view = report.view
    assert report.done
    assert ended == sim.ended_log() and outcomes == sim.deadline_log()
    # The GPU-seconds held: the timeline's steps integrated up to the end of the run.
    timeline = sim._log.timeline
    times = [t for t, _ in timeline] + [sim.now_s]
    expected = sum(np.array(used, dtype=float) * (times[i + 1] - times[i]) for i, (_, used) in enumerate(timeline))
    np.testing.assert_allclose(busy, expected, rtol=1e-9)
    assert busy.sum() > 0


def test_allocation_and_decision_give_the_same_run() -> None:
    results = []
    for as_decision in (False, True):
        sim = Simulator("default", _jobs())
        policy = make_policy("tiresias")
        policy.reset(sim.cluster, rng=np.random.default_rng(0))
        view = sim.reset(physics=resolve_physics(sim.config, policy, ticks=True))
        while view is not None:
            allocation = policy.schedule(view)
            if as_decision:
                token, current = view.active.token, view.active.allocations
                view = sim.step(decision_of(allocation, sim.cluster, token, current)).view
            else:
                view = sim.step(allocation)
        results.append(sim.result("tiresias").jobs)
    assert results[0].equals(results[1])


def test_a_decision_of_another_epoch_or_with_bad_servers_is_refused() -> None:
    sim = Simulator("default", _jobs())
    view = sim.reset()
    assert view is not None
    jid = view.jobs[0].job_id
    types = sim.cluster.gpu_types
    row = [0] * len(types)
    row[0] = 1
    with pytest.raises(InvalidAllocationError, match="not of this epoch"):
        sim.step(Decision(object(), [jid], [row], ("sync",), [False]))
    wrong = next(s.server_id for s in sim.cluster.servers if s.gpu_type != types[0])
    with pytest.raises(InvalidAllocationError, match=f"job {jid}: servers"):
        sim.step(Decision(view.active.token, [jid], [row], ("sync",), [False], (((wrong, 1),),)))
    assert sim.num_steps == 0  # nothing applied
    right = next(s.server_id for s in sim.cluster.servers if s.gpu_type == types[0])
    report = sim.step(Decision(view.active.token, [jid], [row], ("sync",), [False], (((right, 1),),)))
    assert report.view is not None and report.view.job(jid).allocation.servers == ((right, 1),)


def test_physics_precedence() -> None:
    ef = make_policy("elasticflow")
    fifo = make_policy("fifo")
    assert resolve_physics(SimConfig(), ef).round_s == ef.round_s
    assert resolve_physics(SimConfig(round_s=100.0), ef).round_s == 100.0
    assert resolve_physics(SimConfig(), fifo) == Physics(360.0, fifo.placer, tuple(fifo.modes), ticks=False)
    assert resolve_physics(SimConfig(placer="random"), fifo, ticks=True).placer == "random"
    assert resolve_physics(SimConfig()) == Physics()
    with pytest.raises(ConfigError, match="out of range"):
        Physics(round_s=0.001)


def test_met_rule_on_one_job_and_on_arrays() -> None:
    assert met_deadline(True, 10.0, 10.0) and not met_deadline(False, 1.0, 10.0) and not met_deadline(True, 11.0, 10.0)
    out = met_deadline(np.array([True, True, False]), np.array([1.0, 11.0, 1.0]), np.array([10.0, 10.0, 10.0]))
    assert out.tolist() == [True, False, False]
