"""``scripts/reproduce_papers.py`` on a tiny setting: the page and CSV structure, the intervals recomputed by
hand from the per-run rows, an absent baseline reported, and the helpers checked on hand-computed cases."""

from __future__ import annotations

import importlib.util
import itertools
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as student_t

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "reproduce_papers.py"

# A raw ElasticFlow trace (job_id, submission_time, duration, num_gpu), 12 jobs.
TRACE_ROWS = [
    (0, 600, 1),
    (120, 1800, 2),
    (300, 900, 1),
    (900, 3600, 4),
    (1500, 1200, 1),
    (2400, 2400, 8),
    (3000, 600, 1),
    (3600, 1500, 2),
    (4200, 900, 1),
    (4800, 3000, 4),
    (5400, 1200, 1),
    (6000, 600, 2),
]


def _load() -> Any:
    spec = importlib.util.spec_from_file_location("reproduce_papers", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["reproduce_papers"] = module  # dataclasses of the module resolve their annotations here
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def mod() -> Any:
    return _load()


def _write_trace(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["job_id,submission_time,duration,num_gpu"]
    lines += [f"job{i:02d},{s},{d},{g}" for i, (s, d, g) in enumerate(TRACE_ROWS)]
    (folder / "cluster01.csv").write_text("\n".join(lines) + "\n")
    return folder


def _hand_interval(values: np.ndarray) -> tuple[float, float]:
    n = values.size
    half = student_t.ppf(0.975, n - 1) * values.std(ddof=1) / math.sqrt(n)
    return float(values.mean() - half), float(values.mean() + half)


def test_tiny_run_writes_the_page_csvs_and_correct_intervals(
    mod: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traces = _write_trace(tmp_path / "traces")
    # An unregistered baseline is reported as not available, not a crash.
    monkeypatch.setattr(mod, "DANCER_BASELINES", ("edf", "elasticflow", "no-such-baseline"))
    monkeypatch.setattr(mod, "HADAR_BASELINES", ("gavel-makespan", "no-such-yarn"))
    out, page = tmp_path / "papers", tmp_path / "papers.md"
    claims = mod.reproduce(mod.settings_for("tiny"), mod.STUDIES, out, page, str(traces), workers=1, progress=False)

    for name in ("claims.csv", *(f"{s}_runs.csv" for s in mod.STUDIES), *(f"{s}.png" for s in mod.STUDIES)):
        assert (out / name).stat().st_size > 0, name
    assert not list(out.glob(".*")) and not list(tmp_path.glob(".papers*"))  # no temporary file left
    on_disk = pd.read_csv(out / "claims.csv")
    expected_columns = ["study", "claim", "scope", "paper", "metric", "estimate", "ci_low", "ci_high", "n_seeds"]
    assert list(on_disk.columns[: len(expected_columns)]) == expected_columns
    assert set(on_disk["study"]) == set(mod.STUDIES)
    assert len(on_disk) == len(claims)

    text = page.read_text()
    for study in mod.STUDIES:
        assert f"![{study}](papers/{study}.png)" in text
    assert "no-such-baseline" in text and "not available" in text
    assert "no-such-yarn" in text
    for _, row in on_disk.iterrows():  # every claim is in the page with its estimate as computed
        assert row["claim"] in text
        if math.isfinite(row["estimate"]):
            assert mod._fmt(row["estimate"], row["unit"] if isinstance(row["unit"], str) else "") in text

    # Dancer against the best baseline: paired over seeds, each seed's DSR averaged over the traces.
    runs = pd.read_csv(out / "dancer_runs.csv")
    assert set(runs["policy"]) == {"dancer", "edf", "elasticflow"}
    assert (runs["num_jobs"] == 4).all()
    homog = runs[runs["cluster_kind"] == "homogeneous"].pivot_table(index="seed", columns="policy", values="dsr")
    best = max(("edf", "elasticflow"), key=lambda p: homog[p].mean())
    low, high = _hand_interval((homog["dancer"] - homog[best]).to_numpy())
    row = on_disk[on_disk["claim"] == f"Dancer vs the best baseline ({best}), homogeneous clusters"].iloc[0]
    assert row["n_seeds"] == 3
    assert row["ci_low"] == pytest.approx(low, abs=1e-5) and row["ci_high"] == pytest.approx(high, abs=1e-5)

    # HadarE against Hadar: per-seed utilisation ratios.
    hadare = pd.read_csv(out / "hadare_runs.csv").pivot_table(index="seed", columns="policy", values="utilisation")
    low, high = _hand_interval((hadare["hadare"] / hadare["hadar"]).to_numpy())
    row = on_disk[on_disk["claim"] == "HadarE vs hadar: cluster utilisation"].iloc[0]
    assert row["ci_low"] == pytest.approx(low, rel=1e-5) and row["ci_high"] == pytest.approx(high, rel=1e-5)

    # Hadar: both penalties, the objective knob's own comparison, and every run completed.
    hadar = pd.read_csv(out / "hadar_runs.csv")
    assert set(hadar["restart_penalty_s"]) == {0.0, 30.0}
    assert (hadar["num_completed"] == 4).all()
    assert (on_disk["claim"] == "hadar (avg-JCT objective) vs hadar: summed JCT, restart penalty 0 s").any()

    # JPS: every method's gap is >= 0 against the exact optimum.
    jps = pd.read_csv(out / "jps_runs.csv")
    assert (jps["gap"] >= -1e-9).all()
    assert set(jps["method"]) >= {"JPS beta=1", "JPS beta=0", "optimum"}


def test_single_machine_srpt_by_hand(mod: Any) -> None:
    # Work 10 from t=0, work 1 from t=1, speed 1: the short job runs at once (flow 1), the long one ends at 11.
    assert mod.single_machine_srpt_mean_s([0.0, 1.0], [10.0, 1.0], 1.0) == pytest.approx(6.0)
    # Both at t=0, speed 2: works 4 and 20 end at 2 and 12.
    assert mod.single_machine_srpt_mean_s([0.0, 0.0], [20.0, 4.0], 2.0) == pytest.approx(7.0)
    # An idle gap before a late arrival.
    assert mod.single_machine_srpt_mean_s([0.0, 100.0], [5.0, 5.0], 1.0) == pytest.approx(5.0)


def test_heterogeneous_versions_keep_the_gpu_count(mod: Any) -> None:
    one = mod.heterogeneous_version("elasticflow-n1g8")
    assert one.capacity == {"a100": 4, "v100": 4}
    four = mod.heterogeneous_version("elasticflow-n4g8")
    assert four.capacity == {"a100": 16, "v100": 8, "t4": 8}
    assert four.total_gpus == 32


def test_trace_window_keeps_real_times_and_draws_elasticflow_deadlines(mod: Any, tmp_path: Path) -> None:
    traces = str(_write_trace(tmp_path / "traces"))
    jobs = mod.ef_window(traces, "cluster01", seed=3, num_jobs=5)
    assert [j.job_id for j in jobs] == list(range(5))
    assert jobs[0].submit_s == 0.0
    rows = {(d, g) for _, d, g in TRACE_ROWS}
    gaps = {b - a for (a, _, _), (b, _, _) in itertools.pairwise(TRACE_ROWS)}
    for prev, job in itertools.pairwise(jobs):
        assert job.submit_s - prev.submit_s in gaps  # consecutive jobs of the trace, times rebased only
    for job in jobs:
        assert (job.duration_s, job.num_gpus) in rows
        slack = (job.deadline_s - job.submit_s) / job.duration_s
        assert 0.5 <= slack <= 1.5
    assert mod.ef_window(traces, "cluster01", seed=3, num_jobs=5) == jobs  # seeded


def test_missing_trace_is_a_clear_error(mod: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        mod.main(["--elasticflow-traces", str(tmp_path / "nope.tar.gz"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert "nope.tar.gz does not exist" in err and "--only" in err
    assert not (tmp_path / "o").exists()
