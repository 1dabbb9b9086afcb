"""Alibaba PAI cluster-trace-gpu-v2020 (alibaba/clusterdata; Weng et al., NSDI'22).

``pai_job_table`` (``job_name,inst_id,user,status,start_time,end_time``) joined on ``job_name`` with
``pai_task_table`` (``job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,
gpu_type``). The published CSVs have no header (the columns come in separate ``.header`` files); a
header row, if present, is recognised and used. Times are seconds (shifted by a constant: relative).

Per job, over its GPU tasks (``plan_gpu`` > 0):

* GPUs: ``sum(inst_num x plan_gpu) / 100`` (``plan_gpu`` is in percent of one GPU), rounded UP to whole
  GPUs, since GPU sharing is not modelled; the request in percent is kept as feature ``plan_gpu_pct``
  and rounded requests are counted in the report's notes;
* run time: latest task ``end_time`` minus earliest task ``start_time``; submission: the job's
  ``start_time`` (the job table's submission time);
* GPU type: the tasks' ``gpu_type`` mapped to this project's types (:data:`PAI_GPU_TYPES`:
  V100 and V100M32 -> v100, P100 -> p100, T4 -> t4, MISC -> k80). ``gpu_type_mode`` says what to do
  with it: ``prefer`` (default: kept as feature ``preferred_gpu_type``, no constraint), ``pin`` (the job
  may only run on that type: ``JobSpec.gpu_types``) or ``ignore``. Unless ignored, the run time is taken
  as measured on that type (it is the type the job ran on) when converting it to iterations.

**MISC.** PAI's README defines it as "GPUs of older generations, e.g. NVIDIA Tesla K40m, K80, M60".
The throughput table's oldest type is ``k80``, which the README names, so MISC maps to ``k80``; the
K40m and M60 are of the same Kepler/Maxwell era and similar speed. Override with ``gpu_map``.

The task table (34 MB compressed, ~1.2 M rows) is read first, streaming, into a compact per-job
aggregate of its GPU tasks; the job table is then streamed against it.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal, NoReturn

from hetgym.workloads.schema import TraceError, unknown_column_error
from hetgym.workloads.traces._io import check_duplicate_columns, csv_rows, is_empty, iter_members, parse_number
from hetgym.workloads.traces.records import BadRow, LoadContext, RawJob, Reader

JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS = (
    "job_name",
    "task_name",
    "inst_num",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
    "plan_gpu",
    "gpu_type",
)
#: PAI's GPU types -> this project's (see the module docstring for MISC).
PAI_GPU_TYPES: dict[str, str] = {"V100": "v100", "V100M32": "v100", "P100": "p100", "T4": "t4", "MISC": "k80"}


def _find(directory: Path, stem: str) -> Path | None:
    for suffix in (".csv", ".csv.gz", ".tar.gz", ".tgz"):
        candidate = directory / f"{stem}{suffix}"
        if candidate.exists():
            return candidate
    return None


def _is_header(fields: list[str]) -> bool:
    return "job_name" in (f.strip() for f in fields)


def _columns(first: list[str], expected: tuple[str, ...], label: str, what: str) -> tuple[dict[str, int], int, bool]:
    """Column positions from a header row, or the official order when the first row is data."""
    names = [h.strip() for h in first]
    if _is_header(names):  # a header row: the published columns, each known
        check_duplicate_columns(names, label)
        missing = [c for c in expected if c not in names]
        if missing:
            raise TraceError(
                f"{label}: row 0 (header), field {missing[0]!r}: missing column(s) {missing}; "
                f"{what} needs {list(expected)}, the header has {names}"
            )
        for name in names:
            if name not in expected:
                raise unknown_column_error(name, expected, f"{label} (header)", fix=f"{what} has no such column")
        return {n: i for i, n in enumerate(names)}, len(names), True
    return {n: i for i, n in enumerate(expected)}, len(expected), False


@dataclass(frozen=True)
class PaiReader(Reader):
    """Alibaba PAI 2020 job and task tables.

    The source is the directory holding ``pai_job_table`` and ``pai_task_table`` (``.csv``, ``.csv.gz``
    or the published ``.tar.gz``), or the job table itself with the task table next to it (or given as
    ``task_table``).

    Attributes:
        task_table: Path of the task table (default: found next to the job table).
        gpu_type_mode: ``prefer`` (default), ``pin`` or ``ignore`` (see the module docstring).
        gpu_map: Extra or overriding entries of :data:`PAI_GPU_TYPES` (``{"K40": "k80"}``).
    """

    task_table: str | None = None
    gpu_type_mode: Literal["prefer", "pin", "ignore"] = "prefer"
    gpu_map: Mapping[str, str] = field(default_factory=dict)

    name: ClassVar[str] = "pai"
    description: ClassVar[str] = "Alibaba PAI cluster-trace-gpu-v2020 (pai_job_table joined with pai_task_table)"
    reference_gpu: ClassVar[str] = "v100"
    deadline: ClassVar[str] = "elasticflow"
    absolute_time: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.gpu_type_mode not in ("prefer", "pin", "ignore"):
            raise ValueError(f"pai gpu_type_mode={self.gpu_type_mode!r}; use 'prefer', 'pin' or 'ignore'")

    def _paths(self, path: Path) -> tuple[Path, Path]:
        if path.is_dir():
            job = _find(path, "pai_job_table")
            if job is None:
                raise TraceError(f"{path}: no pai_job_table.csv (or .csv.gz/.tar.gz) in this directory")
            directory = path
        else:
            if not path.exists():
                raise TraceError(f"{path}: no such file")
            job, directory = path, path.parent
        if self.task_table is not None:
            task = Path(self.task_table)
            if not task.exists():
                raise TraceError(f"{task}: no such file (the PAI task table)")
        else:
            found = _find(directory, "pai_task_table")
            if found is None:
                raise TraceError(
                    f"{job}: the PAI job table needs pai_task_table.csv next to it; none in {directory} "
                    "(give its path with --pai-task-table)"
                )
            task = found
        return job, task

    def read(self, path: Path, ctx: LoadContext) -> Iterator[RawJob]:
        job_path, task_path = self._paths(path)
        mapping = {**PAI_GPU_TYPES, **dict(self.gpu_map)}
        for pai_name, ours in mapping.items():
            try:
                ctx.throughput.check_gpu_type(ours)
            except KeyError as exc:
                raise TraceError(f"PAI GPU type map: {pai_name} -> {ours}: {exc}") from None
        type_names = sorted(mapping)
        type_bit = {t: 1 << i for i, t in enumerate(type_names)}

        # ---- pass 1: task table -> per-job aggregate of GPU tasks (compact arrays)
        index: dict[str, int] = {}
        pct = array("d")
        start = array("d")
        end = array("d")  # nan = a GPU task without an end time (still running)
        types = array("q")
        bad_jobs: set[str] = set()
        for label, row, line, fields, idx, width in _table_rows(ctx, task_path, TASK_COLUMNS, "task"):
            name = fields[0].strip() if fields else ""
            try:
                self._task(ctx, label, row, line, fields, idx, width, type_bit, index, pct, start, end, types)
            except BadRow:
                bad_jobs.add(name)

        # ---- pass 2: job table
        seen: set[str] = set()
        for label, row, line, fields, idx, width in _table_rows(ctx, job_path, JOB_COLUMNS, "job"):
            ctx.report.read += 1
            if fields and fields[idx["job_name"]].strip() in bad_jobs:
                ctx.report.drop("invalid task row")
                continue
            try:
                job = self._job(
                    ctx, label, row, line, fields, idx, width, index, pct, start, end, types, type_names, mapping
                )
            except BadRow:
                continue
            if job is None:
                continue
            if job.source_id in seen:
                ctx.fail(label, row, "job_name", f"duplicate job {job.source_id!r}")
            seen.add(job.source_id)
            yield job

    def _task(
        self,
        ctx: LoadContext,
        label: str,
        row: int,
        line: int,
        fields: list[str],
        idx: dict[str, int],
        width: int,
        type_bit: dict[str, int],
        index: dict[str, int],
        pct: array[float],
        start: array[float],
        end: array[float],
        types: array[int],
    ) -> None:
        def fail(fld: str, why: str) -> NoReturn:
            if ctx.on_error == "skip":
                raise BadRow(fld)  # its job is dropped as "invalid task row"
            raise ctx.row_error(label, row, fld, why, line=line)

        if len(fields) != width:
            missing = TASK_COLUMNS[len(fields)] if len(fields) < width else "gpu_type"
            fail(missing, f"the row has {len(fields)} fields; pai_task_table has {width} ({', '.join(TASK_COLUMNS)})")

        def number(fld: str, *, empty_ok: bool = True) -> float:
            text = fields[idx[fld]]
            if is_empty(text):
                if empty_ok:
                    return math.nan
                fail(fld, "is empty")
            try:
                value = parse_number(text)
            except ValueError:
                fail(fld, f"value {text!r} is not a number")
            if value < 0:
                fail(fld, f"is negative ({value:g})")
            return value

        plan_gpu = number("plan_gpu")
        if math.isnan(plan_gpu) or plan_gpu <= 0:
            return  # a CPU task (parameter server, evaluator, ...)
        inst = number("inst_num")
        if math.isnan(inst):
            inst = 1.0
        gpu_type = fields[idx["gpu_type"]].strip()
        bit = 0
        if gpu_type:
            if gpu_type not in type_bit:
                fail(
                    "gpu_type",
                    f"unknown GPU type {gpu_type!r}; PAI's types are {sorted(PAI_GPU_TYPES)} "
                    "(map others with --gpu-map NAME=type)",
                )
            bit = type_bit[gpu_type]
        t0 = number("start_time")
        t1 = number("end_time")
        if not math.isnan(t0) and not math.isnan(t1) and t1 < t0:
            fail("end_time", f"negative run time: end_time {t1:g} is before start_time {t0:g}")
        name = fields[idx["job_name"]].strip()
        i = index.get(name)
        if i is None:
            index[name] = len(pct)
            pct.append(inst * plan_gpu)
            start.append(t0)
            end.append(t1)
            types.append(bit)
            return
        pct[i] += inst * plan_gpu
        # nan propagates: a job with a GPU task not yet started (or ended) has no run time.
        start[i] = math.nan if math.isnan(t0) or math.isnan(start[i]) else min(start[i], t0)
        end[i] = math.nan if math.isnan(t1) or math.isnan(end[i]) else max(end[i], t1)
        types[i] |= bit

    def _job(
        self,
        ctx: LoadContext,
        label: str,
        row: int,
        line: int,
        fields: list[str],
        idx: dict[str, int],
        width: int,
        index: dict[str, int],
        pct: array[float],
        start: array[float],
        end: array[float],
        types: array[int],
        type_names: list[str],
        mapping: Mapping[str, str],
    ) -> RawJob | None:
        def fail(fld: str, why: str) -> NoReturn:
            ctx.fail(label, row, fld, why, line=line)

        if len(fields) != width:
            missing = JOB_COLUMNS[len(fields)] if len(fields) < width else "end_time"
            fail(missing, f"the row has {len(fields)} fields; pai_job_table has {width} ({', '.join(JOB_COLUMNS)})")
        name = fields[idx["job_name"]].strip()
        text = fields[idx["start_time"]]
        if is_empty(text):
            ctx.report.drop("no submission time")
            return None
        try:
            submit_s = parse_number(text)
        except ValueError:
            fail("start_time", f"bad timestamp {text!r}; expected seconds (a number)")
        if submit_s < 0:
            fail("start_time", f"is negative ({submit_s:g})")
        i = index.get(name)
        if i is None:
            ctx.report.drop("no GPU task (CPU-only job)")
            return None
        if math.isnan(start[i]):
            ctx.report.drop("a GPU task never started")
            return None
        if math.isnan(end[i]):
            ctx.report.drop("still running (a GPU task has no end time)")
            return None
        request_pct = pct[i]
        num_gpus = max(1, math.ceil(request_pct / 100.0 - 1e-9))
        mapped = sorted({mapping[t] for b, t in enumerate(type_names) if types[i] >> b & 1})
        features: dict[str, object] = {"plan_gpu_pct": request_pct}
        job = RawJob(
            source_id=name,
            submit_s=submit_s,
            duration_s=end[i] - start[i],
            num_gpus=num_gpus,
            status=fields[idx["status"]].strip() or None,
            user=fields[idx["user"]].strip() or None,
            features=features,
        )
        if mapped and self.gpu_type_mode != "ignore":
            job.reference_gpu = mapped[0] if len(mapped) == 1 else None
            if self.gpu_type_mode == "pin":
                job.gpu_types = tuple(mapped)
            else:
                features["preferred_gpu_type"] = "|".join(mapped)
        if abs(request_pct - 100.0 * num_gpus) > 1e-6:
            job.note("fractional GPU request rounded up to whole GPUs")
        if not mapped:
            job.note("GPU task without gpu_type")
        return job


_Row = tuple[int, list[str]]


def _table_rows(
    ctx: LoadContext, path: Path, columns: tuple[str, ...], table: str
) -> Iterator[tuple[str, int, int, list[str], dict[str, int], int]]:
    """Rows of every ``pai_<table>_table*.csv`` member: ``(label, row, line, fields, column index, width)``."""
    for member, fh in iter_members(path, [f"pai_{table}_table*.csv"]):
        label = member.label
        ctx.sources.append(label)
        rows = csv_rows(fh, label, header=_is_header)
        first = next(rows, None)
        if first is None:
            raise TraceError(f"{label}: empty {table} table")
        idx, width, has_header = _columns(first[1], columns, label, f"pai_{table}_table")
        pending = [] if has_header else [first]
        for row, (line, fields) in enumerate(_chain(pending, rows), start=1):
            yield label, row, line, fields, idx, width


def _chain(pending: list[_Row], rows: Iterator[_Row]) -> Iterator[_Row]:
    yield from pending
    yield from rows


def machine_spec_counts(path: str | Path) -> dict[tuple[str, int], int]:
    """Machines per ``(PAI gpu_type, GPUs per machine)`` in ``pai_machine_spec`` (csv or the .tar.gz).

    Rows are ``machine,gpu_type,cap_cpu,cap_mem,cap_gpu`` (no header; a header row is skipped).

    Raises:
        TraceError: A malformed row, naming the file, the row and the field.
    """
    counts: dict[tuple[str, int], int] = {}
    for member, fh in iter_members(Path(path), ["pai_machine_spec*.csv"]):
        rows = csv_rows(fh, member.label, header=lambda fields: fields[0].strip() == "machine")
        for row, (line, fields) in enumerate(rows, start=1):
            if fields[0].strip() == "machine":
                continue
            if len(fields) != 5:
                raise TraceError(
                    f"{member.label}: row {row} (line {line}): {len(fields)} fields; pai_machine_spec has 5 "
                    "(machine,gpu_type,cap_cpu,cap_mem,cap_gpu)"
                )
            try:
                gpus = int(float(fields[4]))
            except ValueError:
                raise TraceError(
                    f"{member.label}: row {row} (line {line}), field 'cap_gpu': value {fields[4]!r} is not an integer"
                ) from None
            key = (fields[1].strip(), gpus)
            counts[key] = counts.get(key, 0) + 1
    return counts


def machine_spec_inventory(path: str | Path, gpu_map: Mapping[str, str] | None = None) -> dict[str, tuple[int, int]]:
    """A cluster inventory ``{gpu_type: (num_servers, gpus_per_server)}`` from ``pai_machine_spec``.

    PAI types are mapped with :data:`PAI_GPU_TYPES` (and ``gpu_map``); CPU-only machines are left out.
    Types that merge (V100 and V100M32) must have the same GPUs per machine.

    Raises:
        TraceError: An unknown GPU type, or merged types of different machine sizes.
    """
    mapping = {**PAI_GPU_TYPES, **dict(gpu_map or {})}
    out: dict[str, tuple[int, int]] = {}
    for (pai_type, gpus), n in sorted(machine_spec_counts(path).items()):
        if gpus == 0:
            continue
        if pai_type not in mapping:
            raise TraceError(f"{path}: unknown GPU type {pai_type!r}; map it with gpu_map={{{pai_type!r}: 'k80'}}")
        ours = mapping[pai_type]
        if ours in out:
            servers, size = out[ours]
            if size != gpus:
                raise TraceError(f"{path}: {pai_type} machines have {gpus} GPUs, other {ours} machines {size}")
            out[ours] = (servers + n, size)
        else:
            out[ours] = (n, gpus)
    return out
