"""Paper experts acting through ``HetCluster-v0`` against the same policies on ``Simulator.run``.

Usage::

    python scripts/studies/experts_in_env.py                            # held-out seeds 1000-1009, both codecs
    python scripts/studies/experts_in_env.py --seeds 1000-1001 --policies dancer,hadare --codecs sequential

For every policy and workload seed it runs three episodes on the same workload:

* ``sim``: ``Simulator.run(policy)`` on the scenario's simulator settings (the benchmark figure);
* ``env-<codec>``: an :class:`~hetgym.experts.ExpertAgent` through ``gym.make("HetCluster-v0",
  codec=..., **expert_env_kwargs(policy))`` (the policy's own physics, ``policy_compat``);
* ``env-plain``: the same agent through ``gym.make("HetCluster-v0")`` with only the policy's round (the
  registered defaults: a 16-slot window, power-of-two counts, ``sync`` only, the default placer), which
  is how experts acted in the env before placement and modes became the simulator's.

and writes ``docs/results/experts_in_env.md`` (the table) and ``experts_in_env.csv`` (one row per
policy, seed and run) to ``--out``: DSR, average JCT, how the episode ended, the largest per-job
completion-time difference to the ``sim`` run and the number of decisions the codec could not express.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd

import hetgym  # noqa: F401  (registers the ids)
from hetgym.atomic import atomic_write
from hetgym.experts import ExpertAgent, expert_env_kwargs
from hetgym.seeds import parse_seeds
from hetgym.sim import Simulator, make_policy
from hetgym.sweep import map_runs

REPO_ROOT = Path(__file__).resolve().parents[2]

PAPER_EXPERTS = ("dancer", "elasticflow", "hadar", "hadare", "asrpt", "jps")


def through_env(policy: str, seed: int, **env_kwargs: Any) -> tuple[dict[str, Any], pd.DataFrame, int, int, tuple]:
    """One ExpertAgent episode: final info, per-job frame, agent steps, inexact decisions, the jobs."""
    env = gym.make("HetCluster-v0", **env_kwargs)
    agent = ExpertAgent(policy, env)
    obs, _ = env.reset(seed=seed)
    steps = inexact = 0
    while True:
        action, _ = agent.predict(obs)
        obs, _, terminated, truncated, info = env.step(action)
        steps += 1
        if info["committed"] and info.get("target_exact") is False:
            inexact += 1
        if terminated or truncated:
            u = env.unwrapped
            return info, u.result().jobs, steps, inexact, u.jobs


def finish_gap_s(a: pd.DataFrame, b: pd.DataFrame) -> float:
    """Largest per-job completion-time difference (inf when one run finished a job the other did not)."""
    fa = a.set_index("job_id")["finish_s"].sort_index().to_numpy(dtype=float)
    fb = b.set_index("job_id")["finish_s"].sort_index().to_numpy(dtype=float)
    if len(fa) != len(fb) or not np.array_equal(np.isnan(fa), np.isnan(fb)):
        return float("inf")
    ok = ~np.isnan(fa)
    return float(np.max(np.abs(fa[ok] - fb[ok]))) if ok.any() else 0.0


def _row(policy: str, seed: int, run: str, info: dict[str, Any], gap_s: float, inexact: int, steps: int) -> dict:
    metrics = info["metrics"]
    return {
        "policy": policy,
        "seed": seed,
        "run": run,
        "dsr": metrics["dsr"],
        "jct_mean_h": metrics["jct_mean_s"] / 3600,
        "stop": info["stop_reason"],
        "max_finish_gap_s": gap_s,
        "inexact": inexact,
        "steps": steps,
    }


def run_one(task: tuple[str, int, tuple[str, ...], bool]) -> list[dict[str, Any]]:
    """Every run of one policy on one workload seed (one task of the pool)."""
    policy, seed, codecs, plain = task
    compat = expert_env_kwargs(policy)
    round_only = {"sim": {"round_s": compat["sim"]["round_s"]}} if "round_s" in compat.get("sim", {}) else {}
    sim_cfg = gym.make("HetCluster-v0", **compat).unwrapped.sim_config
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    direct = None
    runs = [(f"env-{c}", {**compat, "codec": c}) for c in codecs] + ([("env-plain", round_only)] if plain else [])
    for run_name, kwargs in runs:
        info, jobs, steps, inexact, workload = through_env(policy, seed, **kwargs)
        if direct is None:
            direct = Simulator("default", workload, config=sim_cfg).run(make_policy(policy))
            sim_info = {"metrics": direct.metrics, "stop_reason": "stalled" if direct.stalled else "done"}
            rows.append(_row(policy, seed, "sim", sim_info, 0.0, 0, direct.num_epochs))
        rows.append(_row(policy, seed, run_name, info, finish_gap_s(jobs, direct.jobs), inexact, steps))
    print(f"{policy} seed {seed}: {time.perf_counter() - t0:.1f} s", flush=True)
    return rows


def run(policies: list[str], seeds: list[int], codecs: list[str], plain: bool, workers: int = 1) -> pd.DataFrame:
    tasks = [(p, s, tuple(codecs), plain) for p in policies for s in seeds]
    parts = map_runs(run_one, tasks, workers=workers)
    return pd.DataFrame([row for part in parts for row in part])


def table(frame: pd.DataFrame) -> str:
    agg = (
        frame.groupby(["policy", "run"], sort=False)
        .agg(
            dsr=("dsr", "mean"),
            dsr_sd=("dsr", "std"),
            jct_h=("jct_mean_h", "mean"),
            done=("stop", lambda s: f"{int((s == 'done').sum())}/{len(s)}"),
            gap=("max_finish_gap_s", "max"),
            inexact=("inexact", "sum"),
        )
        .reset_index()
    )
    lines = [
        "| policy | run | DSR (mean +/- sd) | avg JCT (h) | episodes done | max per-job finish gap to `sim` (s) "
        "| inexact decisions |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in agg.itertuples():
        gap = "inf (jobs unfinished)" if r.gap == float("inf") else f"{r.gap:.3g}"
        dsr = f"{r.dsr:.3f} +/- {r.dsr_sd:.3f}"
        lines.append(f"| {r.policy} | {r.run} | {dsr} | {r.jct_h:.2f} | {r.done} | {gap} | {r.inexact} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policies", default=",".join(PAPER_EXPERTS))
    p.add_argument("--seeds", default="1000-1009")
    p.add_argument("--codecs", default="sequential,multidiscrete")
    p.add_argument("--no-plain", action="store_true", help="skip the env-plain runs")
    p.add_argument("--workers", type=int, default=1, help="processes (one task per policy and seed)")
    p.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "results")
    args = p.parse_args(argv)
    policies, seeds, codecs = args.policies.split(","), parse_seeds(args.seeds), args.codecs.split(",")
    t0 = time.perf_counter()
    if args.workers < 1:
        p.error("--workers must be >= 1")
    frame = run(policies, seeds, codecs, not args.no_plain, args.workers)
    wall_s = time.perf_counter() - t0
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write(args.out / "experts_in_env.csv", lambda tmp: frame.to_csv(tmp, index=False))
    command = "python scripts/studies/experts_in_env.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = f"""# Paper experts inside the Gym environment

Each policy on `HetCluster-v0` (the `default` scenario, 120 jobs), workload seeds {args.seeds} (held out
from every training run), three ways on the same workload: `sim` is `Simulator.run(policy)`, the
benchmark figure; `env-<codec>` is an `ExpertAgent` acting through `gym.make("HetCluster-v0", codec=...,
**expert_env_kwargs(policy))`, i.e. the policy's own physics (`policy_compat`: its round, declared placer
and execution modes, every count level, a window for every job); `env-plain` is the same agent in the
registered defaults with only the policy's round (16 slots, power-of-two counts, `sync`, the default
placer): how experts acted in the env before placement and execution modes became the simulator's.

{table(frame)}

Per policy, seed and run: [experts_in_env.csv](experts_in_env.csv). Produced by `{command.strip()}`
({wall_s:.0f} s on {platform.machine()}, Python {platform.python_version()}).
"""
    atomic_write(args.out / "experts_in_env.md", lambda tmp: tmp.write_text(text))
    print(table(frame))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
