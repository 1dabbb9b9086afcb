"""A uniformly random masked agent on held-out seeds: the floor a learned agent must clear.

Usage::

    python scripts/studies/random_agent.py --env-id HetCluster-v0 -e codec=jobwise -e decisions=on-change \
        --seeds 1000-1009
    python scripts/studies/random_agent.py --from-run runs/my-agent --seeds 1000-1019   # the run's env settings

At every step it picks one valid action uniformly (``env.action_masks()``; seeded per episode), plays each
workload seed to its end and prints the mean DSR and average JCT, with the per-seed rows written to
``--out`` (a CSV) when given.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd

import hetgym  # noqa: F401  (registers the ids)
from agents.common import parse_seeds
from hetgym.atomic import atomic_write

REPO_ROOT = Path(__file__).resolve().parents[2]


def parse_override(text: str) -> tuple[str, Any]:
    key, _, raw = text.partition("=")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key, value


def play(env_id: str, env_kwargs: dict[str, Any], seed: int) -> dict[str, float]:
    """One episode of the random masked agent on workload ``seed``."""
    env = gym.make(env_id, **env_kwargs)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed, options={"workload_seed": seed})
    steps = 0
    while True:
        mask = env.unwrapped.action_masks()
        _, _, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        steps += 1
        if term or trunc:
            m = info["metrics"]
            return {"seed": seed, "dsr": m["dsr"], "jct_mean_h": m["jct_mean_s"] / 3600, "steps": steps}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env-id", default="HetCluster-v0")
    p.add_argument("-e", "--env", action="append", default=[], metavar="KEY=VALUE", help="a gym.make override")
    p.add_argument("--from-run", type=Path, help="take the env id and overrides from a run folder's agent.json")
    p.add_argument("--seeds", default="1000-1009")
    p.add_argument("--out", type=Path, help="per-seed CSV")
    args = p.parse_args(argv)
    env_id, env_kwargs = args.env_id, dict(parse_override(e) for e in args.env)
    if args.from_run is not None:
        meta = json.loads((args.from_run / "agent.json").read_text())
        env_id, env_kwargs = meta["env_id"], {**meta["env_kwargs"], **env_kwargs}
    rows = [play(env_id, env_kwargs, s) for s in parse_seeds(args.seeds)]
    frame = pd.DataFrame(rows)
    if args.out is not None:
        atomic_write(args.out, lambda tmp: frame.to_csv(tmp, index=False))
    print(f"random masked agent on {env_id} {env_kwargs}, seeds {args.seeds}:")
    print(
        f"DSR {frame['dsr'].mean():.3f} +/- {frame['dsr'].std():.3f}, avg JCT {frame['jct_mean_h'].mean():.2f} h, "
        f"{frame['steps'].mean():.0f} steps per episode"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
