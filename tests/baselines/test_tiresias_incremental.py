"""Tiresias' incremental 2D-LAS order gives, at every epoch, the decision of the from-scratch algorithm.

The reference re-sorts every active job by queue and walks them with ``greedy_fill`` at every epoch
(the algorithm as first written). Both policies see the same views; the runs are driven by hand so
that the decisions applied are sometimes another policy's (as in the Gym environment, where an
expert's advice is not always followed) or views are skipped, which the incremental state must notice.
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np
import pytest

from baselines._common import greedy_fill
from baselines.tiresias import TiresiasLAS
from hetgym.sim import Allocation, ClusterView, Simulator, make_policy
from hetgym.workloads.scenario import get_scenario

# Low thresholds and a short promotion knob: many demotions and promotions in a short run.
KNOBS: dict[str, Any] = {"thresholds_gpu_s": (300.0, 1200.0, 4000.0), "promote_knob": 1.5}


class _Reference(TiresiasLAS):
    """Tiresias as first written: every epoch, promote the waiting jobs and sort every active job."""

    def schedule(self, view: ClusterView) -> Allocation:
        active = view.job_index
        for jid in [j for j in self._service_offset if j not in active]:
            del self._service_offset[jid]
        for job in view.waiting:
            self._maybe_promote(view, job)
        thresholds, offset = self.knob_values.thresholds_gpu_s, self._service_offset
        ordered = sorted(
            view.jobs, key=lambda j: bisect.bisect_right(thresholds, j.attained_gpu_s - offset.get(j.job_id, 0.0))
        )
        return greedy_fill(view, ordered, type_choice=self.knob_values.type_choice)


def _counts(allocation: Allocation) -> dict[int, tuple[Any, ...]]:
    return {jid: (ja.counts, ja.mode) for jid, ja in allocation.jobs.items()}


def _drive(type_choice: str, other_every: int, skip_every: int) -> tuple[int, int]:
    """Step a run by hand comparing both policies' decisions; every ``other_every``-th epoch apply
    FIFO-backfill's decision instead, and every ``skip_every``-th hide the view from both policies.
    Returns (epochs compared, queue demotions and promotions seen)."""
    jobs = get_scenario("default").with_overrides(workload={"num_jobs": 150}).workload.build("default", seed=2)
    sim = Simulator("default", jobs)
    fast = TiresiasLAS(**KNOBS, type_choice=type_choice)  # type: ignore[arg-type]
    reference = _Reference(**KNOBS, type_choice=type_choice)  # type: ignore[arg-type]
    other = make_policy("fifo-backfill")
    for policy in (fast, reference, other):
        policy.reset(sim.cluster, rng=np.random.default_rng(0))
    view = sim.reset(round_s=fast.round_s)
    compared = moves = 0
    last_queues: dict[int, int] = {}
    while view is not None:
        epoch = view.epoch
        if skip_every and epoch % skip_every == skip_every - 1:
            view = sim.step(other.schedule(view))
            continue
        want = reference.schedule(view)
        got = fast.schedule(view)
        assert _counts(got) == _counts(want), f"epoch {epoch} at t={view.now_s:.1f}: decisions differ"
        queues = {j.job_id: reference.queue_of(j) for j in view.jobs}
        moves += sum(1 for jid, q in queues.items() if jid in last_queues and last_queues[jid] != q)
        last_queues = queues
        compared += 1
        applied = other.schedule(view) if other_every and epoch % other_every == other_every - 1 else got
        view = sim.step(applied)
    return compared, moves


@pytest.mark.parametrize("type_choice", ["order", "fastest"])
def test_incremental_order_decides_as_the_full_sort(type_choice: str) -> None:
    compared, moves = _drive(type_choice, other_every=0, skip_every=0)
    assert compared > 500 and moves > 50  # the run exercises demotions and promotions


def test_incremental_order_follows_decisions_it_did_not_make() -> None:
    compared, moves = _drive("order", other_every=7, skip_every=0)
    assert compared > 500 and moves > 50


def test_incremental_order_rebuilds_after_a_view_it_did_not_see() -> None:
    compared, moves = _drive("order", other_every=0, skip_every=11)
    assert compared > 500 and moves > 50


def test_a_run_is_the_same_as_the_reference_run() -> None:
    jobs = get_scenario("default").with_overrides(workload={"num_jobs": 150}).workload.build("default", seed=5)
    fast = Simulator("default", jobs).run(TiresiasLAS(**KNOBS))
    reference = Simulator("default", jobs).run(_Reference(**KNOBS))
    assert fast.jobs.equals(reference.jobs)
    assert fast.timeline.equals(reference.timeline)
    assert fast.num_epochs == reference.num_epochs
