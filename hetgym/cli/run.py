"""``hetgym simulate`` (one policy, one scenario) and ``hetgym compare`` (several policies x seeds).

Both check every name (policies, knobs, their values, the scenario's overrides) and the output folder
before anything runs, and write results into a temporary folder renamed
into place, so a failure or Ctrl-C leaves nothing behind. ``compare`` names its default folder by the
scenario and a hash of the whole configuration (``results/compare-<scenario>-<hash>``), so different
configurations never replace each other's results; the same configuration writes the same files.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hetgym.cli._common import (
    add_output_args,
    add_scenario_args,
    check_out_dir,
    console,
    parse_options,
    run_problems,
    scenario_from_args,
    writing_out_dir,
)
from hetgym.cli._errors import DEBUG_HINT, debug_wanted
from hetgym.limits import check_runs
from hetgym.progress import ProgressReport, format_duration
from hetgym.seeds import SeedsError, parse_seeds
from hetgym.sim.errors import HetgymError
from hetgym.sim.usercode import describe

#: The seeds a plain ``hetgym compare`` runs (``--seeds`` left out).
DEFAULT_SEEDS = "0,1,2"

if TYPE_CHECKING:  # the commands import the experiments (pandas) and rich's tables when they run
    from hetgym.experiments import Comparison

#: How to run more than one comparison holds.
_MANY_RUNS = "give fewer seeds or policies, or run them as a sweep (`hetgym sweep`), which resumes"
#: The columns of the terminal table without ``--wide`` (they fit in 80 columns).
NARROW_METRICS: tuple[str, ...] = ("dsr", "jct_mean_s", "jct_p95_s", "makespan_s", "utilisation", "num_reconfigs")
#: Shorter headers of the narrow table.
SHORT_LABELS: dict[str, str] = {
    "jct_mean_s": "JCT (h)",
    "jct_p95_s": "p95 (h)",
    "makespan_s": "span (h)",
    "num_reconfigs": "reconf",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "simulate",
        help="simulate one policy on one scenario",
        description="Simulate one policy on one scenario and seed; print its metrics.",
    )
    p.add_argument("--policy", required=True, help="registered policy (see `hetgym policies`)")
    p.add_argument("-P", "--policy-option", action="append", metavar="KEY=VALUE", help="policy knob (repeatable)")
    p.add_argument("--seed", type=int, default=0, help="workload and policy seed (default 0)")
    p.add_argument(
        "--out",
        type=Path,
        help="write jobs.csv, timeline.csv, metrics.json, config.json and timings.json to this new folder",
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar (or lines, off a terminal)")
    add_output_args(p)
    add_scenario_args(p)
    p.set_defaults(func=cmd_simulate)

    c = sub.add_parser(
        "compare",
        help="compare policies over seeds on one scenario (default: the embedded default scenario)",
        description="Run several policies on the same workloads (one per seed); print a table, write CSV/JSON "
        "results and PNG plots (DSR or JCT, JCT CDF, utilisation over time). Results go to "
        "results/compare-<scenario>-<hash>, the hash naming the whole configuration (scenario, overrides, "
        "policies, knobs, seeds), so no other configuration replaces them.",
    )
    c.add_argument(
        "--policies",
        help="comma-separated policies (default: the registered policies that are not variants of another or "
        "baselines of one paper's study; `hetgym policies` lists all)",
    )
    c.add_argument(
        "-P",
        "--policy-option",
        action="append",
        metavar="POLICY:KEY=VALUE",
        help="a policy's knob, e.g. srtf:type_choice=order (repeatable)",
    )
    c.add_argument(
        "--seeds",
        help="seeds, a list (0,1,2) or a range (0-4) (default 0,1,2; on a canonical --trace, whose workload is the "
        "same for every seed, a policy that is not randomised runs seed 0 only, its other seeds repeating that run)",
    )
    c.add_argument(
        "--out",
        type=Path,
        help="results folder (default results/compare-<scenario>-<hash of the configuration>); an existing "
        "one needs --force",
    )
    c.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    c.add_argument(
        "--no-progress",
        action="store_true",
        help="hide the progress bar, or off a terminal the progress lines (one every HETGYM_PROGRESS_S=10 seconds)",
    )
    c.add_argument("--wide", action="store_true", help="every metric column in the table (wider than 80 columns)")
    add_output_args(c)
    add_scenario_args(c)
    c.set_defaults(func=cmd_compare)


def _fmt(value: float, scale: float, fmt: str) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else fmt.format(value * scale)


def _load_imports(args: argparse.Namespace) -> list[str]:
    imports = [str(i) for i in args.imports or []]
    if imports:  # the sweep package is imported only when there is something to load
        from hetgym.sweep.runspec import load_imports

        load_imports(imports)
    return imports


def cmd_simulate(args: argparse.Namespace) -> int:
    import pandas as pd
    from rich.table import Table

    from hetgym.experiments import HEADLINE_METRICS, TIMING_COLUMNS, Comparison, check_policy_options, run_one

    imports = _load_imports(args)
    if args.out is not None:
        check_out_dir(args.out, force=args.force)
    scenario = scenario_from_args(args)
    options = parse_options(args.policy_option, scoped=False)
    check_policy_options(args.policy, options)
    try:
        result = run_one(scenario, args.policy, args.seed, policy_kwargs=options, progress=not args.no_progress)
    except HetgymError:
        raise
    except Exception as exc:  # the policy's own failure: a message, like compare's, and nothing written
        if debug_wanted(args):
            raise
        print(
            f"hetgym simulate: error: {args.policy} seed {args.seed} failed: {describe(exc)}; nothing written "
            f"({DEBUG_HINT})",
            file=sys.stderr,
        )
        return 1
    described = Comparison(
        scenario, [args.policy], [args.seed], pd.DataFrame(), pd.DataFrame(), pd.DataFrame(),
        policy_kwargs={args.policy: options} if options else {}, imports=imports,
    )  # fmt: skip
    table = Table(title=f"{args.policy} on {described.describe()} (cluster {scenario.cluster}, seed {args.seed})")
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
    problems = run_problems(result, time_limit=args.max_time_s is not None)
    for problem, fails in problems:
        console.print(f"[red]{problem}[/red]" if fails else f"[yellow]{problem}[/yellow]")
    if any(fails for _, fails in problems):
        if args.out:
            console.print(f"[red]nothing written to {args.out}[/red]")
        return 1
    if args.out:
        metrics = {k: v for k, v in result.metrics.items() if k not in TIMING_COLUMNS}
        timings = {"wall_s": result.wall_s, **{k: result.metrics.get(k) for k in TIMING_COLUMNS if k != "wall_s"}}
        config = {**described.config(), "seed": args.seed}
        with writing_out_dir(args.out, replace=args.force) as tmp:
            result.jobs.to_csv(tmp / "jobs.csv", index=False)
            result.timeline.to_csv(tmp / "timeline.csv", index=False)
            (tmp / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
            (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n")
            (tmp / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
        console.print(f"wrote {args.out}/jobs.csv, timeline.csv, metrics.json, config.json, timings.json")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    import pandas as pd

    from hetgym.experiments import (
        Comparison,
        check_policy_options,
        compare,
        default_policies,
        fixed_workload,
        seeds_that_matter,
    )

    imports = _load_imports(args)
    scenario = scenario_from_args(args)
    policies = [p.strip() for p in args.policies.split(",") if p.strip()] if args.policies else default_policies()
    if not policies:
        raise ValueError("--policies is empty; give e.g. --policies fifo,srtf")
    try:
        seeds = parse_seeds(str(args.seeds or DEFAULT_SEEDS))
    except SeedsError as exc:
        raise ValueError(f"--seeds: {exc}") from None
    check_runs(len(policies) * len(seeds), f"--policies ({len(policies)}) x --seeds ({len(seeds)})", _MANY_RUNS)
    options = parse_options(args.policy_option, scoped=True)
    for name in options:
        if name not in policies:
            raise ValueError(f"-P gives knobs for policy {name!r}, which is not among the compared {policies}")
    for name in policies:
        check_policy_options(name, options.get(name, {}))  # names and values, before any run
    seeds_by_policy: dict[str, list[int]] = {}
    if args.seeds is None and len(seeds) > 1 and fixed_workload(scenario):
        chosen = {p: seeds_that_matter(scenario, p, seeds, options.get(p)) for p in policies}
        seeds_by_policy = {p: ss for p, ss in chosen.items() if ss != seeds}
    planned = Comparison(
        scenario, policies, seeds, pd.DataFrame(), pd.DataFrame(), pd.DataFrame(),
        policy_kwargs={p: options[p] for p in policies if options.get(p)}, imports=imports,
        seeds_by_policy=seeds_by_policy,
    )  # fmt: skip
    if args.out is not None:
        out = args.out
        check_out_dir(out, force=args.force)
    else:  # named by the configuration: an existing folder holds this very configuration's results
        out = Path("results") / f"compare-{scenario.name}-{planned.config_hash()}"
        check_out_dir(out, force=True)
    about = scenario.description if not planned.overrides() and scenario.description else _workload_text(scenario)
    console.print(
        f"{planned.describe().capitalize()}: cluster {scenario.cluster} ({scenario.cluster_spec().describe()}); {about}"
    )
    total = sum(len(seeds_by_policy.get(p, seeds)) for p in policies)
    if seeds_by_policy:
        randomised = [p for p in policies if p not in seeds_by_policy]
        verb = "runs" if len(randomised) == 1 else "run"
        console.print(
            f"The workload is the same for every seed ({scenario.workload.trace}): {len(seeds_by_policy)} "
            f"policies that are not randomised run seed {seeds[0]} only"
            + (
                f"; {', '.join(randomised)} (randomised) {verb} seeds {args.seeds or DEFAULT_SEEDS}"
                if randomised
                else ""
            )
            + "; give --seeds to run every policy on each seed",
            highlight=False,
        )
    console.print(
        (
            f"{total} runs ({len(policies)} policies x {len(seeds)} seeds"
            if not seeds_by_policy
            else f"{total} runs ({len(policies)} policies"
        )
        + (f", {scenario.workload.num_jobs} jobs each" if scenario.workload.num_jobs < 10**9 else "")
        + "); the time they take is estimated once each policy has run",
        highlight=False,
    )
    started = time.perf_counter()
    clock = RunClock(policies, seeds, seeds_by_policy)
    problems: dict[tuple[str, int], list[tuple[str, bool]]] = {}
    with ProgressReport(enabled=not args.no_progress, console=console) as progress:
        progress.task("compare", total, unit="runs")

        def on_run(policy: str, seed: int, result: Any) -> None:
            clock.ran(policy, seed)
            progress.eta_s = clock.left_s()
            progress.update(advance=1, detail=f"{policy} seed {seed}")
            note = clock.estimate_note()
            if note and not args.no_progress:
                progress.log(note)
            if result is not None:
                found = run_problems(result, time_limit=args.max_time_s is not None)
                if found:
                    problems[(policy, seed)] = found

        comparison = compare(
            scenario,
            policies,
            seeds,
            policy_kwargs=options,
            on_run=on_run,
            imports=imports,
            seeds_by_policy=seeds_by_policy,
            fail_fast=debug_wanted(args),  # --debug: the first failing run's traceback
        )
    # Runs that stalled or left jobs unfinished are taken out of the results (and listed); the others are kept.
    failing = {key: "; ".join(p for p, fails in found if fails) for key, found in problems.items()}
    comparison = comparison.leave_out({key: why for key, why in failing.items() if why})
    if not comparison.runs.empty:
        print_comparison(comparison, wide=args.wide)
    elapsed_s = time.perf_counter() - started
    for (policy, seed), found in problems.items():
        for problem, fails in found:
            console.print(
                f"[red]{policy} seed {seed}: {problem}[/red]" if fails else f"{policy} seed {seed}: {problem}"
            )
    for (policy, seed), msg in comparison.errors.items():
        print(f"  {policy} seed {seed} failed: {msg}", file=sys.stderr)
    bad = len(comparison.left_out) + len(comparison.errors)
    if comparison.runs.empty:
        where = "" if args.out is None else " to " + str(out)
        if comparison.errors:  # a run that raised is an error of the command, on stderr
            print(
                f"hetgym compare: error: {len(comparison.errors)} of {total} runs failed, the others stalled or "
                f"left jobs unfinished (listed above); no results written{where} ({DEBUG_HINT} "
                "of the first failure)",
                file=sys.stderr,
            )
        else:
            console.print(
                f"[red]all {total} runs stalled or left jobs unfinished (listed above); no results written{where}[/red]"
            )
        return 1
    # An explicit --out is claimed (two runs at once: one fails); the default folder is this configuration's.
    with writing_out_dir(out, replace=args.force or args.out is None) as tmp:
        written = comparison.save(tmp, plots=not args.no_plots)
    console.print(
        f"{len(comparison.runs)} runs in {elapsed_s:.1f} s; wrote {out}/: " + ", ".join(p.name for p in written)
    )
    if bad:
        what = ", ".join(
            part
            for part in (
                f"{len(comparison.left_out)} stalled or left jobs unfinished" if comparison.left_out else "",
                f"{len(comparison.errors)} failed" if comparison.errors else "",
            )
            if part
        )
        console.print(
            f"[red]{bad} of {total} runs are not in the results ({what}): listed above and in "
            f"{out}/failed_runs.csv; the other {len(comparison.runs)} are[/red]"
        )
        if comparison.errors:  # a run that raised is an error of the command, on stderr as before
            print(
                f"hetgym compare: error: {len(comparison.errors)} of {total} runs failed (listed above; "
                f"{DEBUG_HINT} of the first failure)",
                file=sys.stderr,
            )
        return 1
    return 0


class RunClock:
    """The time a comparison's runs take, and an estimate of the time left.

    Each run's time is the wall time between two runs' ends (so it counts building the seed's workload).
    The first run of a comparison also pays one-off costs (libraries a policy imports on first use, such
    as scikit-learn for asrpt's predictor, and first-call caches), so its time does not stand for its
    policy's until that policy has run again: until then the policy counts as not yet timed. The time
    left is each remaining run's policy's mean time so far; a policy not yet timed counts the median of the
    timed policies' means (policies differ in cost by orders of magnitude, so one run says little about
    the others), or the first run's time while it is the only figure. An estimate is printed once every
    policy has run once (:meth:`estimate_note`), never extrapolated from the first run alone.

    Args:
        policies: The policies, in the order they run within a seed.
        seeds: The seeds, in order.
        seeds_by_policy: The seeds of the policies that run only some of ``seeds``.
        clock: The time in seconds (tests give their own).
    """

    def __init__(
        self,
        policies: list[str],
        seeds: list[int],
        seeds_by_policy: dict[str, list[int]] | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.policies = list(policies)
        self.runs_of = {p: len((seeds_by_policy or {}).get(p, seeds)) for p in self.policies}
        self.total = sum(self.runs_of.values())
        self.times: dict[str, list[float]] = {}
        self.runs_done = dict.fromkeys(self.policies, 0)
        self.done = 0
        self.first_s: float | None = None  # the first run's time, kept out of its policy's times
        self._clock = clock
        self._last = clock()
        self._started = self._last
        self._noted = False

    def ran(self, policy: str, seed: int) -> None:
        """Record that ``policy`` finished ``seed`` now."""
        now = self._clock()
        if self.done == 0:
            self.first_s = now - self._last
        else:
            self.times.setdefault(policy, []).append(now - self._last)
        self._last = now
        self.runs_done[policy] = self.runs_done.get(policy, 0) + 1
        self.done += 1

    def left_s(self) -> float | None:
        """Estimated seconds until the last run ends (``None`` before the first run)."""
        if self.first_s is None:
            return None
        means = sorted(sum(ts) / len(ts) for ts in self.times.values())
        if not means:
            untimed = self.first_s
        elif len(means) % 2:
            untimed = means[len(means) // 2]
        else:
            untimed = (means[len(means) // 2 - 1] + means[len(means) // 2]) / 2
        left = 0.0
        for policy in self.policies:
            ts = self.times.get(policy)
            left += (self.runs_of[policy] - self.runs_done[policy]) * (sum(ts) / len(ts) if ts else untimed)
        return left

    def estimate_note(self) -> str | None:
        """A line to print once, when every policy has run once and runs remain, else ``None``."""
        if self._noted or self.done == self.total or not all(self.runs_done.values()):
            return None
        self._noted = True
        left = self.left_s() or 0.0
        elapsed = self._clock() - self._started
        return (
            f"estimate: about {format_duration(elapsed + left)} in all, {format_duration(left)} left "
            "(each policy's mean time on its runs so far, the first run left out as it pays one-off costs, "
            "times its runs left)"
        )


def _workload_text(scenario: Any) -> str:
    """The workload in words, from its fields (the scenario's description may predate overrides)."""
    wl = scenario.workload
    source = f"trace {wl.trace}" if wl.trace else f"{wl.recipe} recipe"
    if wl.static:
        load = "all submitted at time 0"
    elif wl.arrival_rate_per_h is not None:
        load = f"{wl.arrival_rate_per_h:g} arrivals per hour"
    else:
        load = f"offered utilisation {wl.target_utilisation if wl.target_utilisation is not None else 0.8:g}"
    jobs = "all jobs" if wl.trace and wl.num_jobs >= 10**9 else f"{wl.num_jobs} jobs"
    return f"{source}, {jobs}, {load}, deadlines {wl.deadline or 'of the recipe'}"


def print_comparison(comparison: Comparison, *, wide: bool = False) -> None:
    """The aggregate table: mean (± standard deviation over seeds) per policy.

    Without ``wide``, the columns of :data:`NARROW_METRICS`, which fit in 80 columns; the table wraps
    its cells when the console is narrower still.
    """
    from rich import box
    from rich.table import Table

    from hetgym.experiments import HEADLINE_METRICS

    agg = comparison.aggregate(timings=wide)
    metrics = [m for m in HEADLINE_METRICS if wide or m[0] in NARROW_METRICS]
    table = Table(
        title=f"{comparison.describe()}, seeds {comparison.seeds} (mean ± sd over seeds)"
        + (
            f"; {', '.join(comparison.seeds_by_policy)} seed {comparison.seeds[0]} only"
            if comparison.seeds_by_policy
            else ""
        ),
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 1),
        collapse_padding=True,
    )
    table.add_column("policy", overflow="fold", min_width=8)
    for key, label, _, _ in metrics:
        table.add_column(label if wide else SHORT_LABELS.get(key, label), justify="right", no_wrap=not wide)
    best_dsr = agg["dsr"].max() if "dsr" in agg and agg["dsr"].notna().any() else None
    runs_of = comparison.runs.groupby("policy").size().to_dict()  # ± only over two runs or more
    for policy, row in agg.iterrows():
        cells = []
        for key, _, scale, fmt in metrics:
            cell = _fmt(row.get(key, math.nan), scale, fmt)
            sd = row.get(f"{key}_std", math.nan)
            if key in ("dsr", "jct_mean_s") and runs_of.get(policy, 0) > 1 and not math.isnan(sd):
                cell += f"{' ± ' if wide else '±'}{_fmt(sd, scale, fmt)}"
            if key == "dsr" and best_dsr is not None and row.get("dsr") == best_dsr:
                cell = f"[bold green]{cell}[/bold green]"
            cells.append(cell)
        table.add_row(str(policy), *cells)
    console.print(table)
