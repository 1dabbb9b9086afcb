"""DSR of Dancer and ElasticFlow with ``memory="history"`` (the papers' behaviour) and ``"observed"`` (a teacher).

Usage::

    python scripts/studies/observed_teachers.py                  # tiny seeds 1000-1019, default seeds 1000-1009
    python scripts/studies/observed_teachers.py --quick          # one seed of each scenario (a smoke run)
    python scripts/studies/observed_teachers.py --resume         # keep the runs already in --out, do the rest

Each run is one :func:`hetgym.experiments.run_one` (the ``hetgym simulate`` run) of an embedded scenario:
``tiny`` (``HetCluster-Tiny-v0``'s, 12 jobs on 8 GPUs) and ``default`` (``HetCluster-v0``'s, 120 jobs on
64 GPUs), on one core, one run at a time. Writes ``--out`` (default ``docs/results/observed_teachers.csv``,
one row per run: DSR, reconfigurations, decision epochs, wall time, the median decision time) and
prints the summary table of ``docs/results/observed_teachers.md``. The CSV is rewritten after every run
(to a temporary name, then renamed), so an interrupted sweep keeps what it measured and ``--resume``
goes on from there.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path
from typing import Any

import pandas as pd

from hetgym.atomic import atomic_write
from hetgym.experiments import run_one

REPO_ROOT = Path(__file__).resolve().parents[2]

POLICIES = ("dancer", "elasticflow")
MEMORIES = ("history", "observed")
SEEDS = {"tiny": list(range(1000, 1020)), "default": list(range(1000, 1010))}


def measure(scenario: str, policy: str, memory: str, seed: int) -> dict[str, Any]:
    """One run and its row."""
    started = time.perf_counter()
    result = run_one(scenario, policy, seed, policy_kwargs={"memory": memory})
    wall_s = time.perf_counter() - started
    m = result.metrics
    return {
        "scenario": scenario,
        "policy": policy,
        "memory": memory,
        "seed": seed,
        "dsr": float(m["dsr"]),
        "num_reconfigs": int(m["num_reconfigs"]),
        "num_epochs": int(result.num_epochs),
        "stalled": bool(result.stalled),
        "unfinished": int((result.jobs["status"] == "unfinished").sum()),
        "decision_ms_p50": float(m["decision_ms_p50"]),
        "wall_s": wall_s,
    }


def summary(runs: pd.DataFrame) -> str:
    """Markdown table: mean (sd) DSR, mean reconfigurations and wall time per (scenario, policy, memory)."""
    head = (
        "| scenario | policy | memory | seeds | DSR mean (sd) | DSR observed − history | reconfigs (mean) "
        "| wall s per run (mean) | decision ms (median of runs' p50) | stalled |"
    )
    lines = [head, "|" + "---|" * 10]
    for (scenario, policy), g in runs.groupby(["scenario", "policy"], sort=False):
        by = g.set_index(["memory", "seed"])["dsr"]
        for memory, h in g.groupby("memory", sort=False):
            gap = ""
            if memory == "observed" and "history" in g["memory"].values:
                diff = by.loc["observed"] - by.loc["history"]
                gap = f"{diff.mean():+.3f} (better {int((diff > 1e-9).sum())} / worse {int((diff < -1e-9).sum())})"
            lines.append(
                f"| {scenario} | {policy} | {memory} | {len(h)} | {h['dsr'].mean():.3f} ({h['dsr'].std(ddof=1):.3f}) "
                f"| {gap} | {h['num_reconfigs'].mean():.0f} | {h['wall_s'].mean():.1f} "
                f"| {h['decision_ms_p50'].median():.2f} | {int(h['stalled'].sum())} |"
            )
    return "\n".join(lines)


def save(runs: pd.DataFrame, path: Path) -> None:
    """Write the runs to ``path`` atomically."""
    atomic_write(path, lambda tmp: runs.to_csv(tmp, index=False, float_format="%.6g"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed per scenario")
    parser.add_argument("--scenarios", nargs="+", default=list(SEEDS), choices=list(SEEDS))
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "results" / "observed_teachers.csv")
    parser.add_argument("--resume", action="store_true", help="keep the runs already in --out")
    args = parser.parse_args(argv)
    run_one("tiny", "fifo", 0)  # load the tables once, outside the timed runs
    rows: list[dict[str, Any]] = []
    if args.resume and args.out.exists():
        rows = [{str(k): v for k, v in r.items()} for r in pd.read_csv(args.out).to_dict("records")]
    done = {(r["scenario"], r["policy"], r["memory"], int(r["seed"])) for r in rows}
    for scenario in args.scenarios:
        seeds = SEEDS[scenario][:1] if args.quick else SEEDS[scenario]
        for policy in POLICIES:
            for memory in MEMORIES:
                for seed in seeds:
                    if (scenario, policy, memory, seed) in done:
                        continue
                    row = measure(scenario, policy, memory, seed)
                    rows.append(row)
                    save(pd.DataFrame(rows), args.out)
                    print(
                        f"{scenario} {policy} {memory} seed {seed}: DSR {row['dsr']:.3f}, "
                        f"{row['num_reconfigs']} reconfigs, {row['wall_s']:.1f} s",
                        flush=True,
                    )
    rank = {name: i for i, name in enumerate([*SEEDS, *POLICIES, *MEMORIES])}
    rows.sort(key=lambda r: (rank[r["scenario"]], rank[r["policy"]], rank[r["memory"]], int(r["seed"])))
    runs = pd.DataFrame(rows)
    save(runs, args.out)
    print(f"\nwrote {args.out} ({platform.processor() or platform.machine()}, Python {platform.python_version()})\n")
    print(summary(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
