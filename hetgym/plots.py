"""Figures of a policy comparison: DSR (or JCT) per policy, JCT CDFs, and GPU utilisation over time.

matplotlib is used with the non-interactive ``Agg`` backend, so figures render on machines with no
display. Each ``plot_*`` function writes one PNG and returns its path; the ``*_figure`` functions build
the figure without saving it (for inspection). They stay readable with 15 or more policies: the JCT CDF
draws the best :data:`CDF_TOP` policies in colour (:func:`line_styles`) and the others in grey, and the
utilisation figure gives each policy a small panel of its own, on a shared time axis cut where the work
happens (:func:`busy_window_end_s`), not at the end of one policy's long tail.
"""

from __future__ import annotations

import colorsys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from hetgym.atomic import atomic_write

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from hetgym.sim.cluster import ClusterSpec


class _Scenario(Protocol):
    def cluster_spec(self) -> ClusterSpec: ...


class ComparedRuns(Protocol):
    """What a figure reads of a comparison: :class:`hetgym.experiments.Comparison` is one.

    Declared here rather than imported, so that this module, which ``hetgym.experiments`` loads to save
    its figures, does not import it back.
    """

    @property
    def scenario(self) -> _Scenario: ...
    @property
    def policies(self) -> list[str]: ...
    @property
    def seeds(self) -> list[int]: ...
    @property
    def runs(self) -> pd.DataFrame: ...
    @property
    def jobs(self) -> pd.DataFrame: ...
    @property
    def timelines(self) -> pd.DataFrame: ...
    def describe(self) -> str: ...


_LINESTYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")

#: Policies drawn in colour in the JCT CDF; the rest are grey.
CDF_TOP = 6
#: The utilisation figure's time axis ends at most this many times the median policy's last busy moment.
TAIL_CUT = 1.5
#: The columns a utilisation panel's time axis is judged in (about its width in pixels as saved).
PANEL_COLUMNS = 250
#: A panel is marked as alternating when its allocation flips back within one column in this share of them.
ALTERNATING_SHARE = 0.2


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

    if n <= 20:
        palette = colormaps["tab10" if n <= 10 else "tab20"]
        # A qualitative map is a table of colours: an integer picks its entry, as its ``colors`` list would.
        rgba = [palette(i) for i in range(n)]
        return [(float(r), float(g), float(b)) for r, g, b, _ in rgba]
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


def _has_deadlines(comparison: ComparedRuns) -> bool:
    runs = comparison.runs
    return "num_with_deadline" in runs and bool((runs["num_with_deadline"] > 0).any())


def _bar_figure(comparison: ComparedRuns, key: str, scale: float, ylabel: str, title: str) -> Figure:
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


def dsr_figure(comparison: ComparedRuns) -> Figure:
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


def jct_figure(comparison: ComparedRuns) -> Figure:
    """Bar chart of the average job completion time per policy (mean, with each seed as a dot)."""
    return _bar_figure(
        comparison,
        "jct_mean_s",
        1 / 3600,
        "average JCT (h)",
        f"Average JCT on {comparison.describe()} ({len(comparison.seeds)} seeds)",
    )


def headline_order(comparison: ComparedRuns) -> list[str]:
    """The policies best first: by mean DSR (highest first) when some job has a deadline, else by mean average
    JCT (lowest first); a policy with no value last, ties in the comparison's order."""
    runs = comparison.runs
    present = [p for p in comparison.policies if not runs.empty and p in set(runs["policy"])]
    key, sign = ("dsr", -1.0) if _has_deadlines(comparison) else ("jct_mean_s", 1.0)
    if key not in runs:
        return present
    means = runs.groupby("policy", sort=False)[key].mean()

    def rank(p: str) -> float:
        value = float(means.get(p, np.nan))
        return sign * value if np.isfinite(value) else np.inf

    return sorted(present, key=rank)


def jct_cdf_figure(comparison: ComparedRuns, *, top: int = CDF_TOP) -> Figure:
    """Empirical CDF of job completion times (completed jobs, all seeds pooled), log time axis.

    With more than ``top`` policies, the ``top`` best by the headline metric (:func:`headline_order`) are drawn
    in colour and named in the legend, best first; the others are thin grey lines under one legend entry.
    """
    plt = _pyplot()
    jobs = comparison.jobs
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    order = headline_order(comparison)
    order += [p for p in comparison.policies if p not in order]
    shown = order if len(order) <= top else order[:top]
    others = [p for p in order if p not in shown]

    def cdf(p: str) -> np.ndarray:
        if jobs.empty:
            return np.empty(0)
        done = jobs.loc[(jobs.policy == p) & (jobs.status == "completed"), "jct_s"]
        return np.sort(done.to_numpy(dtype=float) / 3600)

    for i, p in enumerate(others):
        jct = cdf(p)
        if jct.size:
            label = f"{len(others)} others" if i == 0 else "_nolegend_"
            y = np.arange(1, jct.size + 1) / jct.size
            ax.step(jct, y, where="post", label=label, color="0.72", linewidth=0.8, zorder=1)
    handles = []
    for p, style in zip(shown, line_styles(len(shown)), strict=True):
        jct = cdf(p)
        if jct.size:
            y = np.arange(1, jct.size + 1) / jct.size
            handles += ax.step(jct, y, where="post", label=p, linewidth=1.6, zorder=2, **style)
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (h)")
    ax.set_ylabel("fraction of completed jobs")
    ax.grid(alpha=0.3)
    grey = [line for line in ax.get_lines() if line.get_label() == f"{len(others)} others"]
    if handles or grey:
        title = None
        if others:
            metric = "DSR" if _has_deadlines(comparison) else "average JCT"
            title = f"best {len(shown)} by {metric}"
        ax.legend(handles=handles + grey, title=title, title_fontsize=7, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=7)  # fmt: skip
    seeds = f"{len(comparison.seeds)} seeds pooled" if len(comparison.seeds) > 1 else f"seed {comparison.seeds[0]}"
    ax.set_title(f"JCT of completed jobs on {comparison.describe()} ({seeds})", fontsize=9)
    return fig


def activity_end_s(comparison: ComparedRuns, seed: int) -> float:
    """The simulated time at which the last GPU of any policy's run of ``seed`` went idle (0 if none worked)."""
    return max(activity_ends_s(comparison, seed).values(), default=0.0)


def activity_ends_s(comparison: ComparedRuns, seed: int) -> dict[str, float]:
    """``{policy: simulated time at which its last GPU went idle}`` for the runs of ``seed`` (0 if none worked)."""
    tl = comparison.timelines
    if tl.empty:
        return {}
    types = [t for t in comparison.scenario.cluster_spec().gpu_types if t in tl.columns]
    ends: dict[str, float] = {}
    for p in comparison.policies:
        sub = tl[(tl.policy == p) & (tl.seed == seed)].sort_values("time_s")
        if sub.empty:
            continue
        used = sub[types].sum(axis=1).to_numpy()
        times = sub["time_s"].to_numpy(dtype=float)
        busy = np.flatnonzero(used > 0)
        ends[p] = 0.0
        if busy.size:
            last = busy[-1]
            ends[p] = float(times[last + 1]) if last + 1 < times.size else float(times[last])
    return ends


def busy_window_end_s(comparison: ComparedRuns, seed: int) -> float:
    """Where the utilisation figure's time axis ends: when the last GPU goes idle, but at most
    :data:`TAIL_CUT` times the median of the policies' ends, so one policy's long tail does not squash the
    interval where the others work (0 if no GPU worked)."""
    ends = [e for e in activity_ends_s(comparison, seed).values() if e > 0]
    if not ends:
        return 0.0
    return min(max(ends), TAIL_CUT * float(np.median(ends)))


def _mean_utilisation(
    comparison: ComparedRuns, policy: str, seed: int, sub: Any, used: np.ndarray, end_s: float
) -> float:
    """The run's ``utilisation`` metric (GPU-seconds / GPUs x makespan window), else the timeline's mean up to
    ``end_s``."""
    runs = comparison.runs
    if not runs.empty and "utilisation" in runs:
        row = runs.loc[(runs.policy == policy) & (runs.seed == seed), "utilisation"]
        if len(row) and np.isfinite(float(row.iloc[0])):
            return float(row.iloc[0])
    times = sub["time_s"].to_numpy(dtype=float)
    if end_s <= times[0]:
        return 0.0
    spans = np.diff(np.append(np.minimum(times, end_s), end_s))
    return float((used * spans).sum() / (end_s - times[0]))


def alternating_share(times_s: np.ndarray, counts: np.ndarray, end_s: float, columns: int = PANEL_COLUMNS) -> float:
    """The share of a panel's ``columns`` (equal slices of ``[0, end_s]``) in which the allocation changes and
    changes back: a row of ``counts`` (GPUs in use per type, one row per time in ``times_s``) that differs
    from the row before it while the row after it equals the row before, all within one column's time.

    Such a panel is drawn finer than it can show: policies that re-allocate every round (Gavel's, which
    time-share GPU types between jobs round by round) switch between two allocations many times a column,
    and the stacked bands blend into a pale band spanning the two.
    """
    if end_s <= 0 or len(times_s) < 3:
        return 0.0
    column_s = end_s / columns
    before, row, after = counts[:-2], counts[1:-1], counts[2:]
    flips = (row != before).any(axis=1) & (after == before).all(axis=1) & (times_s[2:] - times_s[:-2] < column_s)
    at = times_s[1:-1][flips]
    return len({int(t // column_s) for t in at if t <= end_s}) / columns


def utilisation_figure(comparison: ComparedRuns, seed: int | None = None) -> Figure:
    """GPUs in use over time, one small panel per policy (one seed, the first by default).

    Each panel stacks the GPU types (fractions of the whole cluster) and is titled with the run's mean
    utilisation. The panels share the time axis, which ends at :func:`busy_window_end_s`; a panel whose run
    goes on past it says when its last GPU goes idle. A panel whose allocation alternates faster than it can
    draw (:func:`alternating_share` at least :data:`ALTERNATING_SHARE`) shows pale bands: its title is marked
    with ``*`` and the figure's caption explains them.
    """
    plt = _pyplot()
    seed = comparison.seeds[0] if seed is None else seed
    tl = comparison.timelines
    cluster = comparison.scenario.cluster_spec()
    types = list(cluster.gpu_types)
    policies = list(comparison.policies)
    n = max(len(policies), 1)
    ncols = min(n, 5 if n > 8 else 4)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(2.5 * ncols + 1.2, 1.55 * nrows + 0.9), sharex=True, sharey=True, squeeze=False
    )
    end_s = busy_window_end_s(comparison, seed)
    ends = activity_ends_s(comparison, seed)
    colours = dict(zip(types, line_colours(len(types)), strict=True))
    alternating: list[str] = []
    for i, ax in enumerate(axes.flat):
        if i >= len(policies):
            ax.set_axis_off()
            continue
        p = policies[i]
        sub = tl[(tl.policy == p) & (tl.seed == seed)].sort_values("time_s") if not tl.empty else tl
        ax.grid(alpha=0.3)
        if sub.empty:
            ax.set_title(f"{p}: no timeline", fontsize=8)
            continue
        hours = sub["time_s"].to_numpy(dtype=float) / 3600
        present = [t for t in types if t in sub.columns]
        fractions = [sub[t].to_numpy(dtype=float) / cluster.total_gpus for t in present]
        ax.stackplot(hours, *fractions, step="post", colors=[colours[t] for t in present], labels=present, linewidth=0)
        used = np.sum(fractions, axis=0)
        mean = _mean_utilisation(comparison, p, seed, sub, used, ends.get(p, 0.0))
        counts = sub[present].to_numpy(dtype=float)
        mark = ""
        if alternating_share(hours * 3600, counts, end_s) >= ALTERNATING_SHARE:
            alternating.append(p)
            mark = " *"
        ax.set_title(f"{p}  (mean {mean:.2f}){mark}", fontsize=8)
        if end_s > 0 and ends.get(p, 0.0) > end_s * 1.02:
            ax.text(0.98, 0.92, f"idle at {ends[p] / 3600:,.0f} h \u2192", transform=ax.transAxes, ha="right",
                    va="top", fontsize=7, color="0.25")  # fmt: skip
        ax.tick_params(labelsize=7)
    if end_s > 0:
        axes[0, 0].set_xlim(0, end_s / 3600 * 1.02)
    axes[0, 0].set_ylim(0, 1.05)
    for ax in axes[-1, :]:
        ax.set_xlabel("simulated time (h)", fontsize=8)
    for row in axes:
        row[0].set_ylabel("GPUs in use", fontsize=8)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[t]) for t in types]
    width, height = fig.get_size_inches()
    fig.legend(handles, types, loc="lower center", ncol=len(types), fontsize=7, frameon=False)
    title = (
        f"GPUs in use by type (fraction of all {cluster.total_gpus}) on {comparison.describe()}, seed {seed}; "
        "mean: over the run's makespan"
    )
    if alternating:
        title += (
            ". * Pale bands: the allocation switches back and forth between rounds (time-sharing GPU types "
            "between jobs round by round) faster than the panel can draw, so the colours blend; the band spans "
            "the GPUs in use in the alternating rounds"
        )
    lines = textwrap.wrap(title, width=int(width * 15))
    fig.suptitle("\n".join(lines), fontsize=9, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0.3 / height, 1, 1 - (0.16 * len(lines) + 0.04) / height))
    return fig


def plot_dsr(comparison: ComparedRuns, path: Path) -> Path:
    """Write :func:`dsr_figure` to ``path``."""
    return _save(dsr_figure(comparison), path)


def plot_jct(comparison: ComparedRuns, path: Path) -> Path:
    """Write :func:`jct_figure` to ``path``."""
    return _save(jct_figure(comparison), path)


def plot_jct_cdf(comparison: ComparedRuns, path: Path) -> Path:
    """Write :func:`jct_cdf_figure` to ``path``."""
    return _save(jct_cdf_figure(comparison), path)


def plot_utilisation(comparison: ComparedRuns, path: Path, seed: int | None = None) -> Path:
    """Write :func:`utilisation_figure` to ``path``."""
    return _save(utilisation_figure(comparison, seed), path)


def plot_comparison(comparison: ComparedRuns, out_dir: Path) -> list[Path]:
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
