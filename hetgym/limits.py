"""Upper bounds of every size setting, so that an oversized one fails at once instead of running out of memory.

A size setting (jobs to draw, window slots, runs of a sweep or a comparison, sub-environments, cluster
servers, parallel workers) decides how much memory and time a command takes before it shows anything.
Each bound here sits well above any size this project's studies use and well below what exhausts a
workstation's memory; the reasons (what grows with the setting) are given with each constant, and
``docs/settings.md`` gives the measured cost per unit behind them. The two bounds that a large machine may
want to raise, jobs and runs, can be raised with an environment variable (:data:`JOBS_ENV`,
:data:`RUNS_ENV`); the error messages say how.
"""

from __future__ import annotations

import os

#: Environment variable that raises :data:`MAX_DRAWN_JOBS`.
JOBS_ENV = "HETGYM_MAX_JOBS"
#: Environment variable that raises :data:`MAX_RUNS`.
RUNS_ENV = "HETGYM_MAX_RUNS"

#: Most jobs a workload recipe may draw. Every job is held in memory several times over a run (its
#: specification, its state in the simulator, its row of the jobs table and its events in the timeline),
#: and drawing the workload happens before any progress can be shown.
MAX_DRAWN_JOBS = 100_000
#: Most job slots (``queue_slots``, K) of the environment's window. The observation arrays, the action mask
#: and the work of every step grow with K times the per-slot features, and an agent's network input with it.
MAX_QUEUE_SLOTS = 65_536
#: Most runs of one sweep grid, one comparison (policies x seeds), or seeds of a sweep. The grid is checked
#: and hashed run by run before anything runs, and every run's metrics are kept for the results table.
MAX_RUNS = 100_000
#: Most sub-environments of one vector environment: they are built and stepped one after another in this
#: process, each holding its own simulator, workload and observation buffers.
MAX_NUM_ENVS = 1024
#: Most servers of a cluster scaled by a sweep's ``cluster_scales``: servers are built one by one and the
#: placement visits them at every decision.
MAX_CLUSTER_SERVERS = 65_536
#: Most parallel workers per CPU core of this machine for a local sweep (each worker is a process that
#: imports the simulator; more of them than cores only adds memory).
MAX_WORKERS_PER_CPU = 4
#: Most workers of a sweep on Ray (concurrent tasks).
MAX_RAY_WORKERS = 100_000


def _from_env(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not an integer; unset it or give e.g. {name}={default}") from None
    if value < 1:
        raise ValueError(f"{name}={text!r}: give a positive integer, e.g. {name}={default}")
    return value


def max_drawn_jobs() -> int:
    """:data:`MAX_DRAWN_JOBS`, or :data:`JOBS_ENV` if set."""
    return _from_env(JOBS_ENV, MAX_DRAWN_JOBS)


def max_runs() -> int:
    """:data:`MAX_RUNS`, or :data:`RUNS_ENV` if set."""
    return _from_env(RUNS_ENV, MAX_RUNS)


def max_local_workers() -> int:
    """Most workers of a local sweep on this machine."""
    return MAX_WORKERS_PER_CPU * (os.cpu_count() or 1)


def check_runs(count: int, what: str, fix: str) -> None:
    """Raise ``ValueError`` when ``count`` runs (of ``what``) exceed :func:`max_runs`."""
    bound = max_runs()
    if count > bound:
        raise ValueError(
            f"{what} make {count:,} runs, more than the {bound:,} one command may hold ({fix}; or, with the "
            f"memory and time for it, raise the bound with {RUNS_ENV}={count})"
        )


__all__ = [
    "JOBS_ENV",
    "MAX_CLUSTER_SERVERS",
    "MAX_DRAWN_JOBS",
    "MAX_NUM_ENVS",
    "MAX_QUEUE_SLOTS",
    "MAX_RAY_WORKERS",
    "MAX_RUNS",
    "MAX_WORKERS_PER_CPU",
    "RUNS_ENV",
    "check_runs",
    "max_drawn_jobs",
    "max_local_workers",
    "max_runs",
]
