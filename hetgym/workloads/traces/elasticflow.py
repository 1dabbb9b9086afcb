"""ElasticFlow's cluster traces (microsoft/elasticflow-traces), raw and extended.

Real jobs of ten Microsoft ITP clusters (2021-03-04 to 2021-05-03, 69,351 jobs), published as
``data/raw-traces.tar.gz`` and ``data/elasticflow-traces.tar.gz``. Times are seconds from the trace's
start (relative), the same origin for every cluster.

* **raw**: ``job_id,submission_time,duration,num_gpu``. The model, iterations and deadline are filled by
  the samplers (reference GPU ``a100`` as in ElasticFlow; deadline model ``elasticflow``).
* **extended**: ``job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration``:
  ElasticFlow's synthetic model, global batch, iterations (duration x A100 throughput at that batch and
  GPU count) and deadline. ElasticFlow's A100 figures are already whole-job iterations/s of the global
  batch, the unit of this project's table, so ``num_iteration`` is ``total_iters`` as is.

The variant is detected per file from its header. Members are read straight from the ``.tar.gz``
(default: every ``cluster*.csv``; ``members`` picks others, e.g. ``195job.csv``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, NoReturn

from hetgym.workloads.schema import TraceError
from hetgym.workloads.traces._io import csv_rows, header_index, is_empty, iter_members, parse_int, parse_number
from hetgym.workloads.traces.records import BadRow, LoadContext, RawJob, Reader

RAW_COLUMNS = ("job_id", "submission_time", "duration", "num_gpu")
EXTENDED_EXTRA = ("num_iteration", "model_name", "deadline", "batch_size")
EXTENDED_COLUMNS = (*RAW_COLUMNS, *EXTENDED_EXTRA)


@dataclass(frozen=True)
class ElasticFlowReader(Reader):
    """ElasticFlow cluster traces (``.csv`` or members of a ``.tar.gz``).

    Attributes:
        members: Archive members to read (base names); default: those matching ``pattern``.
        pattern: Glob selecting archive members when ``members`` is not given.
    """

    members: tuple[str, ...] | None = None
    pattern: str = "cluster*.csv"

    name: ClassVar[str] = "elasticflow"
    description: ClassVar[str] = "ElasticFlow ITP cluster traces, raw or extended (csv or the published .tar.gz)"
    reference_gpu: ClassVar[str] = "a100"
    deadline: ClassVar[str] = "elasticflow"
    absolute_time: ClassVar[bool] = False

    def read(self, path: Path, ctx: LoadContext) -> Iterator[RawJob]:
        known_types = set(ctx.throughput.job_types)
        for member, fh in iter_members(path, [self.pattern], self.members):
            label = member.label
            ctx.sources.append(label)
            rows = csv_rows(fh, label, header=True)
            first = next(rows, None)
            if first is None:
                raise TraceError(f"{label}: empty file; expected the header {','.join(RAW_COLUMNS)}")
            header = [h.strip() for h in first[1]]
            extended = any(c in header for c in EXTENDED_EXTRA)
            required = EXTENDED_COLUMNS if extended else RAW_COLUMNS
            idx = header_index(
                header, required, label, f"an ElasticFlow {'extended' if extended else 'raw'} trace", known=required
            )
            ctx.variants[label] = "extended" if extended else "raw"
            cluster = member.name.rsplit(".", 1)[0]
            for row, (line, fields) in enumerate(rows, start=1):
                ctx.report.read += 1
                try:
                    yield self._parse(ctx, label, row, line, fields, idx, len(header), extended, cluster, known_types)
                except BadRow:
                    continue

    @staticmethod
    def _parse(
        ctx: LoadContext,
        label: str,
        row: int,
        line: int,
        fields: list[str],
        idx: dict[str, int],
        width: int,
        extended: bool,
        cluster: str,
        known_types: set[str],
    ) -> RawJob:
        def fail(fld: str, why: str) -> NoReturn:
            ctx.fail(label, row, fld, why, line=line)

        if len(fields) < width:
            missing = [c for c, i in idx.items() if i >= len(fields)]
            fail(missing[0], f"missing: the row has {len(fields)} fields, the header {width}")

        def number(fld: str, *, positive: bool = False) -> float:
            text = fields[idx[fld]]
            if is_empty(text):
                fail(fld, "is empty")
            try:
                value = parse_number(text)
            except ValueError:
                fail(fld, f"value {text!r} is not a number")
            if value < 0:
                fail(fld, f"is negative ({value:g})")
            if positive and value <= 0:
                fail(fld, f"is {value:g}; it must be > 0")
            return value

        def integer(fld: str) -> int:
            text = fields[idx[fld]]
            try:
                value = parse_int(text)
            except ValueError:
                fail(fld, f"value {text!r} is not an integer")
            if value < 1:
                fail(fld, f"is {value}; it must be >= 1")
            return value

        submit_s = number("submission_time")
        duration_s = number("duration")
        num_gpus = integer("num_gpu")
        source_id = fields[idx["job_id"]].strip()
        if not source_id:
            fail("job_id", "is empty; every job needs its id")
        ctx.check_unique(label, row, "job_id", source_id, line=line)
        job = RawJob(
            source_id=source_id,
            submit_s=submit_s,
            duration_s=duration_s,
            num_gpus=num_gpus,
            reference_gpu="a100",
            features={"cluster": cluster},
        )
        if extended:
            model = fields[idx["model_name"]].strip()
            if model not in known_types:
                fail(
                    "model_name",
                    f"unknown job type {model!r}; the throughput table has {sorted(known_types)}",
                )
            deadline_s = number("deadline")
            if deadline_s <= submit_s:
                fail("deadline", f"{deadline_s:g} is not after submission_time {submit_s:g}")
            job.job_type = model
            job.batch_size = integer("batch_size")
            job.total_iters = number("num_iteration", positive=True)
            job.deadline_s = deadline_s
        return job
