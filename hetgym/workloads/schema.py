"""The canonical job schema (version 1), its reader and writer, and the :class:`Workload` container.

A trace is a table with one row per job. Required columns:

==================  =======  =====================================================================
column              type     meaning
==================  =======  =====================================================================
``job_id``          int      unique id, >= 0
``submit_s``        float    arrival time, seconds from the trace start, >= 0
``job_type``        str      model name, a key of the throughput table (``hetgym presets`` lists them)
``batch_size``      int      global batch size (samples per iteration over all GPUs)
``total_iters``     float    work in iterations, > 0
``num_gpus``        int      GPUs requested, >= 1
==================  =======  =====================================================================

Optional columns: ``deadline_s`` (absolute; empty = none), ``user``, ``min_gpus``, ``max_gpus``,
``dp``, ``pp``, ``tp`` (all three or none), ``model_bytes``, ``priority_weight``, ``best_effort``,
``duration_s`` (reference run time), ``gpu_types`` (allowed types, ``|``-separated),
``template_id``, and any ``feat_<name>`` column, which becomes ``features[name]``. Any other column is an
error naming the nearest known name (a ``deadline`` column would otherwise drop every deadline unseen).

**None.** An optional column's value is "none" (no deadline, default weight, ...) only when the field is
empty in a CSV or null in parquet (NaN in a pandas table given to :func:`frame_to_jobs`). A number must be
finite: ``nan``, ``NA``, ``null``, ``None``, ``inf`` written in a numeric field are refused, as are
booleans where a number belongs. A file without job rows is refused.

Files are CSV or parquet. A CSV starts with one comment line ``# hetgym-trace {json}`` holding the
metadata (``schema_version``, the generator or loader and its parameters, samplers used); parquet
stores the same JSON under the schema metadata key ``hetgym``. Comment lines come only before the header
(:mod:`hetgym.workloads.canonical_csv`). Readers validate every row and raise
:class:`TraceError` naming the file, the row and the field; rows are numbered from 1, the first data row
after the header (comment lines are not counted), as by every trace reader of the project. A CSV line
longer than :data:`MAX_LINE_CHARS` is refused before parsing. Writers write to a temporary file and
rename it, so a failed write leaves nothing behind.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hetgym.atomic import atomic_write
from hetgym.sim.errors import InvalidJobError
from hetgym.sim.job import JobSpec
from hetgym.sim.throughput import ThroughputModel
from hetgym.workloads.columns import (
    CSV_MAGIC,
    FEATURE_PREFIX,
    FLOAT_COLUMNS,
    INT_COLUMNS,
    OPTIONAL_COLUMNS,
    REQUIRED_COLUMNS,
    SCHEMA_VERSION,
    TraceError,
    metadata_object,
    unknown_column_error,
)
from hetgym.workloads.columns import (
    MAX_FIELD_CHARS as MAX_FIELD_CHARS,  # re-exported: readers and users import the schema's names from here
)
from hetgym.workloads.columns import (
    MAX_LINE_CHARS as MAX_LINE_CHARS,
)

if TYPE_CHECKING:  # pandas loads when a table is made or read, not on import (the CLI's start-up)
    import pandas as pd


@dataclass(frozen=True)
class Workload:
    """An ordered, immutable collection of jobs with the metadata describing their origin.

    Iterating yields :class:`JobSpec` in submission order; ``len()`` is the job count.
    """

    jobs: tuple[JobSpec, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: For a workload read from a canonical file: each job's 1-based data row (see :meth:`locate`).
    rows: Mapping[int, int] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "jobs", tuple(sorted(self.jobs, key=lambda j: (j.submit_s, j.job_id))))
        meta = dict(self.metadata)
        meta.setdefault("schema_version", SCHEMA_VERSION)
        object.__setattr__(self, "metadata", meta)

    def __iter__(self) -> Iterator[JobSpec]:
        return iter(self.jobs)

    def __len__(self) -> int:
        return len(self.jobs)

    def __getitem__(self, i: int) -> JobSpec:
        return self.jobs[i]

    def locate(self, job_id: int) -> str:
        """Where job ``job_id`` comes from, for messages: ``"FILE: row N"``, ``"FILE"``, or ``""`` when unknown."""
        source = self.metadata.get("source_file")
        if not source:
            sources = self.metadata.get("source")  # a converted public trace: its file, rows renumbered
            source = sources[0] if isinstance(sources, list) and len(sources) == 1 else None
        if not source:
            return ""
        row = None if self.rows is None else self.rows.get(job_id)
        return f"{source}: row {row}" if row is not None else str(source)

    def to_frame(self) -> pd.DataFrame:
        """The jobs as a canonical table."""
        return jobs_to_frame(self.jobs)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write to ``path`` (``.csv`` or ``.parquet``); see :func:`write_trace`."""
        return write_trace(self, path)

    def span_s(self) -> float:
        """Time between the first and the last submission."""
        return self.jobs[-1].submit_s - self.jobs[0].submit_s if self.jobs else 0.0


# --------------------------------------------------------------------------------------------
# Frame <-> JobSpec


def jobs_to_frame(jobs: Iterable[JobSpec]) -> pd.DataFrame:
    """Canonical table of ``jobs`` (optional columns only when some job uses them)."""
    import pandas as pd

    # Built column by column: a dict per row would cost ~1 kB per job while the table is made.
    cols: dict[str, list[Any]] = {c: [] for c in (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS)}
    features: dict[str, list[Any]] = {}
    n = 0
    for j in jobs:
        cols["job_id"].append(j.job_id)
        cols["submit_s"].append(j.submit_s)
        cols["job_type"].append(j.job_type)
        cols["batch_size"].append(j.batch_size)
        cols["total_iters"].append(j.total_iters)
        cols["num_gpus"].append(j.num_gpus)
        cols["deadline_s"].append(j.deadline_s if math.isfinite(j.deadline_s) else np.nan)
        cols["user"].append(j.user)
        cols["min_gpus"].append(j.min_gpus)
        cols["max_gpus"].append(j.max_gpus)
        par = j.parallelism
        cols["dp"].append(par[0] if par else None)
        cols["pp"].append(par[1] if par else None)
        cols["tp"].append(par[2] if par else None)
        cols["model_bytes"].append(j.model_bytes)
        cols["priority_weight"].append(j.priority_weight)
        cols["best_effort"].append(j.best_effort)
        cols["duration_s"].append(j.duration_s)
        cols["gpu_types"].append("|".join(j.gpu_types) if j.gpu_types else None)
        cols["template_id"].append(j.template_id)
        for k, v in j.features.items():
            values = features.get(FEATURE_PREFIX + k)
            if values is None:
                values = features[FEATURE_PREFIX + k] = [np.nan] * n
            values.append(v)
        n += 1
        for values in features.values():
            if len(values) < n:
                values.append(np.nan)
    if n == 0:
        return pd.DataFrame(columns=list(REQUIRED_COLUMNS))
    frame = pd.DataFrame({**cols, **features})
    keep = list(REQUIRED_COLUMNS)
    defaults = {"min_gpus": 1, "priority_weight": 1.0, "best_effort": False}
    for col in OPTIONAL_COLUMNS:
        series = frame[col]
        if col in defaults:
            if (series != defaults[col]).any():
                keep.append(col)
        elif series.notna().any():
            keep.append(col)
    keep += sorted(c for c in frame.columns if c.startswith(FEATURE_PREFIX))
    frame = frame[keep]
    for col in INT_COLUMNS:
        if col in frame:
            frame[col] = frame[col].astype("Int64")
    return frame


def _is_missing(value: Any) -> bool:
    # pandas' NA by its type's name: comparing it with "" would not give a bool, and naming it needs no import
    return (
        value is None
        or (isinstance(value, float) and math.isnan(value))
        or type(value).__name__ == "NAType"
        or value == ""
    )


def frame_to_jobs(
    frame: pd.DataFrame, *, source: str = "<table>", throughput: ThroughputModel | None = None
) -> list[JobSpec]:
    """Validate a canonical table and turn it into jobs.

    Raises:
        TraceError: naming ``source``, the 1-based data row and the field, for a missing column,
            a value of the wrong type, a negative time, or (when ``throughput`` is given) an unknown
            job type or GPU type.
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise TraceError(
            f"{source}: missing required column(s) {missing}; a canonical trace needs {list(REQUIRED_COLUMNS)}"
        )
    known = (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS)
    for col in frame.columns:
        if col not in known and not str(col).startswith(FEATURE_PREFIX):
            raise unknown_column_error(
                str(col),
                known,
                source,
                fix=f"rename it, or prefix it with {FEATURE_PREFIX!r} to keep it as a per-job feature",
            )
    parallel_cols = [c for c in ("dp", "pp", "tp") if c in frame.columns]
    if parallel_cols and len(parallel_cols) != 3:
        raise TraceError(f"{source}: columns dp, pp, tp come together; found only {parallel_cols}")
    feature_cols = [c for c in frame.columns if c.startswith(FEATURE_PREFIX)]
    known_types: set[str] = set()
    jobs: list[JobSpec] = []
    seen: dict[int, int] = {}
    records = frame.to_dict("records")
    for i, rec in enumerate(records, start=1):

        def err(fld: str, why: str, i: int = i) -> TraceError:
            return TraceError(f"{source}: row {i}, field {fld!r}: {why}")

        values: dict[str, Any] = {}
        for col in (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS):
            if col not in rec:
                continue
            raw = rec[col]
            if _is_missing(raw):
                if col in REQUIRED_COLUMNS:
                    raise err(col, "is empty; every job needs it")
                continue
            if isinstance(raw, bool | np.bool_) and col != "best_effort":
                raise err(col, f"value {raw!r} is a boolean; give {'an integer' if col in INT_COLUMNS else 'a number'}")
            try:
                if col in INT_COLUMNS:
                    as_float = float(raw)
                    if not as_float.is_integer():
                        raise ValueError
                    values[col] = int(as_float)
                elif col in FLOAT_COLUMNS:
                    values[col] = float(raw)
                    if not math.isfinite(values[col]):
                        none = "every job needs it" if col in REQUIRED_COLUMNS else "leave the field empty for none"
                        raise err(col, f"value {raw!r} is not a finite number; {none}")
                elif col == "best_effort":
                    values[col] = _parse_bool(raw)
                else:
                    values[col] = str(raw)
            except TraceError:
                raise
            except (TypeError, ValueError):
                kind = "an integer" if col in INT_COLUMNS else "a number" if col in FLOAT_COLUMNS else "true/false"
                raise err(col, f"value {raw!r} is not {kind}") from None
        for col in ("submit_s", "deadline_s", "duration_s", "total_iters"):
            if col in values and values[col] < 0:
                raise err(col, f"is negative ({values[col]}); times and work must be >= 0")
        jid = values["job_id"]
        if jid in seen:
            raise err("job_id", f"duplicate id {jid} (first at row {seen[jid]})")
        seen[jid] = i
        jt = values["job_type"]
        if throughput is not None and jt not in known_types:
            try:
                throughput.check_job_type(jt)
            except KeyError as exc:
                raise err("job_type", str(exc)) from None
            known_types.add(jt)
        parallelism = None
        if parallel_cols and all(c in values for c in ("dp", "pp", "tp")):
            parallelism = (values.pop("dp"), values.pop("pp"), values.pop("tp"))
        else:
            for c in ("dp", "pp", "tp"):
                values.pop(c, None)
        gpu_types = values.pop("gpu_types", None)
        allowed = tuple(t.strip().lower() for t in gpu_types.split("|")) if gpu_types else None
        if throughput is not None and allowed:
            for gpu in allowed:
                try:
                    throughput.check_gpu_type(gpu)
                except KeyError as exc:
                    raise err("gpu_types", str(exc)) from None
        features = {c[len(FEATURE_PREFIX) :]: rec[c] for c in feature_cols if not _is_missing(rec[c])}
        try:
            jobs.append(
                JobSpec(
                    **values,
                    parallelism=parallelism,
                    gpu_types=allowed,
                    features=features,
                )
            )
        except InvalidJobError as exc:
            raise TraceError(f"{source}: row {i}: {exc}") from None
        except TypeError as exc:
            raise TraceError(f"{source}: row {i}: {exc}") from None
    return jobs


def _parse_bool(raw: Any) -> bool:
    if isinstance(raw, bool | np.bool_):
        return bool(raw)
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "t", "y", "1.0"):
        return True
    if text in ("0", "false", "no", "f", "n", "0.0"):
        return False
    raise ValueError(raw)


# --------------------------------------------------------------------------------------------
# Files


def read_trace(path: str | os.PathLike[str], *, throughput: ThroughputModel | None = None) -> Workload:
    """Read a canonical trace (``.csv`` or ``.parquet``) and validate every row.

    Args:
        path: The file.
        throughput: If given, unknown job types and GPU types are reported (row and field) at read time.
    """
    path = Path(path)
    if not path.exists():
        raise TraceError(f"{path}: no such file")
    metadata: dict[str, Any] = {}
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(path)
            raw_meta = (table.schema.metadata or {}).get(b"hetgym")
            if raw_meta:
                try:
                    metadata = metadata_object(json.loads(raw_meta), path, "the parquet metadata key 'hetgym'")
                except json.JSONDecodeError as exc:
                    raise TraceError(
                        f"{path}: the parquet metadata key 'hetgym' is not valid JSON ({exc}); rewrite the file "
                        "with hetgym (write_trace / `hetgym trace convert`)"
                    ) from None
            _check_parquet(table, path)
            frame = table.to_pandas()
        elif suffix in (".csv", ".gz") or path.name.endswith(".csv.gz"):
            from hetgym.workloads.canonical_csv import read_canonical_csv

            frame, metadata = read_canonical_csv(path)
        else:
            raise TraceError(
                f"{path}: unknown file type {suffix!r}; canonical traces are .csv or .parquet "
                "(convert other formats with `hetgym trace convert`)"
            )
    except TraceError:
        raise
    except Exception as exc:  # pandas/pyarrow parse errors
        raise TraceError(f"{path}: cannot parse as a canonical trace: {exc}") from None
    version = metadata.get("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise TraceError(f"{path}: schema_version {version} is not supported (this hetgym reads {SCHEMA_VERSION})")
    jobs = frame_to_jobs(frame, source=str(path), throughput=throughput)
    if not jobs:
        raise TraceError(f"{path}: no job rows after the header; a trace needs at least one job")
    metadata.setdefault("source_file", str(path))
    return Workload(tuple(jobs), metadata, rows={job.job_id: row for row, job in enumerate(jobs, start=1)})


def _check_parquet(table: Any, path: Path) -> None:
    """Refuse a repeated column name, and a NaN (not null) in a numeric column: in parquet, null is none."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = list(table.column_names)
    for name in names:
        if names.count(name) > 1:
            raise TraceError(f"{path}: column {name!r} appears {names.count(name)} times; remove or rename the others")
    for name in FLOAT_COLUMNS:
        if name in names and pa.types.is_floating(table.schema.field(name).type):
            nan = pc.fill_null(pc.is_nan(table.column(name)), False).combine_chunks()
            if pc.any(nan).as_py():
                row = nan.to_numpy(zero_copy_only=False).nonzero()[0][0] + 1
                none = "every job needs it" if name in REQUIRED_COLUMNS else "leave it null for none"
                raise TraceError(f"{path}: row {row}, field {name!r}: value nan is not a finite number; {none}")


def write_trace(
    workload: Workload | Sequence[JobSpec],
    path: str | os.PathLike[str],
    metadata: Mapping[str, Any] | None = None,
) -> Path:
    """Write jobs in the canonical schema, atomically (temporary file, then rename).

    Args:
        workload: A :class:`Workload` or a sequence of jobs.
        path: Destination; ``.csv`` or ``.parquet``.
        metadata: Extra metadata merged over the workload's.
    """
    path = Path(path)
    if not isinstance(workload, Workload):
        workload = Workload(tuple(workload))
    meta = {**workload.metadata, **(metadata or {}), "schema_version": SCHEMA_VERSION}
    meta.pop("source_file", None)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise TraceError(f"{path}: choose a .csv or .parquet file name")
    frame = workload.to_frame()

    def write(tmp: Path) -> None:
        if suffix == ".csv":
            with open(tmp, "w", newline="") as fh:
                fh.write(CSV_MAGIC + json.dumps(meta, sort_keys=True, default=str) + "\n")
                frame.to_csv(fh, index=False, float_format="%.10g")
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False)
            existing = table.schema.metadata or {}
            table = table.replace_schema_metadata(
                {**existing, b"hetgym": json.dumps(meta, sort_keys=True, default=str).encode()}
            )
            pq.write_table(table, tmp)

    atomic_write(path, write)
    return path
