"""Shared pieces of the papers' own-setting studies; a module, not a script.

``reproduce_papers.py`` runs every paper in its own setting and writes ``docs/results/papers.md``; the study of
each paper (its tasks, claims, figure and description) lives in that paper's script (``reproduce_dancer.py``,
``reproduce_hadar.py`` for Hadar and HadarE, ``reproduce_asrpt.py``, ``reproduce_jps.py``), which imports this
module from the folder it runs in. Here: the run sizes (:class:`Settings`), the unit of work (:class:`Task`), a
claim row and its verdicts, number formats, and the CSV and figure writers (temporary name, then rename).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hetgym.atomic import atomic_write
from hetgym.sim import list_policies
from hetgym.stats import Interval, t_interval


@dataclass(frozen=True)
class Settings:
    """Sizes of a run (``--quick`` and the test's tiny run shrink them)."""

    label: str
    seeds: tuple[int, ...]
    traces: tuple[str, ...]
    window_jobs: int
    hadar_jobs: int
    hadar_inventory: tuple[tuple[str, int, int], ...]
    hadare_jobs: int
    hadare_inventory: tuple[tuple[str, int, int], ...]
    asrpt_jobs: int
    asrpt_history: int
    asrpt_load: float
    jps_sizes: tuple[tuple[int, int], ...]
    jps_instances: int
    jps_betas: tuple[float, ...] = (1.0, 0.75, 0.5, 0.25, 0.0)
    jps_samples: int = 40
    jps_more_samples: int = 400


ALL_TRACES = tuple(f"cluster{i:02d}" for i in range(1, 11))


TEN_SEEDS = tuple(range(10))


GAVEL_108 = (("v100", 9, 4), ("p100", 9, 4), ("k80", 9, 4))


GAVEL_36 = (("v100", 3, 4), ("p100", 3, 4), ("k80", 3, 4))


MIXED_6 = (("v100", 2, 2), ("p100", 2, 2), ("k80", 2, 2))


def settings_for(mode: str) -> Settings:
    """``full``, ``quick`` or ``tiny`` (the test's)."""
    if mode == "full":
        return Settings(
            "full", TEN_SEEDS, ALL_TRACES, 40, 100, GAVEL_108, 6, MIXED_6, 150, 200, 0.9, ((4, 12), (5, 16), (6, 20)), 5
        )
    if mode == "quick":
        return Settings(
            "quick", TEN_SEEDS, ALL_TRACES[:4], 12, 12, GAVEL_36, 4, MIXED_6, 40, 60, 0.9, ((4, 12), (5, 16)), 1
        )
    if mode == "tiny":
        return Settings(
            "tiny", (0, 1, 2), ("cluster01",), 4, 4, GAVEL_36, 3, MIXED_6, 12, 30, 0.9, ((3, 8),), 1, (1.0, 0.0), 10, 20
        )
    raise ValueError(f"mode {mode!r}; use 'full', 'quick' or 'tiny'")


@dataclass(frozen=True)
class Task:
    """One unit of work for a worker process: ``fn(*args)`` returns the rows of ``study``. ``fn`` is a top-level
    function of a paper's script (it pickles by reference)."""

    study: str
    fn: Callable[..., list[dict]]
    args: tuple[Any, ...]
    cost: float = 1.0


def run_task(task: Task) -> tuple[str, list[dict]]:
    """Run one task (in a worker process): ``(study, rows)``."""
    return task.study, task.fn(*task.args)


def available(names: Iterable[str]) -> tuple[list[str], list[str]]:
    """(registered, not registered) among ``names``, in order."""
    known = set(list_policies())
    names = list(names)
    return [n for n in names if n in known], [n for n in names if n not in known]


def pivot(runs: pd.DataFrame, value: str, index: Sequence[str] = ("seed",)) -> pd.DataFrame:
    """Seeds x policies of ``value`` (the mean where a seed has several rows, e.g. one per trace)."""
    return runs.pivot_table(index=list(index), columns="policy", values=value, aggfunc="mean")


def claim(
    study: str, text: str, paper: str, metric: str, iv: Interval, note: str, *, unit: str = "", scope: str = ""
) -> dict[str, Any]:
    """One row of the claims table (one figure of the page)."""
    return {
        "study": study,
        "claim": text,
        "scope": scope,
        "paper": paper,
        "metric": metric,
        "estimate": iv.mean,
        "ci_low": iv.low,
        "ci_high": iv.high,
        "n_seeds": iv.n,
        "unit": unit,
        "note": note,
    }


def not_available(study: str, missing: Sequence[str]) -> dict[str, Any]:
    """The claims row that reports baselines not registered in this installation."""
    return {
        "study": study,
        "claim": "baselines not available in this installation",
        "scope": "",
        "paper": "",
        "metric": ", ".join(missing),
        "estimate": math.nan,
        "ci_low": math.nan,
        "ci_high": math.nan,
        "n_seeds": 0,
        "unit": "",
        "note": "not registered here: not run",
    }


def pct(v: float) -> str:
    return f"{100 * v:.1f}%" if math.isfinite(v) else "-"


def fmt(v: float, unit: str = "") -> str:
    """``v`` as the page shows it: a percentage, a ratio (``x``) or three decimals; ``-`` when not finite."""
    if not math.isfinite(v):
        return "-"
    if unit == "%":
        return f"{100 * v:.1f}%"
    if unit == "x":
        return f"{v:.2f}x"
    return f"{v:.3f}"


def verdict_diff(iv: Interval, what: str, other: str) -> str:
    if iv.n < 2 or not math.isfinite(iv.half_width):
        return "too few seeds for an interval"
    if iv.low > 0:
        return f"{what} is above {other}: the interval excludes zero"
    if iv.high < 0:
        return f"{what} is below {other}: the interval excludes zero"
    return f"{what} and {other} are not told apart: the interval contains zero"


def verdict_rel(iv: Interval, paper: float) -> str:
    if iv.n < 2 or not math.isfinite(iv.half_width):
        return "too few seeds for an interval"
    if iv.low > paper:
        return f"above the paper's lower figure ({100 * paper:.1f}%)"
    if iv.high < paper:
        return f"below the paper's lower figure ({100 * paper:.1f}%): not reproduced in this setting"
    return f"the interval contains the paper's lower figure ({100 * paper:.1f}%)"


def verdict_ratio(iv: Interval, who: str) -> str:
    if iv.n < 2 or not math.isfinite(iv.half_width):
        return "too few seeds for an interval"
    if iv.low > 1:
        return f"{who} is better: the interval lies above 1"
    if iv.high < 1:
        return f"{who} is worse: the interval lies below 1"
    return "no difference told apart: the interval contains 1"


def verdict_below(iv: Interval, threshold: float) -> str:
    if iv.n < 2 or not math.isfinite(iv.half_width):
        return "too few seeds for an interval"
    if iv.high <= threshold:
        return f"on average within {100 * threshold:.2f}% (the whole interval)"
    if iv.low > threshold:
        return f"on average beyond {100 * threshold:.2f}%"
    return f"the interval straddles {100 * threshold:.2f}%"


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: Path) -> None:
    """Save ``fig`` as a PNG under a temporary name, then rename it."""
    if fig._suptitle is None:
        fig.suptitle(
            "bars: mean and 95% t interval over seeds (per policy; the page's comparisons are paired)", fontsize=9
        )
    try:
        atomic_write(
            path,
            lambda tmp: fig.savefig(tmp, dpi=110, bbox_inches="tight", metadata={"Software": None}),
            keep_suffix=True,
        )
    finally:
        pyplot().close(fig)


def save_plot(fig: Any, path: Path) -> None:
    """Save a script's own figure as it is (no title added, 120 dpi) under a temporary name, then rename it."""
    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, bbox_inches="tight"), keep_suffix=True)
    finally:
        pyplot().close(fig)


def bars(ax: Any, labels: Sequence[str], ivs: Sequence[Interval], highlight: str | None = None) -> None:
    x = np.arange(len(labels))
    means = [iv.mean for iv in ivs]
    errs = [0.0 if not math.isfinite(iv.half_width) else iv.half_width for iv in ivs]
    colors = ["tab:red" if lab == highlight else "tab:blue" for lab in labels]
    ax.bar(x, means, yerr=errs, capsize=3, color=colors)
    ax.set_xticks(x, labels, rotation=45, ha="right", fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def plot_simple(runs: pd.DataFrame, metrics: Sequence[tuple[str, str]], highlight: str, path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.5 * len(metrics), 4.2), squeeze=False)
    for ax, (metric, title) in zip(axes[0], metrics, strict=True):
        pv = pivot(runs.dropna(subset=[metric]), metric)
        labels = list(pv.columns)
        bars(ax, labels, [t_interval(pv[p]) for p in labels], highlight)
        ax.set_title(title, fontsize=10)
    save_figure(fig, path)


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False, float_format="%.6g"))
