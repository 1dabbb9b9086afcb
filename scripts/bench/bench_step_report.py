"""What a :class:`~hetgym.sim.decision.StepReport` costs: ``Simulator.step(decision)`` beside ``step_counts``.

Two simulators of one workload are stepped in lockstep with the same decisions (an expert's allocations
turned into :class:`~hetgym.sim.decision.Decision` rows, as the environments commit them): one through
``step`` (which returns a ``StepReport``: the next view, what ended, the deadline outcomes and the busy
GPU-seconds since the previous report), the other through ``step_counts`` (the next view alone). Each
call is timed in CPU time (``time.process_time_ns``), in alternating order, and the medians per step are
reported; the difference is the report's cost. The process is pinned to one core where it can be.

Usage::

    python scripts/bench/bench_step_report.py                    # writes bench/step_report.json
    python scripts/bench/bench_step_report.py --quick --out /tmp/step_report.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from hetgym.atomic import atomic_write
from hetgym.sim import Simulator, StepReport, decision_of, make_policy, resolve_physics
from hetgym.workloads.scenario import get_scenario


def _jobs(num_jobs: int, seed: int) -> Any:
    return get_scenario("default").with_overrides(workload={"num_jobs": num_jobs}).workload.build("default", seed=seed)


def measure(policy_name: str, num_jobs: int, seed: int) -> dict[str, Any]:
    """One run of ``policy_name`` stepped both ways; CPU ns per call of each, and the steps."""
    jobs = _jobs(num_jobs, seed)
    sims = [Simulator("default", jobs), Simulator("default", jobs)]
    # One policy per simulator: each reads its own views as a caller would (a view read is sealed at the step).
    policies = [make_policy(policy_name), make_policy(policy_name)]
    for policy in policies:
        policy.reset(sims[0].cluster, rng=np.random.default_rng(seed))
    physics = resolve_physics(sims[0].config, policies[0], ticks=True)
    views = [sim.reset(physics=physics) for sim in sims]
    clock = time.process_time_ns
    report_ns: list[int] = []
    counts_ns: list[int] = []
    steps = 0
    gc.collect()
    gc.disable()  # (a collection falling in one call and not the other would be timed as the report's)
    try:
        while views[0] is not None and views[1] is not None:
            decisions = []
            for sim, policy, view in zip(sims, policies, views, strict=True):
                answer = policy.schedule(view)
                decisions.append(decision_of(answer, sim.cluster, view.active.token, view.active.allocations))
            order = (0, 1) if steps % 2 == 0 else (1, 0)
            for i in order:
                start = clock()
                if i == 0:
                    report = sims[0].step(decisions[0])
                    spent = clock() - start
                    assert isinstance(report, StepReport)
                    views[0] = report.view
                    report_ns.append(spent)
                else:
                    views[1] = sims[1].step_counts(decisions[1])
                    counts_ns.append(clock() - start)
            steps += 1
    finally:
        gc.enable()
    if (views[0] is None) != (views[1] is None):
        raise RuntimeError("the two simulators parted: step and step_counts gave different runs")
    step_us = statistics.median(report_ns) / 1e3
    counts_us = statistics.median(counts_ns) / 1e3
    return {
        "policy": policy_name,
        "num_jobs": num_jobs,
        "steps": steps,
        "step_report_cpu_us": round(step_us, 2),
        "step_counts_cpu_us": round(counts_us, 2),
        "report_cost_us": round(step_us - counts_us, 2),
        "mean_step_report_cpu_us": round(statistics.fmean(report_ns) / 1e3, 2),
        "mean_step_counts_cpu_us": round(statistics.fmean(counts_ns) / 1e3, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", nargs="+", default=["fifo", "edf", "tiresias"])
    parser.add_argument("--num-jobs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="200 jobs, one repeat (checks that it works)")
    parser.add_argument("--out", type=Path, default=Path("bench/step_report.json"))
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.num_jobs < 1:
        parser.error("give --repeats >= 1 and --num-jobs >= 1")
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})
    num_jobs, repeats = (200, 1) if args.quick else (args.num_jobs, args.repeats)
    load_start = os.getloadavg()
    rows = []
    for name in args.policies:
        runs = [measure(name, num_jobs, seed) for seed in range(repeats)]
        row = {
            key: (statistics.median(r[key] for r in runs) if isinstance(runs[0][key], float) else runs[0][key])
            for key in runs[0]
        }
        row["runs"] = repeats
        rows.append(row)
        print(
            f"{name:10s} {num_jobs} jobs: step(Decision) {row['step_report_cpu_us']:.2f} CPU-us, "
            f"step_counts {row['step_counts_cpu_us']:.2f} CPU-us, report {row['report_cost_us']:+.2f} us"
        )
    report = {
        "command": "python scripts/bench/bench_step_report.py" + (" --quick" if args.quick else ""),
        "statistic": "median CPU time per call over the run's steps, then the median over the repeats (seeds)",
        "load_average_start": [round(x, 2) for x in load_start],
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "results": rows,
    }
    atomic_write(args.out, lambda tmp: tmp.write_text(json.dumps(report, indent=1) + "\n"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
