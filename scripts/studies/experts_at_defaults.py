"""Every registered policy acting through the registered ids at their defaults: does any expert stall?

Usage::

    python scripts/studies/experts_at_defaults.py                                  # v1 ids, seeds 1000-1002
    python scripts/studies/experts_at_defaults.py --env-ids HetCluster-Tiny-v1 --seeds 1000 --policies dancer,fifo

For every environment id, registered policy and workload seed it runs an
:class:`~hetgym.experts.ExpertAgent` through plain ``gym.make(ENV_ID)``: no ``policy_compat``, no
override, the id's own window, cadence, count levels, round and placer, the setting a user who writes
``gym.make("HetCluster-v1")`` and plugs in an expert gets. Beside it, the same policy runs on
``Simulator.run`` on the same workload under its own physics (``expert_env_kwargs(policy)``: its round,
placer and modes), the figure the policy is benchmarked by. The page records how each episode ended
(``done``: every job finished or was rejected; ``stalled``: the simulator's watchdog; ``truncated``: the
env's action cap or this script's step limit), the jobs left unfinished, and both DSRs.

Writes ``experts_at_defaults.md`` and ``experts_at_defaults.csv`` (one row per id, policy and seed) to
``--out`` (default ``docs/results``) and exits 1 when any episode did not end ``done``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import pandas as pd

import hetgym  # noqa: F401  (registers the ids)
from hetgym.atomic import atomic_write
from hetgym.experts import SEES, ExpertAgent, expert_env_kwargs
from hetgym.sim import Simulator, make_policy
from hetgym.sim.policy import list_policies
from hetgym.sweep import map_runs
from hetgym.sweep.checks import parse_seeds

REPO_ROOT = Path(__file__).resolve().parents[2]

DEFAULT_IDS = ("HetCluster-v1", "HetCluster-Tiny-v1")


def run_one(task: tuple[str, str, int, int, str]) -> dict[str, Any]:
    """One expert episode through ``gym.make(env_id)`` and the same policy on the simulator."""
    env_id, policy, seed, max_steps, sees = task
    t0 = time.perf_counter()
    env = gym.make(env_id)
    steps, stop = 0, "step-limit"
    info: dict[str, Any] = {}
    with warnings.catch_warnings():  # "acts in an env whose physics differ from its own": the point here
        warnings.simplefilter("ignore", UserWarning)
        agent = ExpertAgent(policy, env, sees=sees)
        obs, _ = env.reset(seed=seed)
        while steps < max_steps:
            action, _ = agent.predict(obs)
            obs, _, terminated, truncated, info = env.step(action)
            steps += 1
            if terminated or truncated:
                stop = str(info.get("stop_reason", "truncated" if truncated else "done"))
                break
    env_s = time.perf_counter() - t0
    u = env.unwrapped
    jobs = u.jobs  # type: ignore[attr-defined]
    result = u.result() if stop != "step-limit" else None  # type: ignore[attr-defined]
    metrics = result.metrics if result is not None else info.get("metrics", {})
    own = gym.make(env_id, **expert_env_kwargs(policy)).unwrapped
    direct = Simulator(own.cluster, jobs, config=own.sim_config, throughput=own.throughput).run(  # type: ignore[attr-defined]
        make_policy(policy)
    )
    env.close()
    print(f"{env_id} {policy} seed {seed}: {stop}, {steps} steps, {env_s:.1f} s", flush=True)
    return {
        "env_id": env_id,
        "policy": policy,
        "seed": seed,
        "sees": sees,
        "stop": stop,
        "steps": steps,
        "unfinished": int(metrics.get("num_unfinished", -1)),
        "dsr_env": float(metrics.get("dsr", float("nan"))),
        "dsr_sim": float(direct.metrics["dsr"]),
        "sim_stalled": bool(direct.stalled),
        "env_wall_s": round(env_s, 2),
    }


def table(frame: pd.DataFrame) -> str:
    """One row per id and policy: episodes done, unfinished jobs, DSR in the env and on the simulator."""
    lines = [
        "| id | policy | episodes done | stopped otherwise | jobs unfinished | steps an episode | DSR in the env "
        "| DSR on the simulator (own physics) |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for (env_id, policy), g in frame.groupby(["env_id", "policy"], sort=False):
        other = ", ".join(f"{s} x{n}" for s, n in g.loc[g["stop"] != "done", "stop"].value_counts().items()) or "-"
        lines.append(
            f"| {env_id} | {policy} | {int((g['stop'] == 'done').sum())}/{len(g)} | {other} "
            f"| {int(g['unfinished'].clip(lower=0).sum())} | {g['steps'].mean():.0f} | {g['dsr_env'].mean():.3f} "
            f"| {g['dsr_sim'].mean():.3f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env-ids", default=",".join(DEFAULT_IDS), help="registered ids, comma-separated")
    p.add_argument("--policies", default="all", help="registered policy names, comma-separated, or 'all'")
    p.add_argument("--seeds", default="1000-1002", help="workload seeds: '1000-1002' or '1,5'")
    p.add_argument("--max-steps", type=int, default=200_000, help="step limit of an episode")
    p.add_argument("--sees", choices=SEES, default="window", help="what each expert is shown (ExpertAgent's sees=)")
    p.add_argument("--workers", type=int, default=1, help="processes (one task per id, policy and seed)")
    p.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "results")
    args = p.parse_args(argv)
    known = list(list_policies())
    policies = known if args.policies == "all" else [x.strip() for x in args.policies.split(",") if x.strip()]
    unknown = [x for x in policies if x not in known]
    if unknown:
        p.error(f"unknown policies {unknown}; registered: {', '.join(known)}")
    env_ids = [x.strip() for x in args.env_ids.split(",") if x.strip()]
    for env_id in env_ids:
        if env_id not in gym.registry:
            p.error(f"--env-ids: {env_id!r} is not registered; hetgym registers {sorted(DEFAULT_IDS)} and the v0 ids")
    try:
        seeds = parse_seeds(args.seeds)
    except ValueError:
        p.error(f"--seeds {args.seeds!r}: give a range '1000-1002' or a list '1,5'")
    if args.workers < 1 or args.max_steps < 1:
        p.error("--workers and --max-steps must be >= 1")
    if args.out.exists() and not args.out.is_dir():
        p.error(f"--out {args.out} is a file; give a folder")
    tasks = [(e, pol, s, args.max_steps, args.sees) for e in env_ids for pol in policies for s in seeds]
    t0 = time.perf_counter()
    rows = map_runs(run_one, tasks, workers=args.workers)
    wall_s = time.perf_counter() - t0
    frame = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write(args.out / "experts_at_defaults.csv", lambda tmp: frame.to_csv(tmp, index=False))
    bad = frame[frame["stop"] != "done"]
    verdict = (
        "Every episode ended `done`: no expert stalls at these ids' defaults."
        if bad.empty
        else f"{len(bad)} of {len(frame)} episodes did not end `done` (rows with `stopped otherwise`)."
    )
    command = "python scripts/studies/experts_at_defaults.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = f"""# Every registered policy at the registered ids' defaults

An `ExpertAgent` shown `sees="{args.sees}"` through plain `gym.make(ID)` (no `policy_compat`, no override),
workload seeds {args.seeds}; beside it the same policy on `Simulator.run` on the same workload under its own
physics (`expert_env_kwargs`: its round, placer and modes). Where a policy's decision cannot be expressed
at the id's defaults (a job on several GPU types, a count level the id does not offer, a running job
outside the window), the env runs what can be expressed, so the env's DSR may differ from the
simulator's; what this page checks is that every episode ends.

{verdict}

{table(frame)}

Per id, policy and seed: [experts_at_defaults.csv](experts_at_defaults.csv). Produced by
`{command.strip()}` ({wall_s:.0f} s wall, {args.workers} process(es), on {platform.machine()}, Python
{platform.python_version()}).
"""
    atomic_write(args.out / "experts_at_defaults.md", lambda tmp: tmp.write_text(text))
    print(table(frame))
    print(verdict)
    return 0 if bad.empty else 1


if __name__ == "__main__":
    raise SystemExit(main())
