"""Hand-written admission rules through the event-driven interface, and a hindsight probe of rejection.

Two measurements on ``HetClusterEvents-v0`` (default scenario unless ``--env-id``), per workload seed:

* ``rules``: the DSR of simple rules read off the observation: ``force`` (every job forced on any type),
  ``auto-else-best-effort`` (ElasticFlow's own choice when its admission test passes, best-effort
  otherwise), ``auto-else-force`` (the same, forced otherwise);
* ``hindsight``: ``force`` every job, then replay the workload rejecting the jobs that missed their
  deadline, ``--rounds`` times (each round also rejects the new misses): how much could admission alone
  gain if the agent knew in advance which forced jobs miss.

Usage::

    python scripts/studies/event_rules.py --seeds 1000-1019 --out /tmp/rules.json
    python scripts/studies/event_rules.py --hindsight --seeds 1000 --rounds 3
"""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import hetgym  # noqa: F401  (registers the ids)
from agents.args import parse_seeds
from hetgym.envs.events import AUTO_ACTION, REJECT_ACTION
from hetgym.sim.guidance import Directive

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env-id", default="HetClusterEvents-v0")
    parser.add_argument("--seeds", default="1000-1019")
    parser.add_argument("--hindsight", action="store_true", help="the hindsight probe instead of the rules")
    parser.add_argument("--rounds", type=int, default=3, help="hindsight: rounds of rejecting the misses")
    parser.add_argument("--out", type=Path, help="write the result as JSON")
    args = parser.parse_args(argv)
    if not 1 <= args.rounds <= 20:
        parser.error(f"--rounds {args.rounds}: give 1 to 20")
    seeds = parse_seeds(args.seeds)
    result = hindsight(args.env_id, seeds, args.rounds) if args.hindsight else rules(args.env_id, seeds)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
