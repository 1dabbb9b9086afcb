"""Figures of a policy comparison: DSR per policy, JCT CDFs, and GPU utilisation over time.

matplotlib is used with the non-interactive ``Agg`` backend, so figures render on machines with no
display. Each function writes one PNG and returns its path.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from hetgym.experiments import Comparison


def _pyplot():  # returns the matplotlib.pyplot module
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Figure, path: Path) -> Path:
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    fig.savefig(tmp, dpi=120, bbox_inches="tight")
    tmp.replace(path)
    _pyplot().close(fig)
    return path


def plot_dsr(comparison: Comparison, path: Path) -> Path:
    """Bar chart of the deadline satisfactory ratio per policy (mean, with each seed as a dot)."""
    plt = _pyplot()
    runs = comparison.runs
    policies = [p for p in comparison.policies if p in set(runs["policy"])]
    fig, ax = plt.subplots(figsize=(max(5.0, 0.7 * len(policies) + 2), 3.6))
    means = [runs.loc[runs.policy == p, "dsr"].mean() for p in policies]
    ax.bar(range(len(policies)), means, color="#4c72b0", alpha=0.8)
    for i, p in enumerate(policies):
        vals = runs.loc[runs.policy == p, "dsr"].to_numpy()
        ax.scatter(np.full(len(vals), i), vals, color="black", s=10, zorder=3)
    ax.set_xticks(range(len(policies)), policies, rotation=35, ha="right")
    ax.set_ylabel("deadline satisfactory ratio")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"DSR on scenario '{comparison.scenario.name}' ({len(comparison.seeds)} seeds)")
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def plot_jct_cdf(comparison: Comparison, path: Path) -> Path:
    """Empirical CDF of job completion times (completed jobs, all seeds pooled), log time axis."""
    plt = _pyplot()
    jobs = comparison.jobs
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    for p in comparison.policies:
        jct = np.sort(jobs.loc[(jobs.policy == p) & (jobs.status == "completed"), "jct_s"].to_numpy() / 3600)
        if jct.size:
            ax.step(jct, np.arange(1, jct.size + 1) / jct.size, where="post", label=p)
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (h)")
    ax.set_ylabel("fraction of completed jobs")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("JCT distribution")
    return _save(fig, path)


def plot_utilisation(comparison: Comparison, path: Path, seed: int | None = None) -> Path:
    """Fraction of all GPUs in use over time for each policy (one seed, the first by default)."""
    plt = _pyplot()
    seed = comparison.seeds[0] if seed is None else seed
    tl = comparison.timelines
    cluster = comparison.scenario.cluster_spec()
    types = list(cluster.gpu_types)
    fig, ax = plt.subplots(figsize=(7.0, 3.8))
    for p in comparison.policies:
        sub = tl[(tl.policy == p) & (tl.seed == seed)]
        if sub.empty:
            continue
        used = sub[types].sum(axis=1).to_numpy() / cluster.total_gpus
        ax.step(sub["time_s"].to_numpy() / 3600, used, where="post", label=p, linewidth=1)
    ax.set_xlabel("simulated time (h)")
    ax.set_ylabel("GPUs in use (fraction)")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title(f"Utilisation over time (seed {seed})")
    return _save(fig, path)


def plot_comparison(comparison: Comparison, out_dir: Path) -> list[Path]:
    """All three figures into ``out_dir``."""
    if comparison.runs.empty:
        return []
    return [
        plot_dsr(comparison, out_dir / "dsr.png"),
        plot_jct_cdf(comparison, out_dir / "jct_cdf.png"),
        plot_utilisation(comparison, out_dir / "utilisation.png"),
    ]
