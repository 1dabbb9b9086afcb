"""Guided ElasticFlow's sharing directives: a priority class in the leftover GPUs and a cap on a job's GPUs.

Each option is shown on a crafted case on the tiny cluster (4 V100, 4 K80) where its effect is known by
hand, and the ``requested`` cap over whole runs; the default options leave ElasticFlow as it is.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from hetgym.sim import ClusterView, Simulator, get_cluster, make_policy
from hetgym.sim.allocation import Allocation
from hetgym.sim.errors import ConfigError, HetgymError
from hetgym.sim.guidance import GPU_CAPS, PRIORITIES, Directive, SharingPolicy
from hetgym.sim.job import JobSpec
from hetgym.workloads import get_scenario

TINY = get_scenario("tiny")
CLUSTER = get_cluster(TINY.cluster)
SIM = dataclasses.replace(TINY.sim, placer="buddy")


def jobs(n: int, total_iters: float, deadline_s: float) -> tuple[JobSpec, ...]:
    """``n`` identical one-GPU resnet50 jobs arriving at time 0 (elastic up to four GPUs)."""
    return tuple(
        JobSpec(
            job_id=i,
            submit_s=0.0,
            job_type="resnet50",
            batch_size=128,
            total_iters=total_iters,
            num_gpus=1,
            deadline_s=deadline_s,
            max_gpus=4,
        )
        for i in range(n)
    )


def first_decision(specs: tuple[JobSpec, ...], directives: dict[int, Directive]) -> dict[int, dict[str, int]]:
    """The guided policy's allocation at time 0, each job given its directive first."""
    policy: Any = make_policy("elasticflow-guided")
    policy.reset(CLUSTER, rng=np.random.default_rng(0))
    view = Simulator(CLUSTER, specs, config=SIM).reset(round_s=60.0, ticks=True, placer="buddy")
    assert view is not None
    for jid, directive in directives.items():
        policy.guide(jid, directive)
    return {jid: ja.as_dict() for jid, ja in policy.schedule(view).jobs.items()}


#: Three jobs forced onto the K80s whose minimum satisfactory share is one GPU each: one K80 is left over.
LOOSE = jobs(3, 10_000.0, 60_000.0)
ON_K80 = {i: Directive("force", "k80") for i in range(3)}


def test_it_follows_the_sharing_contract_and_defaults_change_nothing() -> None:
    assert isinstance(make_policy("elasticflow-guided"), SharingPolicy)
    assert not isinstance(make_policy("elasticflow"), SharingPolicy)
    assert Directive("force", None, "normal", "none") == Directive("force")
    assert Directive("auto", None, "normal", "none").is_default
    assert not Directive("auto", None, "high").is_default and not Directive(gpu_cap="share").is_default


def test_the_left_over_gpu_goes_to_the_high_priority_job() -> None:
    # ElasticFlow's own order gives the spare K80 to the first job in deadline order (ties: job id).
    assert first_decision(LOOSE, ON_K80) == {0: {"k80": 2}, 1: {"k80": 1}, 2: {"k80": 1}}
    high = first_decision(LOOSE, {**ON_K80, 2: Directive("force", "k80", "high")})
    assert high == {0: {"k80": 1}, 1: {"k80": 1}, 2: {"k80": 2}}
    low = first_decision(LOOSE, {**ON_K80, 0: Directive("force", "k80", "low")})
    assert low == {0: {"k80": 1}, 1: {"k80": 2}, 2: {"k80": 1}}


def test_a_high_priority_best_effort_job_is_served_before_a_low_one() -> None:
    specs = jobs(2, 20_000.0, 40_000.0)
    plain = first_decision(specs, {0: Directive("best_effort"), 1: Directive("best_effort")})
    assert plain == {0: {"k80": 2}, 1: {"k80": 2}}  # both start at one K80 (no GPUs first), then grow in turn
    for high, low in ((0, 1), (1, 0)):
        got = first_decision(
            specs, {high: Directive("best_effort", None, "high"), low: Directive("best_effort", None, "low")}
        )
        # The high job takes every K80 it can use before the low one gets its first GPU (then a V100).
        assert got[high] == {"k80": 4} and "k80" not in got[low]


def test_a_job_capped_at_its_share_takes_no_left_over_gpu() -> None:
    got = first_decision(LOOSE, {**ON_K80, 0: Directive("force", "k80", gpu_cap="share")})
    assert got == {0: {"k80": 1}, 1: {"k80": 2}, 2: {"k80": 1}}
    # Alone on an idle cluster it stays at its share while ElasticFlow would scale it to every GPU it can use.
    alone = LOOSE[:1]
    assert first_decision(alone, {0: Directive("force", "k80")}) == {0: {"k80": 4}}
    assert first_decision(alone, {0: Directive("force", "k80", gpu_cap="share")}) == {0: {"k80": 1}}


class Recording:
    """The guided policy given ``directive`` (or ``directive(view, job_id, policy)``) at every arrival, recording
    every job's largest allocation."""

    name = "recording"
    round_s = 60.0

    def __init__(self, directive: Any) -> None:
        self.inner: Any = make_policy("elasticflow-guided")
        self.directive = directive if callable(directive) else (lambda view, jid, policy: directive)
        self.most: dict[int, int] = {}
        self.last_active: set[int] = set()

    def reset(self, cluster: Any, *, rng: Any) -> None:
        self.inner.reset(cluster, rng=rng)

    def schedule(self, view: ClusterView) -> Allocation:
        for jid in view.arrived:
            self.inner.guide(jid, self.directive(view, jid, self.inner))
        out = self.inner.schedule(view)
        self.last_active = {j.job_id for j in view.jobs}
        for jid, ja in out.jobs.items():
            self.most[jid] = max(self.most.get(jid, 0), ja.total_gpus)
        return out


@pytest.mark.parametrize("seed", [0, 1])
def test_a_job_capped_at_its_request_never_holds_more(seed: int) -> None:
    specs = tuple(TINY.workload.build(TINY.cluster, seed=seed).jobs)
    requested = {s.job_id: s.num_gpus for s in specs}
    free = Recording(Directive("force"))
    Simulator(CLUSTER, specs, config=SIM).run(free)
    assert any(n > requested[jid] for jid, n in free.most.items())  # ElasticFlow scales some beyond the request
    capped = Recording(Directive("force", gpu_cap="requested"))
    result = Simulator(CLUSTER, specs, config=SIM).run(capped)
    assert capped.most and all(n <= requested[jid] for jid, n in capped.most.items())
    assert (result.jobs["status"] != "rejected").all()


def test_bad_sharing_options_are_named() -> None:
    with pytest.raises(ConfigError, match=r"priority='urgent'.*high"):
        Directive("force", priority="urgent")
    with pytest.raises(ConfigError, match=r"gpu_cap='half'.*requested"):
        Directive("force", gpu_cap="half")
    assert set(PRIORITIES) == {"high", "normal", "low"} and set(GPU_CAPS) == {"none", "requested", "share"}
    policy: Any = make_policy("elasticflow-guided")
    policy.reset(CLUSTER, rng=np.random.default_rng(0))
    view = Simulator(CLUSTER, LOOSE, config=SIM).reset(round_s=60.0, ticks=True, placer="buddy")
    with pytest.raises(HetgymError, match="gpu_cap='half'"):
        policy.capped_types(view, 0, "half")
    assert policy.capped_types(view, 0, "requested") == policy.usable_types(view, 0) == ("v100", "k80")


def test_a_cap_that_leaves_no_level_is_named() -> None:
    # ElasticFlow's levels are powers of two: a job needing three GPUs runs on four, more than it requests.
    spec = dataclasses.replace(LOOSE[0], min_gpus=3, num_gpus=3)
    policy: Any = make_policy("elasticflow-guided")
    policy.reset(CLUSTER, rng=np.random.default_rng(0))
    view = Simulator(CLUSTER, (spec,), config=SIM).reset(round_s=60.0, ticks=True, placer="buddy")
    assert view is not None
    assert policy.usable_types(view, 0) == ("v100", "k80")
    assert policy.capped_types(view, 0, "requested") == ()
    policy.guide(0, Directive("force", gpu_cap="requested"))
    with pytest.raises(HetgymError, match="within its cap of 3 GPUs"):
        policy.schedule(view)


def test_sharing_directives_are_forgotten_with_the_job() -> None:
    specs = tuple(TINY.workload.build(TINY.cluster, seed=0).jobs)

    def choose(view: ClusterView, jid: int, policy: Any) -> Directive:
        if "k80" in policy.capped_types(view, jid, "requested"):
            return Directive("force", "k80", "high", "requested")
        return Directive("force", None, "low", "share")

    rec = Recording(choose)
    Simulator(CLUSTER, specs, config=SIM).run(rec)
    # Each schedule call forgets the jobs that left: only those active at the last one can remain.
    assert len(specs) > len(rec.last_active)
    assert set(rec.inner._directives) <= rec.last_active
    assert {key[0] for key in rec.inner._restricted} <= set(rec.inner._directives)
    classes, fixed = rec.inner._leftover_terms()
    assert set(classes) | fixed <= rec.last_active
