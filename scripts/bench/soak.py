"""Soak test of the environment: many random masked steps per reward kind, with memory and pickle size sampled.

Usage::

    python scripts/bench/soak.py                       # 1,000,000 steps per reward kind (long)
    python scripts/bench/soak.py --steps 50000         # a shorter run
    python scripts/bench/soak.py -e codec=multidiscrete --rewards jct deadline

For each reward kind one env (``--env-id``, default ``HetCluster-v0``) takes ``--steps`` uniformly random valid
actions (``env.action_masks()``, per dimension for the multi-discrete codecs; seeded), resetting whenever an
episode ends. After each episode it samples the process's resident memory (RSS) and the size of
``pickle.dumps(env)`` taken at the episode's last step; every ``--sample-every`` steps it also samples the
pickle size and the RSS mid-episode. ``bench/soak.json`` (``--out``) gets, per reward: steps, episodes, RSS
first / last / max (MiB, after each episode; "first" is after the first episode), the RSS change after it,
the RSS range of the mid-episode samples, and the pickle sizes (bytes; at episode ends and mid-episode:
min / max / last).
"""

from __future__ import annotations

import argparse
import json
import pickle
import platform
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import hetgym  # noqa: F401  (registers the ids)
from hetgym.atomic import atomic_write
from hetgym.envs.rewards import REWARDS

REPO_ROOT = Path(__file__).resolve().parents[2]

MIB = 1 << 20


def rss_bytes() -> int:
    """Resident memory of this process now (``/proc/self/status``; peak RSS where there is no /proc)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if platform.system() == "Darwin" else peak * 1024)


def masked_action(env: gym.Env, rng: np.random.Generator) -> Any:
    """A uniformly random valid action (per dimension for the multi-discrete codecs)."""
    mask = env.unwrapped.action_masks()  # type: ignore[attr-defined]
    space = env.action_space
    if isinstance(space, gym.spaces.Discrete):
        return int(rng.choice(np.flatnonzero(mask)))
    assert isinstance(space, gym.spaces.MultiDiscrete)
    out, offset = [], 0
    for n in space.nvec:
        out.append(int(rng.choice(np.flatnonzero(mask[offset : offset + n]))))
        offset += int(n)
    return np.array(out, dtype=np.int64)


def parse_override(text: str) -> tuple[str, Any]:
    """``key=value`` with the value read as JSON when it parses (numbers, lists), else as a string."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not key=value (e.g. codec=multidiscrete)")
    try:
        return key, json.loads(raw)
    except json.JSONDecodeError:
        return key, raw


def soak(env_id: str, overrides: dict[str, Any], reward: str, steps: int, seed: int, sample_every: int) -> dict:
    """Run one reward kind and return its figures."""
    env = gym.make(env_id, **{**overrides, "reward": reward})
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    rss: list[int] = []
    end_sizes: list[int] = []
    mid_sizes: list[int] = []
    mid_rss: list[int] = []
    episode_steps: list[int] = []
    in_episode = 0
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        _, _, terminated, truncated, _ = env.step(masked_action(env, rng))
        in_episode += 1
        if terminated or truncated:
            end_sizes.append(len(pickle.dumps(env)))
            episode_steps.append(in_episode)
            in_episode = 0
            env.reset()
            rss.append(rss_bytes())
        elif step % sample_every == 0:
            mid_sizes.append(len(pickle.dumps(env)))
            mid_rss.append(rss_bytes())
    wall_s = time.perf_counter() - t0
    env.close()

    def summary(values: list[int]) -> dict[str, int] | None:
        return {"min": min(values), "max": max(values), "last": values[-1]} if values else None

    return {
        "steps": steps,
        "episodes": len(episode_steps),
        "steps_per_episode_mean": float(np.mean(episode_steps)) if episode_steps else None,
        "unfinished_episode_steps": in_episode,
        "wall_s": round(wall_s, 1),
        "rss_mib": {
            "first": round(rss[0] / MIB, 2),
            "last": round(rss[-1] / MIB, 2),
            "max": round(max(rss) / MIB, 2),
            "growth_after_first": round((max(rss) - rss[0]) / MIB, 2),
        }
        if rss
        else None,
        "rss_mib_mid_episode": {"min": round(min(mid_rss) / MIB, 2), "max": round(max(mid_rss) / MIB, 2)}
        if mid_rss
        else None,
        "pickle_bytes_at_episode_end": summary(end_sizes),
        "pickle_bytes_mid_episode": summary(mid_sizes),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1_000_000, help="random steps per reward kind")
    parser.add_argument("--rewards", nargs="+", default=None, help="reward kinds (default: every registered one)")
    parser.add_argument("--env-id", default="HetCluster-v0")
    parser.add_argument("-e", "--env-option", action="append", type=parse_override, default=[], metavar="KEY=VALUE")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sample-every", type=int, default=10_000, help="steps between mid-episode pickle samples")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "soak.json")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.sample_every < 1:
        parser.error("--steps and --sample-every must be >= 1")
    rewards = args.rewards or list(REWARDS.names())
    unknown = [r for r in rewards if r not in REWARDS]
    if unknown:
        parser.error(f"unknown reward(s) {unknown}; choose from {list(REWARDS.names())}")
    overrides = dict(args.env_option)
    results: dict[str, Any] = {}
    for reward in rewards:
        results[reward] = soak(args.env_id, overrides, reward, args.steps, args.seed, args.sample_every)
        print(reward, json.dumps(results[reward]), flush=True)
    report = {
        "env_id": args.env_id,
        "env_options": overrides,
        "steps_per_reward": args.steps,
        "seed": args.seed,
        "python": platform.python_version(),
        "rewards": results,
    }
    atomic_write(args.out, lambda tmp: tmp.write_text(json.dumps(report, indent=2) + "\n"))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
