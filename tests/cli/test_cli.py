"""The ``hetgym`` command: every subcommand runs, writes what it says, and fails clearly on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from hetgym.cli import main


def test_compare_writes_results_and_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cmp"
    code = main(
        [
            "compare",
            "--scenario",
            "tiny",
            "--policies",
            "fifo,srtf,edf",
            "--seeds",
            "0,1",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "fifo" in text and "srtf" in text and "DSR" in text
    runs = pd.read_csv(out / "runs.csv")
    assert len(runs) == 6 and set(runs["policy"]) == {"fifo", "srtf", "edf"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["scenario"]["name"] == "tiny" and summary["seeds"] == [0, 1]
    for png in ("dsr.png", "jct_cdf.png", "utilisation.png"):
        assert (out / png).stat().st_size > 1000
    assert not list(out.glob(".*"))  # no temporary files left


def test_compare_runs_every_registered_policy_by_default(tmp_path: Path) -> None:
    from hetgym.experiments import default_policies

    out = tmp_path / "all"
    assert (
        main(["compare", "--scenario", "tiny", "--seeds", "0", "--out", str(out), "--no-plots", "--no-progress"]) == 0
    )
    assert set(pd.read_csv(out / "runs.csv")["policy"]) == set(default_policies())


def test_simulate_with_overrides_and_a_policy_knob(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sim"
    code = main(
        [
            "simulate",
            "--policy",
            "fifo",
            "-P",
            "type_choice=fastest",
            "--scenario",
            "tiny",
            "--num-jobs",
            "5",
            "--deadline",
            "none",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    jobs = pd.read_csv(out / "jobs.csv")
    assert len(jobs) == 5
    assert json.loads((out / "metrics.json").read_text())["num_with_deadline"] == 0


def test_simulate_a_trace_file(tmp_path: Path) -> None:
    from hetgym.workloads import elasticflow

    trace = elasticflow(6, seed=3, cluster="tiny", max_gpus_per_job=2).save(tmp_path / "t.csv")
    out = tmp_path / "sim"
    assert (
        main(
            [
                "simulate",
                "--policy",
                "edf",
                "--cluster",
                "tiny",
                "--trace",
                str(trace),
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    assert len(pd.read_csv(out / "jobs.csv")) == 6


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["compare", "--policies", "fifo,srft", "--scenario", "tiny"], "did you mean 'srtf'"),
        (["compare", "--cluster", "gavel108", "--scenario", "tiny"], "did you mean 'gavel-108'"),
        (["simulate", "--policy", "fifo", "-P", "strickt=1", "--scenario", "tiny"], "did you mean 'strict'"),
        (["compare", "--scenario", "tiny", "-P", "srtf=1"], "policy:key=value"),
        (["simulate", "--policy", "fifo", "--trace", "/nonexistent.csv"], "no such file"),
        (["compare", "--scenario", "tiny", "--seeds", ","], "--seeds: no seeds in ','"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "results").exists()


def test_listing_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policies", "--knobs"]) == 0
    text = capsys.readouterr().out
    assert "tiresias" in text and "promote_knob" in text
    assert main(["presets"]) == 0
    text = capsys.readouterr().out
    assert "gavel-108" in text and "resnet50" in text and "elasticflow" in text


def test_listings_show_whole_summaries_and_count_servers_right(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hetgym.cli._common import console

    monkeypatch.setattr(console, "width", 400)  # one row a line, so a description is one line of the output
    assert main(["policies"]) == 0
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in capsys.readouterr().out.splitlines()
            if line.count("│") == 3}  # fmt: skip
    # the summaries that wrap in their docstrings are shown whole, up to the end of their sentence
    assert rows["asrpt"].endswith("guiding a communication-aware cluster schedule.")
    assert '"Prediction-Assisted Online Distributed Deep Learning Workload Scheduling in GPU Clusters"' in rows["asrpt"]
    assert rows["jps"].endswith("matching-market job sizing and placement over GPU types.")
    assert all(doc.endswith((".", ")")) for doc in rows.values()), rows
    assert main(["presets"]) == 0
    text = capsys.readouterr().out
    assert "a100: 1 server x 8 GPUs = 8" in text  # elasticflow-n1g8
    assert "1 servers" not in text and "a100: 2 servers x 8 GPUs = 16" in text


def test_console_script_entry_point() -> None:
    proc = subprocess.run([sys.executable, "-m", "hetgym.cli", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("hetgym ")
