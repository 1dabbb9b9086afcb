"""Benchmark the peak memory of flattening demonstrations, with and without releasing each episode.

Behaviour cloning turns its teacher's episodes into one array per observation key
(:meth:`agents.demos.Demonstrations.transitions`). Holding the episodes and the flattened arrays at once
doubles the memory of the observations, which ran the 24 GB machine out of memory with 100
``HetCluster-v1`` workloads; ``release=True`` drops each episode once copied. Each mode runs in a fresh
process, which collects the teacher's episodes, then flattens them; reported per mode, as medians of
``--repeats`` processes: the observations' size, the peak RSS after collecting and after flattening, and
their difference (what flattening added).

Two more rows measure one epoch of :func:`agents.bc.fit` on the released data with one label its mask
forbids (DAgger's aggregates always hold some): ``fit="index"`` is ``fit`` as it is, which leaves such rows
out by index; ``fit="copy"`` first takes a copy without them, as ``fit`` itself did before (the
reference, measured in the same run). Reported: the peak RSS after the fit and what the fit added.

The last row repeats ``fit="index"`` with the observations stored as ``float16`` (``--obs-dtype
float16`` of the recipes): collected, flattened and fitted at half the bytes per state.

Usage::

    python scripts/bench/bench_flatten_memory.py                      # writes bench/flatten_memory.json
    python scripts/bench/bench_flatten_memory.py --env-id HetCluster-Tiny-v1 --workloads 2 --repeats 1 --out /tmp/f.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hetgym.atomic import atomic_write

REPO_ROOT = Path(__file__).resolve().parents[2]

TEACHER = "elasticflow:memory=observed"


FIT_MODES = ("none", "index", "copy")


def one_process(
    env_id: str, workloads: int, release: bool, fit: str = "none", obs_dtype: str = "float32"
) -> dict[str, float]:
    """Collect and flatten (then fit, unless ``fit="none"``) in this process; the figures in MB."""
    if fit not in FIT_MODES:
        raise ValueError(f"fit={fit!r}: choose one of {FIT_MODES}")
    import gc
    import resource

    import numpy as np

    from agents.bc import _valid_labels, new_model
    from agents.bc import fit as bc_fit
    from agents.common import agent_env_kwargs, make_env
    from agents.demos import collect_demonstrations

    def peak_mb() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    kwargs = agent_env_kwargs(TEACHER, {}, env_id)
    demos = collect_demonstrations(env_id, kwargs, TEACHER, list(range(2000, 2000 + workloads)), obs_dtype=obs_dtype)
    gc.collect()
    obs_mb = sum(sum(v.nbytes for v in t.obs.values()) for t in demos.trajectories) / 2**20
    after_collect = peak_mb()
    data = demos.transitions(release=release)
    after_flatten = peak_mb()
    row = {
        "states": float(len(data)),
        "observations_mb": obs_mb,
        "peak_rss_after_collecting_mb": after_collect,
        "peak_rss_after_flattening_mb": after_flatten,
        "flattening_added_mb": after_flatten - after_collect,
    }
    if fit == "none":
        return row
    data.masks[0, int(data.acts[0])] = False  # one label the mask forbids
    model = new_model("maskable-ppo", make_env(env_id, kwargs), "set", 16, 0, seed=0)
    if fit == "copy":
        data = data.take(np.flatnonzero(_valid_labels(model.policy.action_space, data)))
    bc_fit(model.policy, data, epochs=1, batch_size=256)
    after_fit = peak_mb()
    row.update(peak_rss_after_fit_mb=after_fit, fit_added_mb=after_fit - after_flatten)
    return row


def measure(
    env_id: str, workloads: int, release: bool, fit: str = "none", obs_dtype: str = "float32"
) -> dict[str, float]:
    """:func:`one_process` in a fresh interpreter (the peak RSS of a process only grows)."""
    here = str(Path(__file__).resolve())
    code = (
        f"import json, runpy; one_process = runpy.run_path({here!r})['one_process']; "
        f"print(json.dumps(one_process({env_id!r}, {workloads:d}, {release!r}, {fit!r}, {obs_dtype!r})))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env-id", default="HetCluster-v1")
    p.add_argument("--workloads", type=int, default=6, help="teacher episodes to collect (>= 1)")
    p.add_argument("--repeats", type=int, default=3, help="processes per mode (>= 1)")
    p.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "flatten_memory.json")
    args = p.parse_args(argv)
    if args.workloads < 1 or args.repeats < 1:
        p.error(f"--workloads {args.workloads} --repeats {args.repeats}: both must be >= 1")
    rows = []
    cases = [(False, "none", "float32"), *((True, mode, "float32") for mode in FIT_MODES), (True, "index", "float16")]
    for release, fit, obs_dtype in cases:
        runs = [measure(args.env_id, args.workloads, release, fit, obs_dtype) for _ in range(args.repeats)]
        row: dict[str, Any] = {"release": release, "fit": fit, "obs_dtype": obs_dtype}
        for key in runs[0]:
            row[key] = round(statistics.median(r[key] for r in runs), 1)
        rows.append(row)
        print(
            f"release={release} fit={fit} {obs_dtype}: {row['states']:.0f} states, "
            f"observations {row['observations_mb']:.0f} MB, "
            f"flattening added {row['flattening_added_mb']:.0f} MB of peak RSS"
            + (f", the fit {row['fit_added_mb']:.0f} MB" if fit != "none" else ""),
            flush=True,
        )
    result = {
        "benchmark": "flatten_memory",
        "command": "python scripts/bench/bench_flatten_memory.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
        "load_average": list(os.getloadavg()),
        "date": time.strftime("%Y-%m-%d"),
        "env_id": args.env_id,
        "teacher": TEACHER,
        "workloads": args.workloads,
        "statistic": f"median of {args.repeats} processes",
        "results": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=1) + "\n"
    atomic_write(args.out, lambda tmp: tmp.write_text(text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
