"""Experiment sweeps: grids of simulation runs, executed locally or on Ray, with resumable results.

A sweep is described declaratively (:class:`SweepSpec`, usually from YAML; see ``docs/sweeps.md``),
expanded and validated into :class:`RunSpec` objects with stable ids, and executed by
:func:`run_sweep` on a process pool (default), in this process, or on Ray. Each finished run lands in
the results directory at once (:class:`ResultsStore`), so an interrupted sweep resumes where it
stopped. :func:`write_report` turns the table into the standard figures and a summary. :func:`map_runs`
lends the same process pool to any picklable function (a script's own study tasks), results in order.

Importing this package does not import Ray; only the ``ray`` backend does.
"""

from __future__ import annotations

from hetgym.sweep.pool import MapRunError, map_runs, open_pool
from hetgym.sweep.report import summarize, write_report
from hetgym.sweep.runner import (
    BACKENDS,
    SweepOutcome,
    default_out_dir,
    execute_run,
    init_ray,
    run_sweep,
)
from hetgym.sweep.spec import RunSpec, SweepConfigError, SweepSpec, parse_seeds, run_id_of, scaled_cluster
from hetgym.sweep.store import NONDETERMINISTIC_COLUMNS, ResultsStore, load_results

__all__ = [
    "BACKENDS",
    "NONDETERMINISTIC_COLUMNS",
    "MapRunError",
    "ResultsStore",
    "RunSpec",
    "SweepConfigError",
    "SweepOutcome",
    "SweepSpec",
    "default_out_dir",
    "execute_run",
    "init_ray",
    "load_results",
    "map_runs",
    "open_pool",
    "parse_seeds",
    "run_id_of",
    "run_sweep",
    "scaled_cluster",
    "summarize",
    "write_report",
]
