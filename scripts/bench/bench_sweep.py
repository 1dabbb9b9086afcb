"""Benchmark: wall time of a 200-run sweep, sequential vs a local process pool vs Ray, same grid.

The grid is 4 policies x 5 loads x 10 seeds of 40 jobs on the 64-GPU ``default`` cluster (about 0.1 s
of simulation per run). Each backend runs the whole grid into a fresh results directory
``--repeats`` times; the median wall time is reported, with the parallel speed-up over the sequential
median. For Ray, start-up (``ray.init``) and shutdown are timed apart from the sweep itself (which still
includes starting Ray's worker processes). The script also checks that the three backends produced
identical metrics. Writes ``bench/sweep.json``.

    python scripts/bench/bench_sweep.py [--workers 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

from hetgym.sweep import NONDETERMINISTIC_COLUMNS, SweepSpec, load_results, run_sweep
from hetgym.sweep.runner import init_ray

ROOT = Path(__file__).resolve().parents[2]

GRID: dict[str, Any] = {
    "name": "bench-200",
    "policies": ["fifo", "edf", "srtf", "tiresias"],
    "scenarios": ["default"],
    "loads": [0.4, 0.6, 0.8, 1.0, 1.2],
    "seeds": 10,
    "workload": {"num_jobs": 40},
}


def _deterministic(df: pd.DataFrame) -> pd.DataFrame:
    cols = [c for c in NONDETERMINISTIC_COLUMNS if c in df.columns]
    return df.drop(columns=cols).set_index("run_id").sort_index()


def _cpu_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _ray_worker_cpu_s() -> dict[int, float]:
    """CPU seconds of each live Ray worker process (they are children of Ray's raylet, not of this one)."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, float] = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ")
            if b"default_worker" not in cmd and not cmd.startswith(b"ray::"):
                continue
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            out[int(proc.name)] = (int(fields[11]) + int(fields[12])) / tick
        except (OSError, ValueError, IndexError):
            continue
    return out


def _time_sweep(
    spec: SweepSpec, backend: str, workers: int, scratch: Path, tag: str
) -> tuple[float, float, pd.DataFrame]:
    """Wall time, CPU time of this process and its (reaped) children, and the results table."""
    out = scratch / tag
    shutil.rmtree(out, ignore_errors=True)
    c0 = _cpu_s()
    t0 = time.perf_counter()
    outcome = run_sweep(spec, out, backend=backend, workers=workers)
    wall_s = time.perf_counter() - t0
    cpu_s = _cpu_s() - c0
    if outcome.ran != outcome.total or outcome.failed:
        raise RuntimeError(f"{tag}: {outcome}")
    return wall_s, cpu_s, load_results(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "sweep.json")
    parser.add_argument("--no-ray", action="store_true", help="skip Ray (e.g. when it is not installed)")
    args = parser.parse_args()

    spec = SweepSpec.from_dict(GRID)
    num_runs = len(spec.expand())
    times: dict[str, list[float]] = {"sequential": [], "local": [], "ray": [], "ray_init": [], "ray_shutdown": []}
    cpu: dict[str, list[float]] = {"sequential": [], "local": [], "ray": []}
    loads: list[float] = []
    tables: dict[str, pd.DataFrame] = {}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        scratch = Path(tmp)
        for rep in range(args.repeats):
            # Interleave the backends so that background load on shared cores hits them alike.
            loads.append(os.getloadavg()[0])
            wall, cpu_s, tables["sequential"] = _time_sweep(spec, "sequential", 1, scratch, f"seq{rep}")
            times["sequential"].append(wall)
            cpu["sequential"].append(cpu_s)
            wall, cpu_s, tables["local"] = _time_sweep(spec, "local", args.workers, scratch, f"local{rep}")
            times["local"].append(wall)
            cpu["local"].append(cpu_s)
            if not args.no_ray:
                import ray

                t0 = time.perf_counter()
                init_ray(num_cpus=args.workers)
                times["ray_init"].append(time.perf_counter() - t0)
                before = _ray_worker_cpu_s()
                wall, cpu_s, tables["ray"] = _time_sweep(spec, "ray", args.workers, scratch, f"ray{rep}")
                after = _ray_worker_cpu_s()
                times["ray"].append(wall)
                cpu["ray"].append(cpu_s + sum(c - before.get(pid, 0.0) for pid, c in after.items()))
                t0 = time.perf_counter()
                ray.shutdown()
                times["ray_shutdown"].append(time.perf_counter() - t0)
            print(f"repeat {rep}: " + ", ".join(f"{k} {v[-1]:.1f} s" for k, v in times.items() if v), flush=True)

    reference = _deterministic(tables["sequential"])
    identical = {name: bool(_deterministic(df).equals(reference)) for name, df in tables.items()}
    sim_s = tables["sequential"]["wall_s"]
    med = {k: statistics.median(v) for k, v in times.items() if v}
    backends: dict[str, Any] = {
        "sequential": {
            "wall_s": med["sequential"],
            "all_s": times["sequential"],
            "cpu_s": statistics.median(cpu["sequential"]),
            "effective_cores": statistics.median(
                c / w for c, w in zip(cpu["sequential"], times["sequential"], strict=True)
            ),
        },
        "local": {
            "workers": args.workers,
            "wall_s": med["local"],
            "all_s": times["local"],
            "cpu_s": statistics.median(cpu["local"]),
            "effective_cores": statistics.median(c / w for c, w in zip(cpu["local"], times["local"], strict=True)),
            "speedup_vs_sequential": med["sequential"] / med["local"],
        },
    }
    if times["ray"]:
        backends["ray"] = {
            "workers": args.workers,
            "wall_s": med["ray"],
            "all_s": times["ray"],
            "speedup_vs_sequential": med["sequential"] / med["ray"],
            "cpu_s": statistics.median(cpu["ray"]),
            "effective_cores": statistics.median(c / w for c, w in zip(cpu["ray"], times["ray"], strict=True)),
            "init_s": med["ray_init"],
            "shutdown_s": med["ray_shutdown"],
            "wall_with_init_and_shutdown_s": med["ray"] + med["ray_init"] + med["ray_shutdown"],
            "speedup_with_init_vs_sequential": med["sequential"] / (med["ray"] + med["ray_init"] + med["ray_shutdown"]),
            "ray_version": __import__("ray").__version__,
        }
    result = {
        "benchmark": "sweep",
        "command": f"python scripts/bench/bench_sweep.py --workers {args.workers} --repeats {args.repeats}",
        "grid": GRID,
        "num_runs": num_runs,
        "repeats": args.repeats,
        "statistic": "median over repeats (all_s lists every repeat)",
        "simulation_s_per_run": {"mean": float(sim_s.mean()), "median": float(sim_s.median())},
        "simulation_s_total_sequential": float(sim_s.sum()),
        "backends": backends,
        "metrics_identical_to_sequential": identical,
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "loadavg_1_5_15_before": load_before,
            "loadavg_1_5_15_after": os.getloadavg(),
            "loadavg_1min_at_each_repeat": loads,
            "note": "cores shared with other processes; figures vary with their load. cpu_s is the CPU time of "
            "the driver plus its pool workers, or plus Ray's worker processes (read from /proc); "
            "effective_cores = cpu_s / wall_s, the share of the machine the sweep actually got.",
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = args.out.with_suffix(".json.tmp")
    tmp_out.write_text(json.dumps(result, indent=2) + "\n")
    tmp_out.replace(args.out)
    print(json.dumps({k: result[k] for k in ("backends", "metrics_identical_to_sequential")}, indent=2))
    return 0 if all(identical.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
