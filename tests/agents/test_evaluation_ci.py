"""The evaluation table's 95% confidence intervals of the mean over seeds (Student's t)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agents.evaluation import CI_METRICS, Evaluation, mean_ci, metric_cell

# t(0.975, df) from a table (Student's t, two-sided 95%).
T_975 = {1: 12.706, 4: 2.776}


def _evaluation(dsr: dict[str, list[float]], jct: dict[str, list[float]]) -> Evaluation:
    rows = []
    for policy, values in dsr.items():
        for seed, (d, j) in enumerate(zip(values, jct[policy], strict=True)):
            kind = "agent" if policy == "agent" else "expert"
            rows.append({"policy": policy, "kind": kind, "seed": 1000 + seed, "dsr": d, "jct_mean_s": j})
    seeds = sorted({r["seed"] for r in rows})
    return Evaluation(pd.DataFrame(rows), teacher="edf", seeds=seeds)


def test_mean_ci_is_the_t_interval_of_the_mean() -> None:
    x = [0.60, 0.70, 0.65, 0.80, 0.75]
    low, high = mean_ci(x)
    half = T_975[4] * np.std(x, ddof=1) / math.sqrt(5)
    assert low == pytest.approx(np.mean(x) - half, abs=1e-4) and high == pytest.approx(np.mean(x) + half, abs=1e-4)
    assert mean_ci([0.5, 0.5, 0.5]) == (0.5, 0.5)  # no spread, no width
    assert all(math.isnan(v) for v in mean_ci([0.7]))  # one seed: no interval
    low2, high2 = mean_ci([0.2, math.nan, 0.4])  # NaNs (e.g. no job finished) are dropped, as the mean drops them
    assert (low2 + high2) / 2 == pytest.approx(0.3) and high2 - low2 == pytest.approx(2 * T_975[1] * 0.1, rel=1e-3)
    assert mean_ci(x, level=0.99)[0] < low  # a higher level is wider
    # Clipped to the range the mean can take (a DSR in [0, 1], a JCT >= 0); a t interval need not be.
    assert mean_ci([0.9, 1.0, 1.0])[1] > 1.0 and mean_ci([0.9, 1.0, 1.0], bounds=(0.0, 1.0))[1] == 1.0
    assert mean_ci([100.0, 9000.0, 300.0], bounds=(0.0, math.inf))[0] == 0.0


def test_aggregate_keeps_its_columns_and_adds_the_intervals(tmp_path: Path) -> None:
    ev = _evaluation(
        {"agent": [0.60, 0.70, 0.65, 0.80, 0.75], "edf": [0.5, 0.55, 0.6, 0.5, 0.65]},
        {"agent": [3600.0, 7200.0, 5400.0, 3600.0, 4000.0], "edf": [4000.0] * 5},
    )
    agg = ev.aggregate()
    # The columns older files have, with the same values (population sd).
    assert {"kind", "dsr", "jct_mean_s", "dsr_std", "jct_mean_s_std", "dsr_gap", "dsr_wins", "jct_gap_s"} <= set(agg)
    agent = agg.loc["agent"]
    assert agent["dsr"] == pytest.approx(0.70)
    assert agent["dsr_std"] == pytest.approx(np.std([0.6, 0.7, 0.65, 0.8, 0.75]))
    for key, limits in CI_METRICS.items():
        for policy in ("agent", "edf"):
            values = ev.runs.loc[ev.runs["policy"] == policy, key].to_numpy()
            low, high = mean_ci(values, bounds=limits)
            assert agg.loc[policy, f"{key}_ci95_low"] == pytest.approx(low)
            assert agg.loc[policy, f"{key}_ci95_high"] == pytest.approx(high)
            assert low <= agg.loc[policy, key] <= high
    assert agg.loc["edf", "jct_mean_s_ci95_low"] == agg.loc["edf", "jct_mean_s_ci95_high"] == 4000.0
    assert agg["num_seeds"].tolist() == [5, 5]
    ev.save(tmp_path, plots=False)
    saved = pd.read_csv(tmp_path / "evaluation.csv", index_col=0)
    assert saved.loc["agent", "dsr_ci95_high"] == pytest.approx(agent["dsr_ci95_high"])
    text = (tmp_path / "evaluation.md").read_text()
    lo, hi = agent["dsr_ci95_low"], agent["dsr_ci95_high"]
    assert f"0.700 ± 0.071 [{lo:.3f}, {hi:.3f}]" in text
    assert "95% confidence interval of the mean" in text


def test_one_seed_shows_no_spread_and_no_interval() -> None:
    ev = _evaluation({"agent": [0.7], "edf": [0.6]}, {"agent": [3600.0], "edf": [7200.0]})
    agg = ev.aggregate()
    assert agg[["dsr_ci95_low", "dsr_ci95_high"]].isna().all().all()
    assert metric_cell(agg.loc["agent"], "dsr", 1.0, "{:.3f}", 1) == "0.700"
    assert "[" not in ev.markdown() and "confidence" not in ev.markdown()
