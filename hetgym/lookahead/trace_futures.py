"""Futures for trace windows: a reconstruction of the arrivals still to come, never read from the true window.

A trace window (``WorkloadConfig(trace_window=True)``, e.g. the suite's ``trace-cluster09``) replays
``num_jobs`` consecutive jobs of a real trace; it has no generative recipe. At a decision at time ``t``,
with ``n`` of the window's jobs arrived, a future of the ``N - n`` jobs still to arrive (``N = num_jobs``,
known in advance as for the recipes) is drawn as follows:

1. **Job specs bootstrapped from the trace outside the held-out windows.** The pool is every job of the
   trace except those of the held-out test windows (workload seeds :data:`HELD_OUT_SEEDS`, the suite's
   1000-1019) and of the episode's own window (whatever its seed). Each future job is a pool job drawn
   uniformly with replacement: its model, batch size, iterations, GPU count and recorded run time.
2. **Deadlines** from the window's deadline model (ElasticFlow's: ``submit + U(low, high) x run time /
   tightness``) with the sample's generator; without a model, the pool job's own deadline, moved with it.
3. **Arrivals Poisson, the rate conditioned on the present.** A window's rate varies by orders of magnitude
   between windows of one trace (bursts), so one trace-wide rate would be wrong for most windows. The rate
   is drawn from a Gamma posterior: prior mean ``rate0`` = the median arrival rate over the pool's
   ``N``-job runs of consecutive jobs, prior weight :data:`PRIOR_ARRIVALS` pseudo-arrivals; the window
   started at 0 and showed ``n - 1`` further arrivals in ``(0, t]``, so the posterior is
   ``Gamma(shape = a0 + n - 1, rate = a0 / rate0 + t)``. Given the rate, the gaps after ``t`` are
   exponential (memoryless: the time since the last arrival carries nothing more).
4. Ids are renumbered after every id the simulation holds.

Assumptions of this reconstruction (stated where results are reported): specs are independent of each
other and of the arrival times (a trace's bursts often repeat one job; the bootstrap does not), arrivals
within a window are Poisson at a constant rate (the trace's bursts within a window are not modelled), and
the pool's jobs are exchangeable with the window's. Nothing of the true future is read: the pool never
holds a job of the episode's window, and the draw depends on the present only through ``n``, ``t`` and
the ids in use (tested by changing the true future and drawing the same sample).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Any

import numpy as np

from hetgym.lookahead.errors import FutureModelError
from hetgym.sim.job import JobSpec
from hetgym.sim.throughput import ThroughputModel

#: Weight of the rate prior, in pseudo-arrivals: weak, so a window's own arrivals dominate after a few.
PRIOR_ARRIVALS = 1.0


def held_out_seeds() -> tuple[int, ...]:
    """The workload seeds whose windows never enter a pool: the suite's test seeds."""
    from hetgym.suite.scenarios import TEST_SEEDS

    return TEST_SEEDS


@dataclasses.dataclass(frozen=True)
class TracePool:
    """The trace's jobs a future may be drawn from, and the arrival-rate prior.

    Attributes:
        jobs: The pool (trace jobs outside the held-out windows and the episode's own window).
        positions: Their positions in the trace sorted by submission.
        excluded: The trace positions left out (held-out windows and the episode's window).
        rate0_per_s: The prior mean arrival rate (median over the pool's ``num_jobs``-job runs).
    """

    jobs: tuple[JobSpec, ...]
    positions: tuple[int, ...]
    excluded: frozenset[int]
    rate0_per_s: float


_POOLS: OrderedDict[tuple[Any, ...], TracePool] = OrderedDict()
_POOL_CACHE_SIZE = 8


def _trace(workload: Any) -> Any:
    from hetgym.workloads.windows import cached_trace

    # The same parse the window itself came from (WorkloadConfig._window): same cache entry, same jobs.
    return cached_trace(
        workload.trace,
        workload.trace_format,
        member=workload.trace_member,
        throughput=ThroughputModel.default(),
        fill_deadlines=workload.deadline is None,
        tightness=workload.tightness,
    )


def trace_pool(workload: Any, workload_seed: int | None) -> TracePool:
    """The pool for an episode of ``workload`` (a trace-window config) with ``workload_seed``."""
    from hetgym.workloads.windows import window_start

    trace = _trace(workload)
    num_jobs = int(workload.num_jobs)
    held = held_out_seeds()
    key = (id(trace), num_jobs, workload_seed, held)
    hit = _POOLS.get(key)
    if hit is not None:
        _POOLS.move_to_end(key)
        return hit
    jobs = trace.jobs
    excluded: set[int] = set()
    seeds = set(held) | ({int(workload_seed)} if workload_seed is not None else set())
    for seed in sorted(seeds):
        start = window_start(len(jobs), num_jobs, seed)
        excluded.update(range(start, start + num_jobs))
    # A deadline model draws from recorded run times: a job without one cannot be drawn.
    needs_run_time = workload.deadline is not None
    positions = tuple(
        i for i in range(len(jobs)) if i not in excluded and not (needs_run_time and jobs[i].duration_s is None)
    )
    if len(positions) < num_jobs:
        raise FutureModelError(
            f"the trace {workload.trace!r} has {len(positions)} jobs outside its held-out windows, fewer than a "
            f"window's {num_jobs}: too few to sample futures from; use a longer trace or shorter windows"
        )
    rates = []
    run: list[int] = []
    for i in positions:  # runs of consecutive trace positions: windows that could have been drawn
        if run and i != run[-1] + 1:
            run = []
        run.append(i)
        if len(run) >= num_jobs:
            span_s = jobs[run[-1]].submit_s - jobs[run[-num_jobs]].submit_s
            if span_s > 0:
                rates.append((num_jobs - 1) / span_s)
    if rates:
        rate0 = float(np.median(rates))
    else:
        span_s = jobs[positions[-1]].submit_s - jobs[positions[0]].submit_s
        rate0 = (len(positions) - 1) / span_s if span_s > 0 else 1.0 / 3600.0
    pool = TracePool(tuple(jobs[i] for i in positions), positions, frozenset(excluded), rate0)
    _POOLS[key] = pool
    while len(_POOLS) > _POOL_CACHE_SIZE:
        _POOLS.popitem(last=False)
    return pool


def sample_trace_future(env: Any, seed: int, arrived: int, now_s: float, first_id: int) -> tuple[JobSpec, ...]:
    """A future for ``env`` (a trace-window episode, unwrapped) drawn with ``seed`` (module docstring).

    ``arrived``: jobs arrived so far; ``now_s``: the present; ``first_id``: the first free job id.
    """
    from hetgym.workloads.deadlines import make_deadline_model

    workload = env.config.workload
    remaining = max(0, int(workload.num_jobs) - arrived)
    if remaining == 0:
        return ()
    pool = trace_pool(workload, env.workload_seed)
    rng = np.random.default_rng(seed)
    shape = PRIOR_ARRIVALS + max(0, arrived - 1)
    rate_param = PRIOR_ARRIVALS / pool.rate0_per_s + max(0.0, now_s)
    rate_per_s = float(rng.gamma(shape, 1.0 / rate_param))
    gaps_s = rng.exponential(1.0 / rate_per_s, size=remaining)
    submit_s = now_s + np.cumsum(gaps_s)
    # A zero gap (probability 0): keep every arrival strictly after the present.
    submit_s = np.maximum(submit_s, np.nextafter(now_s, np.inf))
    picks = rng.integers(0, len(pool.jobs), size=remaining)
    drawn = [pool.jobs[int(i)] for i in picks]
    if workload.deadline is not None:
        model = make_deadline_model(workload.deadline, tightness=workload.tightness)
        duration_s = np.array([float(j.duration_s or 0.0) for j in drawn])
        deadline_s = [float(d) for d in model(rng, submit_s, duration_s)]
    else:
        deadline_s = [float(s) + (j.deadline_s - j.submit_s) for s, j in zip(submit_s, drawn, strict=True)]
    return tuple(
        dataclasses.replace(job, job_id=first_id + k, submit_s=float(submit_s[k]), deadline_s=deadline_s[k])
        for k, job in enumerate(drawn)
    )


__all__ = ["PRIOR_ARRIVALS", "TracePool", "held_out_seeds", "sample_trace_future", "trace_pool"]
