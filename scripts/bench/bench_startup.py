"""Benchmark the ``hetgym`` command's start-up and Gavel trace conversion; writes ``bench/startup.json``.

Usage::

    python scripts/bench/bench_startup.py [--repeats 7] [--base HEAD~1] [--gavel | --only-gavel] [--out FILE]

Each task runs as a fresh interpreter (``python -m hetgym.cli ...``), its wall time measured from outside:

* ``help``: ``hetgym --help``;
* ``import``: ``python -c "import hetgym"``;
* ``simulate_tiny_fifo``: ``hetgym simulate --scenario tiny --policy fifo --no-progress``;
* ``convert_gavel_10k``: ``hetgym trace convert`` of a 10,000-job Gavel-format trace (made here by repeating
  ``tests/data/gavel/poisson-3000-200s.trace``, one arrival every 200 s) to parquet; ``convert_s`` is the
  conversion's own time as the command reports it (reading, cleaning, writing; no start-up).

With ``--gavel`` the Gavel tasks run as well (or alone, with ``--only-gavel``): ``simulate --compat gavel``
of ``tests/data/gavel/t0-60.trace`` under ``gavel-fifo`` (the start-up floor of a Gavel run) and of
``poisson-3000-200s-b.trace`` under ``gavel-fifo`` and ``gavel-mmf`` on ``gavel-108``, and the same three
through ``hetgym gavel`` with Gavel's flags (``-c 36:36:36 --num_gpus_per_server 4:4:4 --seed 0``), on a
commit that has that command. Each task's CPU time (user + system of the child) is recorded beside its
wall time.

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
import resource
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


GAVEL_TRACES = {"tiny": "tests/data/gavel/t0-60.trace", "3000": "tests/data/gavel/poisson-3000-200s-b.trace"}
#: The Gavel tasks: (trace, Gavel's policy, hetgym's policy).
GAVEL_RUNS = {"tiny_fifo": ("tiny", "fifo", "gavel-fifo"), "3000_fifo": ("3000", "fifo", "gavel-fifo")}
GAVEL_RUNS["3000_mmf"] = ("3000", "max_min_fairness_perf", "gavel-mmf")


def gavel_tasks() -> dict[str, list[str]]:
    """The Gavel tasks' command lines (after ``python``; trace paths relative to the tree)."""
    cli = ["-m", "hetgym.cli"]
    out: dict[str, list[str]] = {}
    for name, (trace, gavel_policy, policy) in GAVEL_RUNS.items():
        out[f"simulate_gavel_{name}"] = [
            *cli, "simulate", "--policy", policy, "--trace", GAVEL_TRACES[trace], "--trace-format", "gavel",
            "--cluster", "gavel-108", "--compat", "gavel", "--no-progress",
        ]  # fmt: skip
        out[f"gavel_{name}"] = [
            *cli, "gavel", "-t", GAVEL_TRACES[trace], "-p", gavel_policy, "-c", "36:36:36",
            "--num_gpus_per_server", "4:4:4", "--seed", "0", "--time_per_iteration", "360",
        ]  # fmt: skip
    return out


def runs_on(tree: Path, argv: list[str]) -> bool:
    """Whether the commit in ``tree`` has the command ``argv`` runs (``hetgym gavel`` is newer than others)."""
    command = argv[2] if argv[:2] == ["-m", "hetgym.cli"] and len(argv) > 2 else ""
    return command != "gavel" or (tree / "hetgym" / "cli" / "gavel.py").is_file()


def run_once(tree: Path, argv: list[str]) -> tuple[float, dict[str, Any], float]:
    """Wall seconds of ``python argv`` with ``tree`` first on ``PYTHONPATH``, its JSON output if any, and its
    CPU seconds (user + system)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "120"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, *argv], cwd=tree, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    parsed: dict[str, Any] = {}
    if "--json" in argv:
        parsed = json.loads(out.stdout)
    return wall, parsed, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 repeats")
    parser.add_argument("--base", help="also run the tasks on this commit, interleaved")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "startup.json")
    parser.add_argument("--gavel", action="store_true", help="also the Gavel tasks (see the module's doc)")
    parser.add_argument("--only-gavel", action="store_true", help="the Gavel tasks alone")
    args = parser.parse_args(argv)
    repeats = 3 if args.quick else args.repeats

    def chosen(trace: Path, work: Path) -> dict[str, list[str]]:
        plain = {} if args.only_gavel else tasks(trace, work)
        return {**plain, **(gavel_tasks() if args.gavel or args.only_gavel else {})}

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
            cpus: dict[str, dict[str, list[float]]] = {side: {} for side in trees}
            convert: dict[str, list[float]] = {side: [] for side in trees}
            for cmd in chosen(trace, work).values():  # warm-up: bytecode caches written, files in the page cache
                for tree in trees.values():
                    if runs_on(tree, cmd):
                        run_once(tree, cmd)
            for _ in range(repeats):
                for name, cmd in chosen(trace, work).items():
                    for side, tree in trees.items():
                        if not runs_on(tree, cmd):
                            continue
                        wall, parsed, cpu = run_once(tree, cmd)
                        walls[side].setdefault(name, []).append(wall)
                        cpus[side].setdefault(name, []).append(cpu)
                        if parsed:
                            convert[side].append(float(parsed["convert_s"]))
        finally:
            if args.base:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(trees["base"])], check=False
                )
    report: dict[str, Any] = {
        "benchmark": "bench_startup",
        "command": "python scripts/bench/bench_startup.py"
        + (f" --base {args.base}" if args.base else "")
        + (" --only-gavel" if args.only_gavel else " --gavel" if args.gavel else ""),
        "repeats": repeats,
        "commits": revs,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "bytecode_cache": True,
        "load_avg_before": [round(x, 2) for x in load_before],
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        "tasks": {name: " ".join(["python", *cmd]) for name, cmd in chosen(Path("TRACE"), Path("OUT")).items()},
    }
    for side in trees:
        figures: dict[str, Any] = {}
        for name, values in walls[side].items():
            figures[f"{name}_wall_s"] = round(statistics.median(values), 4)
            figures[f"{name}_wall_all"] = [round(v, 4) for v in values]
            figures[f"{name}_cpu_s"] = round(statistics.median(cpus[side][name]), 4)
        if convert[side]:
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
