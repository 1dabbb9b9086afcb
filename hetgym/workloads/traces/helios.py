"""SenseTime Helios ``cluster_log.csv`` (S-Lab-System-Group/HeliosData; Hu et al., SC'21).

One file per cluster (Earth, Saturn, Uranus, Venus), with the header
``job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue``.
Read row by row (the four files hold 3.4 million jobs):

* GPUs: ``gpu_num``; CPU-only jobs (``gpu_num`` 0) are dropped and counted;
* run time: ``duration`` (seconds, ``end_time - start_time``); when empty, computed from the two times;
* submission: ``submit_time``, ``YYYY-MM-DD HH:MM:SS`` (absolute: the time origin is the earliest
  submission read);
* ``state`` (``COMPLETED``, ``CANCELLED``, ``FAILED``, ``TIMEOUT``, ``NODE_FAIL``) feeds the status
  filter; ``user`` and ``vc`` are kept.

No model, iterations or deadline: the samplers fill them (reference GPU ``v100``: Helios's clusters are
mostly V100).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, NoReturn

from hetgym.workloads.schema import TraceError
from hetgym.workloads.traces._io import (
    csv_rows,
    header_index,
    is_empty,
    iter_members,
    parse_datetime_s,
    parse_int,
    parse_number,
)
from hetgym.workloads.traces.records import BadRow, LoadContext, RawJob, Reader

REQUIRED_COLUMNS = ("job_id", "gpu_num", "state", "submit_time", "duration")
#: The published header. The columns not read (``cpu_num``, ``node_num``, ``queue``) are ignored by design;
#: any other column is an error naming the nearest of these.
PUBLISHED_COLUMNS = (
    "job_id",
    "user",
    "vc",
    "gpu_num",
    "cpu_num",
    "node_num",
    "state",
    "submit_time",
    "start_time",
    "end_time",
    "duration",
    "queue",
)


@dataclass(frozen=True)
class HeliosReader(Reader):
    """Helios ``cluster_log.csv`` (plain, ``.gz`` or a member of a ``.tar.gz``).

    Attributes:
        members: Archive members to read (default: every ``cluster_log*.csv``).
    """

    members: tuple[str, ...] | None = None

    name: ClassVar[str] = "helios"
    description: ClassVar[str] = "SenseTime Helios cluster_log.csv (Earth, Saturn, Uranus or Venus)"
    reference_gpu: ClassVar[str] = "v100"
    deadline: ClassVar[str] = "elasticflow"
    absolute_time: ClassVar[bool] = True

    def read(self, path: Path, ctx: LoadContext) -> Iterator[RawJob]:
        for member, fh in iter_members(path, ["cluster_log*.csv"], self.members):
            label = member.label
            ctx.sources.append(label)
            rows = csv_rows(fh, label, header=True)
            first = next(rows, None)
            if first is None:
                raise TraceError(f"{label}: empty file; expected a header with {list(REQUIRED_COLUMNS)}")
            header = [h.strip() for h in first[1]]
            idx = header_index(header, REQUIRED_COLUMNS, label, "a Helios cluster_log.csv", known=PUBLISHED_COLUMNS)
            for row, (line, fields) in enumerate(rows, start=1):
                ctx.report.read += 1
                try:
                    job = self._parse(ctx, label, row, line, fields, idx, len(header))
                except BadRow:
                    continue
                if job is not None:
                    yield job

    @staticmethod
    def _parse(
        ctx: LoadContext, label: str, row: int, line: int, fields: list[str], idx: dict[str, int], width: int
    ) -> RawJob | None:
        def fail(fld: str, why: str) -> NoReturn:
            ctx.fail(label, row, fld, why, line=line)

        if len(fields) < width:
            missing = [c for c, i in idx.items() if i >= len(fields)]
            fail(missing[0], f"missing: the row has {len(fields)} fields, the header {width}")

        def get(fld: str) -> str | None:
            i = idx.get(fld)
            return None if i is None or is_empty(fields[i]) else fields[i].strip()

        def stamp(fld: str) -> float | None:
            text = get(fld)
            if text is None:
                return None
            try:
                return parse_datetime_s(text)
            except ValueError:
                fail(fld, f"bad timestamp {text!r}; expected 'YYYY-MM-DD HH:MM:SS'")

        source_id = get("job_id")
        if source_id is None:
            fail("job_id", "is empty; every job needs its id")
        ctx.check_unique(label, row, "job_id", source_id, line=line)
        text = get("gpu_num")
        if text is None:
            fail("gpu_num", "is empty; write 0 for a CPU-only job")
        try:
            num_gpus = parse_int(text)
        except ValueError:
            fail("gpu_num", f"value {text!r} is not an integer")
        if num_gpus < 0:
            fail("gpu_num", f"is negative ({num_gpus})")
        submit_s = stamp("submit_time")
        if submit_s is None:
            fail("submit_time", "is empty")
        ctx.saw_submit(submit_s)
        text = get("duration")
        duration_s: float | None
        if text is not None:
            try:
                duration_s = parse_number(text)
            except ValueError:
                fail("duration", f"value {text!r} is not a number of seconds")
            if duration_s < 0:
                fail("duration", f"negative run time ({duration_s:g} s)")
        else:
            start_s, end_s = stamp("start_time"), stamp("end_time")
            duration_s = None if start_s is None or end_s is None else end_s - start_s
            if duration_s is not None and duration_s < 0:
                fail("end_time", f"negative run time ({duration_s:g} s): end_time is before start_time")
        if num_gpus == 0:
            ctx.report.drop("CPU-only job (gpu_num 0)")
            return None
        if duration_s is None:
            ctx.report.drop("no run time (duration and start/end empty)")
            return None
        vc = get("vc")
        return RawJob(
            source_id=source_id,
            submit_s=submit_s,
            duration_s=duration_s,
            num_gpus=num_gpus,
            status=get("state"),
            user=get("user"),
            features={"vc": vc} if vc is not None else None,
        )
