"""``hetgym sweep``: a YAML grid or flags, validation errors, failures in the exit status, and ``--report``."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from hetgym.cli import main
from hetgym.sweep import load_results, summarize

FLAKY = str(Path(__file__).with_name("sweep_policies.py"))
YAML = """
name: cli-test
policies: [fifo, {name: srtf, label: srtf-order, options: {type_choice: order}}]
scenarios: [tiny]
loads: [0.5, 0.9]
seeds: 2
workload: {num_jobs: 6, tightness: 0.5}
grid:
  sim.restart_penalty_s: [0, 30]
"""


def test_yaml_sweep_then_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "grid.yaml"
    config.write_text(YAML)
    out = tmp_path / "out"
    assert main(["sweep", str(config), "--out", str(out), "--backend", "sequential", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "16 runs in the grid, 16 run now, 0 already done" in text
    df = load_results(out)
    assert len(df) == 16 and set(df["policy"]) == {"fifo", "srtf-order"}
    assert set(df["policy.type_choice"].dropna()) == {"order"}
    assert set(df["sim.restart_penalty_s"]) == {0, 30}

    assert main(["sweep", str(config), "--out", str(out), "--backend", "sequential", "--no-progress"]) == 0
    assert "16 already done" in capsys.readouterr().out

    assert main(["sweep", "--report", str(out)]) == 0
    report = out / "report"
    for name in ("dsr_vs_load.png", "jct_vs_load.png", "summary.csv", "summary.md"):
        assert (report / name).stat().st_size > 0, name
    summary = pd.read_csv(report / "summary.csv")
    # One row per (restart penalty panel, load, policy), each over the two seeds.
    assert len(summary) == 2 * 2 * 2
    assert set(summary.columns) >= {"sim.restart_penalty_s", "workload.target_utilisation", "policy", "dsr_mean"}
    assert (summary["n_ok"] == 2).all() and (summary["n_failed"] == 0).all()
    row = summary[
        (summary["policy"] == "fifo")
        & (summary["workload.target_utilisation"] == 0.9)
        & (summary["sim.restart_penalty_s"] == 0)
    ].iloc[0]
    seeds = df[
        (df["policy"] == "fifo") & (df["workload.target_utilisation"] == 0.9) & (df["sim.restart_penalty_s"] == 0)
    ]
    assert row["jct_mean_s_mean"] == pytest.approx(seeds["jct_mean_s"].mean())
    assert row["jct_mean_s_std"] == pytest.approx(seeds["jct_mean_s"].std(ddof=0))
    assert "| sim.restart_penalty_s |" in (report / "summary.md").read_text()


def test_flags_describe_a_sweep_without_a_file(tmp_path: Path) -> None:
    out = tmp_path / "flags"
    args = ["sweep", "--policies", "fifo,tiresias", "--scenarios", "tiny", "--seeds", "0-1", "--loads", "0.7"]
    args += ["--set", "workload.num_jobs=5", "--grid", "workload.tightness=0.5,1", "-P", "fifo:strict=false"]
    assert main([*args, "--out", str(out), "--workers", "1", "--backend", "sequential", "--no-progress"]) == 0
    df = load_results(out)
    assert len(df) == 2 * 2 * 2
    assert df.loc[df["policy"] == "fifo", "policy.strict"].eq(False).all()
    assert set(df["workload.tightness"]) == {0.5, 1.0}
    assert (df["workload.num_jobs"] == 5).all()


def test_dry_run_runs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "grid.yaml"
    config.write_text(YAML)
    out = tmp_path / "out"
    assert main(["sweep", str(config), "--out", str(out), "--dry-run"]) == 0
    assert "16 runs" in capsys.readouterr().out
    assert not out.exists()


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("policies: [fifo, srft]\nscenarios: [tiny]\n", "unknown policy 'srft'; did you mean 'srtf'"),
        ("policies: [fifo]\nscenarios: [tiny]\nworkload: {num_jobs: -3}\n", "num_jobs=-3"),
        ("policies: [fifo]\nseeds: [0]\nsim: {restart_penalty: 3}\n", "did you mean 'restart_penalty_s'"),
    ],
)
def test_invalid_config_exits_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], yaml_text: str, message: str
) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(yaml_text)
    out = tmp_path / "out"
    assert main(["sweep", str(config), "--out", str(out), "--backend", "sequential"]) == 2
    err = capsys.readouterr().err
    assert "hetgym sweep: error: sweep config" in err and "bad.yaml" in err
    assert re.search(message, err)
    assert not out.exists()


def test_cli_argument_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", str(tmp_path / "missing.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["sweep"]) == 2
    assert "give a sweep config file or at least --policies" in capsys.readouterr().err
    assert main(["sweep", "--policies", "fifo", "-P", "srtf:type_choice=order"]) == 2
    assert "policy 'srtf' is not in the sweep's policies" in capsys.readouterr().err
    assert main(["sweep", "--report", str(tmp_path)]) == 2
    assert "holds no sweep results" in capsys.readouterr().err


def test_failed_runs_give_exit_status_1_and_are_counted_in_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["sweep", "--policies", "fifo,sweep-test-flaky", "-P", "sweep-test-flaky:fail=true", "--import", FLAKY]
    args += ["--scenarios", "tiny", "--seeds", "2", "--set", "workload.num_jobs=5", "--out", str(out)]
    assert main([*args, "--backend", "sequential", "--no-progress"]) == 1
    text = capsys.readouterr().out
    assert "failed: sweep-test-flaky seed 0: RuntimeError: deliberate failure" in text
    assert main(["sweep", "--report", str(out / "results.csv")]) == 0
    summary = summarize(load_results(out)).set_index("policy")
    assert summary.loc["sweep-test-flaky", "n_failed"] == 2 and summary.loc["sweep-test-flaky", "n_ok"] == 0
    assert summary.loc["fifo", "n_ok"] == 2
    assert "2 failed runs are left out of the figures" in capsys.readouterr().out


def test_dry_run_runs_none_of_the_imports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hetgym.sweep import SweepSpec

    marker = tmp_path / "ran.txt"
    (tmp_path / "mine.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    config = tmp_path / "grid.yaml"
    # A policy only an import could register is listed as not checked, not refused.
    config.write_text("policies: [fifo, only-mine-registers-it]\nscenarios: [tiny]\nimports: [mine.py]\n")
    assert main(["sweep", str(config), "--out", str(tmp_path / "out"), "--dry-run", "--import", "json"]) == 0
    words = " ".join(capsys.readouterr().out.split())
    assert "2 runs" in words and "ran none of the imports" in words and "policy 'only-mine-registers-it'" in words
    assert not marker.exists() and not (tmp_path / "out").exists()
    config.write_text("policies: [fifo]\nscenarios: [tiny]\nimports: [missing.py]\n")
    assert main(["sweep", str(config), "--dry-run"]) == 2
    assert "missing.py' does not exist" in capsys.readouterr().err
    # A real run imports them: the feature --import and imports: are for.
    config.write_text("policies: [fifo]\nscenarios: [tiny]\nimports: [mine.py]\n")
    assert len(SweepSpec.from_yaml(config).expand()) == 1 and marker.read_text() == "ran"
