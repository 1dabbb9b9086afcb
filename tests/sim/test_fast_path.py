"""The simulator's fast paths give the slow paths' results: a policy's allocation that changes no row is neither
checked nor applied, and the engine makes its views from their fields in one step.

Each fast path skips only work that provably does nothing; these tests run the same policy through the fast
path and, by handing the simulator a decision that spells every running job out (fresh but equal
allocations, no delta), through the checking and applying of every row, and compare the per-job results.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from hetgym.sim import (
    Allocation,
    ClusterView,
    Decision,
    JobAllocation,
    SimConfig,
    Simulator,
    StepReport,
    make_policy,
    resolve_physics,
)
from hetgym.sim.decision import decision_of, decision_or_none
from hetgym.workloads.scenario import get_scenario


def _jobs(num_jobs: int = 60, seed: int = 5) -> Any:
    return get_scenario("default").with_overrides(workload={"num_jobs": num_jobs}).workload.build("default", seed=seed)


class _SpelledOut:
    """A policy's answers with every entry a fresh copy and no delta: each running job gets a row (the slow path)
    when the copies keep their servers; without them, a running job's copy restates its counts and mode, and is
    no row (the filter of ``decision_or_none``)."""

    def __init__(self, inner: Any, *, servers: bool = True) -> None:
        self.inner = inner
        self.servers = servers
        self.name = inner.name
        self.rows = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # the physics, the quiet-tick hooks: the inner policy's

    def reset(self, cluster: Any, *, rng: np.random.Generator) -> None:
        self.inner.reset(cluster, rng=rng)

    def schedule(self, view: ClusterView) -> Allocation:
        answer = self.inner.schedule(view)
        jobs = {
            jid: JobAllocation(dict(ja.counts), ja.servers if self.servers else None, ja.mode)
            for jid, ja in answer.jobs.items()
        }
        out = Allocation(jobs, answer.reject)
        decision = decision_of(out, view.cluster, view.active.token, view.active.allocations)
        self.rows += len(decision.job_ids)
        return out


@pytest.mark.parametrize("servers", [True, False], ids=["rows", "restated"])
@pytest.mark.parametrize(
    ("policy", "placer"),
    [("fifo", None), ("edf", None), ("edf-admission", None), ("fifo", "buddy"), ("tiresias", None)],
)
def test_unchanged_allocations_skip_nothing_that_matters(policy: str, placer: str | None, servers: bool) -> None:
    jobs = _jobs()
    config = SimConfig(placer=placer, record_timeline=True)
    fast = Simulator("default", jobs, config=config).run(make_policy(policy))
    spelled = _SpelledOut(make_policy(policy), servers=servers)
    slow = Simulator("default", jobs, config=config).run(spelled)
    # With servers, the slow run checked and applied a row for every running job at every epoch it was asked ...
    if servers:
        assert spelled.rows > 2 * len(jobs)
    # ... and ended where the fast run did, job by job, with the same epochs, events and GPU timeline.
    assert slow.job_rows == fast.job_rows
    assert (slow.num_epochs, slow.num_events) == (fast.num_epochs, fast.num_events)
    assert slow.timeline.equals(fast.timeline)
    assert {k: v for k, v in slow.metrics.items() if "ms" not in k} == {
        k: v for k, v in fast.metrics.items() if "ms" not in k
    }


def test_an_allocation_that_keeps_everything_has_no_rows_and_a_decision_without_rows_is_a_plain_step() -> None:
    jobs = _jobs(30)
    sims = [Simulator("default", jobs) for _ in range(3)]
    policy = make_policy("fifo")
    policy.reset(sims[0].cluster, rng=np.random.default_rng(0))
    views = [sim.reset(physics=resolve_physics(sim.config, policy, ticks=True)) for sim in sims]
    kept = 0
    while views[0] is not None:
        answer = policy.schedule(views[0])
        view0 = views[0]
        rows = decision_or_none(answer, view0.cluster, view0.active.token, view0.active.allocations)
        if rows is None:
            kept += 1
            # The same epoch stepped three ways: the allocation (skipped), an empty decision (checked), and a
            # decision restating every running job's counts (checked and applied, each row unchanged).
            running = dict(view0.active.allocations)
            types = view0.cluster.gpu_types
            restated = Decision(
                views[2].active.token,
                list(running),
                [[dict(ja.counts).get(t, 0) for t in types] for ja in running.values()],
                tuple(ja.mode for ja in running.values()),
                [False] * len(running),
            )
            report = sims[1].step(Decision(views[1].active.token, (), (), (), ()))
            assert isinstance(report, StepReport)
            views = [sims[0].step(answer), report.view, sims[2].step(restated).view]
        else:
            views = [sims[0].step(answer)] + [
                sim.step(decision_of(answer, view.cluster, view.active.token, view.active.allocations)).view
                for sim, view in zip(sims[1:], views[1:], strict=True)
            ]
        assert [v is None for v in views] == [views[0] is None] * 3
        if views[0] is not None:
            assert _state(views[1]) == _state(views[0]) == _state(views[2])
    assert kept > 0
    rows = [sim.result("fifo").job_rows for sim in sims]
    assert rows[1] == rows[0] and rows[2] == rows[0]


def _state(view: ClusterView) -> tuple[Any, ...]:
    """What an epoch's view says of the simulation (not the objects each simulator owns)."""
    return (
        view.now_s,
        view.epoch,
        view.free_gpus,
        view.free_servers.tolist(),
        view.arrived,
        view.completed,
        view.changed,
        view.num_ended,
        view.num_pending,
        [(j.job_id, j.status, j.allocation, j.remaining_iters) for j in view.jobs],
    )


def test_the_engine_view_is_the_dataclass_value() -> None:
    sim = Simulator("default", _jobs(20))
    view = sim.reset()
    assert view is not None
    names = [f.name for f in dataclasses.fields(ClusterView)]
    assert set(names) == set(vars(view))  # every field, and nothing else (no cached property read yet)
    built = ClusterView(**{name: getattr(view, name) for name in names})
    assert built == view and repr(built) == repr(view)
    assert dataclasses.replace(view, epoch=view.epoch).active is view.active
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(view, "now_s", 1.0)  # noqa: B010 (frozen, as the dataclass's own)
