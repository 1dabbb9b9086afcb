"""The results store of a sweep: one small JSON file per finished run, plus a consolidated table.

Layout of a results directory::

    sweep.json          the sweep description and the grid size (rewritten at each start)
    runs/<run_id>.json  one row per finished run (status ok or failed), written to a temporary name
                        and renamed, so a kill mid-write never leaves a partial row
    results.parquet     every run of the grid that has finished, one row each, in grid order
    results.csv         the same table as CSV
    timings.csv         the columns that depend on the machine and the moment (wall time, decision
                        latency, worker, finish time), by run id

The two results tables hold only what the configuration determines, so two sweeps of the same grid
write byte-identical ``results.parquet`` and ``results.csv``; :func:`load_results` joins the timings
back in.

The per-run files are the source of truth: a resumed sweep reads them to skip finished runs, and the
two tables are rebuilt from them (every few seconds while a sweep runs and when it ends), each written
atomically. A lock file keeps two sweeps from writing to the same directory at once.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hetgym.atomic import atomic_write
from hetgym.sim.errors import HetgymError

#: Column order of the results table: these first (when present), then the other configuration
#: columns, the metrics, and the bookkeeping columns last.
LEADING_COLUMNS: tuple[str, ...] = (
    "run_id",
    "status",
    "policy",
    "policy_name",
    "scenario",
    "cluster",
    "cluster_scale",
    "num_gpus",
    "seed",
)
TRAILING_COLUMNS: tuple[str, ...] = ("error", "traceback", "worker", "finished_at", "sweep")
#: Columns of a results row that depend on the machine or the moment, not on the configuration: they
#: differ between two executions of the same run and are kept in ``timings.csv``.
NONDETERMINISTIC_COLUMNS: tuple[str, ...] = ("wall_s", "decision_ms_p50", "decision_ms_p99", "worker", "finished_at")
CONFIG_PREFIXES: tuple[str, ...] = ("workload.", "sim.", "policy.")


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def order_columns(columns: Iterable[str]) -> list[str]:
    """Columns in the results table's order (see :data:`LEADING_COLUMNS`)."""
    cols = list(dict.fromkeys(columns))
    lead = [c for c in LEADING_COLUMNS if c in cols]
    config = [c for p in CONFIG_PREFIXES for c in cols if c.startswith(p)]
    trail = [c for c in TRAILING_COLUMNS if c in cols]
    rest = [c for c in cols if c not in lead and c not in config and c not in trail]
    return lead + config + rest + trail


def to_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Rows of run results as a table in :func:`order_columns` order."""
    df = pd.DataFrame(list(rows))
    if df.empty:
        return df
    return df[order_columns(df.columns)]


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _parquet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """Columns that mix Python types (a knob that is a number for one policy, text for another) as text."""
    out = df.copy()
    for col in out.columns:
        if out[col].dtype != object:
            continue
        kinds = {type(v) for v in out[col] if not _missing(v)}
        if len(kinds) > 1 and kinds != {int, float}:
            out[col] = [None if _missing(v) else str(v) for v in out[col]]
    return out


class ResultsStore:
    """The results directory of one sweep (see the module docstring)."""

    def __init__(self, out_dir: str | os.PathLike[str]) -> None:
        self.dir = Path(out_dir)
        self.runs_dir = self.dir / "runs"
        self.csv_path = self.dir / "results.csv"
        self.parquet_path = self.dir / "results.parquet"
        self.timings_path = self.dir / "timings.csv"

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold an exclusive lock on the directory (fails at once if another sweep holds it)."""
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        try:
            import fcntl
        except ImportError:  # no advisory locks on this platform: go on without one
            yield
            return
        with open(self.dir / ".lock", "a+") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise HetgymError(
                    f"another sweep is writing to {self.dir}; wait for it to end or give a different --out"
                ) from None
            self._remove_temporaries()  # left by a sweep killed mid-write
            try:
                yield
            finally:
                # A signal can land between creating a temporary file and the handler that removes it.
                self._remove_temporaries()
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _remove_temporaries(self) -> None:
        """Delete half-written ``.<name>.*.tmp`` files (only called while holding the lock)."""
        for folder in (self.dir, self.runs_dir):
            for path in folder.glob(".*.tmp"):
                path.unlink(missing_ok=True)

    def finished(self) -> dict[str, dict[str, Any]]:
        """Rows of every run with a result file, by run id (unreadable files are ignored: such runs re-run)."""
        out: dict[str, dict[str, Any]] = {}
        if not self.runs_dir.is_dir():
            return out
        for path in sorted(self.runs_dir.glob("*.json")):
            try:
                row = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            if isinstance(row, dict) and row.get("run_id") == path.stem:
                out[path.stem] = row
        return out

    def record(self, row: Mapping[str, Any]) -> Path:
        """Write one run's row to ``runs/<run_id>.json`` atomically."""
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        text = json.dumps(dict(row), default=_json_default)
        return atomic_write(self.runs_dir / f"{row['run_id']}.json", lambda p: p.write_text(text))

    def write_table(self, rows: Iterable[Mapping[str, Any]]) -> list[Path]:
        """Rewrite ``results.parquet``, ``results.csv`` and ``timings.csv`` (atomically) from ``rows``."""
        self.dir.mkdir(parents=True, exist_ok=True)
        full = to_frame(rows)
        timing = [c for c in NONDETERMINISTIC_COLUMNS if c in full.columns]
        df = full.drop(columns=timing)
        timings = full[["run_id", *timing]] if "run_id" in full.columns else pd.DataFrame()
        written = [atomic_write(self.csv_path, lambda p: df.to_csv(p, index=False))]
        safe = _parquet_safe(df)
        written.append(atomic_write(self.parquet_path, lambda p: safe.to_parquet(p, index=False)))
        written.append(atomic_write(self.timings_path, lambda p: timings.to_csv(p, index=False)))
        return written

    def write_meta(self, meta: Mapping[str, Any]) -> Path:
        """Write ``sweep.json`` (the description and the grid size)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        text = json.dumps(dict(meta), indent=2, default=_json_default)
        return atomic_write(self.dir / "sweep.json", lambda p: p.write_text(text))


def _with_timings(df: pd.DataFrame, path: Path) -> pd.DataFrame:
    """``df`` with the columns of the timings table at ``path`` (if any) joined in by run id."""
    if not path.is_file() or "run_id" not in df.columns:
        return df
    timings = pd.read_csv(path)
    extra = [c for c in timings.columns if c != "run_id" and c not in df.columns]
    if "run_id" not in timings.columns or not extra:
        return df
    return df.merge(timings[["run_id", *extra]], on="run_id", how="left")[order_columns([*df.columns, *extra])]


def load_results(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The results table of a sweep: a results directory, or a ``.parquet`` / ``.csv`` table file.

    A directory's ``results.parquet`` is preferred, then ``results.csv``, with the columns of its
    ``timings.csv`` joined back in by run id; a directory holding only ``runs/`` (a sweep killed before
    its first table) is read from the per-run files.
    """
    p = Path(path)
    if p.is_dir():
        store = ResultsStore(p)
        if store.parquet_path.is_file() or store.csv_path.is_file():
            df = pd.read_parquet(store.parquet_path) if store.parquet_path.is_file() else pd.read_csv(store.csv_path)
            return _with_timings(df, store.timings_path)
        rows = store.finished()
        if rows:
            return to_frame(rows.values())
        raise FileNotFoundError(f"{p} holds no sweep results (no results.parquet, results.csv or runs/*.json)")
    if not p.is_file():
        raise FileNotFoundError(f"sweep results {str(p)!r} do not exist; give a results directory or table file")
    if p.suffix == ".parquet":
        return pd.read_parquet(p)
    if p.suffix == ".csv" or p.name.endswith(".csv.gz"):
        return pd.read_csv(p)
    raise ValueError(f"{p}: give a results directory, a .parquet or a .csv file")
