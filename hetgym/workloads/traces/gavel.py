"""Gavel's ``.trace`` files (stanford-futuredata/gavel ``scheduler/traces``): tab-separated, no header.

Three layouts, told apart by the number of columns:

* 10 columns (``physical_cluster/``): ``job_type, command, working_dir, num_steps_arg, needs_data_dir,
  total_steps, scale_factor, priority_weight, SLO, arrival_time``;
* 9 columns (the same without ``working_dir``);
* 7 columns, the older layout of the per-VC Philly traces (``msr/``): ``job_type, command,
  num_steps_arg, needs_data_dir, total_steps, arrival_time, scale_factor``. Rows with scale factor 0
  are skipped, as Gavel does.

**Units.** Gavel's throughput of a job with scale factor ``s`` is the SUM over its ``s`` workers, so its
``total_steps`` S count worker-steps: Gavel's simulator runs the job for ``S / figure`` seconds. This
project's table stores whole-job iterations/s of the GLOBAL batch (Gavel's figure / s; global batch =
per-GPU batch x s; see ``hetgym/data/NOTICE.md``). So ``ResNet-50 (batch size 64)`` with scale factor 4
becomes job type ``resnet50``, ``batch_size`` 256, ``num_gpus`` 4, ``total_iters`` S / 4, and its run
time on V100 is ``(S / 4) / (figure / 4) = S / figure``, Gavel's own.

``duration_s`` is that V100 run time, computed with the table's figure exactly as given. A few (model,
scale factor) keys of the per-VC traces have no Gavel figure (e.g. Recommendation, A3C and CycleGAN with
several workers, 16- and 32-GPU jobs): by default they are kept and their run time uses the throughput
model's extrapolation (counted in the report's notes); ``unmeasured="drop"`` drops them. ``SLO`` (10 and
9 columns) is Gavel's deadline multiplier: ``deadline = arrival + SLO x duration``; ``-1`` means none, and
any other value must be > 0. No field may be empty, and ``nan``/``inf`` are refused like any non-number.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal, NoReturn

from hetgym.workloads.schema import TraceError
from hetgym.workloads.traces._io import is_empty, iter_members, parse_int, parse_number
from hetgym.workloads.traces.records import BadRow, LoadContext, RawJob, Reader

#: Gavel model names -> this project's job types (see hetgym/data/NOTICE.md).
GAVEL_MODELS: dict[str, str] = {
    "ResNet-18": "resnet18",
    "ResNet-50": "resnet50",
    "Transformer": "transformer",
    "LM": "lm",
    "Recommendation": "recommendation",
    "A3C": "a3c",
    "CycleGAN": "cyclegan",
}
_NAME = re.compile(r"^(?P<model>.+?) \(batch size (?P<bs>\d+)\)$")

#: Column positions of the fields used, per layout (by column count).
LAYOUTS: dict[int, dict[str, int]] = {
    10: {"job_type": 0, "total_steps": 5, "scale_factor": 6, "priority_weight": 7, "SLO": 8, "arrival_time": 9},
    9: {"job_type": 0, "total_steps": 4, "scale_factor": 5, "priority_weight": 6, "SLO": 7, "arrival_time": 8},
    7: {"job_type": 0, "total_steps": 4, "arrival_time": 5, "scale_factor": 6},
}
_LAYOUT_TEXT = {
    10: "job_type, command, working_dir, num_steps_arg, needs_data_dir, total_steps, scale_factor, "
    "priority_weight, SLO, arrival_time",
    9: "job_type, command, num_steps_arg, needs_data_dir, total_steps, scale_factor, priority_weight, SLO, "
    "arrival_time",
    7: "job_type, command, num_steps_arg, needs_data_dir, total_steps, arrival_time, scale_factor",
}


def parse_gavel_job_type(name: str) -> tuple[str, int]:
    """``'ResNet-50 (batch size 64)'`` -> ``('resnet50', 64)``; ``'A3C'`` -> ``('a3c', 1)`` (per-GPU batch).

    Raises:
        KeyError: An unknown model name.
    """
    match = _NAME.match(name.strip())
    model, per_gpu = (match.group("model"), int(match.group("bs"))) if match else (name.strip(), 1)
    if model not in GAVEL_MODELS:
        raise KeyError(model)
    return GAVEL_MODELS[model], per_gpu


@dataclass(frozen=True)
class GavelReader(Reader):
    """Gavel ``.trace`` files (a file, or members of a ``.tar.gz``).

    Attributes:
        members: Archive members to read (base names); default: those matching ``pattern``.
        pattern: Glob selecting archive members when ``members`` is not given.
        unmeasured: ``keep`` (default) or ``drop`` jobs whose (model, scale factor) has no Gavel figure.
    """

    members: tuple[str, ...] | None = None
    pattern: str = "*.trace"
    unmeasured: Literal["keep", "drop"] = "keep"

    name: ClassVar[str] = "gavel"
    description: ClassVar[str] = "Gavel .trace files: 10/9-column and the older 7-column per-VC Philly traces"
    reference_gpu: ClassVar[str] = "v100"
    deadline: ClassVar[str] = "gavel-slo"
    absolute_time: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.unmeasured not in ("keep", "drop"):
            raise ValueError(f"gavel unmeasured={self.unmeasured!r}; use 'keep' or 'drop'")

    def read(self, path: Path, ctx: LoadContext) -> Iterator[RawJob]:
        for member, fh in iter_members(path, [self.pattern], self.members):
            label = member.label
            ctx.sources.append(label)
            width: int | None = None
            vc = member.name.rsplit(".", 1)[0]
            row = 0
            for line_no, text in enumerate(fh, start=1):
                text = text.rstrip("\r\n")
                if not text.strip():
                    continue
                row += 1
                ctx.report.read += 1
                fields = text.split("\t")
                if width is None:
                    if len(fields) not in LAYOUTS:
                        raise TraceError(
                            f"{label}: row {row} (line {line_no}): {len(fields)} tab-separated columns; a Gavel "
                            f"trace has 10 ({_LAYOUT_TEXT[10]}), 9 or 7 ({_LAYOUT_TEXT[7]})"
                        )
                    width = len(fields)
                    ctx.variants[label] = f"{width}-column"
                try:
                    job = self._parse(ctx, label, row, line_no, fields, width, vc)
                except BadRow:
                    continue
                if job is not None:
                    yield job
            if width is None:
                raise TraceError(f"{label}: empty trace file")

    def _parse(
        self, ctx: LoadContext, label: str, row: int, line: int, fields: list[str], width: int, vc: str
    ) -> RawJob | None:
        def fail(fld: str, why: str) -> NoReturn:
            ctx.fail(label, row, fld, why, line=line)

        layout = LAYOUTS[width]
        if len(fields) != width:
            names = _LAYOUT_TEXT[width].split(", ")
            missing = names[len(fields)] if len(fields) < width else "arrival_time"
            fail(missing, f"the row has {len(fields)} tab-separated columns, this file's rows have {width}")

        def number(fld: str) -> float:
            text = fields[layout[fld]]
            if is_empty(text):
                fail(fld, "is empty")
            try:
                return parse_number(text)
            except ValueError:
                fail(fld, f"value {text!r} is not a number")

        name = fields[layout["job_type"]]
        try:
            job_type, per_gpu_batch = parse_gavel_job_type(name)
        except KeyError:
            fail("job_type", f"unknown Gavel job type {name!r}; known models: {', '.join(GAVEL_MODELS)}")
        text = fields[layout["scale_factor"]]
        try:
            scale = parse_int(text)
        except ValueError:
            fail("scale_factor", f"value {text!r} is not an integer")
        if scale == 0 and width == 7:
            ctx.report.drop("scale factor 0 (Gavel skips these rows)")
            return None
        if scale < 1:
            fail("scale_factor", f"is {scale}; it must be >= 1")
        total_steps = number("total_steps")
        if total_steps <= 0:
            fail("total_steps", f"is {total_steps:g}; it must be > 0")
        arrival_s = number("arrival_time")
        if arrival_s < 0:
            fail("arrival_time", f"is negative ({arrival_s:g})")
        batch = per_gpu_batch * scale
        total_iters = total_steps / scale
        tp = ctx.throughput
        figure = tp.measured_rate(job_type, batch, "v100", scale)
        unmeasured = figure is None or figure <= 0
        if figure is None or figure <= 0:
            if self.unmeasured == "drop":
                ctx.report.drop("no Gavel V100 figure for (model, scale factor)")
                return None
            figure = tp.rate(job_type, batch, "v100", scale)
            if figure <= 0:
                fail("scale_factor", f"{name} cannot run on {scale} V100 GPUs in the throughput table")
        duration_s = total_iters / figure
        job = RawJob(
            source_id=f"{vc}:{row}",
            submit_s=arrival_s,
            duration_s=duration_s,
            num_gpus=scale,
            job_type=job_type,
            batch_size=batch,
            total_iters=total_iters,
            reference_gpu="v100",
            features={"vc": vc},
        )
        if unmeasured:
            job.note("no Gavel V100 figure for (model, scale factor): run time extrapolated")
        if "SLO" in layout:
            slo = number("SLO")
            if slo != -1 and slo <= 0:
                fail("SLO", f"is {slo:g}; Gavel's SLO is -1 (no deadline) or a multiplier of the run time > 0")
            job.deadline_s = arrival_s + slo * duration_s if slo > 0 else float("inf")
            weight = number("priority_weight")
            if weight <= 0:
                fail("priority_weight", f"is {weight:g}; it must be > 0")
            job.priority_weight = weight
        return job
