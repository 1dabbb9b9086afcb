"""Check hetgym's Gavel compatibility mode against figures produced by Gavel's own simulator.

The reference figures live in ``tests/data/gavel/reference.json`` with the traces they were run on
(``tests/data/gavel/*.trace``, written by Gavel's ``scripts/utils/generate_trace.py`` at this project's
seeds). For each trace and each of Gavel's policies (``fifo``, ``max_min_fairness_perf``,
``max_min_fairness``, ``finish_time_fairness``) the file holds the average JCT, the makespan (Gavel's
"Total duration"), the failed jobs and every job's completion time, with the exact Gavel command and
Gavel's commit.

Default mode: run hetgym on every trace with ``SimConfig(compat="gavel")`` and with its own defaults
(round 360 s, no restart penalty, as Gavel's setting), and write ``docs/results/fidelity_gavel.md``:
per row Gavel's average JCT, hetgym compat and hetgym defaults, their ratios to Gavel, the makespan ratio,
the failed jobs and the share of jobs whose completion time is within one round (360 s) of Gavel's.

``--regenerate`` rebuilds the reference from a Gavel checkout that is *not* part of this project:
``--gavel-dir`` (its root, holding ``scheduler/``) and ``--gavel-python`` (an interpreter with its
dependencies: cvxpy with ECOS, numpy, scipy, scikit-learn, matrix-completion, grpcio and the generated
rpc stubs). Nothing of Gavel is copied here; its outputs are facts recorded with their command.

Usage::

    python scripts/reproduce/fidelity_gavel.py                        # writes docs/results/fidelity_gavel.md
    python scripts/reproduce/fidelity_gavel.py --regenerate --gavel-dir /tmp/gavel \
        --gavel-python /tmp/gavel-venv/bin/python
    python scripts/reproduce/fidelity_gavel.py --throughputs my/throughputs.csv --out mine.md  # another table

``--throughputs`` runs the compat side on another table (``throughputs.csv`` format). The compat mode
reads the ``iters_per_s_full`` column where a table has it (every digit as measured: the 7th digit of a
rate decides ties between jobs in Gavel's FIFO), else ``iters_per_s``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "gavel"
REFERENCE = DATA / "reference.json"
OUT_MD = ROOT / "docs" / "results" / "fidelity_gavel.md"

#: Gavel's policy name -> hetgym's policy.
POLICIES: dict[str, str] = {
    "fifo": "gavel-fifo",
    "max_min_fairness_perf": "gavel-mmf",
    "max_min_fairness": "gavel-mmf-agnostic",
    "finish_time_fairness": "gavel-ftf-agnostic",
}
#: The traces: name -> (jobs, mean inter-arrival seconds (0: all at t=0), generator seed).
TRACES: dict[str, tuple[int, float, int]] = {
    "t0-60": (60, 0.0, 11),
    "t0-150": (150, 0.0, 14),
    "poisson-200-900s": (200, 900.0, 12),
    "poisson-400-250s": (400, 250.0, 13),
    "poisson-3000-200s": (3000, 200.0, 21),
    "t0-1500": (1500, 0.0, 41),
    "poisson-3000-200s-b": (3000, 200.0, 32),
}
#: The smallest trace, the one the default test run checks.
SMALLEST = "t0-60"
TRACES_FILE_SMALLEST = "t0-60.trace"
ROUND_S = 360.0
CLUSTER_SPEC = "36:36:36"
GPUS_PER_SERVER = "4:4:4"
SIM_SEED = 0
#: The comparison's tolerance on average JCT.
TOLERANCE = 0.02

GENERATE = "scripts/utils/generate_trace.py --num_jobs {jobs} --lam {lam:g} --seed {seed} -m --output_file {out}"
SIMULATE = (
    "scripts/drivers/simulate_scheduler_with_trace.py -t {trace} -p {policy} -c "
    + CLUSTER_SPEC
    + " --num_gpus_per_server "
    + GPUS_PER_SERVER
    + f" --seed {SIM_SEED} --solver ECOS --time_per_iteration {ROUND_S:g}"
)


class FidelityError(RuntimeError):
    """A missing Gavel checkout or interpreter, or output of Gavel that cannot be read."""


# --------------------------------------------------------------------------------------------
# Gavel's side


@dataclass(frozen=True)
class GavelRun:
    """What one run of Gavel's simulator reported."""

    avg_jct_s: float
    makespan_s: float
    jct_s: dict[int, float | None]  # None: failed


def parse_gavel_log(text: str) -> GavelRun:
    """Read the completion times, failures and total duration from the output of Gavel's simulator."""
    jct: dict[int, float | None] = {}
    total = math.nan
    average = math.nan
    for line in text.splitlines():
        m = re.match(r"Job (\d+): ([0-9.eE+-]+)$", line.strip())
        if m:
            jct[int(m.group(1))] = float(m.group(2))
        elif "[Job failed]" in line:
            found = re.search(r"Job ID: (\d+)", line)
            if found:
                jct[int(found.group(1))] = None
        elif line.startswith("Total duration:"):
            total = float(line.split()[2])
        elif line.startswith("Average job completion time:"):
            average = float(line.split()[4])
    if not jct or math.isnan(total) or math.isnan(average):
        raise FidelityError("Gavel's output has no per-job completion times, average or total duration")
    return GavelRun(average, total, dict(sorted(jct.items())))


def check_gavel(
    gavel_dir: Path | None, gavel_python: Path | None, need: str = "--regenerate needs"
) -> tuple[Path, Path]:
    """Gavel's ``scheduler`` folder and its interpreter, or a :class:`FidelityError` saying what is missing
    (``need`` starts the message when a path is not given)."""
    if gavel_dir is None or gavel_python is None:
        raise FidelityError(f"{need} --gavel-dir (a Gavel checkout) and --gavel-python (its interpreter)")
    scheduler = gavel_dir / "scheduler"
    if not (scheduler / "scripts" / "drivers" / "simulate_scheduler_with_trace.py").is_file():
        raise FidelityError(
            f"--gavel-dir {gavel_dir} is not a Gavel checkout (no scheduler/scripts/drivers/"
            "simulate_scheduler_with_trace.py); clone stanford-futuredata/gavel and give its root"
        )
    if not gavel_python.is_file():
        raise FidelityError(f"--gavel-python {gavel_python} does not exist; give the interpreter Gavel runs with")
    return scheduler, gavel_python


def gavel_commit(gavel_dir: Path) -> str:
    """The commit of the Gavel checkout (``unknown`` outside git)."""
    try:
        out = subprocess.run(["git", "-C", str(gavel_dir), "rev-parse", "HEAD"], capture_output=True, text=True)
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def run_gavel(scheduler: Path, python: Path, args: str) -> str:
    """Run one of Gavel's scripts from its ``scheduler`` folder and return its output."""
    proc = subprocess.run([str(python), *args.split()], cwd=scheduler, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-2000:]
        raise FidelityError(f"Gavel's {args.split()[0]} failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout + proc.stderr


def regenerate(gavel_dir: Path | None, gavel_python: Path | None, names: Sequence[str] | None = None) -> dict[str, Any]:
    """Generate the traces and run Gavel's simulator on each; return the reference (nothing written yet).

    ``names``: only these traces; the others are kept from the committed reference, which must then
    have been run at the same Gavel commit.
    """
    scheduler, python = check_gavel(gavel_dir, gavel_python)
    assert gavel_dir is not None
    commit = gavel_commit(gavel_dir)
    reference: dict[str, Any] = {
        "gavel_commit": commit,
        "generate": "python " + GENERATE,
        "simulate": "python " + SIMULATE,
        "cwd": "scheduler/",
        "traces": {},
    }
    unknown = [n for n in names or () if n not in TRACES]
    if unknown:
        raise FidelityError(f"unknown trace(s) {unknown}; the script knows {list(TRACES)}")
    if names:
        old = load_reference()
        if old["gavel_commit"] != commit:
            raise FidelityError(
                f"the committed reference was run at Gavel {old['gavel_commit'][:7]}, this checkout is at "
                f"{commit[:7]}: regenerate every trace (no --traces)"
            )
        for name, kept in old["traces"].items():
            if name not in names:
                reference["traces"][name] = {**kept, "text": (DATA / kept["file"]).read_text()}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (jobs, lam, seed) in TRACES.items():
            if names and name not in names:
                continue
            trace = Path(tmp) / f"{name}.trace"
            run_gavel(scheduler, python, GENERATE.format(jobs=jobs, lam=lam, seed=seed, out=trace))
            entry: dict[str, Any] = {
                "num_jobs": jobs,
                "lam_s": lam,
                "seed": seed,
                "file": f"{name}.trace",
                "text": trace.read_text(),
            }
            results = {}
            for policy in POLICIES:
                print(f"gavel: {name} {policy}", file=sys.stderr)
                run = parse_gavel_log(run_gavel(scheduler, python, SIMULATE.format(trace=trace, policy=policy)))
                results[policy] = {
                    "avg_jct_s": run.avg_jct_s,
                    "makespan_s": run.makespan_s,
                    "failed": [j for j, v in run.jct_s.items() if v is None],
                    "jct_s": {str(j): v for j, v in run.jct_s.items() if v is not None},
                }
            entry["results"] = results
            reference["traces"][name] = entry
    reference["traces"] = {n: reference["traces"][n] for n in TRACES if n in reference["traces"]}
    return reference


def write_reference(reference: Mapping[str, Any], folder: Path = DATA) -> None:
    """Write the traces and ``reference.json`` (each file atomically)."""
    from hetgym.atomic import atomic_write

    body = {**reference, "traces": {}}
    for name, entry in reference["traces"].items():
        text = entry["text"]
        atomic_write(folder / entry["file"], lambda p, t=text: p.write_text(t))
        body["traces"][name] = {k: v for k, v in entry.items() if k != "text"}
    atomic_write(folder / "reference.json", lambda p: p.write_text(json.dumps(body, indent=1) + "\n"))


def load_reference(path: Path = REFERENCE) -> dict[str, Any]:
    """The committed reference figures."""
    if not path.is_file():
        raise FidelityError(f"{path} is missing; run with --regenerate to build it from a Gavel checkout")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


# --------------------------------------------------------------------------------------------
# hetgym's side


@dataclass(frozen=True)
class HetgymRun:
    """hetgym's figures for one trace and policy."""

    avg_jct_s: float
    makespan_s: float
    jct_s: dict[int, float]  # completed jobs
    failed: tuple[int, ...]


def load_throughputs(path: Path) -> Any:
    """A raw ``ThroughputModel`` (as the compat mode uses) over the table at ``path`` (``throughputs.csv`` format)."""
    import pandas as pd

    from hetgym.sim.throughput import ThroughputModel

    if not path.is_file():
        raise FidelityError(
            f"--throughputs {path} does not exist; write one with "
            "python scripts/build_throughput_table.py --rate-digits 17 --out DIR"
        )
    try:
        table = pd.read_csv(path, converters={"iters_per_s_full": float})
        return ThroughputModel(table=table, clamp_superlinear=False, monotone=False, full_precision=True)
    except (ValueError, KeyError) as err:
        raise FidelityError(f"--throughputs {path} is not a throughputs.csv table: {err}") from None


def run_hetgym(trace: Path, policy: str, *, compat: bool, throughput: Any = None) -> HetgymRun:
    """Run ``policy`` on the Gavel trace on ``gavel-108``: compat mode, or defaults (360 s rounds, no penalty).

    ``throughput``: a ``ThroughputModel`` for the run instead of the embedded table.
    """
    from hetgym.sim.config import SimConfig
    from hetgym.sim.engine import Simulator
    from hetgym.sim.policy import make_policy
    from hetgym.workloads.traces.pipeline import load_trace

    workload = load_trace(trace, "gavel")
    sim = {"compat": "gavel", "seed": SIM_SEED} if compat else {"round_s": ROUND_S, "restart_penalty_s": 0.0}
    config = SimConfig.from_dict(sim)
    result = Simulator("gavel-108", workload, config=config, throughput=throughput).run(make_policy(policy))
    jobs = result.jobs
    done = jobs[jobs["status"] == "completed"]
    failed = tuple(int(j) for j in jobs.loc[jobs["status"] == "rejected", "job_id"])
    # Gavel's total duration runs from t=0 (its first arrival) to the last event.
    makespan = float(jobs["finish_s"].max())
    jct = {int(j): float(v) for j, v in zip(done["job_id"], done["jct_s"], strict=True)}
    return HetgymRun(float(np.mean(list(jct.values()))), makespan, jct, failed)


@dataclass(frozen=True)
class Row:
    """One line of the comparison."""

    trace: str
    policy: str
    gavel_jct_s: float
    compat_jct_s: float
    default_jct_s: float
    gavel_makespan_s: float
    compat_makespan_s: float
    gavel_failed: int
    compat_failed: int
    within_round: float

    @property
    def compat_ratio(self) -> float:
        return self.compat_jct_s / self.gavel_jct_s

    @property
    def default_ratio(self) -> float:
        return self.default_jct_s / self.gavel_jct_s

    @property
    def within_tolerance(self) -> bool:
        return abs(self.compat_ratio - 1.0) <= TOLERANCE


def compare(name: str, entry: Mapping[str, Any], policy: str, *, defaults: bool = True, throughput: Any = None) -> Row:
    """Run hetgym on one reference trace and policy and compare with Gavel's figures.

    ``throughput``: a ``ThroughputModel`` for the compat run instead of the embedded table.
    """
    ref = entry["results"][policy]
    trace = DATA / entry["file"]
    compat = run_hetgym(trace, POLICIES[policy], compat=True, throughput=throughput)
    default = run_hetgym(trace, POLICIES[policy], compat=False) if defaults else None
    gavel_jct = {int(k): float(v) for k, v in ref["jct_s"].items()}
    both = [j for j in gavel_jct if j in compat.jct_s]
    within = float(np.mean([abs(compat.jct_s[j] - gavel_jct[j]) <= ROUND_S for j in both])) if both else math.nan
    return Row(
        trace=name,
        policy=policy,
        gavel_jct_s=float(ref["avg_jct_s"]),
        compat_jct_s=compat.avg_jct_s,
        default_jct_s=default.avg_jct_s if default else math.nan,
        gavel_makespan_s=float(ref["makespan_s"]),
        compat_makespan_s=compat.makespan_s,
        gavel_failed=len(ref["failed"]),
        compat_failed=len(compat.failed),
        within_round=within,
    )


def render(rows: Sequence[Row], reference: Mapping[str, Any], throughputs: str | None = None) -> str:
    """The Markdown report (deterministic: no timing in it)."""
    table_note = (
        [f"The compat runs read the throughput table `{throughputs}` instead of the embedded one.", ""]
        if throughputs
        else []
    )
    lines = [
        "# hetgym's Gavel compatibility mode against Gavel's simulator",
        "",
        "Written by `python scripts/reproduce/fidelity_gavel.py` from `tests/data/gavel/reference.json`: Gavel's own",
        f"simulator at commit `{reference['gavel_commit'][:7]}` (`{reference['simulate']}`, run in",
        f"`{reference['cwd']}`) on traces from its generator (`{reference['generate']}`) at this project's",
        'seeds. hetgym runs each trace on `gavel-108` with `SimConfig(compat="gavel")` (*compat*) and with its',
        "own model at 360 s rounds and no restart penalty (*defaults*). Average JCT over completed jobs",
        "(Gavel leaves failed jobs out; so does the compat mode, which reports them as rejected). *Within a",
        "round*: share of the jobs completed in both whose completion time is within 360 s of Gavel's.",
        "",
        *table_note,
        "| trace | Gavel policy | Gavel JCT (s) | compat JCT (s) | compat / Gavel | defaults JCT (s) "
        "| defaults / Gavel | makespan compat / Gavel | failed Gavel / compat | within a round |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        mark = "" if r.within_tolerance else " (not within 2%)"
        lines.append(
            f"| {r.trace} | `{r.policy}` | {r.gavel_jct_s:,.0f} | {r.compat_jct_s:,.0f} | {r.compat_ratio:.3f}{mark} "
            f"| {r.default_jct_s:,.0f} | {r.default_ratio:.3f} | {r.compat_makespan_s / r.gavel_makespan_s:.3f} "
            f"| {r.gavel_failed} / {r.compat_failed} | {r.within_round:.0%} |"
        )
    ok = sum(r.within_tolerance for r in rows)
    lines += ["", f"{ok} of {len(rows)} rows have the compat mode's average JCT within 2% of Gavel's.", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--regenerate", action="store_true", help="rebuild the reference by running Gavel")
    parser.add_argument("--gavel-dir", type=Path, help="root of a Gavel checkout (with --regenerate)")
    parser.add_argument("--gavel-python", type=Path, help="interpreter with Gavel's dependencies (with --regenerate)")
    parser.add_argument("--out", type=Path, default=OUT_MD, help="the Markdown report to write")
    parser.add_argument(
        "--traces", nargs="*", help="only these traces (default: all); with --regenerate, only these are rerun"
    )
    parser.add_argument(
        "--throughputs",
        type=Path,
        help="a throughputs.csv for the compat runs (e.g. build_throughput_table.py --rate-digits 17)",
    )
    args = parser.parse_args(argv)
    try:
        throughput = load_throughputs(args.throughputs) if args.throughputs else None
        if args.regenerate:
            write_reference(regenerate(args.gavel_dir, args.gavel_python, args.traces))
        reference = load_reference()
        names = args.traces or list(reference["traces"])
        unknown = [n for n in names if n not in reference["traces"]]
        if unknown:
            raise FidelityError(f"unknown trace(s) {unknown}; the reference has {list(reference['traces'])}")
        rows = []
        for name in names:
            for policy in POLICIES:
                row = compare(name, reference["traces"][name], policy, throughput=throughput)
                print(f"{name:18s} {policy:24s} compat/Gavel {row.compat_ratio:.3f}", file=sys.stderr)
                rows.append(row)
    except FidelityError as err:
        print(f"fidelity_gavel: error: {err}", file=sys.stderr)
        return 2
    from hetgym.atomic import atomic_write

    text = render(rows, reference, str(args.throughputs) if args.throughputs else None)
    atomic_write(args.out, lambda p: p.write_text(text))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
