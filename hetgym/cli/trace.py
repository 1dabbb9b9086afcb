"""``hetgym trace``: convert public traces to the canonical schema, describe a trace, draw synthetic ones.

* ``hetgym trace formats``: the formats and their defaults;
* ``hetgym trace convert SRC --format F --out X.parquet``: read, clean, fill, write (prints what was
  dropped and why);
* ``hetgym trace info X``: jobs, span, GPU-count and duration distributions, deadlines, load on a cluster;
* ``hetgym trace sample --recipe R --out X.csv``: a synthetic workload from a generator, to a file.

Outputs are written atomically once the work succeeded. ``--out`` is checked first: never a source file
(whatever path leads to it), never a directory, and an existing file only with ``--force``.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hetgym.cli._common import console


def _csv_list(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    items = tuple(s.strip() for s in text.split(",") if s.strip())
    if not items:
        raise ValueError(f"empty list {text!r}; give comma-separated values")
    return items


def add_reader_args(parser: argparse.ArgumentParser) -> None:
    """``--format`` and the format-specific options."""
    from hetgym.workloads.traces import FORMATS

    g = parser.add_argument_group("source format")
    g.add_argument("--format", "-f", dest="format", help=f"trace format: {', '.join(FORMATS)}")
    g.add_argument(
        "--member",
        action="append",
        metavar="NAME",
        help="file inside a .tar.gz to read (repeatable; default: the format's usual files)",
    )
    g.add_argument("--pai-task-table", metavar="PATH", help="pai: the task table (default: next to the job table)")
    g.add_argument(
        "--pai-gpu-type",
        choices=("prefer", "pin", "ignore"),
        help="pai: keep gpu_type as a preference (default), pin jobs to it, or ignore it",
    )
    g.add_argument("--gpu-map", action="append", metavar="NAME=TYPE", help="pai: map a PAI GPU type (repeatable)")
    g.add_argument(
        "--gavel-unmeasured",
        choices=("keep", "drop"),
        help="gavel: keep (default) or drop jobs whose (model, scale factor) has no Gavel figure",
    )


def add_clean_args(parser: argparse.ArgumentParser) -> None:
    """The cleaning and fill options shared by every format."""
    c = parser.add_argument_group("cleaning (every drop is counted per reason)")
    c.add_argument("--status", help="keep only these statuses, comma-separated (e.g. Pass,Killed; COMPLETED)")
    c.add_argument("--min-duration-s", type=float, help="drop jobs that ran shorter")
    c.add_argument("--max-duration-s", type=float, help="drop jobs that ran longer")
    c.add_argument("--max-gpus", type=int, help="GPU-count cap")
    c.add_argument("--gpu-cap", choices=("drop", "clip"), default="drop", help="drop (default) or clip jobs above it")
    c.add_argument("--window-start-s", type=float, help="keep jobs submitted this many seconds after the trace start")
    c.add_argument("--window-end-s", type=float, help="... and before this many seconds after it")
    c.add_argument("--subsample", type=float, help="keep this fraction of the jobs, chosen at random (seeded)")
    c.add_argument("--max-jobs", type=int, help="keep the first N jobs (by submission)")
    t = c.add_mutually_exclusive_group()
    t.add_argument("--time-scale", type=float, help="multiply arrival times by this (< 1 = more load)")
    t.add_argument("--target-load", type=float, help="rescale arrival times to this offered load on --load-cluster")
    c.add_argument("--load-cluster", help="cluster preset for --target-load (and the load shown)")
    c.add_argument("--no-rebase", action="store_true", help="keep the source's time origin (default: first job at 0)")
    c.add_argument(
        "--on-error", choices=("raise", "skip"), default="raise", help="stop at a malformed row, or skip and count it"
    )
    f = parser.add_argument_group("filling missing fields (named, seeded samplers)")
    f.add_argument("--seed", type=int, default=0, help="seed of the samplers and the subsampling (default 0)")
    f.add_argument("--models", help="job types the model sampler draws from, comma-separated")
    f.add_argument("--reference-gpu", help="GPU type run times were measured on (default: the format's)")
    f.add_argument(
        "--deadline",
        help="deadline model for jobs without a deadline: elasticflow, gavel-slo or none (default: the format's)",
    )
    f.add_argument("--tightness", type=float, default=1.0, help="tightness of filled deadlines (default 1)")


def reader_options(args: argparse.Namespace) -> dict[str, Any]:
    """Format-specific options given on the command line."""
    opts: dict[str, Any] = {}
    if getattr(args, "member", None):
        opts["members"] = tuple(args.member)
    if getattr(args, "pai_task_table", None):
        opts["task_table"] = args.pai_task_table
    if getattr(args, "pai_gpu_type", None):
        opts["gpu_type_mode"] = args.pai_gpu_type
    if getattr(args, "gpu_map", None):
        mapping = {}
        for item in args.gpu_map:
            if "=" not in item:
                raise ValueError(f"--gpu-map {item!r}: write NAME=TYPE, e.g. K40=k80")
            k, v = item.split("=", 1)
            mapping[k.strip()] = v.strip().lower()
        opts["gpu_map"] = mapping
    if getattr(args, "gavel_unmeasured", None):
        opts["unmeasured"] = args.gavel_unmeasured
    return opts


def clean_fill(args: argparse.Namespace) -> tuple[Any, Any]:
    """The :class:`CleanOptions` and :class:`FillOptions` given on the command line."""
    from hetgym.workloads.traces import CleanOptions, FillOptions

    clean = CleanOptions(
        statuses=_csv_list(args.status),
        min_duration_s=args.min_duration_s,
        max_duration_s=args.max_duration_s,
        max_gpus=args.max_gpus,
        gpu_cap=args.gpu_cap,
        window_start_s=args.window_start_s,
        window_end_s=args.window_end_s,
        subsample=args.subsample,
        max_jobs=args.max_jobs,
        time_scale=args.time_scale,
        target_load=args.target_load,
        load_cluster=args.load_cluster if args.target_load is not None else None,
        rebase=not args.no_rebase,
        on_error=args.on_error,
    )
    fill = FillOptions(
        seed=args.seed,
        models=_csv_list(args.models),
        reference_gpu=args.reference_gpu.lower() if args.reference_gpu else None,
        deadline=args.deadline,
        tightness=args.tightness,
    )
    return clean, fill


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "trace",
        help="convert public traces to the canonical schema, describe traces, draw synthetic ones",
        description="Work with trace files. See docs/traces.md for each format and traces/README.md for the schema.",
    )
    p.set_defaults(func=lambda args: (p.print_help(), 0)[1])
    tsub = p.add_subparsers(dest="trace_command", metavar="SUBCOMMAND")

    f = tsub.add_parser("formats", help="list the trace formats and their defaults")
    f.set_defaults(func=cmd_formats)

    c = tsub.add_parser(
        "convert",
        help="convert a public trace to a canonical .parquet/.csv file",
        description="Read a public trace (streaming), clean it, fill what it lacks with named seeded samplers, "
        "and write a canonical trace. Prints what was dropped and why; writes nothing on error.",
    )
    c.add_argument("source", type=Path, help="the trace file, archive (.tar.gz) or directory (PAI)")
    c.add_argument("--out", "-o", type=Path, required=True, help="output file: .parquet or .csv (never the source)")
    c.add_argument("--force", action="store_true", help="replace an existing --out (once the conversion succeeded)")
    add_reader_args(c)
    add_clean_args(c)
    c.add_argument("--json", action="store_true", help="print the conversion report as JSON")
    c.set_defaults(func=cmd_convert)

    i = tsub.add_parser(
        "info",
        help="describe a trace: jobs, span, GPU counts, durations, deadlines, load on a cluster",
        description="Describe a canonical trace (or, with --format, a public trace read with default options).",
    )
    i.add_argument("trace", type=Path, help="canonical .csv/.parquet (or a public trace with --format)")
    i.add_argument("--cluster", help="cluster preset to compute the offered load on (default: default)")
    i.add_argument("--format", "-f", dest="format", help="read a public trace in this format instead")
    i.add_argument("--json", action="store_true", help="print the summary as JSON")
    i.set_defaults(func=cmd_info)

    s = tsub.add_parser(
        "sample",
        help="draw a synthetic workload from a generator into a canonical file",
        description="Draw a seeded synthetic workload (ElasticFlow or Gavel-Philly recipe) and write it as a trace.",
    )
    s.add_argument("--out", "-o", type=Path, required=True, help="output file: .csv or .parquet")
    s.add_argument("--force", action="store_true", help="replace an existing --out")
    s.add_argument("--recipe", default="elasticflow", help="elasticflow (default) or gavel-philly")
    s.add_argument("--num-jobs", type=int, default=100, help="jobs to draw (default 100)")
    s.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    s.add_argument("--cluster", default="default", help="cluster the load is expressed on (default: default)")
    load = s.add_mutually_exclusive_group()
    load.add_argument("--utilisation", type=float, help="offered utilisation of the cluster (default 0.8)")
    load.add_argument("--arrival-rate-per-h", type=float, help="mean arrivals per hour")
    load.add_argument("--static", action="store_true", help="submit every job at time 0")
    s.add_argument("--deadline", help="deadline model: elasticflow, gavel-slo or none (default: the recipe's)")
    s.add_argument("--tightness", type=float, default=1.0, help="deadline tightness (default 1)")
    s.add_argument("--max-gpus-per-job", type=int, help="cap on requested GPUs")
    s.set_defaults(func=cmd_sample)


def cmd_formats(args: argparse.Namespace) -> int:
    from rich.table import Table

    from hetgym.workloads.traces import FORMATS

    table = Table(title="Trace formats (hetgym trace convert SRC --format NAME)")
    table.add_column("format", style="bold")
    table.add_column("description")
    table.add_column("reference GPU")
    table.add_column("deadline model")
    table.add_column("times")
    for name, reader in FORMATS.items():
        table.add_row(
            name,
            reader.description,
            reader.reference_gpu + (" (or the job's own type)" if name == "pai" else ""),
            reader.deadline,
            "dated" if reader.absolute_time else "relative",
        )
    console.print(table)
    return 0


def _require_format(args: argparse.Namespace) -> str:
    if not args.format:
        from hetgym.workloads.traces import FORMATS

        raise ValueError(f"give --format (one of {', '.join(FORMATS)})")
    return str(args.format)


def cmd_convert(args: argparse.Namespace) -> int:
    from hetgym.workloads.traces import convert_trace
    from hetgym.workloads.traces.pipeline import check_out_path

    fmt = _require_format(args)
    clean, fill = clean_fill(args)
    options = reader_options(args)
    sources = [args.source, *([Path(options["task_table"])] if "task_table" in options else [])]
    check_out_path(args.out, sources, replace=args.force)  # before any work
    workload = convert_trace(args.source, fmt, args.out, clean=clean, fill=fill, **options)
    meta = workload.metadata
    if args.json:
        print(json.dumps({"out": str(args.out), **meta}, indent=2, default=str))
        return 0
    console.print(f"[bold]{len(workload)} jobs[/bold] written to {args.out} ({meta['convert_s']:.2f} s)")
    _print_report(meta)
    if args.load_cluster:
        from hetgym.workloads.traces import offered_load

        load = offered_load(workload.jobs, args.load_cluster)
        console.print(f"offered load on {args.load_cluster}: {load['load']:.3f}")
    return 0


def _print_report(meta: Mapping[str, Any]) -> None:
    from rich.table import Table

    report = meta.get("report")
    if report:
        table = Table(title=f"conversion report: read {report['read']}, kept {report['kept']}")
        table.add_column("what")
        table.add_column("reason")
        table.add_column("jobs", justify="right")
        for reason, n in sorted(report["dropped"].items(), key=lambda kv: -kv[1]):
            table.add_row("dropped", reason, str(n))
        for what, n in sorted(report["notes"].items(), key=lambda kv: -kv[1]):
            table.add_row("note", what, str(n))
        if report["dropped"] or report["notes"]:
            console.print(table)
        else:
            console.print(f"read {report['read']} jobs, dropped none")
    for kind, s in (meta.get("samplers") or {}).items():
        params = ", ".join(f"{k}={v}" for k, v in s.items() if k not in ("name", "jobs"))
        extra = f" ({params})" if params else ""
        console.print(f"filled {kind} of {s.get('jobs', 0)} jobs with sampler '{s['name']}'{extra}")
    time_meta = meta.get("time") or {}
    if time_meta.get("time_scale", 1.0) != 1.0:
        console.print(f"arrival times scaled by {time_meta['time_scale']:.4g}")


def _h(seconds: float) -> str:
    return f"{seconds / 3600:.2f}"


def cmd_info(args: argparse.Namespace) -> int:
    from rich.table import Table

    from hetgym.sim.throughput import ThroughputModel
    from hetgym.workloads.schema import read_trace
    from hetgym.workloads.traces import load_trace, summarize

    throughput = ThroughputModel.default()  # unknown job and GPU types are reported with their row
    workload = (
        load_trace(args.trace, args.format, throughput=throughput)
        if args.format
        else read_trace(args.trace, throughput=throughput)
    )
    cluster = args.cluster or "default"
    summary = summarize(workload.jobs, cluster=cluster)
    if args.json:
        print(json.dumps({"trace": str(args.trace), **summary, "metadata": workload.metadata}, indent=2, default=str))
        return 0
    meta = workload.metadata
    origin = meta.get("loader") or meta.get("generator") or "unknown origin"
    console.print(f"[bold]{args.trace}[/bold]: {summary['jobs']} jobs ({origin})")
    if not summary["jobs"]:
        return 0
    console.print(
        f"span {summary['span_s'] / 86400:.2f} days (submissions {summary['first_submit_s']:.0f} s .. "
        f"{summary['last_submit_s']:.0f} s)"
    )
    gpus = Table(title="GPUs requested")
    gpus.add_column("GPUs", justify="right")
    gpus.add_column("jobs", justify="right")
    gpus.add_column("share", justify="right")
    for k, v in summary["gpus"].items():
        gpus.add_row(k, str(v), f"{v / summary['jobs']:.1%}")
    console.print(gpus)
    if "duration_s" in summary:
        d = summary["duration_s"]
        dur = Table(title=f"recorded run time (h), {d['jobs_with_duration']} jobs")
        for k in ("min", "p10", "p50", "p90", "p99", "max", "mean"):
            dur.add_column(k, justify="right")
        dur.add_row(*(_h(d[k]) for k in ("min", "p10", "p50", "p90", "p99", "max", "mean")))
        console.print(dur)
    console.print("job types: " + ", ".join(f"{k} {v}" for k, v in summary["job_types"].items()))
    ddl = summary["deadlines"]
    line = f"deadlines: {ddl['fraction']:.1%} of jobs"
    if "slack_over_duration" in ddl:
        s = ddl["slack_over_duration"]
        line += (
            f"; (deadline - submit) / run time p10 {s['p10']:.2f}, p50 {s['p50']:.2f}, p90 {s['p90']:.2f}; "
            f"{ddl['shorter_than_duration']:.1%} shorter than the run time"
        )
    console.print(line)
    if "gpu_types_pinned" in summary:
        console.print("pinned to GPU types: " + ", ".join(f"{k} {v}" for k, v in summary["gpu_types_pinned"].items()))
    load = summary["load"]
    value = "inf (one arrival time)" if math.isinf(load["load"]) else f"{load['load']:.3f}"
    console.print(
        f"offered load on {load['cluster']} ({load['cluster_gpus']:.0f} GPUs): {value} "
        f"({load['gpu_s'] / 3600:.0f} GPU-hours over {load['span_s'] / 3600:.1f} h)"
        + (f"; {load['unrunnable']:.0f} jobs no GPU type of it can run" if load["unrunnable"] else "")
    )
    _print_report(meta)
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    from hetgym.cli._common import with_flag
    from hetgym.sim.errors import ConfigError
    from hetgym.workloads.scenario import WorkloadConfig
    from hetgym.workloads.schema import write_trace
    from hetgym.workloads.traces.pipeline import check_out_path

    check_out_path(args.out, replace=args.force)  # before any work
    try:
        config = WorkloadConfig(
            recipe=args.recipe,
            num_jobs=args.num_jobs,
            arrival_rate_per_h=args.arrival_rate_per_h,
            target_utilisation=args.utilisation,
            static=args.static,
            deadline=args.deadline,
            tightness=args.tightness,
            max_gpus_per_job=args.max_gpus_per_job,
        )
    except ConfigError as err:  # name the flag, as simulate does
        raise ConfigError(with_flag(str(err))) from None
    workload = config.build(args.cluster, seed=args.seed)
    write_trace(workload, args.out, metadata={"seed": args.seed})
    console.print(
        f"{len(workload)} {args.recipe} jobs (seed {args.seed}, cluster {args.cluster}) written to {args.out}"
    )
    return 0
