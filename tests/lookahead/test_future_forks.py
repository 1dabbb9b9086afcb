"""Futures applied to forks that share their original's caches: each fork's jobs read their own rates."""

from __future__ import annotations

import gymnasium as gym

import hetgym  # noqa: F401  (registers the ids)
from hetgym.lookahead import apply_future, fork_env, sample_future, sample_seed

TINY = "HetClusterEvents-Tiny-v0"


def _root() -> gym.Env:
    env = gym.make(TINY)
    env.reset(seed=1000, options={"workload_seed": 1000})
    for _ in range(3):
        env.step(0)
    return env


def _with_future(env: gym.Env, sample: int):
    fork = fork_env(env)
    apply_future(fork, sample_future(fork, sample_seed(1000, 3, sample)))
    return fork


def _finished(steps: list) -> tuple:
    """What a played-out fork showed: every observation (the encoder reads the jobs' rates) and its metrics."""
    obs = [[float(x) for key in sorted(step[0]) for x in step[0][key].ravel()] for step in steps]
    return obs, steps[-1][4]["metrics"]


def test_two_futures_with_the_same_ids_played_interleaved_equal_each_played_alone() -> None:
    # Two sampled futures of one decision number their jobs alike (after every known id) but hold other jobs:
    # stepped in turns, neither may read the other's rates (nor change its original's).
    root = _root()
    a, b = _with_future(root, 0), _with_future(root, 1)
    same_id_other_job = [
        j.job_id
        for j in a.jobs
        for k in b.jobs
        if j.job_id == k.job_id and (j.job_type, j.batch_size, j.num_gpus) != (k.job_type, k.batch_size, k.num_gpus)
    ]
    assert same_id_other_job  # the case at stake
    assert a.sim.rate_table.get(a.jobs[-1]) is not b.sim.rate_table.get(b.jobs[-1])
    root = _root()
    alone = []
    for sample in (0, 1):
        fork = _with_future(root, sample)
        steps = []
        while not steps or not (steps[-1][2] or steps[-1][3]):
            steps.append(fork.step(4))
        alone.append(_finished(steps))
    a, b = _with_future(root, 0), _with_future(root, 1)
    assert {j.job_id for j in a.jobs} == {j.job_id for j in b.jobs}
    runs: list[list] = [[], []]
    while not all(r and (r[-1][2] or r[-1][3]) for r in runs):
        for fork, run in zip((a, b), runs, strict=True):
            if not run or not (run[-1][2] or run[-1][3]):
                run.append(fork.step(4))
    assert [_finished(r) for r in runs] == alone
    # The original goes on as a plain fork of it does.
    plain = fork_env(root)
    ends = [None, None]
    for i, env in enumerate((root, plain)):
        while True:
            out = env.step(0)
            if out[2] or out[3]:
                ends[i] = out[4]["metrics"]
                break
    assert ends[0] == ends[1]
