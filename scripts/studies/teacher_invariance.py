"""Is a teacher's decision a function of what an agent observes? Its decisions when absolute time moves.

An agent's observation gives durations (slack, age, time waited, time run), never where the clock
stands on a policy's own grid of slots. This script runs a policy on the simulator and, at every decision
epoch, asks fresh copies of it for their decision on the same epoch moved later by a few seconds
(:func:`hetgym.sim.view.shift_time`: every absolute time moves, every duration stays). Where the decision
changes, it depends on something no agent observing durations can see, and no clone can agree with it
there from its observation alone. Reported per shift: the epochs whose decision changes, and how many of
them are epochs where the policy changes anything (a job's GPUs or a rejection).

With ``--dsr`` the script also runs the policy with ``slot_origin="decision"`` (Dancer and ElasticFlow:
plan as if every decision fell on a slot boundary, which makes the decision the same under any shift) on
the same workloads and reports both DSRs and their paired difference.

Usage::

    python scripts/studies/teacher_invariance.py --teacher dancer:memory=observed --scenario tiny --seeds 1000-1004
    python scripts/studies/teacher_invariance.py --teacher elasticflow:memory=observed --scenario default \\
        --seeds 1000 --dsr-seeds 1000-1019 --out docs/results/agents_v1/teacher_invariance_ef_default.json

Each run is the scenario's workload for the seed with the policy's generator seeded alike (as
``hetgym simulate``); the decision epochs are the simulator's (arrivals, completions, round ticks).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agents.args import AgentError, parse_seeds, parse_teacher
from hetgym.atomic import atomic_write
from hetgym.experiments import run_one
from hetgym.sim import Allocation, SimConfig, Simulator, make_policy
from hetgym.sim.errors import HetgymError
from hetgym.sim.policy import PolicyProtocol
from hetgym.sim.view import ClusterView, shift_time
from hetgym.workloads.scenario import get_scenario

REPO_ROOT = Path(__file__).resolve().parents[2]

#: Shifts in seconds: less than a 60 s slot, and not a divisor of it.
DEFAULT_SHIFTS_S = (7.0, 23.0, 41.0)


def _decision(allocation: Allocation) -> tuple[dict[int, tuple[tuple[str, int], ...]], frozenset[int]]:
    """What a decision does, as counts per job and the rejections (servers and object identity aside)."""
    return {jid: ja.counts for jid, ja in allocation.jobs.items()}, frozenset(allocation.reject)


def _changes(view: ClusterView, decision: tuple[dict[int, Any], frozenset[int]]) -> bool:
    """Whether a decision changes any job's GPUs or rejects one."""
    held = {jid: ja.counts for jid, ja in view.running_allocations.items()}
    return decision[0] != held or bool(decision[1])


def _fresh(name: str, knobs: dict[str, Any], cluster: Any, seed: int) -> PolicyProtocol:
    policy = make_policy(name, **knobs)
    policy.reset(cluster, rng=np.random.default_rng(seed))
    return policy


def shift_counts(
    name: str,
    knobs: dict[str, Any],
    scenario: str,
    seeds: Sequence[int],
    shifts_s: Sequence[float],
    max_epochs: int | None = None,
) -> dict[str, Any]:
    """Run ``name`` on each seed (its first ``max_epochs`` epochs, or all) and count, per shift, the epochs
    whose decision changes when time moves."""
    spec = get_scenario(scenario)
    cluster = spec.cluster_spec()
    epochs = changing = 0
    differ = dict.fromkeys(shifts_s, 0)
    differ_changing = dict.fromkeys(shifts_s, 0)
    for seed in seeds:
        jobs = spec.workload.build(cluster, seed=seed)
        config = SimConfig.from_dict({**spec.sim.__dict__, "seed": seed, "max_epochs": max_epochs})
        sim = Simulator(cluster, jobs, config=config)
        policy = _fresh(name, knobs, cluster, seed)
        view = sim.reset(round_s=getattr(policy, "round_s", None), ticks=True)
        while view is not None:
            allocation = policy.schedule(view)
            base = _decision(allocation)
            moves = _changes(view, base)
            epochs += 1
            changing += moves
            for d in shifts_s:
                other = _fresh(name, knobs, cluster, seed).schedule(shift_time(view, d))
                if _decision(other) != base:
                    differ[d] += 1
                    differ_changing[d] += moves
            view = sim.step(allocation)
    return {
        "epochs": epochs,
        "changing_epochs": changing,
        "shifts": [
            {
                "shift_s": d,
                "epochs_differ": differ[d],
                "share_of_epochs": differ[d] / epochs if epochs else 0.0,
                "changing_epochs_differ": differ_changing[d],
                "share_of_changing_epochs": differ_changing[d] / changing if changing else 0.0,
            }
            for d in shifts_s
        ],
    }


def dsr_pair(name: str, knobs: dict[str, Any], scenario: str, seeds: Sequence[int]) -> dict[str, Any]:
    """DSR of the policy as given and with ``slot_origin="decision"``, per seed, and the paired difference."""
    rows = []
    for seed in seeds:
        as_is = run_one(scenario, name, seed, policy_kwargs=knobs).metrics["dsr"]
        aligned = run_one(scenario, name, seed, policy_kwargs={**knobs, "slot_origin": "decision"}).metrics["dsr"]
        rows.append({"seed": seed, "dsr": float(as_is), "dsr_slot_origin_decision": float(aligned)})
    diffs = [r["dsr_slot_origin_decision"] - r["dsr"] for r in rows]
    out: dict[str, Any] = {
        "seeds": list(seeds),
        "dsr_mean": statistics.fmean(r["dsr"] for r in rows),
        "dsr_slot_origin_decision_mean": statistics.fmean(r["dsr_slot_origin_decision"] for r in rows),
        "paired_diff_mean": statistics.fmean(diffs),
        "runs": rows,
    }
    if len(diffs) > 1:
        out["paired_diff_sd"] = statistics.stdev(diffs)
        out["paired_diff_se"] = statistics.stdev(diffs) / len(diffs) ** 0.5
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teacher", required=True, help="policy, with knobs: dancer:memory=observed")
    parser.add_argument("--scenario", default="tiny", help="embedded scenario (tiny, default, ...)")
    parser.add_argument("--seeds", default="1000-1004", help="workload seeds of the shift test, e.g. 1000-1004")
    parser.add_argument("--shifts", default=",".join(f"{s:g}" for s in DEFAULT_SHIFTS_S), help="seconds, e.g. 7,23")
    parser.add_argument("--max-epochs", type=int, help="stop each shift-test run after this many epochs")
    parser.add_argument("--dsr-seeds", default="", help="also compare DSR with slot_origin='decision' on these")
    parser.add_argument("--out", type=Path, help="write the report as JSON here")
    args = parser.parse_args(argv)
    try:
        name, knobs = parse_teacher(args.teacher)
        seeds = parse_seeds(args.seeds)
        try:
            shifts = [float(s) for s in args.shifts.split(",") if s.strip()]
        except ValueError:
            raise AgentError(f"--shifts {args.shifts!r}: give seconds separated by commas, e.g. 7,23,41") from None
        if not shifts or not all(s > 0 and np.isfinite(s) for s in shifts):
            raise AgentError(f"--shifts {args.shifts!r}: give at least one finite shift > 0 seconds")
        started = time.perf_counter()
        report: dict[str, Any] = {"teacher": args.teacher, "scenario": args.scenario, "seeds": seeds}
        if args.max_epochs is not None and args.max_epochs < 1:
            raise AgentError(f"--max-epochs {args.max_epochs}: give an integer >= 1")
        report.update(shift_counts(name, knobs, args.scenario, seeds, shifts, args.max_epochs))
        for row in report["shifts"]:
            print(
                f"{args.teacher} on {args.scenario}: shift {row['shift_s']:g} s changes the decision at "
                f"{row['epochs_differ']} of {report['epochs']} epochs, {row['changing_epochs_differ']} of the "
                f"{report['changing_epochs']} where it changes something ({100 * row['share_of_changing_epochs']:.1f}%)"
            )
        if args.dsr_seeds:
            pair = report["dsr"] = dsr_pair(name, knobs, args.scenario, parse_seeds(args.dsr_seeds))
            print(
                f"DSR {pair['dsr_mean']:.3f} as given, {pair['dsr_slot_origin_decision_mean']:.3f} with "
                f"slot_origin='decision' (paired {pair['paired_diff_mean']:+.3f}"
                + (f", sd {pair['paired_diff_sd']:.3f}" if "paired_diff_sd" in pair else "")
                + f", {len(pair['runs'])} seeds)"
            )
        report["wall_s"] = time.perf_counter() - started
    except (HetgymError, ValueError) as err:
        print(f"teacher_invariance: error: {err}", file=sys.stderr)
        return 2
    if args.out is not None:
        atomic_write(args.out, lambda p: p.write_text(json.dumps(report, indent=1) + "\n"))
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
