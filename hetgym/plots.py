"""Figures of a policy comparison: DSR (or JCT) per policy, JCT CDFs, and GPU utilisation over time.

matplotlib is used with the non-interactive ``Agg`` backend, so figures render on machines with no
display. Each ``plot_*`` function writes one PNG and returns its path; the ``*_figure`` functions build
the figure without saving it (for inspection). Lines get distinct colours for any number of policies
(:func:`line_styles`), legends sit outside the axes, and the utilisation plot's time axis ends where
the last GPU goes idle.
"""

from __future__ import annotations

import colorsys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hetgym.atomic import atomic_write

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from hetgym.experiments import Comparison

_LINESTYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def _pyplot() -> Any:  # the matplotlib.pyplot module
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Figure, path: Path) -> Path:
    atomic_write(path, lambda p: fig.savefig(p, dpi=120, bbox_inches="tight", format="png"))
    _pyplot().close(fig)
    return path


def line_colours(n: int) -> list[tuple[float, float, float]]:
    """``n`` distinct RGB colours: matplotlib's ``tab10`` up to 10, ``tab20`` up to 20, else evenly spaced hues."""
    from matplotlib import colormaps

    if n <= 10:
        return [tuple(c[:3]) for c in colormaps["tab10"].colors[:n]]  # type: ignore[attr-defined]
    if n <= 20:
        return [tuple(c[:3]) for c in colormaps["tab20"].colors[:n]]  # type: ignore[attr-defined]
    return [colorsys.hsv_to_rgb(i / n, 0.75 if i % 2 else 0.95, 0.85 if i % 2 else 0.6) for i in range(n)]


def line_styles(n: int) -> list[dict[str, Any]]:
    """Keyword arguments of ``n`` lines that tell them apart: a distinct colour each, and beyond ten lines
    a line style and a marker as well."""
    styles: list[dict[str, Any]] = []
    for i, colour in enumerate(line_colours(n)):
        style: dict[str, Any] = {"color": colour}
        if n > 10:
            style.update(linestyle=_LINESTYLES[i % len(_LINESTYLES)], marker=_MARKERS[i % len(_MARKERS)], markevery=0.2)
        styles.append(style)
    return styles


def _legend_outside(ax: Any, n: int) -> None:
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=7, ncol=1 if n <= 18 else 2)


def _has_deadlines(comparison: Comparison) -> bool:
    runs = comparison.runs
    return "num_with_deadline" in runs and bool((runs["num_with_deadline"] > 0).any())


def _bar_figure(comparison: Comparison, key: str, scale: float, ylabel: str, title: str) -> Figure:
    plt = _pyplot()
    runs = comparison.runs
    policies = [p for p in comparison.policies if p in set(runs["policy"])]
    fig, ax = plt.subplots(figsize=(max(5.0, 0.7 * len(policies) + 2), 3.6))
    means = [runs.loc[runs.policy == p, key].mean() * scale for p in policies]
    ax.bar(range(len(policies)), means, color="#4c72b0", alpha=0.8)
    for i, p in enumerate(policies):
        vals = runs.loc[runs.policy == p, key].to_numpy(dtype=float) * scale
        ax.scatter(np.full(len(vals), i), vals, color="black", s=10, zorder=3)
    ax.set_xticks(range(len(policies)), policies, rotation=35, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    return fig


def dsr_figure(comparison: Comparison) -> Figure:
    """Bar chart of the deadline satisfactory ratio per policy (mean, with each seed as a dot)."""
    fig = _bar_figure(
        comparison,
        "dsr",
        1.0,
        "deadline satisfactory ratio",
        f"DSR on {comparison.describe()} ({len(comparison.seeds)} seeds)",
    )
    fig.axes[0].set_ylim(0, 1.05)
    return fig


def jct_figure(comparison: Comparison) -> Figure:
    """Bar chart of the average job completion time per policy (mean, with each seed as a dot)."""
    return _bar_figure(
        comparison,
        "jct_mean_s",
        1 / 3600,
        "average JCT (h)",
        f"Average JCT on {comparison.describe()} ({len(comparison.seeds)} seeds)",
    )


def jct_cdf_figure(comparison: Comparison) -> Figure:
    """Empirical CDF of job completion times (completed jobs, all seeds pooled), log time axis."""
    plt = _pyplot()
    jobs = comparison.jobs
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    for p, style in zip(comparison.policies, line_styles(len(comparison.policies)), strict=True):
        if jobs.empty:
            break
        jct = np.sort(jobs.loc[(jobs.policy == p) & (jobs.status == "completed"), "jct_s"].to_numpy() / 3600)
        if jct.size:
            ax.step(jct, np.arange(1, jct.size + 1) / jct.size, where="post", label=p, linewidth=1.2, **style)
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (h)")
    ax.set_ylabel("fraction of completed jobs")
    ax.grid(alpha=0.3)
    if ax.get_lines():
        _legend_outside(ax, len(ax.get_lines()))
    ax.set_title(f"JCT distribution on {comparison.describe()}", fontsize=9)
    return fig


def activity_end_s(comparison: Comparison, seed: int) -> float:
    """The simulated time at which the last GPU of any policy's run of ``seed`` went idle (0 if none worked)."""
    tl = comparison.timelines
    if tl.empty:
        return 0.0
    types = [t for t in comparison.scenario.cluster_spec().gpu_types if t in tl.columns]
    end = 0.0
    for p in comparison.policies:
        sub = tl[(tl.policy == p) & (tl.seed == seed)].sort_values("time_s")
        if sub.empty:
            continue
        used = sub[types].sum(axis=1).to_numpy()
        times = sub["time_s"].to_numpy(dtype=float)
        busy = np.flatnonzero(used > 0)
        if busy.size:
            last = busy[-1]
            end = max(end, float(times[last + 1]) if last + 1 < times.size else float(times[last]))
    return end


def utilisation_figure(comparison: Comparison, seed: int | None = None) -> Figure:
    """Fraction of all GPUs in use over time for each policy (one seed, the first by default).

    The time axis ends shortly after the last GPU goes idle, not at the end of the longest run.
    """
    plt = _pyplot()
    seed = comparison.seeds[0] if seed is None else seed
    tl = comparison.timelines
    cluster = comparison.scenario.cluster_spec()
    types = list(cluster.gpu_types)
    fig, ax = plt.subplots(figsize=(7.0, 3.8))
    for p, style in zip(comparison.policies, line_styles(len(comparison.policies)), strict=True):
        sub = tl[(tl.policy == p) & (tl.seed == seed)] if not tl.empty else tl
        if sub.empty:
            continue
        used = sub[types].sum(axis=1).to_numpy() / cluster.total_gpus
        ax.step(sub["time_s"].to_numpy() / 3600, used, where="post", label=p, linewidth=1, **style)
    end_h = activity_end_s(comparison, seed) / 3600
    if end_h > 0:
        ax.set_xlim(0, end_h * 1.02)
    ax.set_xlabel("simulated time (h)")
    ax.set_ylabel("GPUs in use (fraction)")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    if ax.get_lines():
        _legend_outside(ax, len(ax.get_lines()))
    ax.set_title(f"Utilisation over time on {comparison.describe()} (seed {seed})", fontsize=9)
    return fig


def plot_dsr(comparison: Comparison, path: Path) -> Path:
    """Write :func:`dsr_figure` to ``path``."""
    return _save(dsr_figure(comparison), path)


def plot_jct(comparison: Comparison, path: Path) -> Path:
    """Write :func:`jct_figure` to ``path``."""
    return _save(jct_figure(comparison), path)


def plot_jct_cdf(comparison: Comparison, path: Path) -> Path:
    """Write :func:`jct_cdf_figure` to ``path``."""
    return _save(jct_cdf_figure(comparison), path)


def plot_utilisation(comparison: Comparison, path: Path, seed: int | None = None) -> Path:
    """Write :func:`utilisation_figure` to ``path``."""
    return _save(utilisation_figure(comparison, seed), path)


def plot_comparison(comparison: Comparison, out_dir: Path) -> list[Path]:
    """The figures into ``out_dir``: ``dsr.png`` (``jct.png`` when no job has a deadline), ``jct_cdf.png``
    and ``utilisation.png``."""
    if comparison.runs.empty:
        return []
    first = (
        plot_dsr(comparison, out_dir / "dsr.png")
        if _has_deadlines(comparison)
        else plot_jct(comparison, out_dir / "jct.png")
    )
    return [
        first,
        plot_jct_cdf(comparison, out_dir / "jct_cdf.png"),
        plot_utilisation(comparison, out_dir / "utilisation.png"),
    ]
