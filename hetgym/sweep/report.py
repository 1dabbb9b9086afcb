"""Turning a sweep's results table into the standard figures and a summary table.

The figures plot DSR and average JCT against the load (or another swept axis) with one line per
policy: the mean over seeds, with a band of one standard deviation either side (error bars when the
x axis is categorical). Every other swept axis (scenario, cluster, tightness, ...) becomes a panel. The
summary table has one row per (panel, x, policy) with each headline metric's mean, standard deviation
and the number of successful and failed seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hetgym.plots import _pyplot, _save
from hetgym.sweep.store import atomic_write

#: Metrics of the summary table: (column, label, scale).
SUMMARY_METRICS: tuple[tuple[str, str, float], ...] = (
    ("dsr", "DSR", 1.0),
    ("jct_mean_s", "avg JCT (h)", 1 / 3600),
    ("jct_p95_s", "p95 JCT (h)", 1 / 3600),
    ("makespan_s", "makespan (h)", 1 / 3600),
    ("utilisation", "utilisation", 1.0),
)
#: Preferred x axes, in order: the first that varies in the table is used by default.
X_CANDIDATES: tuple[str, ...] = (
    "workload.target_utilisation",
    "workload.arrival_rate_per_h",
    "num_gpus",
    "cluster_scale",
)
_X_LABELS = {
    "workload.target_utilisation": "offered load (utilisation)",
    "workload.arrival_rate_per_h": "arrival rate (jobs/h)",
    "num_gpus": "cluster size (GPUs)",
    "cluster_scale": "cluster scale",
}
#: Configuration columns never used as panels: the policy (one line each), its knobs (part of the
#: policy label), and the seed (the spread).
_NOT_FACETS = {"run_id", "status", "policy", "policy_name", "seed"}


def config_columns(df: pd.DataFrame) -> list[str]:
    """The configuration columns of a results table."""
    fixed = ["policy", "policy_name", "scenario", "cluster", "cluster_scale", "num_gpus", "seed"]
    return [c for c in fixed if c in df.columns] + [
        c for c in df.columns if c.startswith(("workload.", "sim.", "policy."))
    ]


def varying(df: pd.DataFrame, columns: Sequence[str]) -> list[str]:
    """The columns among ``columns`` that take more than one value (missing values count as one)."""
    return [c for c in columns if df[c].astype(str).nunique(dropna=False) > 1]


def choose_x(df: pd.DataFrame, x: str | None = None) -> str | None:
    """The x axis: ``x`` if given, else the first varying of :data:`X_CANDIDATES`, else any varying axis."""
    if x is not None:
        if x not in df.columns:
            raise ValueError(f"--x {x!r} is not a column of the results; swept columns: {varying_axes(df)}")
        return x
    for c in X_CANDIDATES:
        if c in df.columns and c in varying(df, [c]):
            return c
    axes = varying_axes(df)
    return axes[0] if axes else None


def varying_axes(df: pd.DataFrame) -> list[str]:
    """Configuration columns that vary, other than the policy and the seed."""
    return [c for c in varying(df, config_columns(df)) if c not in _NOT_FACETS and not c.startswith("policy.")]


def facet_columns(df: pd.DataFrame, x: str | None) -> list[str]:
    """Varying axes that split the figure into panels (those that follow from the x value are left out)."""
    out: list[str] = []
    for c in varying_axes(df):
        if c == x or (c == "num_gpus" and {"cluster", "cluster_scale"} & set(varying_axes(df))):
            continue
        if x is not None and (df.groupby(df[x].astype(str))[c].nunique(dropna=False) <= 1).all():
            continue  # determined by x (e.g. cluster_scale when x is num_gpus)
        out.append(c)
    return out


def summarize(df: pd.DataFrame, x: str | None = None) -> pd.DataFrame:
    """One row per (panel, x, policy): mean and standard deviation over seeds of each metric, and counts."""
    if df.empty:
        return pd.DataFrame()
    x = choose_x(df, x)
    keys = [*facet_columns(df, x), *([x] if x else []), "policy"]
    ok = df[df["status"] == "ok"] if "status" in df.columns else df
    rows: list[dict[str, Any]] = []
    groups = df.groupby([df[k].astype(str) if df[k].dtype == object else df[k] for k in keys], sort=False, dropna=False)
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        good = ok.loc[ok.index.intersection(group.index)]
        row: dict[str, Any] = dict(zip(keys, key, strict=True))
        row["n_ok"] = len(good)
        row["n_failed"] = len(group) - len(good)
        for col, _, _ in SUMMARY_METRICS:
            if col in good.columns:
                values = pd.to_numeric(good[col], errors="coerce")
                row[f"{col}_mean"] = values.mean()
                row[f"{col}_std"] = values.std(ddof=0) if values.notna().sum() > 1 else math.nan
        rows.append(row)
    out = pd.DataFrame(rows)
    sort_keys = [k for k in keys if k != "policy"]
    if sort_keys:
        out = out.sort_values(sort_keys, kind="stable").reset_index(drop=True)
    return out


def _numeric(series: pd.Series) -> bool:
    return bool(pd.api.types.is_numeric_dtype(series)) and not pd.api.types.is_bool_dtype(series)


def plot_metric(df: pd.DataFrame, metric: str, ylabel: str, scale: float, path: Path, x: str | None) -> Path | None:
    """One figure of ``metric`` against ``x`` per policy, a panel per facet; ``None`` if the metric is empty."""
    ok = df[df["status"] == "ok"] if "status" in df.columns else df
    if metric not in ok.columns or pd.to_numeric(ok[metric], errors="coerce").notna().sum() == 0:
        return None
    plt = _pyplot()
    facets = facet_columns(df, x)
    groups = list(ok.groupby([ok[c].astype(str) for c in facets], sort=True)) if facets else [((), ok)]
    ncols = min(3, len(groups))
    nrows = math.ceil(len(groups) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.0 * ncols, 3.6 * nrows), squeeze=False)
    policies = list(dict.fromkeys(df["policy"]))
    colours = plt.get_cmap("tab10" if len(policies) <= 10 else "tab20")
    numeric_x = x is not None and _numeric(df[x])
    categories = [] if x is None or numeric_x else list(dict.fromkeys(df[x].astype(str)))
    for ax, (key, group) in zip(axes.flat, groups, strict=False):
        for i, policy in enumerate(policies):
            sub = group[group["policy"] == policy]
            if sub.empty:
                continue
            y = pd.to_numeric(sub[metric], errors="coerce") * scale
            xs = sub[x] if numeric_x else (sub[x].astype(str) if x else pd.Series("", index=sub.index))
            stats = y.groupby(xs, sort=True).agg(["mean", "std"])
            stats["std"] = stats["std"].fillna(0.0)
            if numeric_x:
                pos = stats.index.to_numpy(dtype=float)
            else:
                offset = (i - (len(policies) - 1) / 2) * 0.8 / max(len(policies), 1)
                pos = np.array([categories.index(str(v)) if x else 0 for v in stats.index], dtype=float) + offset
            colour = colours(i % colours.N)
            mean = stats["mean"].to_numpy()
            sd = stats["std"].to_numpy()
            if numeric_x:
                ax.plot(pos, mean, color=colour, marker="o", ms=4, lw=1.4, label=policy)
                ax.fill_between(pos, mean - sd, mean + sd, color=colour, alpha=0.15, linewidth=0)
            else:
                ax.errorbar(
                    pos, mean, yerr=sd, color=colour, marker="o", ms=5, capsize=3, linestyle="none", label=policy
                )
        if not numeric_x:
            ticks = categories or [""]
            ax.set_xticks(range(len(ticks)), ticks, rotation=20 if x else 0, ha="right" if x else "center")
        ax.set_xlabel(_X_LABELS.get(x, x) if x else "")
        ax.set_ylabel(ylabel)
        if metric == "dsr":
            ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        if facets:
            parts = key if isinstance(key, tuple) else (key,)
            ax.set_title(", ".join(f"{c}={v}" for c, v in zip(facets, parts, strict=True)), fontsize=9)
    for ax in list(axes.flat)[len(groups) :]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    n_seeds = ok["seed"].nunique() if "seed" in ok.columns else 1
    spread = "band" if numeric_x else "bars"
    fig.suptitle(f"{ylabel}: mean over {n_seeds} seeds, {spread} ±1 sd", fontsize=10)
    fig.tight_layout()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
    return _save(fig, path)


def write_report(
    results: pd.DataFrame, out_dir: str | Path, *, x: str | None = None
) -> tuple[pd.DataFrame, list[Path]]:
    """Write ``dsr_vs_<x>.png``, ``jct_vs_<x>.png``, ``summary.csv`` and ``summary.md`` into ``out_dir``.

    Returns:
        The summary table and the paths written.
    """
    if results.empty:
        raise ValueError("the results table is empty: no run has finished yet")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    x = choose_x(results, x)
    suffix = (x or "policy").replace("workload.", "").replace("target_utilisation", "load")
    summary = summarize(results, x)
    written = [
        atomic_write(out / "summary.csv", lambda p: summary.to_csv(p, index=False)),
        atomic_write(out / "summary.md", lambda p: p.write_text(summary_markdown(summary))),
    ]
    for metric, label, scale, name in (
        ("dsr", "deadline satisfactory ratio", 1.0, "dsr"),
        ("jct_mean_s", "average JCT (h)", 1 / 3600, "jct"),
    ):
        path = plot_metric(results, metric, label, scale, out / f"{name}_vs_{suffix}.png", x)
        if path is not None:
            written.append(path)
    return summary, written


def summary_markdown(summary: pd.DataFrame) -> str:
    """The summary as a Markdown table (metrics as ``mean ± sd``)."""
    if summary.empty:
        return "(no results)\n"
    keys = [c for c in summary.columns if not c.endswith(("_mean", "_std")) and c not in ("n_ok", "n_failed")]
    header = [*keys, *(label for col, label, _ in SUMMARY_METRICS if f"{col}_mean" in summary), "seeds ok", "failed"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for _, row in summary.iterrows():
        cells = [str(row[k]) for k in keys]
        for col, _, scale in SUMMARY_METRICS:
            if f"{col}_mean" in summary:
                cells.append(format_mean_sd(row[f"{col}_mean"], row.get(f"{col}_std"), scale))
        cells += [str(int(row["n_ok"])), str(int(row["n_failed"]))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def format_mean_sd(mean: Any, sd: Any, scale: float = 1.0) -> str:
    """``mean ± sd`` with 3 significant decimals, ``-`` when missing."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "-"
    text = f"{mean * scale:.3f}"
    if sd is not None and not (isinstance(sd, float) and math.isnan(sd)):
        text += f" ± {sd * scale:.3f}"
    return text
