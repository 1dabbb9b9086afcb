"""Reproduce the five papers' claims in their own settings, with 95 % t intervals over >= 10 seeds.

Usage::

    python scripts/reproduce/reproduce_papers.py               # the full run: 266-722 s measured on 2 shared cores
    python scripts/reproduce/reproduce_papers.py --quick       # the same studies and seeds on smaller sizes: 58-91 s
    python scripts/reproduce/reproduce_papers.py --only dancer jps --out /tmp/papers --page /tmp/papers.md
    python scripts/reproduce/reproduce_papers.py --render      # rewrite the page from the last run's CSVs (no runs)

Five studies; each one's code lives in its paper's script, and its setting is spelled out in the page:

* **Dancer** (``reproduce_dancer.py``) on the ten ElasticFlow cluster traces (``cluster01.csv`` ..
  ``cluster10.csv`` of the published raw traces), on the ElasticFlow cluster the window loads to about 0.8 and
  on a heterogeneous version of it.
* **Hadar** and **HadarE** (``reproduce_hadar.py``): Hadar against YARN-CS and Gavel on a static Gavel-Philly
  batch, with and without the 30 s restart penalty; HadarE with a handful of Gavel models on six mixed nodes.
* **A-SRPT** (``reproduce_asrpt.py``) on recurring mixed-parallel jobs on 16 x 8 A100 with 25 Gb/s NICs.
* **JPS** (``reproduce_jps.py``) on instances drawn from the measured V100/P100/K80 throughputs, against the
  exact optimum.

This script only gathers the studies' tasks, runs them on one process pool (:func:`hetgym.sweep.map_runs`) and
writes the page. A baseline not registered in this installation is reported as "not available". Output: the
per-run CSVs, ``run.json`` (the run's size and time), ``claims.csv`` (every figure computed) and PNGs under
``--out`` (default ``docs/results/papers``), and the page ``--page`` (default ``docs/results/papers.md``),
every figure in it computed from those CSVs. Files are written to temporary names and renamed, so an
interrupted run leaves the previous output whole.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import reproduce_asrpt
import reproduce_dancer
import reproduce_hadar
import reproduce_jps
from paper_claims import Settings, Task, fmt, run_task, settings_for, write_csv

from hetgym.atomic import atomic_write
from hetgym.progress import ProgressReport
from hetgym.sweep import map_runs

ROOT = Path(__file__).resolve().parents[2]

DATA_DIR = ROOT.parent / "shared" / "data"
STUDIES: tuple[str, ...] = ("dancer", "hadar", "hadare", "asrpt", "jps")
#: The script that holds each study.
SCRIPTS: dict[str, str] = {
    "dancer": "reproduce_dancer.py",
    "hadar": "reproduce_hadar.py",
    "hadare": "reproduce_hadar.py",
    "asrpt": "reproduce_asrpt.py",
    "jps": "reproduce_jps.py",
}
PAPERS: dict[str, tuple[str, str]] = {
    **reproduce_dancer.PAPERS,
    **reproduce_hadar.PAPERS,
    **reproduce_asrpt.PAPERS,
    **reproduce_jps.PAPERS,
}
#: The figures the page leads with: (study, pattern of the claim), in this order.
HEADLINES: tuple[tuple[str, str], ...] = (
    ("dancer", r"Dancer's relative DSR improvement over .*, homogeneous clusters"),
    ("dancer", r"Dancer's relative DSR improvement over .*, heterogeneous clusters"),
    ("hadar", r"hadar vs yarn-cs: summed JCT, restart penalty 30 s"),
    ("hadar", r"hadar vs gavel-makespan: makespan, restart penalty 30 s"),
    ("hadar", r"hadar vs gavel-makespan: summed JCT, restart penalty 30 s"),
    ("hadare", r"HadarE vs hadar: cluster utilisation"),
    ("hadare", r"HadarE vs hadar: total time duration reduction"),
    ("asrpt", r"A-SRPT \(RF\) vs SRTF \(oracle\): mean JCT reduction"),
    ("asrpt", r"A-SRPT \(RF\) vs Tiresias: mean JCT reduction"),
    ("jps", r"JPS beta=1: mean gap to the optimum"),
    ("jps", r"JPS beta=1: share of instances within 2.04%"),
)


def build_tasks(settings: Settings, studies: Sequence[str], source: str) -> list[Task]:
    """Every task of ``studies``, from their papers' scripts."""
    tasks: list[Task] = []
    if "dancer" in studies:
        tasks += reproduce_dancer.paper_tasks(settings, source)
    tasks += reproduce_hadar.paper_tasks(settings, studies)
    if "asrpt" in studies:
        tasks += reproduce_asrpt.paper_tasks(settings)
    if "jps" in studies:
        tasks += reproduce_jps.paper_tasks(settings)
    return tasks


def run_tasks(tasks: Sequence[Task], workers: int, progress: bool = True) -> dict[str, pd.DataFrame]:
    """Run ``tasks`` on ``workers`` processes (costliest first, so that the workers finish together)."""
    order = sorted(tasks, key=lambda t: -t.cost)
    with ProgressReport(enabled=progress, live=False) as report:
        report.task("reproduce_papers", len(order), unit="tasks")
        results = map_runs(
            run_task, order, workers=workers, on_result=lambda _, r: report.update(advance=1, detail=r[0])
        )
    rows: dict[str, list[dict]] = {}
    for study, out in results:
        rows.setdefault(study, []).extend(out)
    return {k: pd.DataFrame(v) for k, v in rows.items()}


# ============================================================================================
# Page


def _table(
    frame: pd.DataFrame, columns: Sequence[str], formats: Mapping[str, Callable[[Any], str]] | None = None
) -> list[str]:
    formats = formats or {}
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for _, row in frame.iterrows():
        cells = []
        for c in columns:
            v = row.get(c, "")
            f = formats.get(c)
            if f is not None:
                cells.append(f(v))
            elif isinstance(v, float):
                cells.append("-" if not math.isfinite(v) else f"{v:.3f}")
            else:
                cells.append(str(v))
        out.append("| " + " | ".join(cells) + " |")
    return out


def _unit(c: Mapping[str, Any]) -> str:
    return c["unit"] if isinstance(c["unit"], str) else ""


def _ci(c: Mapping[str, Any]) -> str:
    unit = _unit(c)
    return f"[{fmt(c['ci_low'], unit)}, {fmt(c['ci_high'], unit)}]" if math.isfinite(c["ci_low"]) else "-"


def _claims_table(claims: pd.DataFrame, first: str = "claim") -> list[str]:
    rows = [
        {
            first: c["claim"] if first == "claim" else f"{PAPERS[c['study']][0].split(' (')[0]}: {c['claim']}",
            "paper": c["paper"],
            "measured": fmt(c["estimate"], _unit(c)),
            "95% CI": _ci(c),
            "seeds": c["n_seeds"],
            "difference": c["note"],
        }
        for _, c in claims.iterrows()
    ]
    return _table(pd.DataFrame(rows), [first, "paper", "measured", "95% CI", "seeds", "difference"])


def headlines(claims: pd.DataFrame) -> pd.DataFrame:
    """The rows of :data:`HEADLINES` found in ``claims``, in that order."""
    picked = []
    for study, pattern in HEADLINES:
        matches = claims["claim"].astype(str).str.fullmatch(pattern)
        part = claims[(claims["study"] == study) & matches]
        picked += [row for _, row in part.iterrows()]
    return pd.DataFrame(picked, columns=claims.columns)


def in_page(row: Mapping[str, Any]) -> bool:
    """Whether a claim has a row in its study's table of the page (all of them are in ``claims.csv``): Hadar's
    shows the 30 s penalty, and the average-JCT objective only against Hadar's default."""
    if row["study"] != "hadar":
        return True
    return row["scope"] == "penalty 30 s" and (row["claim"].startswith("hadar vs ") or " vs hadar:" in row["claim"])


def write_page(
    page: Path,
    out: Path,
    settings: Settings,
    claims: pd.DataFrame,
    tables: Mapping[str, pd.DataFrame],
    meta: Mapping[str, Any],
) -> None:
    rel = os.path.relpath(out, page.parent)
    if settings.label in ("full", "quick"):
        flag = "" if settings.label == "full" else " --quick"
        command = f"Generated by `python scripts/reproduce/reproduce_papers.py{flag}`"
    else:
        command = f"Generated by the test setting `{settings.label}` of `scripts/reproduce/reproduce_papers.py`"
    top = headlines(claims) if not claims.empty else claims
    lines = ["# The five papers in their own settings", ""]
    if not top.empty:
        lines += [
            "**Answer**: each paper's headline figures, measured in its own setting (paired over seeds, 95% "
            "intervals), against the paper's; the last column says whether the interval agrees.",
            "",
            *_claims_table(top, first="paper: claim"),
            "",
        ]
    lines += [
        f"{command} (**{settings.label} run**: {meta['tasks']} tasks on {meta['workers']} worker processes, "
        f"{meta['wall_s']:.0f} s "
        f"on a {meta['cpus']}-CPU machine shared with other work). Every figure below comes from that run; "
        f"the per-run rows are the CSV files in [{rel}/]({rel}/), and every figure computed is a row of "
        f"[{rel}/claims.csv]({rel}/claims.csv). Intervals are 95% Student-t intervals "
        f"of the mean over {len(settings.seeds)} seeds; comparisons of two policies use the per-seed "
        "paired differences or ratios (both policies ran on the same workload). The policies are "
        "reconstructions from the papers' abstracts (see the policy guides); nothing is tuned to a paper's number. "
        "Each study's code is in its paper's script (named in its section).",
        "",
    ]
    for study in STUDIES:
        part = claims[claims["study"] == study] if not claims.empty else claims
        if part.empty and study not in tables:
            continue
        title, paper = PAPERS[study]
        lines += [f"## {title}", "", paper, "", f"Ours (`{SCRIPTS[study]}`): {meta['ours'][study]}", ""]
        shown = part[part.apply(in_page, axis=1).astype(bool)] if not part.empty else part
        if not shown.empty:
            lines += [*_claims_table(shown), ""]
        if len(shown) < len(part):
            lines += [
                f"The same comparisons without the restart penalty, and the average-JCT objective against each "
                f"baseline: {len(part) - len(shown)} more rows of [claims.csv]({rel}/claims.csv).",
                "",
            ]
        extra = tables.get(study)
        if extra is not None and not extra.empty:
            lines += [*_extra_table(study, extra, rel), ""]
        if (out / f"{study}.png").exists():
            lines += [f"![{study}]({rel}/{study}.png)", ""]
    text = "\n".join(lines).rstrip() + "\n"
    atomic_write(page, lambda tmp: tmp.write_text(text))


MEANS = "means over seeds"


def _extra_table(study: str, frame: pd.DataFrame, rel: str) -> list[str]:
    if study == "dancer":
        best = frame.groupby("cluster_kind", sort=False)["relative_improvement"].agg(["min", "max"])
        spans = ", ".join(f"{kind} {fmt(r['min'], '%')} to {fmt(r['max'], '%')}" for kind, r in best.iterrows())
        return [
            f"DSR per trace and cluster kind, each policy's mean over seeds: [dancer_per_trace.csv]({rel}/"
            f"dancer_per_trace.csv) (Dancer against the trace's best baseline: {spans})."
        ]
    if study == "jps":
        cols = ["method", "mean_gap", "share_within_2.04pct", "max_gap", "jain", "instances"]
        fmt_pct = {c: (lambda v: fmt(v, "%")) for c in ("mean_gap", "share_within_2.04pct", "max_gap")}
        return _table(frame.rename(columns={"method": MEANS}), [MEANS, *cols[1:]], fmt_pct)
    first = frame.columns[0]
    return _table(frame.rename(columns={first: f"{first} ({MEANS})"}), [f"{first} ({MEANS})", *frame.columns[1:]])


# ============================================================================================
# Main


def report(out: Path, page: Path, settings: Settings, meta: Mapping[str, Any], plots: bool = True) -> pd.DataFrame:
    """Compute every claim and table from the per-run CSVs in ``out``; write ``claims.csv`` (the figures if
    ``plots``) and the page. Returns the claims table."""
    runs = {s: pd.read_csv(out / f"{s}_runs.csv") for s in meta["studies"] if (out / f"{s}_runs.csv").exists()}
    claims: list[dict] = []
    tables: dict[str, pd.DataFrame] = {}
    ours: dict[str, str] = {}
    for study, frame in runs.items():
        if study == "dancer":
            c, table = reproduce_dancer.paper_report(frame, out, plots)
            ours[study] = reproduce_dancer.ours_text(settings, frame)
        elif study in ("hadar", "hadare"):
            c, table = reproduce_hadar.paper_report(study, frame, out, plots)
            ours[study] = reproduce_hadar.ours_text(settings, study)
        elif study == "asrpt":
            c, table = reproduce_asrpt.paper_report(frame, out, plots)
            ours[study] = reproduce_asrpt.ours_text(settings)
        else:
            c, table = reproduce_jps.paper_report(frame, out, plots)
            ours[study] = reproduce_jps.ours_text(settings)
        claims += c
        tables[study] = table
    claim_frame = pd.DataFrame(claims)
    write_csv(claim_frame, out / "claims.csv")
    write_page(page, out, settings, claim_frame, tables, {**meta, "ours": ours})
    return claim_frame


def reproduce(
    settings: Settings, studies: Sequence[str], out: Path, page: Path, source: str, workers: int, progress: bool = True
) -> pd.DataFrame:
    """Run the studies, write the per-run CSVs, ``run.json``, the claims, figures and the page; return the claims."""
    out.mkdir(parents=True, exist_ok=True)
    page.parent.mkdir(parents=True, exist_ok=True)
    tasks = build_tasks(settings, studies, source)
    started = time.perf_counter()
    runs = run_tasks(tasks, workers, progress)
    wall_s = time.perf_counter() - started
    ordered = [s for s in STUDIES if s in runs]
    for study in ordered:
        write_csv(runs[study], out / f"{study}_runs.csv")
    meta = {
        "label": settings.label,
        "studies": ordered,
        "tasks": len(tasks),
        "workers": workers,
        "wall_s": round(wall_s, 1),
        "cpus": os.cpu_count(),
    }
    atomic_write(out / "run.json", lambda tmp: tmp.write_text(json.dumps(meta, indent=1) + "\n"))
    return report(out, page, settings, meta)


def render(out: Path, page: Path) -> pd.DataFrame:
    """Rewrite ``claims.csv`` and the page from the CSVs and ``run.json`` of the last run in ``out`` (the figures
    are kept)."""
    meta = json.loads((out / "run.json").read_text())
    return report(out, page, settings_for(meta["label"]), meta, plots=False)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="the same studies and seeds on smaller sizes (under 5 min)"
    )
    parser.add_argument("--only", nargs="+", choices=STUDIES, help="run only these studies")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "papers", help="CSV and PNG folder")
    parser.add_argument("--page", type=Path, default=ROOT / "docs" / "results" / "papers.md", help="the page to write")
    parser.add_argument(
        "--render", action="store_true", help="run nothing: rewrite the claims and the page from --out's CSVs"
    )
    parser.add_argument(
        "--elasticflow-traces",
        type=Path,
        default=DATA_DIR / "elasticflow_traces" / "raw-traces.tar.gz",
        help="the published raw-traces.tar.gz, or a folder of cluster*.csv",
    )
    parser.add_argument("--workers", type=int, default=2, help="worker processes, 1 or 2 (default 2)")
    args = parser.parse_args(argv)
    if args.workers not in (1, 2):
        parser.error(f"--workers={args.workers}; give 1 or 2")
    if args.render:
        if not (args.out / "run.json").exists():
            parser.error(f"--render: {args.out / 'run.json'} does not exist; run the studies first")
        return args
    studies = args.only or list(STUDIES)
    if "dancer" in studies and not args.elasticflow_traces.exists():
        parser.error(
            f"--elasticflow-traces {args.elasticflow_traces} does not exist; give the published raw-traces.tar.gz "
            "(ElasticFlow's artifact) or a folder of cluster*.csv, or leave the Dancer study out with --only"
        )
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        claims = render(args.out, args.page)
    else:
        settings = settings_for("quick" if args.quick else "full")
        studies = args.only or list(STUDIES)
        print(
            f"# {settings.label} run of {', '.join(studies)} on {platform.node()} ({os.cpu_count()} CPUs)", flush=True
        )
        claims = reproduce(settings, studies, args.out, args.page, str(args.elasticflow_traces), args.workers)
    pd.set_option("display.width", 200)
    if not claims.empty:
        print(claims[["study", "claim", "estimate", "ci_low", "ci_high", "n_seeds"]].to_string(index=False))
    print(f"wrote {args.page} and {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
