"""``hetgym train`` and ``hetgym evaluate``: options, errors, and an end-to-end run on the Tiny preset."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from agents.args import SMOKE_BUDGETS
from agents.cli import parse_env_overrides
from hetgym.cli import main


def test_train_help_lists_every_recipe_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for option in (
        "--algo",
        "--teacher",
        "--env",
        "--train-seeds",
        "--rounds",
        "--beta-schedule",
        "--init",
        "--total-timesteps",
        "--epochs",
        "--track",
        "--save-as",
    ):
        assert option in text, option
    assert "[dagger]" in text and "[ppo]" in text  # options that only some recipes take say which


def test_cli_lists_commands_without_importing_torch() -> None:
    code = "import sys; from hetgym.cli import build_parser; build_parser(); print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False"


def test_env_overrides_nest_and_parse_values() -> None:
    assert parse_env_overrides(["queue_slots=16", "sim.round_s=120", "modes=[sync, fork]"]) == {
        "queue_slots": 16,
        "sim": {"round_s": 120},
        "modes": ["sync", "fork"],
    }
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_env_overrides(["queue_slots"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--algo", "bc", "--rounds", "2"], "--rounds does not apply"),
        (["train", "--algo", "ppo", "--save-as", "ppo"], "--save-as applies to bc and dagger"),
        (["train", "--algo", "bc", "--train-seeds", "3-1"], "runs backwards"),
        (["train", "--algo", "bc", "--preset", "tiny", "--env-id", "HetCluster-v0"], "not both"),
        (["train", "--algo", "dagger", "--teacher", "dancer:memroy=observed"], "did you mean 'memory'"),
        (["train", "--algo", "dagger", "--teacher", "dancer:memory=forgetful"], "knob memory='forgetful'"),
        (["evaluate", "nowhere"], "no model at"),
        (["evaluate", "--experts", "none"], "nothing to evaluate"),
        (["evaluate", "--experts", "edff", "--preset", "tiny"], "edf"),
        (["evaluate", "--experts", "none", "--decoding", "greedy"], "unknown decoding 'greedy'"),
        (["train", "--algo", "bc", "--arch", "mlp", "--decoding", "kind-first"], "needs the set network"),
        (["train", "--algo", "dagger", "--reference", "edf"], "--reference applies to ppo and maskable-ppo"),
        (["train", "--algo", "ppo", "--teacher", "edf", "--reference", "edf"], "give --reference"),
    ],
)
def test_bad_input_fails_with_a_clear_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main([*argv, "--no-progress"] if argv[0] == "train" else argv)
    assert code == 2
    assert message in capsys.readouterr().err


def test_evaluate_experts_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ev"
    code = main(
        ["evaluate", "--preset", "tiny", "--experts", "edf,srtf", "--seeds", "0-1", "--out", str(out), "--no-progress"]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "edf" in printed and "95% confidence interval" in printed
    runs = pd.read_csv(out / "evaluation_runs.csv")
    assert sorted(runs["policy"].unique()) == ["edf", "srtf"] and len(runs) == 4
    assert (out / "evaluation.png").stat().st_size > 1000 and (out / "evaluation.md").is_file()
    summary = pd.read_csv(out / "evaluation.csv", index_col=0)
    assert {"dsr", "dsr_std", "dsr_ci95_low", "dsr_ci95_high", "jct_mean_s_ci95_low", "num_seeds"} <= set(summary)
    assert (summary["dsr_ci95_low"] <= summary["dsr"]).all() and (summary["dsr"] <= summary["dsr_ci95_high"]).all()


@pytest.mark.slow
def test_train_then_evaluate_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    code = main(
        [
            "train",
            "--algo",
            "bc",
            "--preset",
            "tiny",
            "--teacher",
            "dancer",
            "--train-seeds",
            "0-1",
            "--val-seeds",
            "100",
            "--eval-seeds",
            "1000",
            "--epochs",
            "1",
            "--hidden",
            "32",
            "--out-dir",
            str(runs),
            "--run-name",
            "clone",
            "--env",
            "max_decisions=200",
            "--no-progress",
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "action agreement" in text and "DSR gap to the teacher" in text
    meta = json.loads((runs / "clone" / "agent.json").read_text())
    assert meta["env_kwargs"]["max_decisions"] == 200 and meta["args"]["hidden"] == 32
    code = main(
        [
            "train",
            "--algo",
            "maskable-ppo",
            "--preset",
            "tiny",
            "--init",
            str(runs / "clone"),
            "--total-timesteps",
            "256",
            "--n-steps",
            "128",
            "--batch-size",
            "64",
            "--eval-seeds",
            "",
            "--out-dir",
            str(runs),
            "--run-name",
            "ft",
            "--no-progress",
        ]
    )
    assert code == 0
    out = tmp_path / "ev"
    code = main(
        [
            "evaluate",
            str(runs / "clone"),
            str(runs / "ft" / "model.pt"),
            "--experts",
            "dancer",
            "--seeds",
            "1000",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    runs_csv = pd.read_csv(out / "evaluation_runs.csv")
    assert list(runs_csv["policy"]) == ["bc(dancer)", "maskable-ppo-finetune(dancer)", "dancer"]
    clone_dsr = runs_csv.loc[runs_csv["policy"] == "bc(dancer)", "dsr"].iloc[0]
    assert clone_dsr == pytest.approx(meta["results"]["evaluation"]["per_seed_dsr"][0], abs=1e-6)
    summary = pd.read_csv(out / "evaluation.csv", index_col=0)
    assert summary.loc["dancer", "dsr_gap"] == 0.0


@pytest.mark.parametrize(
    "algo",
    ["bc", pytest.param("dagger", marks=pytest.mark.slow), "maskable-ppo", pytest.param("ppo", marks=pytest.mark.slow)],
)
def test_smoke_runs_every_recipe_end_to_end(
    algo: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HETGYM_PROGRESS_S", "10")
    extra = {"bc": ["--epochs", "2"], "ppo": ["--teacher", "edf-admission"]}.get(algo, [])
    argv = ["train", "--smoke", "--algo", algo, "--preset", "tiny", "--out-dir", str(tmp_path), "--run-name", "s"]
    assert main([*argv, *extra]) == 0
    captured = capsys.readouterr()
    words = " ".join(captured.out.split())  # the table's title wraps
    meta = json.loads((tmp_path / "s" / "agent.json").read_text())
    assert (tmp_path / "s" / "model.pt").is_file() and meta["env_id"] == "HetCluster-Tiny-v1"
    assert meta["results"]["stage"] == "evaluated" and meta["results"]["evaluation"]["seeds"] == [1000]
    budgets = SMOKE_BUDGETS[{"bc": "BCArgs", "dagger": "DAggerArgs"}.get(algo, "PPOArgs")]
    given = {"epochs": 2} if algo == "bc" else {}  # an option given explicitly wins over the smoke budget
    assert {k: meta["args"][k] for k in budgets} == {**budgets, **given}
    assert "--smoke budgets: these figures check that the pipeline runs" in words
    if algo in ("bc", "dagger"):
        assert meta["teacher"] == meta["reference"] == "dancer" and "(teacher: dancer)" in words
        assert re.search(
            r"^progress: held-out states: dancer's episodes 1/1 workloads \(100%\), done in ", captured.out, re.M
        )
    else:
        reference = "edf-admission" if algo == "ppo" else "dancer"
        assert meta["teacher"] is None and meta["reference"] == reference
        assert f"(no teacher, reference: {reference})" in words
        assert re.search(
            rf"^progress: {algo}: training 512/512 timesteps \(100%\), done in \d+:\d\d$", captured.out, re.M
        )
    if algo == "ppo":
        assert "note: --teacher with --algo ppo: PPO imitates no teacher" in captured.err


@pytest.mark.slow
def test_smoke_on_the_default_id_warns_of_nothing_and_logs_progress(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    env = {k: v for k, v in os.environ.items() if k != "HETGYM_PROGRESS_S"}
    with log.open("w") as out:
        proc = subprocess.run(
            [sys.executable, "-W", "error::DeprecationWarning", "-m", "hetgym.cli", "train", "--smoke"],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=600,
        )
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr, proc.stderr
    text = log.read_text()
    assert "bc on HetCluster-v1 (teacher: dancer)" in text
    assert re.search(
        r"^progress: cloning dancer: 1 epoch of [\d]+ states [\d,]+/[\d,]+ states \(\d+%\), done in ", text, re.M
    )
    (run,) = (tmp_path / "runs" / "smoke").iterdir()
    assert (run / "model.pt").is_file() and json.loads((run / "agent.json").read_text())["results"][
        "stage"
    ] == "evaluated"
