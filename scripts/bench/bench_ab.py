"""A/B benchmark: the same benchmark script on two commits, interleaved, in one run.

Usage::

    python scripts/bench/bench_ab.py --base HEAD~1                         # bench.py --quick and bench_env.py --quick
    python scripts/bench/bench_ab.py --base 9c63823 --rounds 3 --out bench/ab.json

Each commit is checked out into a temporary git worktree; the benchmarks then run alternately (base,
head, base, head, ...) ``--rounds`` times, each in a fresh interpreter whose ``PYTHONPATH`` puts that
worktree first, so both sides see the same machine load. Every figure of the benchmarks' JSON output
that measures time (keys ending in ``_s``) or a rate (``_per_s``) is collected per round; the output has
the per-round values, the medians and the ratio head / base of the medians, with the load average at the
start and the end of the run and the CPUs the run was allowed (``taskset -c 1 python ...`` pins both
sides). The worktrees are removed at the end (also on an error or an interrupt); the output file is
written atomically.
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
from pathlib import Path
from typing import Any

from hetgym.atomic import atomic_write

REPO_ROOT = Path(__file__).resolve().parents[2]

BENCHES = {
    "bench": ["scripts/bench/bench.py", "--quick"],
    "bench_env": ["scripts/bench/bench_env.py", "--quick"],
}


def flatten(obj: Any, prefix: str = "") -> dict[str, float]:
    """Timing and rate figures of a benchmark's JSON output, by dotted path."""
    out: dict[str, float] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.update(flatten(v, f"{prefix}[{_label(v, i)}]"))
    elif isinstance(obj, int | float) and not isinstance(obj, bool):
        leaf = prefix.rsplit(".", 1)[-1]
        if leaf.endswith(("_s", "_per_s", "_per_cpu_s")) and not leaf.endswith("_all"):
            out[prefix] = float(obj)
    return out


def _label(item: Any, index: int) -> str:
    """A list entry's name from its identifying fields (policy, cluster, codec, ...), else its index."""
    if isinstance(item, dict):
        parts = [str(item[k]) for k in ("policy", "cluster", "codec", "queue_slots", "num_jobs") if k in item]
        if parts:
            return "/".join(parts)
    return str(index)


def run_bench(tree: Path, argv: list[str], out: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    script = tree / argv[0]
    if not script.is_file():  # a commit from before scripts/bench/ held its benchmarks in scripts/
        script = tree / "scripts" / script.name
    cmd = [sys.executable, str(script), *argv[1:], "--out", str(out)]
    subprocess.run(cmd, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
    return flatten(json.loads(out.read_text()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD~1", help="the reference commit")
    parser.add_argument("--head", default="HEAD", help="the commit measured against it")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--benches", nargs="+", default=list(BENCHES), choices=list(BENCHES))
    parser.add_argument("--out", type=Path, default=Path("bench/ab.json"))
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    revs = {}
    for side in ("base", "head"):
        ref = getattr(args, side)
        proc = subprocess.run(["git", "rev-parse", "--short", ref], cwd=REPO_ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            parser.error(f"--{side} {ref!r} is not a commit of this repository: {proc.stderr.strip()}")
        revs[side] = proc.stdout.strip()
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="hetgym-ab-") as tmp:
        trees = {side: Path(tmp) / side for side in revs}
        try:
            for side, rev in revs.items():
                subprocess.run(
                    ["git", "worktree", "add", "--detach", "-q", str(trees[side]), rev], cwd=REPO_ROOT, check=True
                )
            values: dict[str, dict[str, dict[str, list[float]]]] = {b: {"base": {}, "head": {}} for b in args.benches}
            for r in range(args.rounds):
                for bench in args.benches:
                    for side in ("base", "head"):
                        print(f"round {r + 1}/{args.rounds}: {bench} on {side} ({revs[side]})", flush=True)
                        figures = run_bench(trees[side], BENCHES[bench], Path(tmp) / f"{bench}-{side}.json")
                        for key, v in figures.items():
                            values[bench][side].setdefault(key, []).append(v)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO_ROOT, check=False)
    report: dict[str, Any] = {
        "base": revs["base"],
        "head": revs["head"],
        "rounds": args.rounds,
        "commands": {b: " ".join(BENCHES[b]) for b in args.benches},
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        # The 1-, 5- and 15-minute load averages as the run started and ended (the figures are CPU and wall
        # times on a machine others may share).
        "load_average": {
            "start": [round(x, 2) for x in load_start],
            "end": [round(x, 2) for x in os.getloadavg()],
        },
        "affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "figures": {},
    }
    for bench in args.benches:
        for key in sorted(values[bench]["base"]):
            base_v, head_v = values[bench]["base"][key], values[bench]["head"].get(key, [])
            if not head_v:
                continue
            b, h = statistics.median(base_v), statistics.median(head_v)
            report["figures"][f"{bench}:{key}"] = {
                "base": base_v,
                "head": head_v,
                "base_median": b,
                "head_median": h,
                "head_over_base": h / b if b else None,
            }
    atomic_write(args.out, lambda tmp: tmp.write_text(json.dumps(report, indent=1) + "\n"))
    for key, fig in report["figures"].items():
        ratio = fig["head_over_base"]
        print(f"{key}: base {fig['base_median']:.4g}, head {fig['head_median']:.4g}, head/base {ratio:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
