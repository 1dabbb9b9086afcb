"""Arguments shared by the subcommands that run scenarios, and the console used for output."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console

from hetgym.atomic import CLAIM_NAME, atomic_dir
from hetgym.sim.config import SimConfig
from hetgym.sim.errors import ConfigError
from hetgym.workloads.scenario import SCENARIOS, Scenario, WorkloadConfig, get_scenario


def _console() -> Console:
    """Rich console: ``COLUMNS`` wide when that is set; else the terminal's width, or 160 for a file or CI."""
    import os
    import sys

    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return Console(width=int(columns))
    return Console() if sys.stdout.isatty() else Console(width=160)


console = _console()


def add_scenario_args(parser: argparse.ArgumentParser) -> None:
    """``--scenario`` and the options that override its parts."""
    g = parser.add_argument_group("scenario (an embedded one, with overrides)")
    g.add_argument(
        "--scenario", default="default", help=f"embedded scenario: {', '.join(SCENARIOS)} (default: default)"
    )
    g.add_argument("--cluster", help="cluster preset (see `hetgym presets`)")
    g.add_argument("--trace", help="trace file instead of a recipe: canonical .csv/.parquet (see `hetgym trace`)")
    g.add_argument(
        "--trace-format",
        help="read --trace as a public trace of this format (philly, helios, pai, elasticflow, gavel)",
    )
    g.add_argument("--recipe", help="workload recipe: elasticflow or gavel-philly")
    g.add_argument("--num-jobs", type=int, help="jobs per workload")
    load = g.add_mutually_exclusive_group()
    load.add_argument("--utilisation", type=float, help="load as offered utilisation of the cluster")
    load.add_argument("--arrival-rate-per-h", type=float, help="load as mean arrivals per hour")
    load.add_argument("--static", action="store_true", help="submit every job at time 0")
    g.add_argument("--deadline", help="deadline model: elasticflow, gavel-slo or none")
    g.add_argument("--tightness", type=float, help="deadline tightness (slack divided by it; 1 = recipe)")
    g.add_argument("--max-gpus-per-job", type=int, help="cap on requested GPUs")
    g.add_argument("--round-s", type=float, help="round length in seconds (default: each policy's own)")
    g.add_argument("--restart-penalty-s", type=float, help="reconfiguration penalty in seconds")
    g.add_argument("--max-time-s", type=float, help="stop the simulation at this simulated time")
    g.add_argument(
        "--compat",
        choices=("none", "gavel"),
        help="'gavel' reproduces Gavel's simulator (raw throughputs, no multi-server slow-down or restart "
        "penalty, whole steps per round, Gavel's rounds and its policies' code; see docs/fidelity.md)",
    )
    g.add_argument(
        "--oversize-jobs",
        choices=("error", "reject"),
        help="jobs that can never fit the cluster: 'error' (default) refuses the workload, naming them; "
        "'reject' rejects them at arrival and reports how many",
    )


def scenario_from_args(args: argparse.Namespace) -> Scenario:
    """The scenario named by ``--scenario`` with the command-line overrides applied."""
    scenario = get_scenario(args.scenario)
    workload: dict[str, Any] = {}
    if args.trace_format and not args.trace:
        raise ValueError("--trace-format needs --trace, the file to read")
    if args.trace:
        workload["trace"] = args.trace
        workload["trace_format"] = args.trace_format
        if args.num_jobs is None:
            workload["num_jobs"] = 10**9  # the whole trace
    for key, attr in (
        ("recipe", "recipe"),
        ("num_jobs", "num_jobs"),
        ("deadline", "deadline"),
        ("tightness", "tightness"),
        ("max_gpus_per_job", "max_gpus_per_job"),
    ):
        value = getattr(args, attr)
        if value is not None:
            workload[key] = value
    if args.utilisation is not None:
        workload.update(target_utilisation=args.utilisation, arrival_rate_per_h=None, static=False)
    if args.arrival_rate_per_h is not None:
        workload.update(arrival_rate_per_h=args.arrival_rate_per_h, target_utilisation=None, static=False)
    if args.static:
        workload.update(static=True, arrival_rate_per_h=None, target_utilisation=None)
    sim: dict[str, Any] = {}
    if args.compat == "gavel" and args.restart_penalty_s:
        raise ConfigError(
            f"--restart-penalty-s {args.restart_penalty_s:g} with --compat gavel: Gavel's simulator charges no "
            "restart penalty; drop --restart-penalty-s or use --compat none"
        )
    for key in ("round_s", "restart_penalty_s", "max_time_s", "oversize_jobs", "compat"):
        value = getattr(args, key)
        if value is not None:
            sim[key] = value
    changes: dict[str, Any] = {}
    if args.trace:
        from pathlib import Path

        stem = Path(args.trace).name.split(".")[0]
        changes["name"] = f"trace-{stem}"
        changes["description"] = f"trace {args.trace}" + (f" ({args.trace_format} format)" if args.trace_format else "")
    if args.cluster:
        changes["cluster"] = args.cluster
    if workload:
        changes["workload"] = workload
    if sim:
        changes["sim"] = sim
    try:
        out = scenario.with_overrides(**changes) if changes else scenario
        # Fail early on an unknown cluster name.
        out.cluster_spec()
        WorkloadConfig.from_dict(out.workload.__dict__)
        SimConfig.from_dict(out.sim.__dict__)
    except ConfigError as err:
        raise ConfigError(with_flag(str(err))) from None
    return out


def add_output_args(parser: argparse.ArgumentParser) -> None:
    """``--import`` (custom policies) and ``--force`` (replace an existing ``--out``)."""
    parser.add_argument(
        "--import",
        action="append",
        dest="imports",
        metavar="MODULE_OR_FILE",
        help="module or .py file that registers custom policies (repeatable)",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing --out folder")


def check_out_dir(out: Path, *, force: bool, flag: str = "--out") -> None:
    """Refuse, before any work, an output folder that is a file, or that exists without ``force``."""
    if out.name in ("", ".", ".."):
        raise ValueError(
            f"{flag} {str(out)!r} names no new folder; give the path of a folder to create, e.g. {flag} out"
        )
    if out.exists() and not out.is_dir():
        raise ValueError(f"{flag} {out} is a file; give the path of a folder to create")
    if (out / CLAIM_NAME).exists():
        raise ValueError(f"{flag} {out} is being written by another run; wait for it to end, or give another folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ValueError(f"{flag} {out} already exists; add --force to replace it, or give another folder")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"{flag} {out}: {parent} is a file, not a folder")
            if not os.access(parent, os.W_OK):
                raise ValueError(f"{flag} {out}: cannot write in {parent}; give a folder you can write to")
            break


@contextlib.contextmanager
def writing_out_dir(out: Path, *, replace: bool, flag: str = "--out") -> Iterator[Path]:
    """:func:`~hetgym.atomic.atomic_dir` for the user's ``out``, whose failures become one line naming it.

    Another run claiming ``out`` first, or a failed write (a full disk, a file-size limit, no permission)
    raises ``ValueError`` naming ``out`` (not the temporary folder) and the cause; nothing is left behind.
    """
    try:
        with atomic_dir(out, replace=replace) as tmp:
            yield tmp
    except FileExistsError as exc:
        raise ValueError(
            f"{flag} {out}: {exc.args[0] if exc.args else 'already exists'}; nothing written; give another "
            "folder, or add --force to replace it"
        ) from None
    except OSError as exc:
        cause = exc.strerror or str(exc) or type(exc).__name__
        code = f" [{errno.errorcode[exc.errno]}]" if exc.errno is not None and exc.errno in errno.errorcode else ""
        raise ValueError(f"{flag} {out}: cannot write the results: {cause}{code}; nothing written") from None


#: Command-line flag of each setting, named in error messages.
_FLAGS = {
    "SimConfig.round_s": "--round-s",
    "SimConfig.restart_penalty_s": "--restart-penalty-s",
    "SimConfig.max_time_s": "--max-time-s",
    "SimConfig.compat": "--compat",
    "SimConfig.max_job_run_s": "--trace",
    "WorkloadConfig.num_jobs": "--num-jobs",
    "WorkloadConfig.target_utilisation": "--utilisation",
    "WorkloadConfig.arrival_rate_per_h": "--arrival-rate-per-h",
    "WorkloadConfig.tightness": "--tightness",
    "WorkloadConfig.max_gpus_per_job": "--max-gpus-per-job",
}


def with_flag(message: str) -> str:
    """``message`` prefixed with the command-line flag of the setting it names, if it has one."""
    for setting, flag in _FLAGS.items():
        if message.startswith(setting + "="):
            return f"{flag}: {message}"
    return message


def run_problems(result: Any, *, time_limit: bool) -> list[tuple[str, bool]]:
    """What a user must be told about a finished run, as ``(message, fails)`` pairs: a stall and jobs
    left unfinished (unless a time limit was asked for) fail the command; jobs rejected because they can
    never fit the cluster (asked for with ``--oversize-jobs reject``) are reported only."""
    m = result.metrics
    problems = []
    if result.stalled:
        problems.append((f"the run stalled: {result.stall_reason or 'no job could make progress'}", True))
    unfinished = int(m.get("num_unfinished", 0))
    if unfinished and not (time_limit and not result.stalled):
        problems.append(
            (
                f"{unfinished} of {int(m['num_jobs'])} jobs did not finish; the metrics count only the jobs that ended",
                True,
            )
        )
    oversize = int(m.get("num_oversize", 0))
    if oversize:
        problems.append(
            (f"{oversize} jobs can never fit the cluster and were rejected at arrival (--oversize-jobs)", False)
        )
    return problems


def parse_value(text: str) -> Any:
    """A command-line value as YAML (numbers, booleans, lists), else the string."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def parse_options(items: list[str] | None, *, scoped: bool) -> dict[str, Any]:
    """``key=value`` items (``policy:key=value`` when ``scoped``) into a dict (nested when scoped)."""
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"option {item!r} is not key=value")
        key, value = item.split("=", 1)
        if scoped:
            if ":" not in key:
                raise ValueError(f"option {item!r}: write policy:key=value, e.g. srtf:type_choice=order")
            policy, knob = key.split(":", 1)
            out.setdefault(policy, {})[knob] = parse_value(value)
        else:
            out[key] = parse_value(value)
    return out
