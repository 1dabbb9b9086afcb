"""Incremental planning gives the same answers as planning afresh: ElasticFlow's admission passes (only
the jobs after an arrival are planned again) and Hadar's cached cheapest-node walks."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baselines.elasticflow import ElasticFlow, MSSPlan, Timeline
from baselines.elasticflow.admission import _Pass
from baselines.hadar import Hadar
from hetgym.sim import ClusterSpec, SimConfig, Simulator, make_policy
from hetgym.sim.placement.priced import NodePool
from hetgym.sim.view import ClusterView, JobView
from hetgym.workloads import WorkloadConfig

PassResult = tuple[Timeline, dict[int, MSSPlan], set[int]]


def _same_pass(a: PassResult, b: PassResult) -> None:
    ta, pa, fa = a
    tb, pb, fb = b
    assert np.array_equal(ta.times, tb.times)
    assert np.array_equal(ta.free, tb.free)
    assert fa == fb
    assert pa.keys() == pb.keys()
    for jid, plan in pa.items():
        other = pb[jid]
        assert (plan.option, plan.type_idx, plan.end_s, plan.change_s) == (
            other.option,
            other.type_idx,
            other.end_s,
            other.change_s,
        )
        assert np.array_equal(plan.counts, other.counts)


class CheckedElasticFlow(ElasticFlow):
    """ElasticFlow that checks every incremental trial pass against planning all its jobs afresh."""

    trials = 0
    continued = 0  # trials that went on from the base pass (not started over)
    snapshots = 0

    def _trial(
        self, view: ClusterView, base: _Pass, job: JobView, snapshot_at: tuple[float, float, int] | None
    ) -> tuple[_Pass, _Pass | None]:
        CheckedElasticFlow.continued += not base.timeline.default_horizon
        trial, snapshot = super()._trial(view, base, job, snapshot_at)
        _same_pass(trial.result(), self.plan_all(view, [*base.jobs, job]))
        if snapshot is not None:
            # The snapshot is the pass of the same jobs stopped before `snapshot_at`.
            fresh = self._start(view, [*base.jobs, job])
            self._advance(view, fresh, snapshot_at)
            assert fresh.pos == snapshot.pos
            _same_pass(snapshot.result(), fresh.result())
            CheckedElasticFlow.snapshots += 1
        CheckedElasticFlow.trials += 1
        return trial, snapshot


@pytest.mark.parametrize("rejected_jobs", ["drop", "best_effort"])
def test_elasticflow_trial_passes_match_planning_afresh(rejected_jobs: str) -> None:
    cluster = ClusterSpec.from_inventory("mix", {"v100": (2, 4), "k80": (2, 4)})
    wl = WorkloadConfig(recipe="elasticflow", num_jobs=40, arrival_rate_per_h=60.0, max_gpus_per_job=8)
    # Half of them arrive together: one epoch admits many jobs, chaining the snapshots.
    jobs = [
        j if i % 2 else dataclasses.replace(j, submit_s=0.0)
        for i, j in enumerate(wl.build(cluster, seed=3).jobs)
        if math.isfinite(j.deadline_s)
    ]
    CheckedElasticFlow.trials = CheckedElasticFlow.continued = CheckedElasticFlow.snapshots = 0
    sim = Simulator(cluster, jobs, config=SimConfig(record_timeline=False))
    result = sim.run(CheckedElasticFlow(rejected_jobs=rejected_jobs))
    reference = Simulator(cluster, jobs, config=SimConfig(record_timeline=False)).run(
        make_policy("elasticflow", rejected_jobs=rejected_jobs)
    )
    assert CheckedElasticFlow.trials >= len(jobs)
    assert CheckedElasticFlow.continued > len(jobs) // 2
    assert CheckedElasticFlow.snapshots > 5
    assert result.jobs.equals(reference.jobs)


@settings(max_examples=60, deadline=None)
@given(
    takes=st.lists(st.tuples(st.integers(0, 5), st.integers(1, 4)), max_size=12),
    queries=st.lists(
        st.tuples(st.sampled_from([(0,), (1,), (0, 1)]), st.integers(1, 12), st.sampled_from([(), (0,), (4, 1)])),
        min_size=1,
        max_size=8,
    ),
)
def test_cached_cheapest_matches_a_fresh_walk(
    takes: list[tuple[int, int]], queries: list[tuple[tuple[int, ...], int, tuple[int, ...]]]
) -> None:
    cluster = ClusterSpec.from_inventory("mix", {"v100": (3, 4), "k80": (3, 4)})
    pool = NodePool(cluster, [0] * 6, 0.1, 1.0)
    for node, n in [*takes, (None, 0)]:
        for types, need, pref in queries:
            first = pool.cheapest(types, need, pref)
            again = pool.cheapest(types, need, pref)  # answered from the cache
            fresh = pool._cheapest(tuple(types), need, list(dict.fromkeys(pref)))
            assert first == again == fresh
            if first is not None:
                first[0].clear()  # callers may change the list they get; the cache keeps its own
                assert pool.cheapest(types, need, pref) == fresh
        if node is not None and pool.free(node) >= n:
            pool.take(node, n)


class NaiveAdmissionElasticFlow(ElasticFlow):
    """ElasticFlow's admission planned afresh: every trial and every pass of the admitted set from the start."""

    def _admit(
        self, view: ClusterView, admitted: list[JobView], arrived: list[int]
    ) -> tuple[list[JobView], set[int], PassResult | None]:
        rejected: set[int] = set()
        last: PassResult | None = None
        for job in sorted((view.job(j) for j in arrived), key=lambda j: (j.deadline_s, j.submit_s, j.job_id)):
            if not job.spec.has_deadline:
                self._kind[job.job_id] = "best_effort"
                continue
            trial = self.plan_all(view, [*admitted, job])
            before = self.plan_all(view, admitted)
            if job.job_id in trial[1] and trial[2] <= before[2]:
                self._kind[job.job_id] = "admitted"
                admitted = [*admitted, job]
                last = trial
                self.stats["admitted"] += 1
            else:
                self.stats["rejected"] += 1
                if self.knob_values.rejected_jobs == "drop":
                    rejected.add(job.job_id)
                else:
                    self._kind[job.job_id] = "best_effort"
                last = last if last is not None else before
        return admitted, rejected, last


@pytest.mark.parametrize("rejected_jobs", ["drop", "best_effort"])
def test_elasticflow_admission_matches_planning_every_pass_afresh(rejected_jobs: str) -> None:
    """The admission passes stopped early (trial failures, declined arrivals) decide as planning all afresh."""
    cluster = ClusterSpec.from_inventory("mix", {"v100": (2, 4), "k80": (2, 4)})
    wl = WorkloadConfig(recipe="elasticflow", num_jobs=60, arrival_rate_per_h=90.0, tightness=0.5, max_gpus_per_job=8)
    # A burst at time 0, then arrivals one by one: many declined, admitted jobs that are late.
    jobs = [j if i % 3 else dataclasses.replace(j, submit_s=0.0) for i, j in enumerate(wl.build(cluster, seed=5).jobs)]
    results = []
    stats = []
    for policy in (ElasticFlow(rejected_jobs=rejected_jobs), NaiveAdmissionElasticFlow(rejected_jobs=rejected_jobs)):
        results.append(Simulator(cluster, jobs, config=SimConfig(record_timeline=False)).run(policy).jobs)
        stats.append(dict(policy.stats))
    assert stats[0] == stats[1]
    assert stats[0]["rejected"] >= 5 and stats[0]["admitted"] >= 5 and stats[0]["late"] > 0
    assert results[0].equals(results[1])


class CheckedHadar(Hadar):
    """Hadar that checks every offer against one valued with every cache emptied (policy's and pool's)."""

    checks = 0

    def _evaluate(
        self, view: ClusterView, job: JobView, pool: NodePool, keep_current: bool
    ) -> tuple[float, list[tuple[int, int]], float, float, float, float] | None:
        got = super()._evaluate(view, job, pool, keep_current)
        self._candidates_pool = None
        self._cache_view = None
        pool._cheapest_cache.clear()
        pool._level_cache.clear()
        assert super()._evaluate(view, job, pool, keep_current) == got
        CheckedHadar.checks += 1
        return got


@pytest.mark.parametrize("kwargs", [{}, {"utility": "avg_jct"}, {"task_level_mixing": False}])
def test_hadar_offers_from_caches_match_offers_made_afresh(kwargs: dict[str, object]) -> None:
    """Cheapest placements kept per type set while its types are unchanged give the offers made afresh."""
    cluster = ClusterSpec.from_inventory("mix", {"a100": (2, 8), "v100": (3, 4), "k80": (4, 4)})
    wl = WorkloadConfig(recipe="elasticflow", num_jobs=60, arrival_rate_per_h=40.0, max_gpus_per_job=16)
    jobs = wl.build(cluster, seed=2).jobs
    CheckedHadar.checks = 0
    checked = Simulator(cluster, jobs, config=SimConfig(record_timeline=False)).run(CheckedHadar(**kwargs))  # type: ignore[arg-type]
    plain = Simulator(cluster, jobs, config=SimConfig(record_timeline=False)).run(make_policy("hadar", **kwargs))
    assert CheckedHadar.checks > 500
    assert checked.jobs.equals(plain.jobs)
