"""``hetgym sweep``: run a grid of simulations (policies x scenarios x loads x seeds x ...), or report on one.

``hetgym sweep CONFIG.yaml`` validates the whole grid, then runs what is not yet in the results
directory on a local process pool (``--backend ray`` for Ray), with a progress bar over runs.
Command-line flags replace the file's keys, or describe a grid with no file at all.
``hetgym sweep --report RESULTS`` writes the DSR and JCT-vs-load figures and a summary table.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import signal
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

from hetgym.cli._common import console, parse_value
from hetgym.limits import max_runs
from hetgym.progress import ProgressReport

#: A grid of at least this many runs is announced before it is checked (checking takes a while).
_ANNOUNCE_CHECKS = 10_000


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="run a grid of simulations (policies x scenarios x loads x seeds) locally or on Ray; report on it",
        description="Run every configuration of a sweep grid that is not yet in the results directory (an "
        "interrupted sweep resumes), on a local process pool or on Ray. Results: one row per run in "
        "OUT/results.parquet and OUT/results.csv. With --report, write the standard figures and a summary. "
        "See docs/sweeps.md for the file format.",
    )
    p.add_argument("config", nargs="?", type=Path, help="sweep description (YAML); flags below replace its keys")
    p.add_argument("--report", type=Path, metavar="RESULTS", help="report on a results directory or table instead")
    p.add_argument("--out", type=Path, help="results directory (default: the file's 'out', else results/sweeps/NAME); "
                   "with --report, the figures' directory (default RESULTS/report)")  # fmt: skip
    p.add_argument("--x", help="with --report: the x axis column (default: the swept load)")

    g = p.add_argument_group("execution")
    g.add_argument("--backend", choices=("local", "ray", "sequential"), default="local",
                   help="local process pool (default), Ray, or one run after another in this process")  # fmt: skip
    g.add_argument("--workers", type=int, help=f"parallel workers (default: CPU count, {os.cpu_count()} here)")
    g.add_argument("--ray-address", help="address of an existing Ray cluster (default: start Ray locally)")
    g.add_argument("--retry-failed", action="store_true", help="run again the configurations that failed before")
    g.add_argument("--dry-run", action="store_true",
                   help="validate and list the grid; run nothing, not even the imports (no user code)")  # fmt: skip
    g.add_argument("--no-progress", action="store_true", help="hide the progress bar (or lines, off a terminal)")

    f = p.add_argument_group("grid (replace the file's keys, or describe a sweep without a file)")
    f.add_argument("--name", help="sweep name")
    f.add_argument("--policies", help="comma-separated policies")
    f.add_argument("--scenarios", help="comma-separated embedded scenarios")
    f.add_argument("--clusters", help="comma-separated cluster presets (replace each scenario's)")
    f.add_argument("--cluster-scales", help="comma-separated multipliers of the clusters' server counts")
    f.add_argument("--loads", help="comma-separated offered utilisations (workload.target_utilisation)")
    f.add_argument("--arrival-rates-per-h", help="comma-separated arrival rates (workload.arrival_rate_per_h)")
    f.add_argument("--seeds", help="seeds: a count (5), a range (0-4) or a list (0,1,2)")
    f.add_argument("--set", action="append", metavar="SECTION.KEY=VALUE", dest="set_",
                   help="fixed value, e.g. workload.num_jobs=50 or sim.restart_penalty_s=0 (repeatable)")  # fmt: skip
    f.add_argument("--grid", action="append", metavar="SECTION.KEY=V1,V2",
                   help="axis, e.g. workload.tightness=0.8,1.0 (repeatable)")  # fmt: skip
    f.add_argument("-P", "--policy-option", action="append", metavar="POLICY:KEY=VALUE",
                   help="fixed knob of a listed policy, e.g. srtf:type_choice=order (repeatable)")  # fmt: skip
    f.add_argument("--import", action="append", dest="imports", metavar="MODULE_OR_FILE",
                   help="module or .py file registering custom policies (repeatable)")  # fmt: skip
    p.set_defaults(func=cmd_sweep)


def _split(text: str) -> list[Any]:
    return [parse_value(v.strip()) for v in text.split(",") if v.strip()]


def _spec_dict(args: argparse.Namespace) -> tuple[dict[str, Any], Path]:
    """The sweep mapping: the file's (if any) with the flags applied, and the base directory of its paths."""
    values: dict[str, Any] = {}
    base = Path(".")
    if args.config is not None:
        if not args.config.is_file():
            raise FileNotFoundError(f"sweep config {str(args.config)!r} does not exist")
        from hetgym.sweep.checks import load_yaml

        loaded = load_yaml(args.config.read_text(), str(args.config))
        if loaded is not None and not isinstance(loaded, Mapping):
            raise ValueError(f"sweep config {args.config}: the top level must be a mapping")
        values = copy.deepcopy(dict(loaded or {}))
        values.setdefault("name", args.config.stem)
        base = args.config.parent
    if args.name:
        values["name"] = args.name
    for key, attr in (
        ("policies", "policies"),
        ("scenarios", "scenarios"),
        ("clusters", "clusters"),
        ("cluster_scales", "cluster_scales"),
        ("loads", "loads"),
        ("arrival_rates_per_h", "arrival_rates_per_h"),
    ):
        text = getattr(args, attr)
        if text is not None:
            values[key] = [v if key not in ("policies", "scenarios", "clusters") else str(v) for v in _split(text)]
            if key in ("loads", "arrival_rates_per_h"):
                values.pop("arrival_rates_per_h" if key == "loads" else "loads", None)
    if args.seeds is not None:
        values["seeds"] = int(args.seeds) if args.seeds.strip().isdigit() else args.seeds
    for item in args.set_ or []:
        section, key, value = _dotted(item, "--set")
        values.setdefault(section, {})
        if not isinstance(values[section], dict):
            raise ValueError(f"--set {item}: the config's '{section}' is not a mapping")
        values[section][key] = parse_value(value)
    for item in args.grid or []:
        section, key, value = _dotted(item, "--grid")
        values.setdefault("grid", {})[f"{section}.{key}"] = _split(value)
    if args.policy_option:
        _apply_policy_options(values, args.policy_option)
    if args.imports:
        values["imports"] = [*values.get("imports", []), *args.imports]
    if args.config is None and not values.get("policies"):
        raise ValueError("give a sweep config file or at least --policies (see `hetgym sweep --help`)")
    values.setdefault("name", "sweep")
    return values, base


def _dotted(item: str, flag: str) -> tuple[str, str, str]:
    if "=" not in item:
        raise ValueError(f"{flag} {item!r}: write SECTION.KEY=VALUE, e.g. workload.num_jobs=50")
    key, value = item.split("=", 1)
    section, dot, name = key.partition(".")
    if not dot or section not in ("workload", "sim"):
        raise ValueError(f"{flag} {item!r}: the key must start with 'workload.' or 'sim.'")
    return section, name, value


def _apply_policy_options(values: dict[str, Any], items: list[str]) -> None:
    policies = [p if isinstance(p, dict) else {"name": p} for p in values.get("policies") or []]
    for item in items:
        if "=" not in item or ":" not in item.split("=", 1)[0]:
            raise ValueError(f"-P {item!r}: write POLICY:KEY=VALUE, e.g. srtf:type_choice=order")
        key, value = item.split("=", 1)
        policy, knob = key.split(":", 1)
        matches = [p for p in policies if p.get("label", p.get("name")) == policy or p.get("name") == policy]
        if not matches:
            names = [p.get("label", p.get("name")) for p in policies]
            raise ValueError(f"-P {item!r}: policy {policy!r} is not in the sweep's policies {names}")
        for entry in matches:
            entry.setdefault("options", {})[knob] = parse_value(value)
    values["policies"] = policies


def cmd_sweep(args: argparse.Namespace) -> int:
    if args.report is not None:
        return cmd_report(args)
    from hetgym.sweep import SweepConfigError, SweepSpec, default_out_dir, run_sweep
    from hetgym.sweep.runner import check_workers, summary_line

    check_workers(args.workers, args.backend)
    values, base = _spec_dict(args)
    try:
        spec = SweepSpec.from_dict(values, base_dir=base)
        if _ANNOUNCE_CHECKS <= spec.size() <= max_runs():  # a larger grid is refused at once
            console.print(f"checking the {spec.size():,} runs of sweep {spec.name!r} before any runs ...")
        # validates the whole grid before anything runs; --dry-run runs no user code (not the imports)
        runs = spec.expand(run_imports=not args.dry_run)
    except SweepConfigError as exc:
        raise SweepConfigError(f"sweep config {args.config}: {exc}" if args.config else str(exc)) from None
    out = args.out or default_out_dir(spec)
    if args.dry_run:
        _print_grid(spec, runs, out)
        if spec.imports:
            names = ", ".join(dict.fromkeys(spec.unchecked))
            console.print(
                f"--dry-run ran none of the imports ({', '.join(spec.imports)}); they were only checked to exist"
                + (f"; not checked, as only they could register them: {names}" if names else "")
            )
        return 0
    workers = args.workers
    where = f"Ray at {args.ray_address}" if args.ray_address else ("local Ray" if args.backend == "ray" else "")
    label = {
        "local": f"{workers or os.cpu_count()} local workers",
        "sequential": "this process",
        "ray": f"{where}, {workers or 'all'} workers",
    }[args.backend]
    console.print(f"Sweep [bold]{spec.name}[/bold]: {len(runs)} runs -> {out} ({label})")
    failed = 0
    stalled = 0
    with ProgressReport(enabled=not args.no_progress, console=console) as progress:
        progress.task("sweep", len(runs), unit="runs")

        def on_start(todo: int, skipped: int) -> None:
            if skipped:
                console.print(f"resuming: {skipped} of {len(runs)} runs already done, {todo} to run")
            progress.set_total(todo)

        def on_result(row: dict[str, Any]) -> None:
            nonlocal failed, stalled
            if row.get("status") != "ok":
                failed += 1
                console.print(f"[red]failed: {row.get('policy')} seed {row.get('seed')}: {row.get('error')}[/red]")
            elif row.get("stalled"):
                stalled += 1
                console.print(
                    f"[red]stalled: {row.get('policy')} seed {row.get('seed')}: the simulator's watchdog stopped "
                    "the run with jobs unfinished (run it with `hetgym simulate` to see why)[/red]"
                )
            detail = f"{row.get('policy')} seed {row.get('seed')}" + (f", {failed} failed" if failed else "")
            progress.update(advance=1, detail=detail)

        with _sigterm_as_interrupt():
            outcome = run_sweep(
                spec,
                out,
                backend=args.backend,
                workers=workers,
                ray_address=args.ray_address,
                retry_failed=args.retry_failed,
                on_start=on_start,
                on_result=on_result,
            )
    console.print(summary_line(outcome))
    from hetgym.sweep import load_results, summarize

    results = load_results(outcome.out_dir)
    if not results.empty:
        print_summary(summarize(results), f"sweep '{spec.name}' (mean ± sd over seeds)")
    console.print(
        f"results: {', '.join(str(p) for p in outcome.tables)}; figures: hetgym sweep --report {outcome.out_dir}"
    )
    if stalled:
        console.print(f"[red]{stalled} runs stalled: their metrics count unfinished jobs[/red]")
    return 1 if outcome.failed or stalled else 0


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM (a batch scheduler's time limit, ``kill``) like Ctrl-C: stop and consolidate the table."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def cmd_report(args: argparse.Namespace) -> int:
    from hetgym.sweep import load_results, write_report

    results = load_results(args.report)
    out = args.out or (args.report / "report" if args.report.is_dir() else args.report.parent / "report")
    summary, written = write_report(results, out, x=args.x)
    print_summary(summary, f"{args.report} (mean ± sd over seeds)")
    if "status" in results.columns and (results["status"] != "ok").any():
        bad = results[results["status"] != "ok"]
        console.print(f"[yellow]{len(bad)} failed runs are left out of the figures (see the 'error' column)[/yellow]")
    console.print("wrote " + ", ".join(str(p) for p in written))
    return 0


def print_summary(summary: Any, title: str) -> None:
    """The summary table in the terminal."""
    from rich.table import Table

    from hetgym.sweep.report import SUMMARY_METRICS, format_mean_sd

    if summary.empty:
        return
    keys = [c for c in summary.columns if not c.endswith(("_mean", "_std")) and c not in ("n_ok", "n_failed")]
    table = Table(title=title)
    for k in keys:
        table.add_column(_short(k))
    metrics = [(col, label, scale) for col, label, scale in SUMMARY_METRICS[:3] if f"{col}_mean" in summary]
    for _, label, _ in metrics:
        table.add_column(label, justify="right")
    table.add_column("seeds", justify="right")
    for _, row in summary.iterrows():
        cells = [str(row[k]) for k in keys]
        cells += [format_mean_sd(row[f"{c}_mean"], row[f"{c}_std"], s) for c, _, s in metrics]
        n = f"{int(row['n_ok'])}" + (f" [red]({int(row['n_failed'])} failed)[/red]" if row["n_failed"] else "")
        table.add_row(*cells, n)
    console.print(table)


def _print_grid(spec: Any, runs: list[Any], out: Path) -> None:
    from rich.table import Table

    from hetgym.sweep.store import ResultsStore

    done = ResultsStore(out).finished()
    ok = sum(1 for r in runs if done.get(r.run_id, {}).get("status") == "ok")
    table = Table(title=f"sweep '{spec.name}': {len(runs)} runs ({ok} already done in {out})")
    for col in ("run_id", "policy", "scenario", "cluster", "seed", "varies"):
        table.add_column(col)
    axes = [f"workload.{k}" for k in ("target_utilisation", "arrival_rate_per_h")] + list(spec.grid)
    for r in runs[:50]:
        flat = r.flat()
        extra = ", ".join(f"{_short(k)}={flat[k]}" for k in dict.fromkeys(axes) if flat.get(k) is not None)
        cluster = r.cluster + (f"*{r.cluster_scale:g}" if r.cluster_scale != 1 else "")
        table.add_row(r.run_id, r.policy, r.scenario, cluster, str(r.seed), extra)
    console.print(table)
    if len(runs) > 50:
        console.print(f"... and {len(runs) - 50} more")


def _short(column: str) -> str:
    """A results column's name without its section (``target_utilisation`` shown as ``load``)."""
    name = column.split(".", 1)[1] if column.startswith(("workload.", "sim.")) else column
    return "load" if name == "target_utilisation" else name
