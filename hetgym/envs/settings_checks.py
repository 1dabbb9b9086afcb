"""Checks of the environment's settings: numbers in range, the window's size, a user's throughput table.

A leaf of :mod:`hetgym.envs.config` (which re-exports these names): :class:`EnvConfigError` and the
checks that raise it, so that every option's message names the option, the value and the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hetgym.limits import MAX_QUEUE_SLOTS
from hetgym.sim.config import check_number
from hetgym.sim.errors import ConfigError, UnknownNameError
from hetgym.sim.throughput import TABLE_COLUMNS, ThroughputModel, load_gpu_types


class EnvConfigError(ConfigError):
    """An environment option has a bad value (the message names the option and the fix)."""


def _check(setting: str, value: Any, **bounds: Any) -> Any:
    """:func:`~hetgym.sim.config.check_number` raising :class:`EnvConfigError`."""
    return check_number(setting, value, error=EnvConfigError, **bounds)


#: The columns a user's throughput table must have (``placement`` and ``source`` are optional).
REQUIRED_THROUGHPUT_COLUMNS: tuple[str, ...] = ("job_type", "batch_size", "gpu_type", "num_gpus", "iters_per_s")


def throughput_model_from(table: pd.DataFrame, where: str) -> ThroughputModel:
    """A :class:`ThroughputModel` over a user's table, after checking it (``where`` names it in errors).

    Raises:
        EnvConfigError: A missing column, an empty table, a non-numeric, negative or non-finite rate, a
            GPU count or batch size that is not a positive integer, or a GPU type without a speed index
            in ``gpu_types.csv``; the message names the column, the first bad row and the fix.
    """
    fix = f"give a table with the columns of hetgym/data/throughputs.csv ({', '.join(TABLE_COLUMNS)})"
    missing = [c for c in REQUIRED_THROUGHPUT_COLUMNS if c not in table.columns]
    if missing:
        raise EnvConfigError(f"throughput={where}: missing column(s) {missing}; {fix}")
    if table.empty:
        raise EnvConfigError(f"throughput={where}: the table has no rows; {fix}")
    for column, minimum, integral, need in (
        ("iters_per_s", 0.0, False, "a finite number >= 0 (0 means the job does not fit)"),
        ("num_gpus", 1.0, True, "a positive integer"),
        ("batch_size", 1.0, True, "a positive integer"),
    ):
        values = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(values) | (np.nan_to_num(values, nan=-1.0) < minimum)
        if integral:
            bad |= np.nan_to_num(values) % 1 != 0
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            value = table[column].iloc[row]
            raise EnvConfigError(
                f"throughput={where}: row {row} (0-based, the header not counted) has {column}={value}; "
                f"it must be {need}"
            )
    if "placement" in table.columns:
        placements = set(table["placement"].astype(str))
        unknown = sorted(placements - {"consolidated", "unconsolidated"})
        if unknown:
            raise EnvConfigError(
                f"throughput={where}: unknown placement(s) {unknown}; use 'consolidated' or 'unconsolidated'"
            )
    gpu_types = load_gpu_types()
    known = set(gpu_types["gpu_type"].astype(str))
    for gpu in sorted(set(table["gpu_type"].astype(str))):
        if gpu not in known:
            raise UnknownNameError("GPU type", gpu, known, f"(in the throughput table {where})")
    return ThroughputModel(table, gpu_types)


def read_throughput_table(path: str | Path) -> ThroughputModel:
    """The throughput model of a CSV or parquet file with the columns of ``throughputs.csv``."""
    path = Path(path)
    if not path.is_file():
        raise EnvConfigError(
            f"throughput={str(path)!r}: no such file; give the path of a CSV or parquet throughput table "
            "(the columns of hetgym/data/throughputs.csv), a pandas DataFrame or a ThroughputModel"
        )
    try:
        if path.suffix.lower() == ".csv":
            frame = pd.read_csv(path)
        elif path.suffix.lower() in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
        else:
            raise EnvConfigError(
                f"throughput={str(path)!r}: unknown file type {path.suffix!r}; give a .csv or .parquet file"
            )
    except (ValueError, OSError) as exc:
        if isinstance(exc, EnvConfigError):
            raise
        raise EnvConfigError(f"throughput={str(path)!r}: cannot read the file ({exc})") from exc
    return throughput_model_from(frame, repr(str(path)))


def resolve_throughput(spec: Any) -> ThroughputModel | None:
    """The model a ``throughput=`` option names (``None``: the embedded table)."""
    if spec is None or isinstance(spec, ThroughputModel):
        return spec
    if isinstance(spec, pd.DataFrame):
        return throughput_model_from(spec, "<DataFrame>")
    if isinstance(spec, str | Path):
        return read_throughput_table(spec)
    raise EnvConfigError(
        f"throughput={type(spec).__name__}: give the path of a CSV or parquet throughput table, a pandas "
        "DataFrame with the columns of hetgym/data/throughputs.csv, or a ThroughputModel"
    )


def check_queue_slots(value: Any) -> int:
    """``queue_slots`` (K) as an ``int`` in [1, :data:`~hetgym.limits.MAX_QUEUE_SLOTS`], or an error."""
    return int(
        _check(
            "queue_slots",
            value,
            low=1,
            high=MAX_QUEUE_SLOTS,
            integer=True,
            fix="the number of job slots (K); the observation, the action mask and every step grow with K",
        )
    )


__all__ = [
    "REQUIRED_THROUGHPUT_COLUMNS",
    "EnvConfigError",
    "check_queue_slots",
    "read_throughput_table",
    "resolve_throughput",
    "throughput_model_from",
]
