"""Teachers that label any state: with ``memory="observed"`` Dancer and ElasticFlow decide from the view alone.

An imitation-learning teacher (DAgger) labels the states a learner reaches, so its label must not depend
on which states it saw before. The checks: the same view gets the same allocation from a fresh instance
and from one that followed another policy's run (or another workload first); Hadar and HadarE (round
mode) already decide from the view; observed runs end without stalls; a bad ``memory`` is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from helpers import Scripted, toy_model

from hetgym.experiments import asdict_shallow
from hetgym.sim import ClusterSpec, JobSpec, JobStatus, SimConfig, Simulator, make_policy
from hetgym.sim.allocation import Allocation
from hetgym.sim.policy import Policy, policy_placer
from hetgym.sim.registry import KnobError
from hetgym.sim.view import ClusterView
from hetgym.workloads.scenario import get_scenario

OBSERVED = [("dancer", {"memory": "observed"}), ("elasticflow", {"memory": "observed"})]
VIEW_FUNCTIONS = [*OBSERVED, ("hadar", {}), ("hadare", {})]


def scenario_sim(scenario: str, seed: int, num_jobs: int | None = None) -> Simulator:
    """The simulator ``hetgym.experiments.run_one`` builds for an embedded scenario and seed."""
    sc = get_scenario(scenario)
    if num_jobs is not None:
        sc = sc.with_overrides(workload={"num_jobs": num_jobs})
    cluster = sc.cluster_spec()
    config = SimConfig.from_dict({**asdict_shallow(sc.sim), "seed": seed})
    return Simulator(cluster, sc.workload.build(cluster, seed=seed), config=config)


def driven_views(sim: Simulator, driver: Policy, round_s: float | None, limit: int) -> Iterator[ClusterView]:
    """The views of a run driven by ``driver`` (a stand-in for a learner), at most ``limit`` of them."""
    driver.reset(sim.cluster, rng=np.random.default_rng(0))
    view = sim.reset(round_s=round_s, placer=policy_placer(driver))
    for _ in range(limit):
        if view is None:
            return
        yield view
        view = sim.step(driver.schedule(view))


def fresh(name: str, kwargs: dict[str, Any], cluster: ClusterSpec) -> Policy:
    policy = make_policy(name, **kwargs)
    policy.reset(cluster, rng=np.random.default_rng(0))
    return policy


def labels_differ(
    name: str,
    kwargs: dict[str, Any],
    driver: str,
    seed: int,
    limit: int,
    warm_up: Callable[[Policy], None] | None = None,
) -> tuple[int, int]:
    """Views of a ``driver`` run where the instance that followed the run and a fresh one disagree (and views)."""
    sim = scenario_sim("tiny", seed)
    teacher = fresh(name, kwargs, sim.cluster)
    if warm_up is not None:
        warm_up(teacher)
    differ = total = 0
    for view in driven_views(sim, make_policy(driver), teacher.round_s, limit):
        followed: Allocation = teacher.schedule(view)
        alone: Allocation = fresh(name, kwargs, sim.cluster).schedule(view)
        differ += followed != alone
        total += 1
    return differ, total


# ---------------------------------------------------------------------------------------------
# The label is a function of the view


@pytest.mark.parametrize(("name", "kwargs"), VIEW_FUNCTIONS, ids=[n for n, _ in VIEW_FUNCTIONS])
@pytest.mark.parametrize("driver", ["srtf", "fifo"])
def test_the_label_does_not_depend_on_the_states_seen_before(name: str, kwargs: dict[str, Any], driver: str) -> None:
    differ, total = labels_differ(name, kwargs, driver, seed=1000, limit=150)
    assert total >= 50
    assert differ == 0, f"{name}: {differ} of {total} views labelled differently after another history"


def test_the_paper_mode_does_depend_on_history() -> None:
    # Why the knob exists: Dancer's default keeps reservations and admissions between epochs.
    differ, total = labels_differ("dancer", {}, "srtf", seed=1000, limit=150)
    assert 0 < differ < total


@pytest.mark.parametrize(("name", "kwargs"), OBSERVED, ids=[n for n, _ in OBSERVED])
def test_another_workload_seen_first_changes_nothing(name: str, kwargs: dict[str, Any]) -> None:
    # The same job ids carry other specs in another workload: nothing cached by job id may leak.
    def warm_up(teacher: Policy) -> None:
        other = scenario_sim("tiny", 1003)
        for view in driven_views(other, make_policy("edf"), teacher.round_s, 60):
            teacher.schedule(view)

    differ, total = labels_differ(name, kwargs, "srtf", seed=1000, limit=100, warm_up=warm_up)
    assert total >= 60 and differ == 0


# ---------------------------------------------------------------------------------------------
# Admission without history


def test_only_a_new_arrival_is_refused() -> None:
    # Job 0 (600 iterations, at best 2 it/s on two V100s) is feasible when it arrives; a learner that
    # leaves it waiting makes it infeasible by t=120. The observed teacher then runs it late
    # rather than refusing it, while an infeasible new arrival (job 1) is refused at once.
    cluster = ClusterSpec.from_inventory("2x2", {"v100": (2, 2), "k80": (2, 2)})
    jobs = [
        JobSpec(0, 0.0, "a", 1, 600.0, 1, deadline_s=400.0, max_gpus=2),
        JobSpec(1, 300.0, "a", 1, 6000.0, 1, deadline_s=400.0, max_gpus=2),
    ]
    sim = Simulator(cluster, jobs, config=SimConfig(restart_penalty_s=0.0), throughput=toy_model())
    idle = Scripted(lambda view: Allocation())
    for view in driven_views(sim, idle, 60.0, 10):  # type: ignore[arg-type]
        for name in ("dancer", "elasticflow"):
            label = fresh(name, {"memory": "observed"}, cluster).schedule(view)
            if view.now_s < 300.0:
                assert 0 in label.jobs and not label.reject, (name, view.now_s)
            elif 1 in view.arrived:
                assert label.reject == {1}, (name, view.now_s)
                assert 0 in label.jobs, (name, view.now_s)  # late, still run
            else:
                assert 0 not in label.reject and 1 not in label.reject


# ---------------------------------------------------------------------------------------------
# Whole episodes


def assert_ends_cleanly(sim: Simulator, name: str) -> None:
    result = sim.run(make_policy(name, memory="observed"))
    assert not result.stalled
    statuses = {JobStatus[str(s).upper()] for s in result.jobs["status"]}
    assert statuses <= {JobStatus.COMPLETED, JobStatus.REJECTED}, statuses
    assert 0.0 < result.metrics["dsr"] <= 1.0


@pytest.mark.parametrize("name", ["dancer", "elasticflow"])
@pytest.mark.parametrize("seed", [1000, 1003])  # short runs (seconds) of the tiny scenario
def test_observed_runs_end_on_the_tiny_scenario(name: str, seed: int) -> None:
    assert_ends_cleanly(scenario_sim("tiny", seed), name)


@pytest.mark.parametrize("name", ["dancer", "elasticflow"])
def test_observed_runs_end_on_the_default_scenario_cut_short(name: str) -> None:
    assert_ends_cleanly(scenario_sim("default", 1000, num_jobs=12), name)


def test_observed_elasticflow_runs_end_on_the_default_scenario() -> None:
    assert_ends_cleanly(scenario_sim("default", 1000), "elasticflow")


@pytest.mark.slow
def test_observed_dancer_runs_end_on_the_default_scenario() -> None:
    # About five minutes on one core: one DP per active job per epoch.
    assert_ends_cleanly(scenario_sim("default", 1000), "dancer")


# ---------------------------------------------------------------------------------------------
# The knob


@pytest.mark.parametrize("name", ["dancer", "elasticflow"])
def test_a_bad_memory_is_refused_naming_the_knob(name: str) -> None:
    with pytest.raises(KnobError, match=r"knob memory='forgetful' is not one of \['history', 'observed'\]"):
        make_policy(name, memory="forgetful")
    assert make_policy(name).params()["memory"] == "history"
