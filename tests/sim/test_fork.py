"""``Simulator.fork()`` (:mod:`hetgym.sim.forking`): a fork continued with the same policy gives the original's
continuation bit for bit, and a fork and its original are independent.

Each run is driven epoch by epoch as :meth:`Simulator.run` drives it; at a few epochs the simulator and the
policy are forked (``Policy.copy_state``) and the view rebound to the fork; the fork is run to the end first, then
the original, and both must equal an unforked run: per-job tables, metrics, timelines, ended and deadline logs.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any

import numpy as np
import pytest

from hetgym.sim import SimConfig, SimulationResult, Simulator, get_cluster, make_policy
from hetgym.sim.errors import HetgymError
from hetgym.sim.fastforward import QuietTicks
from hetgym.sim.forking import fork_object, fork_policy
from hetgym.sim.job import JobStatus
from hetgym.sim.policy import Policy, policy_placer
from hetgym.sim.view import ClusterView
from hetgym.workloads import get_scenario


def workload(scenario: str, seed: int, num_jobs: int | None) -> tuple[Any, tuple[Any, ...], SimConfig]:
    sc = get_scenario(scenario)
    jobs = sc.workload.build(sc.cluster, seed=seed).jobs
    return sc.cluster, tuple(jobs[:num_jobs] if num_jobs else jobs), sc.sim


def start(sim: Simulator, policy: Policy) -> ClusterView | None:
    """What ``Simulator.run`` does before its loop."""
    policy.reset(sim.cluster, rng=np.random.default_rng(sim.config.seed))
    ticks = policy.uses_ticks
    return sim.reset(round_s=policy.round_s, ticks=ticks, placer=policy_placer(policy))


def drive(
    sim: Simulator, policy: Policy, view: ClusterView | None, until_epoch: float = math.inf
) -> ClusterView | None:
    """``Simulator.run``'s loop, stopped at the first epoch numbered ``until_epoch`` or later."""
    stands = policy.uses_ticks and policy.stands_on_ticks
    while view is not None and view.epoch < until_epoch:
        view = sim.step(policy.schedule(view), quiet=QuietTicks() if stands else None)
    return view


def record(sim: Simulator) -> tuple[Any, ...]:
    """Everything a run's outcome is: the result (wall-clock figures aside) and the simulator's logs."""
    result: SimulationResult = sim.result("p")
    metrics = {k: v for k, v in result.metrics.items() if "_ms_" not in k and "wall" not in k}
    return (result.jobs, metrics, result.num_epochs, result.num_events, sim.ended_log(), sim.deadline_log())


def same(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    assert a[0].equals(b[0]), "per-job tables differ"
    assert a[1].keys() == b[1].keys()
    for key in a[1]:
        x, y = a[1][key], b[1][key]
        assert x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y)), key
    assert a[2:] == b[2:]


CASES = [
    ("tiny", 0, None, "elasticflow", {}),
    ("tiny", 3, None, "tiresias", {}),
    ("tiny", 1, None, "hadare", {}),  # its own fork() is an execution mode; copy_state() copies it
    ("default", 1, 20, "elasticflow", {}),
    ("default", 2, 30, "edf", {}),
    ("default", 1, 20, "gavel-mmf", {}),
    # A placer with a random stream of its own: a fork copies the stream.
    ("default", 3, 30, "fifo", {"placer": "random"}),
]


@pytest.mark.parametrize(("scenario", "seed", "num_jobs", "name", "sim_overrides"), CASES)
def test_a_fork_continues_exactly_as_the_original(
    scenario: str, seed: int, num_jobs: int | None, name: str, sim_overrides: dict[str, Any]
) -> None:
    cluster, jobs, cfg = workload(scenario, seed, num_jobs)
    cfg = dataclasses.replace(cfg, **sim_overrides)
    reference = Simulator(cluster, jobs, config=cfg)
    drive(reference, (policy := make_policy(name)), start(reference, policy))
    want = record(reference)
    # The stepped run is the fast path's run.
    assert Simulator(cluster, jobs, config=cfg).run(make_policy(name)).jobs.equals(want[0])
    epochs = want[2]
    for cut in sorted({1, epochs // 7, epochs // 3, (2 * epochs) // 3}):
        sim = Simulator(cluster, jobs, config=cfg)
        policy = make_policy(name)
        view = drive(sim, policy, start(sim, policy), cut)
        assert view is not None
        twin, twin_policy = sim.fork(), policy.copy_state()
        twin_view = twin.rebind_view(view)
        assert twin_view.now_s == view.now_s and twin_view.jobs == view.jobs
        # The fork first, to the end: the original must not see it.
        drive(twin, twin_policy, twin_view)
        assert view.jobs == twin_view.jobs  # the original's view is still the epoch's
        same(record(twin), want)
        drive(sim, policy, view)
        same(record(sim), want)


def test_forks_are_independent_and_share_only_immutable_data() -> None:
    cluster, jobs, cfg = workload("default", 1, 30)
    sim = Simulator(cluster, jobs, config=cfg)
    policy = make_policy("elasticflow")
    view = drive(sim, policy, start(sim, policy), 40)
    while view is not None and not sim.ended_log():  # on to an epoch at which some job has ended
        view = sim.step(policy.schedule(view))
    assert view is not None
    twin = sim.fork()
    for name in ("cluster", "config", "throughput", "specs", "rate_table"):
        assert getattr(twin, name) is getattr(sim, name)
    # Records of jobs still to arrive, waiting or running are copied; those of jobs that ended are shared.
    ended = {JobStatus.COMPLETED, JobStatus.REJECTED}
    assert any(r.status in ended for r in sim._queue.jobs.values()) and any(
        r.status not in ended for r in sim._queue.jobs.values()
    )
    assert twin._queue.jobs is not sim._queue.jobs
    assert all((twin._queue.jobs[j] is r) == (r.status in ended) for j, r in sim._queue.jobs.items())
    assert twin._placements.servers.free is not sim._placements.servers.free
    assert twin._queue.heap is twin._placements.heap and twin._queue.heap is not sim._queue.heap
    # Diverge: the fork rejects any waiting job and FIFO runs the rest; the original is left where it was.
    before = (sim.now_s, [(r.remaining, r.status, r.alloc) for r in sim._queue.jobs.values()], list(sim.ended_log()))
    twin_view = twin.rebind_view(view)
    fifo = make_policy("fifo")
    fifo.reset(twin.cluster, rng=np.random.default_rng(0))
    reject = frozenset(j.job_id for j in twin_view.waiting)
    later = twin.step(dataclasses.replace(fifo.schedule(twin_view), reject=reject))
    assert later is not None
    with pytest.raises(HetgymError, match="current epoch"):  # a view of another epoch cannot be rebound
        sim.fork().rebind_view(later)
    drive(twin, fifo, later)
    assert twin.done and not sim.done
    assert before == (
        sim.now_s,
        [(r.remaining, r.status, r.alloc) for r in sim._queue.jobs.values()],
        list(sim.ended_log()),
    )


def test_a_fork_before_reset_and_the_generic_policy_fork() -> None:
    cluster, jobs, cfg = workload("tiny", 0, None)
    fresh = Simulator(cluster, jobs, config=cfg).fork()
    result = fresh.run(make_policy("fifo"))
    assert result.jobs.equals(Simulator(cluster, jobs, config=cfg).run(make_policy("fifo")).jobs)

    class Holder:
        def __init__(self) -> None:
            self.table = {1: (1, 2)}
            self.state = {"n": [1]}
            self.big = object()

    held = Holder()
    out = fork_object(held, shared=("big",), shallow=("table",))
    assert out.big is held.big and out.table is not held.table and out.table[1] is held.table[1]
    assert out.state == held.state and out.state["n"] is not held.state["n"]
    # Without a fork method, a deep copy.
    assert fork_policy(held).state == held.state
    policy = make_policy("elasticflow")
    policy.reset(get_cluster(cluster), rng=np.random.default_rng(0))
    forked = policy.copy_state()
    assert forked.cluster is policy.cluster and forked._kind is not policy._kind
    assert forked.rng is not policy.rng
    assert forked.rng.random() == copy.deepcopy(policy.rng).random()
