"""Hand-written admission rules and constant actions through the event-driven interface, and a hindsight probe.

Three measurements on ``HetClusterEvents-v0`` (default scenario unless ``--env-id``), per workload seed:

* ``rules``: the DSR of simple rules read off the observation: ``force`` (every job forced on any type),
  ``auto-else-best-effort`` (ElasticFlow's own choice when its admission test passes, best-effort
  otherwise), ``auto-else-force`` (the same, forced otherwise);
* ``hindsight``: ``force`` every job, then replay the workload rejecting the jobs that missed their
  deadline, ``--rounds`` times (each round also rejects the new misses): how much could admission alone
  gain if the agent knew in advance which forced jobs miss;
* ``constant`` (``--constant``): every action of the table taken at every decision (a masked-out one as the
  environment takes it, :meth:`~hetgym.envs.events.actions.EventActions.fallback`), with ``probe=False``
  (nothing reads the observation), each action's DSR with its 95% t interval and its paired differences
  from ``force`` and from action 0 (ElasticFlow) over the seeds. On ``HetClusterEvents-v1`` the first
  ``2T + 4`` actions are v0's table. ``--jobs N`` runs the episodes in ``N`` processes (same figures);
  ``--out`` is rewritten after every action and an existing one with the same env and seeds is resumed.

Usage::

    python scripts/studies/event_rules.py --seeds 1000-1019 --out /tmp/rules.json
    python scripts/studies/event_rules.py --hindsight --seeds 1000 --rounds 3
    python scripts/studies/event_rules.py --constant --env-id HetClusterEvents-v1 --seeds 1000-1019 --out c.json
    python scripts/studies/event_rules.py --table c.json
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import hetgym  # noqa: F401  (registers the ids)
from agents.args import parse_seeds
from hetgym.envs.events import AUTO_ACTION, REJECT_ACTION
from hetgym.sim.guidance import Directive
from hetgym.stats import paired_interval, t_interval

RULES = ("force", "auto-else-best-effort", "auto-else-force")


def rule(name: str, env: Any) -> Callable[[dict[str, np.ndarray]], int]:
    """The action of rule ``name`` for an observation of ``env`` (its ``Dict`` observation)."""
    acts = env.unwrapped.actions
    force = acts.index(Directive("force"))
    best_effort = acts.index(Directive("best_effort"))

    def act(obs: dict[str, np.ndarray]) -> int:
        admissible = bool(obs["job"][3] > 0.5)  # ElasticFlow's admission test on any type
        if name == "force":
            return force
        if name == "auto-else-best-effort":
            return AUTO_ACTION if admissible else best_effort
        if name == "auto-else-force":
            return AUTO_ACTION if admissible else force
        raise ValueError(f"unknown rule {name!r}; choose one of {RULES}")

    return act


def play(
    env_id: str, seed: int, make_act: Callable[[Any], Callable[[dict[str, np.ndarray]], int]]
) -> tuple[float, Any]:
    """One episode on workload ``seed`` with the policy ``make_act(env)``; the DSR and the per-job table."""
    env = gym.make(env_id, probe=True)
    act = make_act(env)
    obs, info = env.reset(seed=seed, options={"workload_seed": seed})
    while True:
        action = act(obs)
        if not info["action_mask"][action]:
            action = AUTO_ACTION
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return float(info["metrics"]["dsr"]), env.unwrapped.result().jobs  # type: ignore[attr-defined]


def rules(env_id: str, seeds: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in RULES:
        per_seed = []
        for seed in seeds:
            dsr, _ = play(env_id, seed, functools.partial(rule, name))
            per_seed.append(dsr)
        out[name] = {"dsr": float(np.mean(per_seed)), "per_seed": per_seed}
        print(json.dumps({"rule": name, "dsr": out[name]["dsr"]}), flush=True)
    return out


def hindsight(env_id: str, seeds: list[int], rounds: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for seed in seeds:
        rejected: set[int] = set()
        history = []
        for _ in range(rounds + 1):

            def make_act(env: Any, rejected: set[int] = rejected) -> Callable[[dict[str, np.ndarray]], int]:
                force = rule("force", env)
                return lambda obs: REJECT_ACTION if env.unwrapped.job_id in rejected else force(obs)

            dsr, jobs = play(env_id, seed, make_act)
            history.append(dsr)
            missed = jobs[(jobs["status"] != "rejected") & ~jobs["met_deadline"].astype(bool) & jobs["has_deadline"]]
            if missed.empty:
                break
            rejected |= set(missed["job_id"].tolist())
        out[str(seed)] = history
        print(json.dumps({"seed": seed, "dsr_by_round": history}), flush=True)
    return out


def constant_episode(env_id: str, action: int, seed: int) -> tuple[float, float]:
    """The DSR of ``action`` at every decision on workload ``seed``, and the episode's CPU seconds."""
    env = gym.make(env_id, probe=False)
    t0 = time.process_time()
    env.reset(seed=seed, options={"workload_seed": seed})
    while True:
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return float(info["metrics"]["dsr"]), time.process_time() - t0


def _constant_job(args: tuple[str, int, int]) -> tuple[float, float]:
    return constant_episode(*args)


def constant_order(n: int, force: int) -> list[int]:
    """Action 0 and ``force`` first (every row is compared with them), then the others in table order."""
    return [AUTO_ACTION, force, *(a for a in range(n) if a not in (AUTO_ACTION, force))]


def constant(
    env_id: str, seeds: list[int], jobs: int, out: Path | None, actions: list[int] | None = None
) -> dict[str, Any]:
    acts = gym.make(env_id).unwrapped.actions  # type: ignore[attr-defined]
    force = acts.index(Directive("force"))
    result: dict[str, Any] = {"env_id": env_id, "seeds": seeds, "v0_actions": 2 * acts.num_types + 4, "rows": {}}
    if out is not None and out.exists():
        old = json.loads(out.read_text())
        if old.get("env_id") == env_id and old.get("seeds") == seeds:
            result["rows"] = old["rows"]  # resume: the actions measured already are kept
    pool = None
    if jobs > 1:
        import multiprocessing

        pool = multiprocessing.get_context("spawn").Pool(jobs)
    try:
        order = constant_order(acts.n, force)
        if actions is not None:
            bad = [a for a in actions if not 0 <= a < acts.n]
            if bad:
                raise SystemExit(f"--actions {bad}: {env_id} has actions 0 to {acts.n - 1}")
            order = [a for a in order if a in (AUTO_ACTION, force)] + [
                a for a in actions if a not in (AUTO_ACTION, force)
            ]
        for a in order:
            if str(a) in result["rows"]:
                continue
            tasks = [(env_id, a, seed) for seed in seeds]
            got = pool.map(_constant_job, tasks) if pool is not None else [_constant_job(t) for t in tasks]
            result["rows"][str(a)] = {
                "action": a,
                "directive": acts.describe(a),
                "per_seed": [d for d, _ in got],
                "cpu_s": [c for _, c in got],
            }
            print(json.dumps({"action": a, "directive": acts.describe(a), "dsr": float(np.mean([d for d, _ in got]))}))
            if out is not None:
                out.write_text(json.dumps(result, indent=1) + "\n")
    finally:
        if pool is not None:
            pool.close()
    result["summary"] = summarise(result)
    return result


def summarise(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Each action's DSR [95% t interval] and paired difference from ``force`` and from action 0."""
    rows = result["rows"]
    force_row = next((r for r in rows.values() if r["directive"] == "force"), None)
    auto_row = rows.get(str(AUTO_ACTION))
    out = []
    for key in sorted(rows, key=int):
        r = rows[key]
        dsr = t_interval(r["per_seed"])
        line: dict[str, Any] = {
            "action": r["action"],
            "directive": r["directive"],
            "in_v0": r["action"] < result["v0_actions"],
            "dsr": dsr.mean,
            "dsr_ci": [dsr.low, dsr.high],
            "cpu_s_per_episode": float(np.median(r["cpu_s"])),
        }
        for name, ref in (("force", force_row), ("auto", auto_row)):
            if ref is not None:
                diff = paired_interval(r["per_seed"], ref["per_seed"])
                line[f"diff_{name}"] = diff.mean
                line[f"diff_{name}_ci"] = [diff.low, diff.high]
        out.append(line)
    return out


def table(result: dict[str, Any]) -> str:
    """The summary as a markdown table."""

    def ci(lo_hi: list[float]) -> str:
        return "[" + ", ".join("n/a" if not np.isfinite(x) else f"{x:+.3f}" for x in lo_hi) + "]"

    lines = [
        "| action | directive | v0 | DSR [95% CI] | vs force [95% CI] | vs action 0 [95% CI] |",
        "|---|---|---|---|---|---|",
    ]
    for r in summarise(result):
        lo, hi = r["dsr_ci"]
        lines.append(
            f"| {r['action']} | {r['directive']} | {'yes' if r['in_v0'] else ''} | {r['dsr']:.3f} [{lo:.3f}, {hi:.3f}]"
            f" | {r.get('diff_force', float('nan')):+.3f} {ci(r.get('diff_force_ci', [np.nan, np.nan]))}"
            f" | {r.get('diff_auto', float('nan')):+.3f} {ci(r.get('diff_auto_ci', [np.nan, np.nan]))} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-id", default="HetClusterEvents-v0")
    parser.add_argument("--seeds", default="1000-1019")
    parser.add_argument("--hindsight", action="store_true", help="the hindsight probe instead of the rules")
    parser.add_argument("--rounds", type=int, default=3, help="hindsight: rounds of rejecting the misses")
    parser.add_argument("--constant", action="store_true", help="every action at every decision instead of the rules")
    parser.add_argument("--jobs", type=int, default=1, help="constant: episodes run in this many processes")
    parser.add_argument("--actions", help="constant: these actions (e.g. '8,10-15') after 0 and force, in this order")
    parser.add_argument("--table", type=Path, help="print the markdown table of a --constant JSON and stop")
    parser.add_argument("--out", type=Path, help="write the result as JSON")
    args = parser.parse_args(argv)
    if not 1 <= args.rounds <= 20:
        parser.error(f"--rounds {args.rounds}: give 1 to 20")
    if not 1 <= args.jobs <= 64:
        parser.error(f"--jobs {args.jobs}: give 1 to 64")
    if args.hindsight and args.constant:
        parser.error("give --hindsight or --constant, not both")
    if args.table is not None:
        if not args.table.exists():
            parser.error(f"--table {args.table}: no such file; write one with --constant --out")
        print(table(json.loads(args.table.read_text())))
        return 0
    seeds = parse_seeds(args.seeds)
    if args.constant:
        actions = None if args.actions is None else parse_seeds(args.actions)
        result = constant(args.env_id, seeds, args.jobs, args.out, actions)
        print(table(result))
    elif args.hindsight:
        result = hindsight(args.env_id, seeds, args.rounds)
    else:
        result = rules(args.env_id, seeds)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
