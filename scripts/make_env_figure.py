"""Render one HetCluster-v0 episode with ``render_mode="rgb_array"`` and save the picture as a PNG.

An expert (EDF by default) acts through the environment for an episode (or its first ``--hours``);
the frame shows GPU occupancy by job over time (see :mod:`hetgym.envs.render`). Usage::

    python scripts/make_env_figure.py --hours 48                 # docs/img/env_rgb_array.png
    python scripts/make_env_figure.py --policy srtf --seed 3 --out results/env/srtf.png
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import gymnasium as gym
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import hetgym  # noqa: F401  (registers the ids)
from hetgym.experts import ExpertAgent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-id", default="HetCluster-v0")
    parser.add_argument("--policy", default="edf")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hours", type=float, default=None, help="stop at this simulated time (default: the end)")
    parser.add_argument("--out", type=Path, default=Path("docs/img/env_rgb_array.png"))
    args = parser.parse_args(argv)
    env = gym.make(args.env_id, render_mode="rgb_array")
    agent = ExpertAgent(args.policy, env)
    obs, info = env.reset(seed=args.seed)
    while True:
        action, _ = agent.predict(obs)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated or (args.hours is not None and info["now_s"] >= args.hours * 3600):
            break
    frame = env.render()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=args.out.parent, suffix=".png")
    os.close(fd)
    plt.imsave(tmp, frame)
    os.chmod(tmp, 0o644)
    os.replace(tmp, args.out)
    print(
        f"wrote {args.out} ({frame.shape[1]}x{frame.shape[0]}): {args.policy} on {args.env_id} seed {args.seed}, "
        f"{info['now_s'] / 3600:.1f} simulated hours"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
