"""The conversion pipeline shared by every trace format: read (streaming), clean, fill, build.

1. **Read.** The format's reader yields one :class:`RawJob` per source row, streaming. Filters that
   need only the row (status, duration bounds, GPU cap in ``drop`` mode) run as rows arrive, so only
   kept jobs are held.
2. **Clean.** Time window (seconds from the trace start: the source's zero for relative traces, the
   earliest submission read for dated ones), seeded subsampling, ``max_jobs``.
3. **Fill** what the source lacks with the named samplers (:mod:`hetgym.workloads.traces.samplers`).
4. **Clip** GPU counts to the cap (``gpu_cap="clip"``): the job keeps its iterations (the same
   training run, given fewer GPUs), so it runs longer.
5. **Time.** Rebase submissions so the first kept job arrives at 0 (default), then rescale arrival times
   by ``time_scale``, or by the factor that makes the offered load on ``load_cluster`` equal
   ``target_load``. Deadlines keep their slack (``deadline - submit``).
6. **Build** canonical jobs with ids ``0..n-1`` in submission order; the metadata records the source, the
   options, the samplers with what they filled, and the drop report (counts per reason).
"""

from __future__ import annotations

import math
import os
import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from hetgym.sim.cluster import get_cluster
from hetgym.sim.config import config_from_dict
from hetgym.sim.errors import InvalidJobError, UnknownNameError
from hetgym.sim.job import JobSpec
from hetgym.sim.throughput import ThroughputModel
from hetgym.workloads.deadlines import make_deadline_model
from hetgym.workloads.schema import SCHEMA_VERSION, TraceError, Workload, write_trace
from hetgym.workloads.traces.elasticflow import ElasticFlowReader
from hetgym.workloads.traces.gavel import GavelReader
from hetgym.workloads.traces.helios import HeliosReader
from hetgym.workloads.traces.pai import PaiReader
from hetgym.workloads.traces.philly import PhillyReader
from hetgym.workloads.traces.records import LoadContext, OnError, RawJob, Reader
from hetgym.workloads.traces.samplers import ITERATIONS_SAMPLER, TableModelSampler
from hetgym.workloads.traces.stats import offered_load

#: Trace formats by name (``--format``).
FORMATS: dict[str, type[Reader]] = {
    r.name: r for r in (PhillyReader, HeliosReader, PaiReader, ElasticFlowReader, GavelReader)
}


def make_reader(fmt: str, **options: Any) -> Reader:
    """The reader of format ``fmt`` with its options; unknown formats and options name the nearest."""
    if fmt not in FORMATS:
        raise UnknownNameError("trace format", fmt, FORMATS, "List them with `hetgym trace formats`.")
    return config_from_dict(FORMATS[fmt], options, what=f"{fmt} reader option")


@dataclass(frozen=True)
class CleanOptions:
    """Cleaning shared by all formats. Every filter's drops are counted per reason.

    Attributes:
        statuses: Keep only jobs whose recorded status is one of these (case-insensitive); jobs
            without a status are kept. ``None`` keeps every status.
        min_duration_s: Drop jobs whose recorded run time is shorter.
        max_duration_s: Drop jobs whose recorded run time is longer.
        max_gpus: GPU-count cap.
        gpu_cap: ``drop`` jobs above the cap, or ``clip`` them to it (keeping their iterations).
        window_start_s: Keep jobs submitted at or after this many seconds from the trace start.
        window_end_s: Keep jobs submitted before this many seconds from the trace start.
        subsample: Keep this fraction of the jobs, chosen at random (seeded), in (0, 1].
        max_jobs: Keep the first N jobs (by submission) after the other filters.
        time_scale: Multiply arrival times (after rebasing) by this factor; < 1 raises the load.
        target_load: Rescale arrival times so the offered load on ``load_cluster`` is this.
        load_cluster: Cluster preset ``target_load`` refers to.
        rebase: Shift submissions so the first kept job arrives at time 0.
        on_error: ``raise`` at the first malformed row, or ``skip`` malformed rows (counted).
    """

    statuses: tuple[str, ...] | None = None
    min_duration_s: float | None = None
    max_duration_s: float | None = None
    max_gpus: int | None = None
    gpu_cap: Literal["drop", "clip"] = "drop"
    window_start_s: float | None = None
    window_end_s: float | None = None
    subsample: float | None = None
    max_jobs: int | None = None
    time_scale: float | None = None
    target_load: float | None = None
    load_cluster: str | None = None
    rebase: bool = True
    on_error: OnError = "raise"

    def __post_init__(self) -> None:
        if self.statuses is not None:
            object.__setattr__(self, "statuses", tuple(str(s) for s in self.statuses))
            if not self.statuses:
                raise ValueError("statuses is empty; give at least one status or leave it unset")
        for name in ("min_duration_s", "max_duration_s", "window_start_s", "window_end_s"):
            v = getattr(self, name)
            if v is not None and not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{name}={v}; it must be a number >= 0")
        lo, hi = self.min_duration_s, self.max_duration_s
        if lo is not None and hi is not None and lo > hi:
            raise ValueError(f"min_duration_s={self.min_duration_s} exceeds max_duration_s={self.max_duration_s}")
        w0, w1 = self.window_start_s, self.window_end_s
        if w0 is not None and w1 is not None and w0 >= w1:
            raise ValueError(f"the time window [{self.window_start_s}, {self.window_end_s}) is empty")
        if self.max_gpus is not None and self.max_gpus < 1:
            raise ValueError(f"max_gpus={self.max_gpus}; it must be >= 1")
        if self.gpu_cap not in ("drop", "clip"):
            raise ValueError(f"gpu_cap={self.gpu_cap!r}; use 'drop' or 'clip'")
        if self.subsample is not None and not 0 < self.subsample <= 1:
            raise ValueError(f"subsample={self.subsample}; give a fraction in (0, 1]")
        if self.max_jobs is not None and self.max_jobs < 1:
            raise ValueError(f"max_jobs={self.max_jobs}; it must be >= 1")
        if self.time_scale is not None and self.target_load is not None:
            raise ValueError("give time_scale or target_load, not both")
        if self.time_scale is not None and not (math.isfinite(self.time_scale) and self.time_scale > 0):
            raise ValueError(f"time_scale={self.time_scale}; it must be > 0")
        if self.target_load is not None:
            if not (math.isfinite(self.target_load) and self.target_load > 0):
                raise ValueError(f"target_load={self.target_load}; it must be > 0")
            if self.load_cluster is None:
                raise ValueError("target_load needs load_cluster, the cluster preset the load refers to")
            get_cluster(self.load_cluster)
        if self.on_error not in ("raise", "skip"):
            raise ValueError(f"on_error={self.on_error!r}; use 'raise' or 'skip'")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> CleanOptions:
        """Build from a mapping; unknown keys raise an error naming the nearest valid key."""
        return config_from_dict(cls, values, what="cleaning option")


@dataclass(frozen=True)
class FillOptions:
    """How missing fields are filled (see :mod:`hetgym.workloads.traces.samplers`).

    Attributes:
        seed: Seed of every random stream (subsampling, models, batches, deadlines).
        models: Job types the model sampler draws from (default: those measured on the reference GPU).
        reference_gpu: GPU type run times are taken as measured on (default: the format's, or the job's
            own type where the source records it, as PAI does).
        deadline: Deadline model for jobs without one. ``None`` (default): the format's model, only for
            jobs whose source has no deadline field. A name (``elasticflow``, ``gavel-slo``) also fills
            jobs the source states have none (Gavel's SLO -1); ``none`` fills nothing.
        tightness: Deadline tightness of the filled deadlines (slack divided by it).
    """

    seed: int = 0
    models: tuple[str, ...] | None = None
    reference_gpu: str | None = None
    deadline: str | None = None
    tightness: float = 1.0

    def __post_init__(self) -> None:
        if self.models is not None:
            object.__setattr__(self, "models", tuple(self.models))
        if not self.tightness > 0:
            raise ValueError(f"tightness={self.tightness}; it must be > 0")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> FillOptions:
        """Build from a mapping; unknown keys raise an error naming the nearest valid key."""
        return config_from_dict(cls, values, what="fill option")


def _streams(seed: int) -> list[np.random.Generator]:
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)]


def _read(reader: Reader, path: Path, ctx: LoadContext) -> Iterator[RawJob]:
    """The reader's jobs, with low-level read failures (corrupt gzip, bad encoding) as TraceError."""
    try:
        yield from reader.read(path, ctx)
    except (EOFError, OSError, UnicodeDecodeError, zlib.error) as exc:
        raise TraceError(
            f"{path}: after row {ctx.report.read}: cannot read ({type(exc).__name__}: {exc}); is the file complete?"
        ) from None


def load_trace(
    source: str | os.PathLike[str],
    fmt: str,
    *,
    clean: CleanOptions | None = None,
    fill: FillOptions | None = None,
    throughput: ThroughputModel | None = None,
    **reader_options: Any,
) -> Workload:
    """Read a public trace in format ``fmt`` into a canonical :class:`Workload`.

    Args:
        source: The trace file, archive or directory.
        fmt: A format of :data:`FORMATS` (``philly``, ``helios``, ``pai``, ``elasticflow``, ``gavel``).
        clean: Cleaning options (default: keep everything, rebase times).
        fill: Sampler options for missing fields.
        throughput: Throughput model (default: the embedded table).
        **reader_options: The format's own options (e.g. ``members=("cluster04.csv",)``).

    Raises:
        TraceError: Malformed input, naming the file, the row and the field.
    """
    started = time.perf_counter()
    clean = clean or CleanOptions()
    fill = fill or FillOptions()
    tp = throughput or ThroughputModel.default()
    reader = make_reader(fmt, **reader_options)
    if fill.reference_gpu is not None:
        tp.check_gpu_type(fill.reference_gpu)
    path = Path(source)
    ctx = LoadContext(on_error=clean.on_error, throughput=tp)
    report = ctx.report
    rng_sub, rng_model, rng_ddl = _streams(fill.seed)
    statuses = {s.lower() for s in clean.statuses} if clean.statuses else None

    # ---- 1. read, with the per-row filters
    kept: list[RawJob] = []
    earliest = math.inf
    for job in _read(reader, path, ctx):
        earliest = min(earliest, job.submit_s)
        if statuses is not None and job.status is not None and job.status.lower() not in statuses:
            report.drop(f"status {job.status}")
            continue
        d = job.duration_s
        if job.total_iters is None and (d is None or d <= 0):
            report.drop("zero run time")
            continue
        if clean.min_duration_s is not None and d is not None and d < clean.min_duration_s:
            report.drop("shorter than min_duration_s")
            continue
        if clean.max_duration_s is not None and d is not None and d > clean.max_duration_s:
            report.drop("longer than max_duration_s")
            continue
        if clean.max_gpus is not None and clean.gpu_cap == "drop" and job.num_gpus > clean.max_gpus:
            report.drop("more GPUs than max_gpus")
            continue
        kept.append(job)
    earliest = min(earliest, ctx.earliest_submit_s)
    origin = earliest if reader.absolute_time and math.isfinite(earliest) else 0.0

    # ---- 2. window, subsample, max_jobs
    if clean.window_start_s is not None or clean.window_end_s is not None:
        lo = origin + (clean.window_start_s or 0.0)
        hi = origin + clean.window_end_s if clean.window_end_s is not None else math.inf
        inside = [j for j in kept if lo <= j.submit_s < hi]
        report.drop("outside the time window", len(kept) - len(inside))
        kept = inside
    order = sorted(range(len(kept)), key=lambda i: kept[i].submit_s)  # stable: source order on ties
    kept = [kept[i] for i in order]
    if clean.subsample is not None and clean.subsample < 1 and kept:
        k = round(clean.subsample * len(kept))
        chosen = np.sort(rng_sub.choice(len(kept), size=k, replace=False))
        report.drop("subsampled out", len(kept) - k)
        kept = [kept[int(i)] for i in chosen]
    if clean.max_jobs is not None and len(kept) > clean.max_jobs:
        report.drop("beyond max_jobs", len(kept) - clean.max_jobs)
        kept = kept[: clean.max_jobs]
    if not kept and report.read == 0:
        raise TraceError(f"{path}: no job rows (a header only, or nothing to read); a trace needs at least one job")
    if not kept:
        raise TraceError(f"{path}: no job left after cleaning ({'; '.join(report.lines())}); relax the filters")

    # ---- 3. fill
    refs = [fill.reference_gpu or j.reference_gpu or reader.reference_gpu for j in kept]
    samplers: dict[str, Any] = {}
    need_model = [i for i, j in enumerate(kept) if j.job_type is None]
    if need_model:
        sampler = TableModelSampler(tp, fill.models)
        types, batches = sampler.draw(rng_model, [refs[i] for i in need_model], [kept[i].num_gpus for i in need_model])
        for i, jt, bs in zip(need_model, types, batches, strict=True):
            kept[i].job_type, kept[i].batch_size = jt, bs
        samplers["model"] = {
            "name": sampler.name,
            "models": list(fill.models) if fill.models else "measured on the reference GPU",
            "jobs": len(need_model),
        }
    need_batch = [i for i, j in enumerate(kept) if j.batch_size is None]
    if need_batch:  # a source with a model but no batch: the smallest measured batch of that model
        for i in need_batch:
            job = kept[i]
            assert job.job_type is not None
            sizes = tp.batch_sizes(job.job_type, refs[i]) or tp.batch_sizes(job.job_type)
            job.batch_size = int(sizes[0])
        samplers["batch"] = {"name": "smallest-measured", "jobs": len(need_batch)}
    need_iters = [i for i, j in enumerate(kept) if j.total_iters is None]
    if need_iters:
        dropped_rate = 0
        for i in need_iters:
            job = kept[i]
            assert job.job_type is not None and job.batch_size is not None and job.duration_s is not None
            rate = tp.rate(job.job_type, job.batch_size, refs[i], job.num_gpus)
            if rate > 0:
                job.total_iters = job.duration_s * rate
            else:
                dropped_rate += 1
        by_ref: dict[str, int] = {}
        for i in need_iters:
            if kept[i].total_iters is not None:
                by_ref[refs[i]] = by_ref.get(refs[i], 0) + 1
        samplers["iterations"] = {
            "name": ITERATIONS_SAMPLER,
            "jobs": len(need_iters) - dropped_rate,
            "reference_gpu": by_ref,
        }
        if dropped_rate:
            report.drop("no positive rate on the reference GPU", dropped_rate)
            keep = [i for i, j in enumerate(kept) if j.total_iters is not None]
            kept, refs = [kept[i] for i in keep], [refs[i] for i in keep]
            if not kept:
                raise TraceError(f"{path}: no job left: none has a positive rate on its reference GPU type")
    ddl_name = fill.deadline if fill.deadline is not None else reader.deadline
    if fill.deadline is None:
        need_ddl = [i for i, j in enumerate(kept) if j.deadline_s is None]
    else:
        need_ddl = [i for i, j in enumerate(kept) if j.deadline_s is None or j.deadline_s == math.inf]
    if need_ddl and ddl_name != "none":
        model = make_deadline_model(ddl_name, tightness=fill.tightness)
        submit = np.array([kept[i].submit_s for i in need_ddl])
        dur = np.array([_duration(kept[i], tp, refs[i]) for i in need_ddl])
        deadlines = model(rng_ddl, submit, dur)
        for i, d in zip(need_ddl, deadlines, strict=True):
            kept[i].deadline_s = float(d)
        samplers["deadline"] = {"name": model.name, "tightness": fill.tightness, "jobs": len(need_ddl)}
    elif need_ddl:
        samplers["deadline"] = {"name": "none", "jobs": 0}

    # ---- 4. clip
    if clean.max_gpus is not None and clean.gpu_cap == "clip":
        clipped = 0
        for job in kept:
            if job.num_gpus > clean.max_gpus:
                job.num_gpus = clean.max_gpus
                clipped += 1
        if clipped:
            report.note("GPUs clipped to max_gpus (iterations kept)", clipped)

    for job in kept:
        for what in job.notes or ():
            report.note(what)

    # ---- 5. time
    base = min(j.submit_s for j in kept) if clean.rebase else origin
    submit = np.array([j.submit_s - base for j in kept])
    slack = np.array([(j.deadline_s - j.submit_s) if j.deadline_s is not None else math.inf for j in kept])
    scale = clean.time_scale or 1.0
    jobs = _build(kept, submit, slack, source=str(path))
    load_before: dict[str, float] | None = None
    if clean.target_load is not None:
        assert clean.load_cluster is not None
        load_before = offered_load(jobs, clean.load_cluster, tp)
        if not (load_before["span_s"] > 0):
            raise TraceError(f"{path}: every kept job arrives at the same time; its load cannot be rescaled")
        scale = load_before["load"] / clean.target_load
    if scale != 1.0:
        jobs = _build(kept, submit * scale, slack, source=str(path))
    report.kept = len(jobs)

    meta: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "loader": reader.name,
        "source": ctx.sources or [str(path)],
        "reader_options": reader.options(),
        "variants": ctx.variants,
        "time": {
            "absolute_source_times": reader.absolute_time,
            "origin_s": origin,
            "rebase_offset_s": base,
            "time_scale": scale,
        },
        "cleaning": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(clean).items()},
        "fill": {
            **{k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(fill).items()},
            "format_reference_gpu": reader.reference_gpu,
            "format_deadline": reader.deadline,
        },
        "samplers": samplers,
        "report": report.as_dict(),
        "convert_s": round(time.perf_counter() - started, 3),
    }
    if load_before is not None:
        meta["time"]["load_before_rescale"] = load_before
        meta["time"]["target_load"] = {"cluster": clean.load_cluster, "load": clean.target_load}
    return Workload(tuple(jobs), meta)


def _duration(job: RawJob, tp: ThroughputModel, reference_gpu: str) -> float:
    if job.duration_s is not None and job.duration_s > 0:
        return job.duration_s
    # A source with iterations but no run time: the run time on the job's reference GPU.
    assert job.job_type is not None and job.batch_size is not None and job.total_iters is not None
    rate = tp.rate(job.job_type, job.batch_size, reference_gpu, job.num_gpus)
    return job.total_iters / rate if rate > 0 else 0.0


def _build(kept: Sequence[RawJob], submit: np.ndarray, slack: np.ndarray, *, source: str) -> list[JobSpec]:
    jobs: list[JobSpec] = []
    for new_id, (job, t, s) in enumerate(zip(kept, submit.tolist(), slack.tolist(), strict=True)):
        features: dict[str, Any] = {"source_id": job.source_id}
        if job.status is not None:
            features["status"] = job.status
        if job.features:
            features.update(job.features)
        assert job.job_type is not None and job.batch_size is not None and job.total_iters is not None
        try:
            jobs.append(
                JobSpec(
                    job_id=new_id,
                    submit_s=float(t),
                    job_type=job.job_type,
                    batch_size=int(job.batch_size),
                    total_iters=float(job.total_iters),
                    num_gpus=int(job.num_gpus),
                    deadline_s=float(t + s) if math.isfinite(s) else math.inf,
                    user=job.user,
                    priority_weight=job.priority_weight,
                    duration_s=job.duration_s,
                    gpu_types=job.gpu_types,
                    features=features,
                )
            )
        except InvalidJobError as exc:
            raise TraceError(f"{source}: job {job.source_id!r}: {exc}") from None
    return jobs


def convert_trace(
    source: str | os.PathLike[str],
    fmt: str,
    out: str | os.PathLike[str],
    *,
    clean: CleanOptions | None = None,
    fill: FillOptions | None = None,
    throughput: ThroughputModel | None = None,
    **reader_options: Any,
) -> Workload:
    """:func:`load_trace`, then write the canonical file ``out`` (``.csv`` or ``.parquet``) atomically.

    The output name is checked before reading (:func:`check_out_path`: never a source file, never a
    directory), and nothing is written when reading fails. An existing ``out`` is replaced.
    """
    sources = [Path(source)]
    if reader_options.get("task_table"):
        sources.append(Path(reader_options["task_table"]))
    out = check_out_path(out, sources)
    workload = load_trace(source, fmt, clean=clean, fill=fill, throughput=throughput, **reader_options)
    write_trace(workload, out)
    return workload


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (through symlinks, relative paths or hard links)."""
    if a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_out_path(
    out: str | os.PathLike[str], sources: Sequence[str | os.PathLike[str]] = (), *, replace: bool = True
) -> Path:
    """Check an output trace name before any work: raise :class:`TraceError` unless it can be written.

    Refused: a name not ending in ``.csv`` or ``.parquet``; an existing directory; a path whose folder is a
    file; one of ``sources`` (or a file inside a source directory), whichever path leads to it; and, with
    ``replace=False``, an existing file.
    """
    path = Path(out)
    if path.is_dir():
        raise TraceError(f"{path}: is a directory; give the output file name, ending in .csv or .parquet")
    if path.suffix.lower() not in (".csv", ".parquet"):
        raise TraceError(f"{path}: choose a .csv or .parquet output file name")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise TraceError(f"{path}: {parent} is a file, not a folder; choose another output path")
            break
    for src in map(Path, sources):
        candidates = [src]
        if src.is_dir():
            candidates = [p for p in src.iterdir() if p.is_file()]
        for cand in candidates:
            if _same_file(path, cand):
                raise TraceError(
                    f"{path}: is the source {cand} being read; writing it would destroy the trace. "
                    "Choose another output name"
                )
    if not replace and path.exists():
        raise TraceError(f"{path}: exists; choose another name, or add --force to replace it once the new file is made")
    return path
