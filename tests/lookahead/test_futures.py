"""Forks, and futures conditioned on the present: replacing a fork's jobs still to arrive with sampled ones."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import gymnasium as gym
import pytest

import hetgym  # noqa: F401  (registers the ids)
from hetgym.lookahead import FutureModelError, apply_future, fork_env, sample_future, sample_seed
from hetgym.sim.errors import InvalidJobError
from hetgym.sim.pending import arrived_specs, pending_specs, replace_pending

TINY = "HetClusterEvents-Tiny-v0"
TRACE = Path(__file__).resolve().parents[2] / "traces" / "elasticflow-tiny-12.parquet"


def _at_decision(decisions: int = 3, seed: int = 1000, env_id: str = TINY, **kwargs: object) -> gym.Env:
    env = gym.make(env_id, **kwargs)
    env.reset(seed=seed, options={"workload_seed": seed})
    for _ in range(decisions):
        env.step(0)
    return env


def _content(job):  # everything but the id: what a future must not copy from the true one
    return (job.submit_s, job.job_type, job.batch_size, job.total_iters, job.num_gpus, job.deadline_s)


def _play_out(env) -> dict:
    while True:
        _, _, terminated, truncated, info = env.step(0)
        if terminated or truncated:
            return info["metrics"]


def test_fork_is_independent_and_continues_like_the_original() -> None:
    env = _at_decision()
    u = env.unwrapped
    now_s, decisions = u.view.now_s, u.num_decisions
    fork = fork_env(env)
    fork_metrics = _play_out(fork)
    assert fork.view is None  # the fork ended ...
    assert u.view.now_s == now_s and u.num_decisions == decisions  # ... the original did not move
    assert _play_out(env) == fork_metrics  # and goes on exactly as its fork did


def test_fork_env_uses_the_envs_own_fork_when_it_has_one() -> None:
    class WithFork:
        unwrapped = None

        def fork(self) -> str:
            return "forked"

    obj = WithFork()
    obj.unwrapped = obj  # type: ignore[assignment]
    assert fork_env(obj) == "forked"


def test_replace_pending_keeps_the_arrived_jobs_and_runs_the_new_future() -> None:
    env = _at_decision()
    fork = fork_env(env)
    sim = fork.sim
    arrived = arrived_specs(sim)
    true_future = pending_specs(sim)
    assert len(arrived) + len(true_future) == 12
    new = tuple(
        dataclasses.replace(j, job_id=100 + i, submit_s=j.submit_s + 50.0, deadline_s=j.deadline_s + 50.0)
        for i, j in enumerate(true_future[:4])
    )
    replace_pending(sim, new)
    assert arrived_specs(sim) == arrived
    assert pending_specs(sim) == new
    fork.jobs = arrived + new
    metrics = _play_out(fork)
    assert metrics["num_jobs"] == len(arrived) + 4
    assert set(fork.result().jobs["job_id"]) == {j.job_id for j in arrived} | {100, 101, 102, 103}


@pytest.mark.parametrize("change", ["past", "taken_id", "bad_type"])
def test_replace_pending_rejects_bad_jobs_and_changes_nothing(change: str) -> None:
    env = _at_decision()
    sim = fork_env(env).sim
    before = (pending_specs(sim), dict(sim._rank), sim._watchdog.epoch_limit)
    job = dataclasses.replace(pending_specs(sim)[0], job_id=500)
    if change == "past":
        job = dataclasses.replace(job, submit_s=sim.now_s)
    elif change == "taken_id":
        job = dataclasses.replace(job, job_id=arrived_specs(sim)[0].job_id)
    else:
        job = dataclasses.replace(job, job_type="no-such-model")
    with pytest.raises(InvalidJobError, match="job"):
        replace_pending(sim, [job])
    assert (pending_specs(sim), dict(sim._rank), sim._watchdog.epoch_limit) == before


def test_sampled_futures_never_hold_the_true_future() -> None:
    env = _at_decision(decisions=4)
    u = env.unwrapped
    true_future = pending_specs(u.sim)
    arrived = arrived_specs(u.sim)
    truth = {_content(j) for j in true_future}
    for sample in range(5):
        future = sample_future(u, sample_seed(1000, 4, sample))
        assert len(future) == u.config.workload.num_jobs - len(arrived)  # the recipe's count, known in advance
        assert not truth & {_content(j) for j in future}
        assert all(j.submit_s > u.view.now_s for j in future)
        assert all(j.deadline_s > j.submit_s for j in future)
        assert min(j.job_id for j in future) > max(j.job_id for j in arrived + true_future)
    # Applied to a fork: the fork holds the sample, the original its own future.
    fork = fork_env(env)
    future = sample_future(fork, sample_seed(1000, 4, 0))
    apply_future(fork, future)
    assert pending_specs(fork.sim) == future
    assert pending_specs(u.sim) == true_future


def test_sample_seeds_and_futures_are_deterministic() -> None:
    assert sample_seed(1000, 3, 2) == sample_seed(1000, 3, 2)
    seeds = {sample_seed(w, d, k) for w in (1000, 1001) for d in range(3) for k in range(3)}
    assert len(seeds) == 18
    u = _at_decision().unwrapped
    assert sample_future(u, 7) == sample_future(u, 7)
    assert sample_future(u, 7) != sample_future(u, 8)


def test_trace_workloads_have_no_future_model() -> None:
    env = _at_decision(decisions=1, workload={"trace": str(TRACE), "num_jobs": 12})
    with pytest.raises(FutureModelError, match="trace"):
        sample_future(env.unwrapped, 1)
