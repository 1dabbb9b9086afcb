"""Futures for trace windows: bootstrapped from the trace outside the held-out windows, never the true future."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import pytest

import hetgym  # noqa: F401  (registers the ids)
from hetgym.lookahead import fork_env, sample_future, sample_seed
from hetgym.lookahead.trace_futures import held_out_seeds, sample_trace_future, trace_pool
from hetgym.sim.pending import arrived_specs, pending_specs, replace_pending
from hetgym.suite.scenarios import DATA_ENV, TEST_SEEDS, get
from hetgym.workloads.windows import window_start


@pytest.fixture
def window_env(shared_data: Path, monkeypatch: pytest.MonkeyPatch):
    """trace-cluster09, workload 1003, at its 11th decision."""
    monkeypatch.setenv(DATA_ENV, str(shared_data))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        env = get("trace-cluster09").make()
    env.reset(seed=1003, options={"workload_seed": 1003})
    for _ in range(10):
        env.step(0)
    return env


def _content(job):
    return (job.submit_s, job.job_type, job.batch_size, job.total_iters, job.num_gpus, job.deadline_s)


def test_the_pool_leaves_out_every_held_out_window_and_the_episodes_own(window_env) -> None:
    u = window_env.unwrapped
    workload = u.config.workload
    assert held_out_seeds() == TEST_SEEDS
    pool = trace_pool(workload, 1003)
    trace_jobs = len(pool.positions) + len(pool.excluded)
    for seed in TEST_SEEDS:
        start = window_start(trace_jobs, workload.num_jobs, seed)
        assert set(range(start, start + workload.num_jobs)) <= pool.excluded
    assert not pool.excluded & set(pool.positions)
    # A training-seed episode leaves its own window out too.
    own = window_start(trace_jobs, workload.num_jobs, 7)
    assert set(range(own, own + workload.num_jobs)) <= trace_pool(workload, 7).excluded
    # The episode's jobs (by their trace record) are not in the pool.
    source = {j.features["source_id"] for j in u.jobs}
    assert not source & {j.features["source_id"] for j in pool.jobs}
    assert pool.rate0_per_s > 0


def test_a_trace_future_is_drawn_after_the_present_with_fresh_ids(window_env) -> None:
    u = window_env.unwrapped
    arrived = arrived_specs(u.sim)
    true_future = pending_specs(u.sim)
    future = sample_future(u, sample_seed(1003, 10, 0))
    assert len(future) == u.config.workload.num_jobs - len(arrived)
    assert all(j.submit_s > u.view.now_s for j in future)
    assert all(j.deadline_s > j.submit_s for j in future)
    assert min(j.job_id for j in future) > max(j.job_id for j in arrived + true_future)
    assert not {_content(j) for j in true_future} & {_content(j) for j in future}
    assert sample_future(u, 11) == sample_future(u, 11)
    assert sample_future(u, 11) != sample_future(u, 12)


def test_a_trace_future_never_reads_the_true_one(window_env) -> None:
    """Changing every job still to arrive (same ids) leaves the sample as it was."""
    u = window_env.unwrapped
    seed = sample_seed(1003, 10, 3)
    before = sample_future(u, seed)
    fork = fork_env(window_env)
    changed = tuple(
        dataclasses.replace(
            j, submit_s=j.submit_s + 999.0, deadline_s=j.deadline_s + 5e5, total_iters=j.total_iters * 3, num_gpus=1
        )
        for j in pending_specs(fork.sim)
    )
    replace_pending(fork.sim, changed)
    assert pending_specs(fork.sim) == changed
    assert sample_future(fork, seed) == before


def test_the_rate_follows_the_arrivals_seen(window_env) -> None:
    """Same sample seed and arrivals: a longer present (fewer arrivals per hour) spreads the future out."""
    u = window_env.unwrapped
    now_s = float(u.view.now_s)
    early = sample_trace_future(u, 5, 11, now_s, 1000)
    late = sample_trace_future(u, 5, 11, now_s + 20 * 3600.0, 1000)
    assert late[-1].submit_s - (now_s + 20 * 3600.0) > early[-1].submit_s - now_s
    assert [j.job_type for j in early] == [j.job_type for j in late]  # the specs do not depend on the rate


def test_a_played_fork_with_a_trace_future_runs_the_sampled_jobs(window_env) -> None:
    fork = fork_env(window_env)
    from hetgym.lookahead import apply_future

    future = sample_future(fork, sample_seed(1003, 10, 1))
    apply_future(fork, future)
    arrived = arrived_specs(fork.sim)
    while True:
        _, _, terminated, truncated, info = fork.step(0)
        if terminated or truncated:
            break
    assert info["metrics"]["num_jobs"] == len(arrived) + len(future)
    assert set(fork.result().jobs["job_id"]) == {j.job_id for j in arrived + future}


def test_the_teacher_decides_on_a_trace_window_with_sampled_futures(window_env) -> None:
    from hetgym.lookahead import LookaheadKnobs, LookaheadTeacher

    teacher = LookaheadTeacher(0, LookaheadKnobs.make(k_initial=2, k_max=2, horizon_h=1.0))
    action = teacher.decide(window_env)
    record = teacher.records[-1]
    assert record.futures == 2 and record.label == "lookahead (sampled futures)"
    assert action == record.chosen and action in record.candidates
    assert window_env.unwrapped.num_decisions == 10  # the teacher moved only its forks
