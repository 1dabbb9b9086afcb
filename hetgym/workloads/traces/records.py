"""The record every trace reader yields, the drop report, and the per-load context that raises (or
counts) row errors.

A reader turns each source row into a :class:`RawJob`: the fields the source states, on the source's
own time axis, with ``None`` for what it lacks (model, iterations, deadline). The cleaning pipeline
(:mod:`hetgym.workloads.traces.pipeline`) filters them, fills what is missing with named samplers and
builds canonical :class:`~hetgym.sim.job.JobSpec`.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, NoReturn

from hetgym.sim.throughput import ThroughputModel
from hetgym.workloads.schema import TraceError

OnError = Literal["raise", "skip"]


@dataclass(slots=True)
class RawJob:
    """One job as a source states it.

    Attributes:
        source_id: The source's own job id (kept as feature ``source_id``).
        submit_s: Submission time in seconds on the source's time axis.
        duration_s: Run time in seconds as recorded (reference run time), ``None`` if unknown.
        num_gpus: GPUs requested.
        status: Final status as recorded (``Pass``, ``COMPLETED``, ``Terminated``, ...), if any.
        job_type: Model name from the throughput table, ``None`` if the source has none.
        batch_size: Global batch size, ``None`` if unknown.
        total_iters: Work in iterations of the global batch, ``None`` if unknown.
        deadline_s: Absolute deadline on the source's axis; ``None`` if the source has no deadline
            field, ``inf`` if it states "no deadline".
        user: User or group.
        gpu_types: GPU types the job is pinned to, if any.
        reference_gpu: The GPU type the run time was recorded on, if the source says.
        priority_weight: Fairness weight.
        features: Further attributes (become ``feat_<name>`` columns).
        notes: How the reader altered or estimated this job (counted in the report if the job is kept).
    """

    source_id: str
    submit_s: float
    duration_s: float | None
    num_gpus: int
    status: str | None = None
    job_type: str | None = None
    batch_size: int | None = None
    total_iters: float | None = None
    deadline_s: float | None = None
    user: str | None = None
    gpu_types: tuple[str, ...] | None = None
    reference_gpu: str | None = None
    priority_weight: float = 1.0
    features: dict[str, Any] | None = None
    notes: list[str] | None = None

    def note(self, what: str) -> None:
        """Record that the reader altered or estimated this job in way ``what``."""
        if self.notes is None:
            self.notes = []
        self.notes.append(what)


@dataclass
class DropReport:
    """What a conversion read, dropped (by reason) and kept, plus notes on rows kept but altered.

    Attributes:
        read: Rows (jobs) read from the source.
        dropped: Jobs dropped, per reason, in the order reasons first occurred.
        notes: Counts of kept jobs that were altered or estimated (e.g. GPUs clipped to the cap).
        kept: Jobs in the output.
    """

    read: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    notes: Counter[str] = field(default_factory=Counter)
    kept: int = 0

    def drop(self, reason: str, n: int = 1) -> None:
        """Count ``n`` jobs dropped for ``reason``."""
        self.dropped[reason] += n

    def note(self, what: str, n: int = 1) -> None:
        """Count ``n`` kept jobs altered in way ``what``."""
        self.notes[what] += n

    @property
    def num_dropped(self) -> int:
        """Jobs dropped in total."""
        return sum(self.dropped.values())

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (stored in the output's metadata)."""
        return {"read": self.read, "dropped": dict(self.dropped), "kept": self.kept, "notes": dict(self.notes)}

    def lines(self) -> list[str]:
        """Human-readable lines."""
        out = [f"read {self.read} jobs, kept {self.kept}, dropped {self.num_dropped}"]
        out += [f"  dropped {n:>8}  {reason}" for reason, n in self.dropped.most_common()]
        out += [f"  note    {n:>8}  {what}" for what, n in self.notes.most_common()]
        return out


class LoadContext:
    """Per-load state shared by a reader and the pipeline: the error policy and the report.

    Args:
        on_error: ``raise`` (default) stops at the first bad row with an error naming the file, the
            row and the field; ``skip`` drops the row and counts it as ``invalid <field>``.
        throughput: The throughput model (job types and GPU types are checked against it).
    """

    def __init__(self, *, on_error: OnError = "raise", throughput: ThroughputModel | None = None) -> None:
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error={on_error!r}; use 'raise' or 'skip'")
        self.on_error = on_error
        self.throughput = throughput or ThroughputModel.default()
        self.report = DropReport()
        self.sources: list[str] = []
        self.variants: dict[str, str] = {}
        #: Earliest submission read, including jobs a reader dropped (the time origin of dated traces).
        self.earliest_submit_s = math.inf
        self._ids: dict[str, dict[str, int]] = {}

    def check_unique(self, source: str, row: int, fld: str, job_id: str, *, line: int | None = None) -> None:
        """Reject a job id already read in ``source`` (the converter renumbers jobs, so a repeated id would
        otherwise pass unseen as two jobs)."""
        seen = self._ids.setdefault(source, {})
        first = seen.get(job_id)
        if first is not None:
            why = f"duplicate id {job_id!r} (first at row {first}); ids must be unique"
            self.fail(source, row, fld, why, line=line)
        seen[job_id] = row

    def saw_submit(self, submit_s: float) -> None:
        """Record a submission time read (call before deciding to drop the row)."""
        if submit_s < self.earliest_submit_s:
            self.earliest_submit_s = submit_s

    def row_error(self, source: str, row: int, fld: str, why: str, *, line: int | None = None) -> TraceError:
        """A :class:`TraceError` naming ``source``, the 1-based ``row`` (and ``line``) and the field."""
        where = f"row {row}" + (f" (line {line})" if line is not None and line != row else "")
        hint = "" if self.on_error == "skip" else " (--on-error skip / on_error='skip' drops such rows and counts them)"
        return TraceError(f"{source}: {where}, field {fld!r}: {why}{hint}")

    def fail(self, source: str, row: int, fld: str, why: str, *, line: int | None = None) -> NoReturn:
        """Reject the current row: raise its :class:`TraceError`, or (when skipping bad rows) count it
        as ``invalid <field>`` and raise :class:`BadRow` so the reader moves on."""
        if self.on_error == "skip":
            self.report.drop(f"invalid {fld}")
            raise BadRow(fld)
        raise self.row_error(source, row, fld, why, line=line)


class BadRow(Exception):
    """Raised by :meth:`LoadContext.fail` to abandon a row that was counted as dropped."""


class Reader:
    """Base of the trace formats: options are the (frozen dataclass) fields of a subclass.

    Attributes:
        name: Format name (``--format``).
        description: One line for ``hetgym trace formats``.
        reference_gpu: GPU type the format's run times are taken to be measured on (used to turn a run
            time into iterations when the source has none).
        deadline: Deadline model that fills jobs whose source has no deadline field.
        absolute_time: Whether the source's times are dates; the time origin is then the earliest
            submission read. Relative traces keep their own zero.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    reference_gpu: ClassVar[str] = "v100"
    deadline: ClassVar[str] = "elasticflow"
    absolute_time: ClassVar[bool] = False

    def read(self, path: Path, ctx: LoadContext) -> Iterator[RawJob]:
        """Yield the source's jobs in source order, streaming."""
        raise NotImplementedError

    def options(self) -> dict[str, Any]:
        """The reader's options (for the output's metadata)."""
        if dataclasses.is_dataclass(self):
            return {f.name: _jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}
        return {}


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    return value
