"""Time Gavel's simulator and hetgym's Gavel compatibility mode on the same traces and policies.

Gavel is not part of this project: give a checkout (``--gavel-dir``, its root holding ``scheduler/``) and
an interpreter with its dependencies (``--gavel-python``). The traces are the committed Gavel-generated
ones of ``tests/data/gavel`` (see ``scripts/reproduce/fidelity_gavel.py``): 150 jobs at t=0, 400 jobs and 3,000 jobs
(where the simulation, not start-up, dominates) arriving over time. One interleaved run: for each repeat,
each trace and each policy, Gavel's ``simulate_scheduler_with_trace.py`` (cluster 36:36:36, 4 GPUs per
server, 360 s rounds, seed 0, ECOS), ``hetgym simulate --compat gavel`` and ``hetgym gavel`` with Gavel's own
flags on the same file, each in a fresh process. Reported per (trace, policy), as medians over ``--repeats``:

* ``gavel_wall_s``: wall time of Gavel's process (interpreter start and imports included);
* ``hetgym_wall_s``: wall time of the ``hetgym simulate`` process, the same way;
* ``hetgym_gavel_wall_s``: wall time of the ``hetgym gavel`` process (Gavel's command line), the same way;
* ``hetgym_run_s``: hetgym's simulation alone (``Simulator.run`` in this process, trace already read);
* ``ratio_process`` = ``gavel_wall_s / hetgym_wall_s``, ``ratio_gavel_command`` = ``gavel_wall_s /
  hetgym_gavel_wall_s`` and ``ratio_run`` = ``gavel_wall_s / hetgym_run_s``.

The load average is recorded before and after, since the machine may be shared.

Usage::

    python scripts/bench/bench_gavel.py --gavel-dir /tmp/gavel --gavel-python /tmp/gavel-venv/bin/python
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIDELITY_SCRIPT = ROOT / "scripts" / "reproduce" / "fidelity_gavel.py"


def _load_fidelity_gavel() -> ModuleType:
    """The fidelity script, imported by file location (scripts are not a package): its Gavel checks."""
    spec = importlib.util.spec_from_file_location("fidelity_gavel", FIDELITY_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fidelity_gavel", module)
    spec.loader.exec_module(module)
    return module


_FIDELITY = _load_fidelity_gavel()
FidelityError = _FIDELITY.FidelityError
check_gavel = _FIDELITY.check_gavel
DATA = ROOT / "tests" / "data" / "gavel"
OUT = ROOT / "bench" / "gavel.json"

#: Gavel's policy name -> hetgym's policy.
POLICIES = {"fifo": "gavel-fifo", "max_min_fairness_perf": "gavel-mmf"}
TRACES = ("t0-150", "poisson-400-250s", "poisson-3000-200s")
SIMULATE = (
    "scripts/drivers/simulate_scheduler_with_trace.py -t {trace} -p {policy} -c 36:36:36 "
    "--num_gpus_per_server 4:4:4 --seed 0 --solver ECOS --time_per_iteration 360"
)


class BenchError(RuntimeError):
    """A missing Gavel checkout or interpreter, or a run that failed."""


def _timed(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise BenchError(
            f"{' '.join(cmd[:3])} ... failed (exit {proc.returncode}): {(proc.stderr or proc.stdout)[-800:]}"
        )
    return wall


def hetgym_run_s(trace: Path, policy: str) -> float:
    """hetgym's simulation of ``trace`` alone, in this process."""
    from hetgym.sim.config import SimConfig
    from hetgym.sim.engine import Simulator
    from hetgym.sim.policy import make_policy
    from hetgym.workloads.traces.pipeline import load_trace

    sim = Simulator("gavel-108", load_trace(trace, "gavel"), config=SimConfig(compat="gavel"))
    return float(sim.run(make_policy(policy)).wall_s)


def bench(scheduler: Path, python: Path, repeats: int, traces: Sequence[str]) -> dict[str, Any]:
    """Run the interleaved benchmark and return its report."""
    hetgym_cli = [sys.executable, "-m", "hetgym.cli"]
    samples: dict[tuple[str, str], dict[str, list[float]]] = {}
    load_before = os.getloadavg()
    for rep in range(repeats):
        for name in traces:
            trace = DATA / f"{name}.trace"
            for gavel_policy, policy in POLICIES.items():
                s = samples.setdefault((name, gavel_policy), {"gavel": [], "hetgym": [], "command": [], "run": []})
                s["gavel"].append(
                    _timed([str(python), *SIMULATE.format(trace=trace, policy=gavel_policy).split()], scheduler)
                )
                cli = ["simulate", "--policy", policy, "--trace", str(trace), "--trace-format", "gavel"]
                cli += ["--cluster", "gavel-108", "--compat", "gavel", "--no-progress"]
                s["hetgym"].append(_timed([*hetgym_cli, *cli], ROOT))
                flags = SIMULATE.format(trace=trace, policy=gavel_policy).split()[1:]
                s["command"].append(_timed([*hetgym_cli, "gavel", *flags], ROOT))
                s["run"].append(hetgym_run_s(trace, policy))
                times = (
                    f"gavel {s['gavel'][-1]:.2f} s, hetgym {s['hetgym'][-1]:.2f} s, hetgym gavel "
                    f"{s['command'][-1]:.2f} s (run {s['run'][-1]:.3f} s)"
                )
                print(f"repeat {rep} {name} {gavel_policy}: {times}", file=sys.stderr)
    load_after = os.getloadavg()
    rows = []
    for (name, gavel_policy), s in samples.items():
        g, h, c, r = (statistics.median(s[k]) for k in ("gavel", "hetgym", "command", "run"))
        rows.append(
            {
                "trace": name,
                "gavel_policy": gavel_policy,
                "hetgym_policy": POLICIES[gavel_policy],
                "gavel_wall_s": round(g, 3),
                "hetgym_wall_s": round(h, 3),
                "hetgym_gavel_wall_s": round(c, 3),
                "hetgym_run_s": round(r, 4),
                "ratio_process": round(g / h, 2),
                "ratio_gavel_command": round(g / c, 2),
                "ratio_run": round(g / r, 1),
                "samples": {k: [round(x, 4) for x in v] for k, v in s.items()},
            }
        )
    return {
        "what": "Gavel's simulator vs hetgym --compat gavel, same trace and policy, interleaved, medians",
        "repeats": repeats,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "rows": rows,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gavel-dir", type=Path, help="root of a Gavel checkout")
    parser.add_argument("--gavel-python", type=Path, help="interpreter with Gavel's dependencies")
    parser.add_argument("--repeats", type=int, default=3, help="runs per (trace, policy); medians reported")
    parser.add_argument("--traces", nargs="*", default=list(TRACES), help="traces of tests/data/gavel")
    parser.add_argument("--out", type=Path, default=OUT, help="JSON report to write")
    args = parser.parse_args(argv)
    try:
        if args.repeats < 1:
            raise BenchError(f"--repeats {args.repeats}: give an integer >= 1")
        missing = [t for t in args.traces if not (DATA / f"{t}.trace").is_file()]
        if missing:
            raise BenchError(
                f"unknown trace(s) {missing}; tests/data/gavel has {sorted(p.stem for p in DATA.glob('*.trace'))}"
            )
        scheduler, python = check_gavel(args.gavel_dir, args.gavel_python, need="give")
        report = bench(scheduler, python, args.repeats, args.traces)
    except (BenchError, FidelityError) as err:
        print(f"bench_gavel: error: {err}", file=sys.stderr)
        return 2
    from hetgym.atomic import atomic_write

    atomic_write(args.out, lambda p: p.write_text(json.dumps(report, indent=1) + "\n"))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
