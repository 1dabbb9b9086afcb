"""Benchmark the ``hetgym`` command's start-up and Gavel trace conversion; writes ``bench/startup.json``.

Usage::

    python scripts/bench/bench_startup.py [--repeats 7] [--base HEAD~1] [--out bench/startup.json]

Each task runs as a fresh interpreter (``python -m hetgym.cli ...``), its wall time measured from outside:

* ``help``: ``hetgym --help``;
* ``import``: ``python -c "import hetgym"``;
* ``simulate_tiny_fifo``: ``hetgym simulate --scenario tiny --policy fifo --no-progress``;
* ``convert_gavel_10k``: ``hetgym trace convert`` of a 10,000-job Gavel-format trace (made here by repeating
  ``tests/data/gavel/poisson-3000-200s.trace``, one arrival every 200 s) to parquet; ``convert_s`` is the
  conversion's own time as the command reports it (reading, cleaning, writing; no start-up).

With ``--base REV`` the same tasks also run on commit ``REV`` (a temporary git worktree put first on
``PYTHONPATH``), alternating base and head in every repeat so that both see the same machine load; the
output then holds both medians and the ratio head / base. The load average is recorded before and after.

The children may write and use ``__pycache__`` (``PYTHONDONTWRITEBYTECODE`` is dropped from their
environment), as an installed package does, and each task runs once on each side before the timed
repeats, so that compiling the sources is not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GAVEL_SOURCE = Path("tests/data/gavel/poisson-3000-200s.trace")


def write_gavel_trace(path: Path, num_jobs: int) -> None:
    """A Gavel-format trace of ``num_jobs`` jobs: the sample trace's rows repeated, one arrival every 200 s."""
    rows = (ROOT / GAVEL_SOURCE).read_text().splitlines()
    with open(path, "w") as fh:
        for i in range(num_jobs):
            fields = rows[i % len(rows)].split("\t")
            fields[-1] = str(i * 200)
            fh.write("\t".join(fields) + "\n")


def tasks(trace: Path, work: Path) -> dict[str, list[str]]:
    """The command line of each task (after ``python``)."""
    cli = ["-m", "hetgym.cli"]
    return {
        "help": [*cli, "--help"],
        "import": ["-c", "import hetgym"],
        "simulate_tiny_fifo": [*cli, "simulate", "--scenario", "tiny", "--policy", "fifo", "--no-progress"],
        "convert_gavel_10k": [
            *cli, "trace", "convert", str(trace), "--format", "gavel", "--out", str(work / "g.parquet"),
            "--force", "--json",
        ],
    }  # fmt: skip


def run_once(tree: Path, argv: list[str]) -> tuple[float, dict[str, Any]]:
    """Wall seconds of ``python argv`` with ``tree`` first on ``PYTHONPATH``, and its JSON output if any."""
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "120"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, *argv], cwd=tree, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    parsed: dict[str, Any] = {}
    if "--json" in argv:
        parsed = json.loads(out.stdout)
    return wall, parsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 repeats")
    parser.add_argument("--base", help="also run the tasks on this commit, interleaved")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "startup.json")
    args = parser.parse_args(argv)
    repeats = 3 if args.quick else args.repeats
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench_startup_") as tmp:
        work = Path(tmp)
        trace = work / "gavel-10k.trace"
        write_gavel_trace(trace, 10_000)
        trees = {"head": ROOT}
        revs = {"head": _rev(ROOT, "HEAD")}
        if args.base:
            trees["base"] = work / "base"
            revs["base"] = _rev(ROOT, args.base)
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(trees["base"]), revs["base"]],
                check=True,
                capture_output=True,
            )
        try:
            walls: dict[str, dict[str, list[float]]] = {side: {} for side in trees}
            convert: dict[str, list[float]] = {side: [] for side in trees}
            for cmd in tasks(trace, work).values():  # warm-up: bytecode caches written, files in the page cache
                for tree in trees.values():
                    run_once(tree, cmd)
            for _ in range(repeats):
                for name, cmd in tasks(trace, work).items():
                    for side, tree in trees.items():
                        wall, parsed = run_once(tree, cmd)
                        walls[side].setdefault(name, []).append(wall)
                        if parsed:
                            convert[side].append(float(parsed["convert_s"]))
        finally:
            if args.base:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(trees["base"])], check=False
                )
    report: dict[str, Any] = {
        "benchmark": "bench_startup",
        "command": "python scripts/bench/bench_startup.py" + (f" --base {args.base}" if args.base else ""),
        "repeats": repeats,
        "commits": revs,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "bytecode_cache": True,
        "load_avg_before": [round(x, 2) for x in load_before],
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        "tasks": {name: " ".join(["python", *cmd]) for name, cmd in tasks(Path("TRACE"), Path("OUT")).items()},
    }
    for side in trees:
        figures: dict[str, Any] = {}
        for name, values in walls[side].items():
            figures[f"{name}_wall_s"] = round(statistics.median(values), 4)
            figures[f"{name}_wall_all"] = [round(v, 4) for v in values]
        figures["convert_gavel_10k_convert_s"] = round(statistics.median(convert[side]), 4)
        report[side] = figures
    if args.base:
        report["ratio_head_over_base"] = {
            key: round(report["head"][key] / report["base"][key], 3)
            for key in report["head"]
            if key.endswith("_s") and report["base"].get(key)
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = args.out.with_suffix(".json.tmp")
    tmp_out.write_text(json.dumps(report, indent=1) + "\n")
    tmp_out.replace(args.out)
    print(json.dumps({k: report[k] for k in ("head", "load_avg_before", "load_avg_after")}, indent=1))
    if args.base:
        print(json.dumps({"base": report["base"], "ratio": report["ratio_head_over_base"]}, indent=1))
    return 0


def _rev(root: Path, rev: str) -> str:
    out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", rev], capture_output=True, text=True)
    return out.stdout.strip() or rev


if __name__ == "__main__":
    sys.exit(main())
