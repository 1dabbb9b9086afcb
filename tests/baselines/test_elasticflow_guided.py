"""Guided ElasticFlow: without directives it is ElasticFlow bit for bit; each directive does what it says."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from hetgym.sim import ClusterView, SimConfig, SimulationResult, Simulator, get_cluster, make_policy
from hetgym.sim.allocation import Allocation
from hetgym.sim.errors import ConfigError, HetgymError
from hetgym.sim.guidance import Directive, GuidedPolicy
from hetgym.sim.registry import KnobError
from hetgym.workloads import get_scenario


def workload(scenario: str, seed: int, num_jobs: int | None = None) -> tuple[Any, tuple[Any, ...], SimConfig]:
    sc = get_scenario(scenario)
    jobs = sc.workload.build(sc.cluster, seed=seed).jobs
    if num_jobs is not None:
        jobs = jobs[:num_jobs]
    # ElasticFlow's placer in the configuration, so that a protocol object (Directed) is placed the same way.
    return sc.cluster, tuple(jobs), dataclasses.replace(sc.sim, placer="buddy")


class Directed:
    """The guided policy, given ``choose(view, job_id, policy)``'s directive for each arrival before it schedules."""

    name = "directed"
    round_s = 60.0

    def __init__(self, choose: Any, probe: bool = False) -> None:
        self.inner: Any = make_policy("elasticflow-guided")
        self.choose = choose
        self.probe = probe
        self.seen: list[tuple[int, tuple[bool, ...]]] = []
        self.types_given: dict[int, set[str]] = {}

    def reset(self, cluster: Any, *, rng: Any) -> None:
        self.inner.reset(cluster, rng=rng)

    def schedule(self, view: ClusterView) -> Allocation:
        for jid in view.arrived:
            if self.probe:
                self.seen.append((jid, self.inner.probe(view, jid, (None, *view.cluster.gpu_types))))
            directive = self.choose(view, jid, self.inner)
            if directive is not None:
                self.inner.guide(jid, directive)
        out = self.inner.schedule(view)
        for jid, ja in out.jobs.items():
            self.types_given.setdefault(jid, set()).update(t for t, _ in ja.counts)
        return out


def run(policy: Any, scenario: str = "tiny", seed: int = 0, num_jobs: int | None = None) -> SimulationResult:
    cluster, jobs, sim = workload(scenario, seed, num_jobs)
    return Simulator(cluster, jobs, config=sim).run(policy)


def test_it_follows_the_guidance_contract() -> None:
    assert isinstance(make_policy("elasticflow-guided"), GuidedPolicy)
    assert not isinstance(make_policy("elasticflow"), GuidedPolicy)


@pytest.mark.parametrize(("scenario", "seed", "num_jobs"), [("tiny", 0, None), ("tiny", 3, None), ("default", 1, 40)])
def test_without_directives_and_with_default_ones_it_is_elasticflow(scenario: str, seed: int, num_jobs: Any) -> None:
    want = run(make_policy("elasticflow"), scenario, seed, num_jobs)
    plain = run(make_policy("elasticflow-guided"), scenario, seed, num_jobs)
    # The default directive on every arrival, and the admission test probed at every arrival, change nothing.
    probed = Directed(lambda view, jid, policy: Directive(), probe=True)
    guided = run(probed, scenario, seed, num_jobs)
    for got in (plain, guided):
        assert got.jobs.equals(want.jobs)
        assert got.num_epochs == want.num_epochs
    assert len(probed.seen) == len(want.jobs)


def test_the_probe_matches_the_admission_test() -> None:
    # At an epoch with one arrival and no completion, "auto" admits the job exactly when the probe says so.
    probed = Directed(lambda view, jid, policy: None, probe=True)
    got = run(probed, "default", 1, 40).jobs.set_index("job_id")["status"]
    admitted = {jid: ok[0] for jid, ok in probed.seen}
    assert any(admitted.values()) and not all(admitted.values())
    for jid, ok in admitted.items():
        assert ok == (got[jid] != "rejected"), f"job {jid}: probe {ok}, status {got[jid]}"


def test_reject_directive_drops_the_job() -> None:
    victims = {2, 5}
    got = run(Directed(lambda view, jid, policy: Directive("reject") if jid in victims else None))
    status = got.jobs.set_index("job_id")["status"]
    assert {jid for jid in victims if status[jid] == "rejected"} == victims


def test_a_type_directive_keeps_the_job_on_that_type() -> None:
    slow = get_cluster(get_scenario("tiny").cluster).gpu_types[-1]

    def choose(view: ClusterView, jid: int, policy: Any) -> Directive | None:
        return Directive("force", slow) if slow in policy.usable_types(view, jid) else None

    directed = Directed(choose)
    run(directed)
    held = [types for types in directed.types_given.values() if types]
    assert held and all(types == {slow} for types in held)


def test_force_and_best_effort_admit_without_the_test() -> None:
    want = run(make_policy("elasticflow"), "default", 1, 40)
    assert (want.jobs["status"] == "rejected").any()  # ElasticFlow declines some of these jobs
    directed = Directed(lambda view, jid, policy: Directive("force") if jid % 2 else Directive("best_effort"))
    got = run(directed, "default", 1, 40)
    assert not (got.jobs["status"] == "rejected").any()
    stats = directed.inner.stats
    assert stats["forced"] + stats["best_effort"] == 40 and stats["forced"] == 20


def test_observed_memory_is_refused() -> None:
    with pytest.raises(KnobError, match="memory"):
        make_policy("elasticflow-guided", memory="observed")


def test_a_directive_naming_an_unknown_type_is_refused() -> None:
    policy: Any = make_policy("elasticflow-guided")
    policy.reset(get_cluster(get_scenario("tiny").cluster), rng=np.random.default_rng(0))
    with pytest.raises(HetgymError, match="not one of the cluster's"):
        policy.guide(0, Directive("auto", "h100"))
    with pytest.raises(ConfigError, match="admission"):
        Directive("maybe")


def full_pass_probe(policy: Any, view: ClusterView, job_id: int, gpu_type: str | None) -> bool:
    """The admission test by whole planning passes (what the probe's shared prefix must reproduce)."""
    job = view.job(job_id)
    admitted = [j for j in view.jobs if policy._kind.get(j.job_id) == "admitted" and j.job_id != job_id]
    _, _, failed0 = policy.plan_all(view, admitted)
    lv = policy._levels_for(view, job, gpu_type)
    if not len(lv.order):
        return False
    state = policy._start(view, [*admitted, job])
    policy._inputs[job_id] = (lv, policy._first_loss(view, job))
    policy._advance(view, state)
    ok = job_id in state.plans and state.failed <= failed0
    policy._inputs_view = None
    policy._inputs.clear()
    return bool(ok)


def test_the_probe_equals_whole_planning_passes() -> None:
    compared = 0

    def choose(view: ClusterView, jid: int, policy: Any) -> Directive | None:
        nonlocal compared
        types = (None, *view.cluster.gpu_types)
        got = policy.probe(view, jid, types)
        assert got == tuple(full_pass_probe(policy, view, jid, t) for t in types), f"job {jid}"
        compared += 1
        return Directive("force") if jid % 3 == 0 else None  # some forced jobs, so that shares get contested

    run(Directed(choose), "default", 2, 50)
    assert compared == 50
