"""Figures of ``hetgym compare`` and ``hetgym evaluate``, checked through their matplotlib objects."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgba

from hetgym.experiments import Comparison, compare
from hetgym.plots import (
    ALTERNATING_SHARE,
    CDF_TOP,
    TAIL_CUT,
    activity_end_s,
    activity_ends_s,
    alternating_share,
    busy_window_end_s,
    headline_order,
    jct_cdf_figure,
    line_colours,
    plot_comparison,
    utilisation_figure,
)
from hetgym.workloads.scenario import get_scenario


def synthetic(num_policies: int, *, busy_until_h: float = 70.0, idle_until_h: float = 840.0) -> Comparison:
    """A comparison of ``num_policies`` made-up policies: busy GPUs until ``busy_until_h``, idle after."""
    policies = [f"policy-{i:02d}" for i in range(num_policies)]
    rng = np.random.default_rng(0)
    runs, jobs, timelines = [], [], []
    for i, p in enumerate(policies):
        runs.append({"policy": p, "seed": 0, "dsr": rng.random(), "jct_mean_s": 3600.0 * (i + 1),
                     "num_with_deadline": 10})  # fmt: skip
        jobs += [{"policy": p, "seed": 0, "status": "completed", "jct_s": 3600.0 * (j + i + 1)} for j in range(5)]
        end_h = busy_until_h - i % 5  # the last policy to go idle does so at busy_until_h
        for t_h, v100, k80 in ((0.0, 2, 1), (end_h / 2, 4, 4), (end_h, 0, 0), (idle_until_h, 0, 0)):
            timelines.append({"policy": p, "seed": 0, "time_s": t_h * 3600, "v100": v100, "k80": k80})
    return Comparison(get_scenario("tiny"), policies, [0], pd.DataFrame(runs), pd.DataFrame(jobs),
                      pd.DataFrame(timelines))  # fmt: skip


@pytest.mark.parametrize("num_policies", [14, 20, 27])
def test_the_cdf_colours_the_best_policies_and_greys_the_others(num_policies: int) -> None:
    comparison = synthetic(num_policies)
    lines = jct_cdf_figure(comparison).axes[0].get_lines()
    assert len(lines) == num_policies
    best = headline_order(comparison)[:CDF_TOP]
    coloured = [
        line for line in lines if not str(line.get_label()).startswith(("_", f"{num_policies - CDF_TOP} others"))
    ]
    assert [line.get_label() for line in coloured] == best
    assert len({tuple(np.round(to_rgba(line.get_color()), 3)) for line in coloured}) == CDF_TOP
    grey = [line for line in lines if line not in coloured]
    assert len(grey) == num_policies - CDF_TOP and len({line.get_color() for line in grey}) == 1
    assert len(set(line_colours(100))) == 100


def test_headline_order_is_best_first() -> None:
    comparison = synthetic(8)
    dsr = comparison.runs.set_index("policy")["dsr"]
    order = headline_order(comparison)
    assert list(dsr.loc[order]) == sorted(dsr, reverse=True)
    no_deadlines = synthetic(3)
    no_deadlines.runs["num_with_deadline"] = 0
    assert headline_order(no_deadlines) == ["policy-00", "policy-01", "policy-02"]  # lowest average JCT first


def test_few_policies_are_all_in_colour() -> None:
    comparison = synthetic(4)
    lines = jct_cdf_figure(comparison).axes[0].get_lines()
    assert sorted(str(line.get_label()) for line in lines) == comparison.policies
    assert len({line.get_color() for line in lines}) == 4


def test_the_cdf_legend_sits_outside_the_axes() -> None:
    figure = jct_cdf_figure(synthetic(14))
    figure.canvas.draw()
    ax = figure.axes[0]
    legend = ax.get_legend()
    assert legend is not None and len(legend.get_texts()) == CDF_TOP + 1
    assert legend.get_texts()[-1].get_text() == f"{14 - CDF_TOP} others"
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    assert legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1


@pytest.mark.parametrize("num_policies", [3, 15, 27])
def test_utilisation_has_one_panel_per_policy(num_policies: int) -> None:
    comparison = synthetic(num_policies)
    figure = utilisation_figure(comparison)
    panels = [ax for ax in figure.axes if ax.get_visible() and ax.axison]
    assert len(panels) == num_policies
    assert [ax.get_title().split()[0] for ax in panels] == comparison.policies
    for ax in panels:
        assert len(ax.collections) == 2  # one band per GPU type of the tiny cluster (v100, k80)
        assert ax.get_xlim() == panels[0].get_xlim() and ax.get_ylim() == (0, 1.05)


def test_the_utilisation_axis_ends_where_the_activity_does() -> None:
    comparison = synthetic(5, busy_until_h=70.0, idle_until_h=840.0)
    assert activity_end_s(comparison, 0) == pytest.approx(70.0 * 3600)
    assert busy_window_end_s(comparison, 0) == pytest.approx(70.0 * 3600)
    low, high = utilisation_figure(comparison).axes[0].get_xlim()
    assert low == 0 and 70.0 <= high <= 70.0 * 1.05


def test_one_long_tail_does_not_stretch_the_utilisation_axis() -> None:
    comparison = synthetic(7, busy_until_h=70.0, idle_until_h=1700.0)
    tl = comparison.timelines
    tail = (tl.policy == "policy-06") & (tl.time_s > 60 * 3600)
    tl.loc[tail, "k80"] = 1  # policy-06 keeps one K80 busy until 1,700 h
    ends = {p: e / 3600 for p, e in activity_ends_s(comparison, 0).items()}
    assert ends["policy-06"] == pytest.approx(1700.0)
    median_h = float(np.median(list(ends.values())))
    assert busy_window_end_s(comparison, 0) / 3600 == pytest.approx(TAIL_CUT * median_h)
    figure = utilisation_figure(comparison)
    assert figure.axes[0].get_xlim()[1] == pytest.approx(TAIL_CUT * median_h * 1.02)
    notes = {ax.get_title().split()[0]: [t.get_text() for t in ax.texts] for ax in figure.axes if ax.axison}
    assert notes["policy-06"] == ["idle at 1,700 h \u2192"]
    assert all(not v for k, v in notes.items() if k != "policy-06")


def test_without_deadlines_a_jct_chart_replaces_the_dsr_chart(tmp_path: Path) -> None:
    scenario = get_scenario("tiny").with_overrides(workload={"deadline": "none"})
    comparison = compare(scenario, ["fifo", "srtf"], [0])
    assert (comparison.runs["num_with_deadline"] == 0).all()
    written = plot_comparison(comparison, tmp_path)
    assert sorted(p.name for p in written) == ["jct.png", "jct_cdf.png", "utilisation.png"]
    assert not (tmp_path / "dsr.png").exists() and (tmp_path / "jct.png").stat().st_size > 1000

    from hetgym.plots import jct_figure

    bars = jct_figure(comparison).axes[0].patches
    expected = comparison.runs.set_index("policy").loc[["fifo", "srtf"], "jct_mean_s"].to_numpy() / 3600
    assert [b.get_height() for b in bars] == pytest.approx(list(expected))

    with_deadlines = compare("tiny", ["fifo"], [0])
    assert plot_comparison(with_deadlines, tmp_path / "d")[0].name == "dsr.png"


def test_the_evaluation_figure_has_a_legend() -> None:
    pytest.importorskip("agents.evaluation")
    from agents.evaluation import Evaluation

    runs = pd.DataFrame(
        [
            {"policy": p, "kind": kind, "seed": s, "dsr": 0.5 + 0.1 * s, "jct_mean_s": 3600.0 * (s + 1)}
            for p, kind in (("bc", "agent"), ("edf", "expert"), ("dancer", "expert"))
            for s in (0, 1)
        ]
    )
    figure = Evaluation(runs, teacher="dancer", seeds=[0, 1]).build_figure()
    legend = figure.axes[1].get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == [
        "expert policy",
        "learned agent",
        "teacher (dancer)",
        "one seed",
    ]


def test_the_evaluation_legend_says_reference_when_the_agents_had_no_teacher() -> None:
    pytest.importorskip("agents.evaluation")
    from types import SimpleNamespace

    from agents.cli import gap_role
    from agents.evaluation import Evaluation

    runs = pd.DataFrame(
        [
            {"policy": p, "kind": kind, "seed": 0, "dsr": 0.5, "jct_mean_s": 3600.0}
            for p, kind in (("maskable-ppo", "agent"), ("edf-admission", "expert"))
        ]
    )
    scratch = SimpleNamespace(teacher=None, reference="edf-admission")  # PPO from scratch (AgentMeta's fields)
    clone = SimpleNamespace(teacher="edf-admission", reference="edf-admission")  # BC
    assert gap_role([scratch], "edf-admission") == "reference"
    assert gap_role([clone], "edf-admission") == "teacher"
    assert gap_role([clone, scratch], "edf-admission") == "reference"  # one agent had no teacher
    role = gap_role([scratch], "edf-admission")
    figure = Evaluation(runs, teacher="edf-admission", seeds=[0], role=role).build_figure()
    labels = [t.get_text() for t in figure.axes[1].get_legend().get_texts()]
    assert "reference (edf-admission)" in labels and not any(label.startswith("teacher") for label in labels)


def test_a_panel_that_alternates_round_by_round_is_marked_and_explained() -> None:
    comparison = synthetic(3, busy_until_h=70.0, idle_until_h=80.0)
    tl = comparison.timelines
    # policy-01 swaps its 4 GPUs between V100 and K80 every 360 s round for 60 h, as Gavel's policies do
    rounds = np.arange(0, 60 * 3600, 360.0)
    odd = np.arange(len(rounds)) % 2 == 1
    swaps = pd.DataFrame(
        {"policy": "policy-01", "seed": 0, "time_s": rounds, "v100": np.where(odd, 4, 0), "k80": np.where(odd, 0, 4)}
    )
    rest = tl[(tl.policy != "policy-01") | (tl.time_s >= 60 * 3600)]
    comparison.timelines = pd.concat([rest, swaps], ignore_index=True).sort_values("time_s", kind="stable")
    sub = comparison.timelines[comparison.timelines.policy == "policy-01"].sort_values("time_s")
    end_s = busy_window_end_s(comparison, 0)
    assert alternating_share(sub.time_s.to_numpy(), sub[["v100", "k80"]].to_numpy(), end_s) >= ALTERNATING_SHARE
    figure = utilisation_figure(comparison)
    titles = {ax.get_title().split()[0]: ax.get_title() for ax in figure.axes if ax.axison}
    assert titles["policy-01"].endswith(" *")
    assert not titles["policy-00"].endswith("*") and not titles["policy-02"].endswith("*")
    caption = " ".join(figure.get_suptitle().split())
    assert "* Pale bands: the allocation switches back and forth between rounds" in caption


def test_a_steady_comparison_has_no_pale_band_note() -> None:
    figure = utilisation_figure(synthetic(4))
    assert not any(ax.get_title().endswith("*") for ax in figure.axes if ax.axison)
    assert "Pale bands" not in figure.get_suptitle()
