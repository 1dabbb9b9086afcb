"""Futures conditioned on the present: the jobs not yet arrived, drawn from the scenario's workload model.

At a decision at time ``t`` a fork of the environment keeps everything known (the jobs that have arrived
and their state) and its jobs still to arrive are replaced (:func:`hetgym.sim.pending.replace_pending`)
by a *sampled future*, drawn without reading the true one:

1. a fresh workload is drawn from the environment's recipe (``config.workload.build``) with a sample seed
   (:func:`sample_seed`: a function of the workload seed, the decision index and the sample index only);
2. with ``n`` jobs arrived so far and ``N`` jobs in the recipe (``num_jobs``, known in advance), the
   future is that draw's jobs ``n .. N-1`` (as many as remain to arrive), their arrivals moved so that
   the gaps after its job ``n - 1`` start at ``t``: ``submit = t + (s_k - s_{n-1})``. The recipes' arrivals
   are a Poisson process (exponential gaps), so by memorylessness the time from ``t`` to the next arrival
   and every later gap have the model's distribution; a deadline moves with its job's arrival;
3. the jobs are renumbered after every id the simulation holds, so none collides with a known one.

Windows of a trace (``trace_window=True``, the suite's trace scenarios) have no recipe: their futures are a
reconstruction, job specs bootstrapped from the trace outside the held-out windows and Poisson arrivals at
a rate conditioned on the present (:mod:`hetgym.lookahead.trace_futures`). A workload read whole from a
trace (``trace=...`` without windows) has no model and raises :class:`FutureModelError`; the hindsight
oracle (the true future) works for it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from hetgym.lookahead.errors import FutureModelError
from hetgym.lookahead.trace_futures import sample_trace_future
from hetgym.sim.job import JobSpec
from hetgym.sim.pending import arrived_specs, pending_specs, replace_pending


def sample_seed(workload_seed: int | None, decision: int, sample: int) -> int:
    """The seed of future ``sample`` at decision ``decision`` of workload ``workload_seed`` (``None``: 0).

    A pure function of the three: every worker, candidate and run draws the same future for them.
    """
    key = [0 if workload_seed is None else int(workload_seed), int(decision), int(sample)]
    return int(np.random.SeedSequence(key).generate_state(1, dtype=np.uint32)[0] & 0x7FFFFFFF)


def check_samplable(env: Any) -> None:
    """Raise :class:`FutureModelError` unless ``env``'s workload has a future model (a recipe, or trace windows)."""
    workload = env.config.workload
    if workload.trace is not None and not workload.trace_window:
        raise FutureModelError(
            f"futures cannot be sampled for a workload read whole from a trace ({workload.trace!r}): the lookahead "
            "samples arrivals from a recipe (elasticflow, gavel-philly) or, for windows of a trace "
            "(trace_window=True), from the trace outside the held-out windows; use one of those, or the "
            "hindsight oracle (future='hindsight') as a reference"
        )


def sample_future(env: Any, seed: int) -> tuple[JobSpec, ...]:
    """A future for ``env`` (unwrapped, at a decision) drawn with ``seed`` (see the module docstring)."""
    check_samplable(env)
    sim = env.sim
    workload = env.config.workload
    arrived = arrived_specs(sim)
    n = len(arrived)
    remaining = max(0, int(workload.num_jobs) - n)
    if remaining == 0:
        return ()
    now_s = float(sim.now_s)
    known_ids = [j.job_id for j in arrived] + [j.job_id for j in pending_specs(sim)]
    first_id = max(known_ids, default=-1) + 1
    if workload.trace_window:
        return sample_trace_future(env, seed, n, now_s, first_id)
    drawn = sorted(workload.build(env.cluster, seed=seed).jobs, key=lambda j: (j.submit_s, j.job_id))
    tail = drawn[n:]
    origin_s = drawn[n - 1].submit_s if n >= 1 else 0.0
    out = []
    for i, job in enumerate(tail):
        shift_s = now_s + (job.submit_s - origin_s) - job.submit_s
        submit_s = job.submit_s + shift_s
        if submit_s <= now_s:  # a zero gap (probability 0): keep it strictly after the present
            submit_s = float(np.nextafter(now_s, np.inf))
        out.append(
            dataclasses.replace(job, job_id=first_id + i, submit_s=submit_s, deadline_s=job.deadline_s + shift_s)
        )
    return tuple(out)


def apply_future(env: Any, jobs: tuple[JobSpec, ...]) -> None:
    """Make ``jobs`` the jobs still to arrive in ``env`` (a fork, at a decision)."""
    replace_pending(env.sim, jobs)
    # The environment's own copy of the workload (its observation counts the jobs).
    env.jobs = arrived_specs(env.sim) + tuple(sorted(jobs, key=lambda j: (j.submit_s, j.job_id)))


__all__ = ["FutureModelError", "apply_future", "check_samplable", "sample_future", "sample_seed"]
