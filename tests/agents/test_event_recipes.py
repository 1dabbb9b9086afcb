"""The event interface's recipes through ``hetgym train --algo events-ppo|kickstart|curriculum`` (tiny
settings): training, resuming, the saved format, the evaluation, and bad input refused before anything is
written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agents.args import SMOKE_BUDGETS
from hetgym.cli import main

TINY = ["--preset", "tiny", "--n-envs", "2", "--n-steps", "16", "--batch-size", "16", "--checkpoint-every", "32"]


def train(*argv: str) -> int:
    return main(["train", *argv, "--no-progress"])


def test_events_ppo_trains_resumes_and_evaluates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    common = ["--algo", "events-ppo", *TINY, "--eval-seeds", "1000", "--out-dir", str(tmp_path), "--run-name", "run"]
    common += ["--env", "probe=false", "--env", "workload={num_jobs: 8}"]
    assert train(*common, "--total-timesteps", "64", "--skip-eval") == 0
    assert (run / "checkpoints" / "ckpt_64_steps.zip").is_file() and not (run / "eval.json").exists()
    meta = json.loads((run / "agent.json").read_text())
    assert meta["env_kwargs"] == {"flatten": True, "probe": False, "workload": {"num_jobs": 8}}
    assert meta["recipe"] == "events-ppo" and meta["model"]["format"] == "hetgym-agent/1"
    assert train(*common, "--total-timesteps", "96", "--resume") == 0
    assert "resuming from" in capsys.readouterr().out
    assert (run / "checkpoints" / "ckpt_96_steps.zip").is_file()
    result = json.loads((run / "eval.json").read_text())
    assert result["seeds"] == [1000] and 0.0 <= result["agent_dsr"] <= 1.0
    assert set(result) >= {"elasticflow", "edf-admission", "train_wall_s"}
    assert train(*common, "--eval-only") == 0
    assert json.loads((run / "eval.json").read_text())["agent_dsr"] == result["agent_dsr"]  # deterministic


def test_kickstart_clones_trains_resumes_and_evaluates(tmp_path: Path) -> None:
    run = tmp_path / "run"
    common = ["--algo", "kickstart", *TINY, "--teacher", "force-any", "--teacher-seeds", "0-2"]
    common += ["--bc-epochs", "20", "--bc-batch-size", "16", "--critic-epochs", "3", "--distill-steps", "64"]
    common += ["--eval-seeds", "1000", "--out-dir", str(tmp_path), "--run-name", "run"]
    assert train(*common, "--total-timesteps", "64", "--skip-eval") == 0
    teacher = json.loads((run / "teacher.json").read_text())
    assert teacher["seeds"] == [0, 1, 2] and teacher["bc_accuracy"] >= 0.95
    assert (run / "clone.zip").is_file() and (run / "checkpoints" / "ckpt_64_steps.zip").is_file()
    assert json.loads((run / "args.json").read_text())["teacher"] == "force-any"
    assert train(*common, "--total-timesteps", "96", "--resume") == 0
    assert (run / "model.zip").is_file()  # to resume from
    meta = json.loads((run / "agent.json").read_text())  # the safe format, its network described
    assert (run / "model.pt").is_file() and meta["model"]["format"] == "hetgym-agent/1"
    assert meta["env_kwargs"] == {"flatten": True} and meta["recipe"] == "events-kickstart"
    assert meta["teacher"] == "force-any" and meta["results"]["cpu_hours"] > 0
    result = json.loads((run / "eval.json").read_text())
    assert result["seeds"] == [1000] and 0.0 <= result["agent_dsr"] <= 1.0


@pytest.mark.slow
def test_curriculum_runs_its_stages_resumes_and_evaluates(tmp_path: Path) -> None:
    run = tmp_path / "run"
    common = ["--algo", "curriculum", *TINY, "--eval-seeds", "1000", "--out-dir", str(tmp_path), "--run-name", "run"]
    assert train(*common, "--stages", "4:2:32,12:8:32", "--skip-eval") == 0
    assert (run / "checkpoints" / "ckpt_64_steps.zip").is_file()
    meta = json.loads((run / "agent.json").read_text())
    assert meta["recipe"] == "events-curriculum" and meta["args"]["total_timesteps"] == 64
    assert meta["env_kwargs"] == {"flatten": True} and meta["results"]["cpu_hours"] > 0
    assert train(*common, "--stages", "4:2:32,12:8:64", "--resume") == 0
    assert (run / "checkpoints" / "ckpt_96_steps.zip").is_file()
    result = json.loads((run / "eval.json").read_text())
    assert result["seeds"] == [1000] and 0.0 <= result["agent_dsr"] <= 1.0


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["events-ppo", "kickstart", "curriculum"])
def test_smoke_runs_each_event_recipe_end_to_end(
    algo: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HETGYM_PROGRESS_S", "10")
    argv = ["train", "--smoke", "--algo", algo, "--preset", "tiny", "--out-dir", str(tmp_path), "--run-name", "s"]
    assert main(argv) == 0
    recipe = {"kickstart": "events-kickstart", "curriculum": "events-curriculum"}.get(algo, algo)
    assert re.search(
        rf"^progress: {recipe}: training 512/512 timesteps \(100%\), done in ", capsys.readouterr().out, re.M
    )
    meta = json.loads((tmp_path / "s" / "agent.json").read_text())
    budgets = SMOKE_BUDGETS[{"events-ppo": "EventPPOArgs"}.get(algo, algo.capitalize() + "Args")]
    assert {k: meta["args"][k] for k in budgets if k != "total_timesteps"} == {
        k: v for k, v in budgets.items() if k != "total_timesteps"
    }
    assert meta["env_id"] == "HetClusterEvents-Tiny-v0" and (tmp_path / "s" / "eval.json").is_file()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--algo", "kickstart", "--teacher-seeds", "999-1000"], "meet the held-out --eval-seeds"),
        (["--algo", "curriculum", "--stages", "30:6"], "--stages: '30:6' is not JOBS:RATE:STEPS"),
        (["--algo", "curriculum", "--stages", "0:6:10"], "needs JOBS >= 1"),
        (["--algo", "curriculum", "--stages", "30:x:10"], "is not JOBS:RATE:STEPS"),
        (["--algo", "curriculum", "--stages", "30:6:0"], "STEPS >= 1"),
        (["--algo", "events-ppo", "--env", "flatten=false"], "set flatten=True themselves"),
        (["--algo", "events-ppo", "--resume"], "--resume continues a saved run: give its --run-name"),
        (["--algo", "events-ppo", "--eval-only", "--run-name", "absent"], "holds no model.pt or model.zip"),
        (["--algo", "events-ppo", "--eval-seeds", "3-1"], "runs backwards"),
        (["--algo", "events-ppo", "--init", "x"], "--init does not apply"),
        (["--algo", "events-ppo", "--teacher", "edf"], "takes no --teacher"),
        (["--algo", "kickstart", "--reference", "edf"], "takes no --reference"),
        (["--algo", "events-ppo", "--env-id", "HetCluster-v1"], "acts in an event-driven environment"),
        (["--algo", "maskable-ppo", "--env-id", "HetClusterEvents-v0"], "give --algo events-ppo"),
    ],
)
def test_bad_input_is_refused_before_anything_is_written(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "runs"
    preset = [] if "--env-id" in argv else ["--preset", "tiny"]
    assert train(*argv, *preset, "--out-dir", str(out)) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_help_lists_the_event_recipes_and_their_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "events-ppo" in text and "kickstart" in text and "curriculum" in text
    for option in ("--stages", "--teacher-seeds", "--distill-steps", "--max-train-s", "--resume", "--eval-only"):
        assert option in text, option
