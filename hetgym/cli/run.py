"""``hetgym simulate`` (one policy, one scenario) and ``hetgym compare`` (several policies x seeds)."""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from hetgym.cli._common import add_scenario_args, console, parse_options, scenario_from_args
from hetgym.experiments import HEADLINE_METRICS, Comparison, compare, default_policies, run_one


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "simulate",
        help="simulate one policy on one scenario",
        description="Simulate one policy on one scenario and seed; print its metrics.",
    )
    p.add_argument("--policy", required=True, help="registered policy (see `hetgym policies`)")
    p.add_argument("-P", "--policy-option", action="append", metavar="KEY=VALUE", help="policy knob (repeatable)")
    p.add_argument("--seed", type=int, default=0, help="workload and policy seed (default 0)")
    p.add_argument("--out", type=Path, help="write jobs.csv, timeline.csv and metrics.json to this directory")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_scenario_args(p)
    p.set_defaults(func=cmd_simulate)

    c = sub.add_parser(
        "compare",
        help="compare policies over seeds on one scenario (default: the embedded default scenario)",
        description="Run several policies on the same workloads (one per seed); print a table, write CSV/JSON "
        "results and PNG plots (DSR, JCT CDF, utilisation over time).",
    )
    c.add_argument("--policies", help="comma-separated policies (default: every registered policy)")
    c.add_argument(
        "-P",
        "--policy-option",
        action="append",
        metavar="POLICY:KEY=VALUE",
        help="a policy's knob, e.g. srtf:type_choice=order (repeatable)",
    )
    c.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (default 0,1,2)")
    c.add_argument("--out", type=Path, help="results directory (default results/compare-<scenario>)")
    c.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    c.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_scenario_args(c)
    c.set_defaults(func=cmd_compare)


def _fmt(value: float, scale: float, fmt: str) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else fmt.format(value * scale)


def cmd_simulate(args: argparse.Namespace) -> int:
    scenario = scenario_from_args(args)
    options = parse_options(args.policy_option, scoped=False)
    result = run_one(scenario, args.policy, args.seed, policy_kwargs=options, progress=not args.no_progress)
    table = Table(title=f"{args.policy} on scenario '{scenario.name}' (cluster {scenario.cluster}, seed {args.seed})")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, label, scale, fmt in HEADLINE_METRICS:
        table.add_row(label, _fmt(result.metrics.get(key, math.nan), scale, fmt))
    m = result.metrics
    table.add_row(
        "jobs done / rejected / unfinished",
        f"{m['num_completed']:.0f} / {m['num_rejected']:.0f} / {m['num_unfinished']:.0f}",
    )
    table.add_row("wall time (s)", f"{result.wall_s:.2f}")
    console.print(table)
    if result.stalled:
        console.print("[yellow]the run stalled: the policy left jobs that could never run[/yellow]")
    if args.out:
        import json

        args.out.mkdir(parents=True, exist_ok=True)
        result.jobs.to_csv(args.out / "jobs.csv", index=False)
        result.timeline.to_csv(args.out / "timeline.csv", index=False)
        (args.out / "metrics.json").write_text(json.dumps(result.metrics, indent=2))
        console.print(f"wrote {args.out}/jobs.csv, timeline.csv, metrics.json")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    scenario = scenario_from_args(args)
    policies = [p.strip() for p in args.policies.split(",")] if args.policies else default_policies()
    seeds = [int(s) for s in str(args.seeds).split(",") if s.strip()]
    if not seeds:
        raise ValueError("--seeds is empty; give e.g. --seeds 0,1,2")
    options = parse_options(args.policy_option, scoped=True)
    out = args.out or Path("results") / f"compare-{scenario.name}"
    console.print(
        f"Scenario [bold]{scenario.name}[/bold]: cluster {scenario.cluster} "
        f"({scenario.cluster_spec().describe()}); {scenario.description or scenario.workload}"
    )
    started = time.perf_counter()
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=args.no_progress,
        transient=True,
    ) as progress:
        task = progress.add_task("runs", total=len(policies) * len(seeds))

        def on_run(policy: str, seed: int, result: Any) -> None:
            progress.update(task, advance=1, description=f"{policy} seed {seed}")

        comparison = compare(scenario, policies, seeds, policy_kwargs=options, on_run=on_run)
    print_comparison(comparison)
    written = comparison.save(out, plots=not args.no_plots)
    console.print(
        f"{len(comparison.runs)} runs in {time.perf_counter() - started:.1f} s; wrote "
        + ", ".join(str(p) for p in written)
    )
    if comparison.errors:
        for (policy, seed), msg in comparison.errors.items():
            console.print(f"[red]{policy} seed {seed} failed: {msg}[/red]")
        return 1
    return 0


def print_comparison(comparison: Comparison) -> None:
    """The aggregate table: mean (± standard deviation over seeds) per policy."""
    agg = comparison.aggregate()
    table = Table(title=f"scenario '{comparison.scenario.name}', seeds {comparison.seeds} (mean ± sd over seeds)")
    table.add_column("policy", no_wrap=True)
    for _, label, _, _ in HEADLINE_METRICS:
        table.add_column(label, justify="right", no_wrap=True)
    best_dsr = agg["dsr"].max() if "dsr" in agg and agg["dsr"].notna().any() else None
    for policy, row in agg.iterrows():
        cells = []
        for key, _, scale, fmt in HEADLINE_METRICS:
            cell = _fmt(row.get(key, math.nan), scale, fmt)
            sd = row.get(f"{key}_std", math.nan)
            if key in ("dsr", "jct_mean_s") and len(comparison.seeds) > 1 and not math.isnan(sd):
                cell += f" ± {_fmt(sd, scale, fmt)}"
            if key == "dsr" and best_dsr is not None and row.get("dsr") == best_dsr:
                cell = f"[bold green]{cell}[/bold green]"
            cells.append(cell)
        table.add_row(str(policy), *cells)
    console.print(table)
