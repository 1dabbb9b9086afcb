"""Microsoft Philly's ``cluster_job_log`` (msr-fiddle/philly-traces; Jeon et al., ATC'19).

One JSON array of ~117k jobs (hundreds of megabytes), read incrementally: memory stays bounded by one
job record. The rules follow the trace's own analysis notebook:

* GPUs: the GPUs of the FIRST attempt, summed over its ``detail`` entries (servers);
* run time: from the first attempt's ``start_time`` to the last attempt's ``end_time``;
* submission: ``submitted_time``; times are ``YYYY-MM-DD HH:MM:SS`` wall-clock (absolute, so the time
  origin is the earliest submission read);
* jobs without attempts, without a first start or still running (no last end) are dropped and counted;
* ``status`` (``Pass``, ``Killed``, ``Failed``) is kept for the status filter; ``user`` and ``vc`` too.

Philly has no model, iterations or deadline: the samplers fill them (reference GPU ``v100``).
The source is the ``cluster_job_log`` file itself (optionally ``.gz``) or the published
``trace-data.tar.gz`` (its ``cluster_job_log`` member is streamed).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NoReturn

from hetgym.workloads.traces._io import is_empty, iter_json_array, iter_members, parse_datetime_s
from hetgym.workloads.traces.records import BadRow, LoadContext, RawJob, Reader


@dataclass(frozen=True)
class PhillyReader(Reader):
    """Philly ``cluster_job_log`` (a JSON array), streamed.

    Attributes:
        members: Archive member to read (default: ``cluster_job_log``).
    """

    members: tuple[str, ...] | None = None

    name: ClassVar[str] = "philly"
    description: ClassVar[str] = "Microsoft Philly cluster_job_log (JSON array; streamed)"
    reference_gpu: ClassVar[str] = "v100"
    deadline: ClassVar[str] = "elasticflow"
    absolute_time: ClassVar[bool] = True

    def read(self, path: Path, ctx: LoadContext) -> Iterator[RawJob]:
        for member, fh in iter_members(path, ["cluster_job_log*"], self.members):
            label = member.label
            ctx.sources.append(label)
            for row, line, element in iter_json_array(fh, label):
                ctx.report.read += 1
                try:
                    job = self._parse(ctx, label, row, line, element)
                except BadRow:
                    continue
                if job is not None:
                    yield job

    @staticmethod
    def _parse(ctx: LoadContext, label: str, row: int, line: int, rec: Any) -> RawJob | None:
        def fail(fld: str, why: str) -> NoReturn:
            ctx.fail(label, row, fld, why, line=line)

        if not isinstance(rec, Mapping):
            fail("<job>", f"is a {type(rec).__name__}, not a JSON object")

        def stamp(value: Any, fld: str) -> float | None:
            if value is None or (isinstance(value, str) and (is_empty(value) or value.strip() == "None")):
                return None  # the spellings of "no time" (JSON null, or Python's str(None)); any other is refused
            if not isinstance(value, str):
                fail(fld, f"value {value!r} is not a timestamp; expected 'YYYY-MM-DD HH:MM:SS'")
            try:
                return parse_datetime_s(value)
            except ValueError:
                fail(fld, f"bad timestamp {value!r}; expected 'YYYY-MM-DD HH:MM:SS'")

        for key in ("jobid", "submitted_time", "attempts"):
            if key not in rec:
                fail(key, "is missing")
        if rec["jobid"] is None or str(rec["jobid"]).strip() == "":
            fail("jobid", "is empty; every job needs its id")
        ctx.check_unique(label, row, "jobid", str(rec["jobid"]), line=line)
        submit_s = stamp(rec["submitted_time"], "submitted_time")
        if submit_s is None:
            fail("submitted_time", "is empty")
        ctx.saw_submit(submit_s)
        attempts = rec["attempts"]
        if not isinstance(attempts, list):
            fail("attempts", f"is a {type(attempts).__name__}, not a list")
        if not attempts:
            ctx.report.drop("no scheduling attempt")
            return None
        first, last = attempts[0], attempts[-1]
        if not isinstance(first, Mapping) or not isinstance(last, Mapping):
            fail("attempts", "holds an entry that is not a JSON object")
        detail = first.get("detail")
        if not isinstance(detail, list):
            fail("attempts[0].detail", "is missing or not a list")
        num_gpus = 0
        for d in detail:
            gpus = d.get("gpus") if isinstance(d, Mapping) else None
            if not isinstance(gpus, list):
                fail("attempts[0].detail.gpus", "is missing or not a list")
            num_gpus += len(gpus)
        start_s = stamp(first.get("start_time"), "attempts[0].start_time")
        end_s = stamp(last.get("end_time"), f"attempts[{len(attempts) - 1}].end_time")
        if num_gpus == 0:
            ctx.report.drop("no GPU in the first attempt")
            return None
        if start_s is None:
            ctx.report.drop("first attempt has no start time")
            return None
        if end_s is None:
            ctx.report.drop("still running (last attempt has no end time)")
            return None
        duration_s = end_s - start_s
        if duration_s < 0:
            fail(
                f"attempts[{len(attempts) - 1}].end_time",
                f"negative run time ({duration_s:g} s): the last end {last.get('end_time')!r} is before the "
                f"first start {first.get('start_time')!r}",
            )
        user = rec.get("user")
        return RawJob(
            source_id=str(rec["jobid"]),
            submit_s=submit_s,
            duration_s=duration_s,
            num_gpus=num_gpus,
            status=str(rec["status"]) if rec.get("status") is not None else None,
            user=str(user) if user is not None else None,
            features={"vc": str(rec["vc"])} if rec.get("vc") is not None else None,
        )
