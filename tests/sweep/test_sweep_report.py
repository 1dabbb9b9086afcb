"""Sweep reports on hand-made tables: the x axis, panels, seed statistics, failed runs, and the figures."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from hetgym.sweep.report import choose_x, facet_columns, summarize, write_report


def table(rows: list[dict[str, object]]) -> pd.DataFrame:
    base = {"status": "ok", "scenario": "s", "cluster": "c", "cluster_scale": 1, "num_gpus": 8}
    return pd.DataFrame([{**base, **r} for r in rows])


def grid_rows() -> list[dict[str, object]]:
    rows = []
    for policy, offset in (("a", 0.0), ("b", 0.1)):
        for load in (0.5, 1.0):
            for tight in (0.8, 1.0):
                for seed in (0, 1, 2):
                    dsr = 1.0 - load / 2 + offset + 0.01 * seed
                    rows.append(
                        {
                            "policy": policy,
                            "seed": seed,
                            "workload.target_utilisation": load,
                            "workload.tightness": tight,
                            "workload.arrival_rate_per_h": None,
                            "dsr": dsr,
                            "jct_mean_s": 3600.0 * (1 + load + seed),
                        }
                    )
    return rows


def test_load_is_the_x_axis_and_other_varying_axes_are_panels() -> None:
    df = table(grid_rows())
    assert choose_x(df) == "workload.target_utilisation"
    assert facet_columns(df, "workload.target_utilisation") == ["workload.tightness"]
    with pytest.raises(ValueError, match="not a column"):
        choose_x(df, "nope")


def test_cluster_size_axes_follow_from_each_other() -> None:
    rows = [
        {"policy": p, "seed": s, "cluster_scale": k, "num_gpus": 8 * k, "jct_mean_s": 1.0}
        for p in ("a", "b")
        for s in (0, 1)
        for k in (1, 2)
    ]
    df = table(rows)
    assert choose_x(df) == "num_gpus"
    assert facet_columns(df, "num_gpus") == []  # cluster_scale is determined by num_gpus: no panels


def test_summary_statistics_over_seeds_and_failures() -> None:
    rows = grid_rows()
    rows.append(
        {
            "policy": "a",
            "seed": 3,
            "workload.target_utilisation": 0.5,
            "workload.tightness": 0.8,
            "status": "failed",
            "dsr": math.nan,
        }
    )
    summary = summarize(table(rows))
    assert len(summary) == 2 * 2 * 2
    row = summary[
        (summary.policy == "a")
        & (summary["workload.target_utilisation"] == 0.5)
        & (summary["workload.tightness"] == 0.8)
    ].iloc[0]
    assert (row["n_ok"], row["n_failed"]) == (3, 1)
    dsrs = [1.0 - 0.25 + 0.01 * s for s in range(3)]
    assert row["dsr_mean"] == pytest.approx(sum(dsrs) / 3)
    assert row["dsr_std"] == pytest.approx(pd.Series(dsrs).std(ddof=0))
    assert row["jct_mean_s_mean"] == pytest.approx(3600.0 * 2.5)


def test_report_files(tmp_path: Path) -> None:
    summary, written = write_report(table(grid_rows()), tmp_path)
    names = sorted(p.name for p in written)
    assert names == ["dsr_vs_load.png", "jct_vs_load.png", "summary.csv", "summary.md"]
    assert all(p.stat().st_size > 0 for p in written)
    md = (tmp_path / "summary.md").read_text()
    assert md.count("\n") == len(summary) + 2
    # Nothing swept but the policy: one categorical point per policy; no deadlines: no DSR figure.
    flat = table([{"policy": p, "seed": s, "dsr": math.nan, "jct_mean_s": 1.0 + s} for p in "ab" for s in (0, 1)])
    _, written = write_report(flat, tmp_path / "flat")
    assert sorted(p.name for p in written) == ["jct_vs_policy.png", "summary.csv", "summary.md"]
    with pytest.raises(ValueError, match="empty"):
        write_report(pd.DataFrame(), tmp_path / "none")
