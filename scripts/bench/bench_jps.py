"""Benchmark JPS's decision time for up to S = 32 jobs and K = 256 GPUs; write ``bench/jps.json``.

Usage::

    python scripts/bench/bench_jps.py [--repeats 5] [--out bench/jps.json] [--quick]

For every (S jobs, K workers) of the grid, a random heterogeneous instance
(:func:`baselines.jps.synthetic_instance`: three GPU classes) is placed with JPS at its defaults (40
sampled categories, JCT valuation with two re-matching rounds, local search), with the Hungarian
matcher on the whole grid and the auction matcher up to K = 64 (its price wars among identical GPUs
make it slow beyond). Each point is the median wall time of ``--repeats`` runs (different sampler
seeds, same instance) on one core; the JSON also records the machine, the command and the library
versions. Speeds are reported, never asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy

from baselines.jps import jps, num_categories, synthetic_instance

GRID_JOBS = (2, 4, 8, 16, 32)
GRID_WORKERS = (16, 32, 64, 128, 256)
AUCTION_MAX_WORKERS = 64


def bench(repeats: int, jobs: Sequence[int], workers: Sequence[int]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for num_workers in workers:
        for num_jobs in jobs:
            if num_jobs > num_workers:
                continue
            inst = synthetic_instance(np.random.default_rng(1000 * num_workers + num_jobs), num_jobs, num_workers)
            for matcher in ("hungarian", "auction"):
                if matcher == "auction" and num_workers > AUCTION_MAX_WORKERS:
                    continue
                times: list[float] = []
                result = None
                for rep in range(repeats):
                    t0 = time.perf_counter()
                    result = jps(inst, matcher=matcher, rng=np.random.default_rng(rep))  # type: ignore[arg-type]
                    times.append(time.perf_counter() - t0)
                assert result is not None
                rows.append(
                    {
                        "num_jobs": num_jobs,
                        "num_workers": num_workers,
                        "matcher": matcher,
                        "n_samples": 40,
                        "categories": float(num_categories(num_workers, num_jobs)),
                        "median_s": float(np.median(times)),
                        "runs_s": [round(t, 6) for t in times],
                        "avg_jct_s": result.avg_jct_s,
                    }
                )
                print(f"S={num_jobs:3d} K={num_workers:4d} {matcher:9s} median {np.median(times) * 1e3:9.2f} ms")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per point (median reported)")
    parser.add_argument("--out", type=Path, default=Path("bench/jps.json"))
    parser.add_argument("--quick", action="store_true", help="a tiny grid, one run per point (smoke test)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats={args.repeats}; give at least 1")
    repeats = 1 if args.quick else args.repeats
    rows = bench(repeats, GRID_JOBS[:2] if args.quick else GRID_JOBS, GRID_WORKERS[:1] if args.quick else GRID_WORKERS)
    payload = {
        "benchmark": "jps decision time",
        "command": " ".join(["python", *sys.argv]) if argv is None else "bench_jps.main(" + repr(list(argv)) + ")",
        "generated": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "node": platform.node(),
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "note": "single process; CPUs shared with other work, so times are indicative",
        },
        "settings": {"repeats": repeats, "instance": "baselines.jps.synthetic_instance, seed 1000*K + S"},
        "results": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{args.out.name}.", suffix=".tmp", dir=args.out.parent)
    os.close(fd)
    try:
        Path(tmp).write_text(json.dumps(payload, indent=1) + "\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, args.out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
