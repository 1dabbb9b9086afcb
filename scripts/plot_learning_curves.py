"""Learning curves of training runs from their TensorBoard logs: a PNG and the points as CSV.

Usage::

    python scripts/plot_learning_curves.py runs/tiny-v1-ppo runs/v1-ppo --labels "Tiny-v1,v1" \
        --tag episode/dsr --out docs/results/agents_v1/learning_curves.png

Every run folder's ``tb/`` event files are read (the recipes log ``episode/dsr``, ``episode/jct_mean_h``,
``episode/utilisation`` and SB3's ``train/*``); each curve is the tag's values against environment steps,
with a centred moving average over ``--smooth`` points drawn over the raw points. ``--hline NAME=VALUE``
(repeatable) draws a reference level, e.g. an expert's DSR measured elsewhere. The CSV beside the PNG holds
``run, step, value`` for every point, so the figure can be redrawn.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd


def read_tag(run: Path, tag: str) -> pd.DataFrame:
    """``step, value`` of ``tag`` in every event file under ``run/tb`` (sorted by step)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    files = sorted((run / "tb").rglob("events.out.tfevents.*"))
    if not files:
        raise SystemExit(f"{run}: no TensorBoard event files under {run / 'tb'}; train with --track")
    rows = []
    for f in files:
        acc = EventAccumulator(str(f), size_guidance={"scalars": 0})
        acc.Reload()
        if tag in acc.Tags()["scalars"]:
            rows.extend((e.step, e.value) for e in acc.Scalars(tag))
    if not rows:
        raise SystemExit(f"{run}: no scalar {tag!r} logged")
    return pd.DataFrame(rows, columns=["step", "value"]).sort_values("step", kind="stable")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", type=Path, help="run folders (each with a tb/ folder)")
    p.add_argument("--labels", help="comma-separated curve labels (default: the folder names)")
    p.add_argument("--tag", default="episode/dsr", help="the scalar to plot (default: episode/dsr)")
    p.add_argument("--smooth", type=int, default=10, help="moving-average window in points (1: none)")
    p.add_argument("--hline", action="append", default=[], metavar="NAME=VALUE", help="a reference level")
    p.add_argument("--out", type=Path, required=True, help="the PNG to write (the CSV goes beside it)")
    args = p.parse_args(argv)
    labels = args.labels.split(",") if args.labels else [r.name for r in args.runs]
    if len(labels) != len(args.runs):
        p.error(f"--labels gives {len(labels)} labels for {len(args.runs)} runs")
    if args.smooth < 1:
        p.error("--smooth must be at least 1")
    refs = []
    for item in args.hline:
        name, sep, value = item.partition("=")
        try:
            refs.append((name, float(value)))
        except ValueError:
            p.error(f"--hline {item!r}: give NAME=VALUE with a number")
        if not sep:
            p.error(f"--hline {item!r}: give NAME=VALUE")
    frames = {label: read_tag(run, args.tag) for label, run in zip(labels, args.runs, strict=True)}

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    colours = plt.get_cmap("tab10")
    for i, (label, df) in enumerate(frames.items()):
        c = colours(i % 10)
        ax.plot(df["step"], df["value"], color=c, alpha=0.25, lw=0.8)
        smooth = df["value"].rolling(args.smooth, center=True, min_periods=1).mean()
        ax.plot(df["step"], smooth, color=c, lw=2, label=label)
    styles = ["--", ":", "-.", (0, (5, 1))]
    for j, (name, value) in enumerate(refs):
        ax.axhline(value, color="0.3", ls=styles[j % len(styles)], lw=1, label=name)
    ax.set_xlabel("environment steps")
    ax.set_ylabel(args.tag)
    ax.grid(alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=120)
    table = pd.concat([df.assign(run=label) for label, df in frames.items()])[["run", "step", "value"]]
    table.to_csv(args.out.with_suffix(".csv"), index=False)
    last = {label: float(np.mean(df["value"].to_numpy()[-args.smooth :])) for label, df in frames.items()}
    for label, value in last.items():
        print(f"{label}: last {args.smooth} points of {args.tag}: mean {value:.3f}")
    print(f"wrote {args.out} and {args.out.with_suffix('.csv')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
