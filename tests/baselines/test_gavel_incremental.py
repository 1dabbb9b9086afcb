"""Gavel's policies keep their per-job state across epochs: updated from a view's arrivals, completions and
changes when it follows the last view they saw, rebuilt from every active job otherwise, with the same
decisions either way; inside a round (Gavel's own simulator mode) a decision changes no job."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from baselines.gavel.rounds import GavelRounds
from hetgym.sim import AllocationBuilder, SimConfig, Simulator, make_policy
from hetgym.workloads.traces.pipeline import load_trace

TRACES = Path(__file__).resolve().parents[1] / "data" / "gavel"


def _simulator(compat: str, trace: str = "poisson-200-900s") -> Simulator:
    if trace == "batched":
        # The 200-job trace with its arrivals moved to the hour: several arrive at each epoch after the first.
        jobs = [
            replace(j, submit_s=3600.0 * (j.submit_s // 3600.0))
            for j in load_trace(TRACES / "poisson-200-900s.trace", "gavel")
        ]
    else:
        jobs = load_trace(TRACES / f"{trace}.trace", "gavel")
    return Simulator("gavel-108", jobs, config=SimConfig(compat=compat, max_epochs=600))


def _policy(name: str, sim: Simulator) -> GavelRounds:
    policy = make_policy(name)
    assert isinstance(policy, GavelRounds)
    policy.reset(sim.cluster, rng=np.random.default_rng(0))
    return policy


def _counts(allocation: object) -> dict[int, tuple[tuple[str, int], ...]]:
    return {jid: ja.counts for jid, ja in allocation.jobs.items()}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "compat", "trace"),
    [
        ("gavel-fifo", "gavel", "poisson-200-900s"),
        ("gavel-mmf", "gavel", "poisson-200-900s"),
        ("gavel-mmf", "none", "poisson-200-900s"),
        ("gavel-fifo", "gavel", "t0-150"),  # 150 arrivals at the first epoch
        ("gavel-fifo", "gavel", "batched"),
        ("gavel-mmf", "none", "batched"),
    ],
)
def test_incremental_state_gives_the_decisions_of_a_full_rescan(name: str, compat: str, trace: str) -> None:
    # Two copies of the policy decide every epoch of one run: one keeps its state incrementally, the other
    # is made to rebuild it from the view at every call. Their decisions and per-job state agree throughout.
    sim = _simulator(compat, trace)
    incremental, rescan = _policy(name, sim), _policy(name, sim)
    view = sim.reset(round_s=incremental.round_s)
    epochs = 0
    while view is not None:
        rescan._token = None  # no view follows: every active job is looked at
        decision = incremental.schedule(view)
        assert _counts(rescan.schedule(view)) == _counts(decision)
        active = [job.job_id for job in view.jobs]
        for policy in (incremental, rescan):
            assert list(policy._job_time) == active  # kept in submission order
            assert set(policy._scale) == set(policy._rates) == set(active)
        view = sim.step(decision)
        epochs += 1
    assert epochs > 100


@pytest.mark.parametrize("name", ["gavel-fifo", "gavel-mmf"])
def test_a_policy_shown_only_some_epochs_tracks_the_active_jobs(name: str) -> None:
    # The env may decide an epoch without asking the policy (its agent keeps every job as it is): the next
    # view the policy sees does not follow its last one, and it rebuilds its state from that view.
    sim = _simulator("gavel")
    policy = _policy(name, sim)
    view = sim.reset(round_s=policy.round_s)
    asked = 0
    while view is not None:
        if view.epoch % 3 == 0 or view.is_tick:
            decision = policy.schedule(view)
            asked += 1
            assert list(policy._job_time) == [job.job_id for job in view.jobs]
        else:
            decision = AllocationBuilder.keeping_running(view).build()
        view = sim.step(decision)
    assert asked > 100


def test_inside_a_round_gavels_mode_changes_no_job() -> None:
    sim = _simulator("gavel")
    policy = _policy("gavel-fifo", sim)
    view = sim.reset(round_s=policy.round_s)
    inside = 0
    while view is not None:
        decision = policy.schedule(view)
        if not view.is_tick and view.epoch > 0:
            assert decision.touched == ()
            inside += 1
        view = sim.step(decision)
    assert inside > 100
