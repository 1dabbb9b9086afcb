"""Smoke tests of the event-driven interface's scripts (tiny settings): the measurement and the PPO and
kickstarting recipes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import load_script


def test_event_interface_measures_exactness_and_gaps(tmp_path: Path) -> None:
    script = load_script("studies/event_interface")
    out = tmp_path / "events.json"
    assert script.main(["--env-id", "HetClusterEvents-Tiny-v0", "--seeds", "1000-1001", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    summary = data["summary"]
    assert summary["elasticflow_identical_all"] and summary["elasticflow_closest_identical_all"]
    assert summary["random_decisions_per_job"]["mean"] == 1.0
    assert "gap_dancer_closest_any" in summary and len(data["rows"]) == 2


def test_ppo_recipe_trains_resumes_and_evaluates(tmp_path: Path) -> None:
    script = load_script("train_events_ppo")
    run = tmp_path / "run"
    common = ["--env-id", "HetClusterEvents-Tiny-v0", "--n-envs", "2", "--n-steps", "16", "--batch-size", "16"]
    common += ["--checkpoint-steps", "32", "--eval-seeds", "1000", "--out", str(run)]
    common += ["--env-kwargs", '{"probe": false, "workload": {"num_jobs": 8}}']
    assert script.main([*common, "--total-timesteps", "64", "--skip-eval"]) == 0
    assert (run / "checkpoints" / "ckpt_64_steps.zip").is_file()
    meta = json.loads((run / "agent.json").read_text())
    assert meta["env_kwargs"] == {"flatten": True, "probe": False, "workload": {"num_jobs": 8}}
    assert script.main([*common, "--total-timesteps", "96", "--resume"]) == 0
    result = json.loads((run / "eval.json").read_text())
    assert result["seeds"] == [1000] and 0.0 <= result["agent_dsr"] <= 1.0
    assert set(result) >= {"elasticflow", "edf-admission", "train_wall_s"}


def test_kickstart_recipe_clones_trains_resumes_and_evaluates(tmp_path: Path) -> None:
    script = load_script("train_events_kickstart")
    run = tmp_path / "run"
    common = ["--env-id", "HetClusterEvents-Tiny-v0", "--teacher", "force-any", "--teacher-seeds", "0-2"]
    common += ["--bc-epochs", "20", "--bc-batch-size", "16", "--critic-epochs", "3", "--n-envs", "2"]
    common += ["--n-steps", "16", "--batch-size", "16", "--checkpoint-steps", "32", "--distill-steps", "64"]
    common += ["--eval-seeds", "1000", "--out", str(run)]
    assert script.main([*common, "--total-timesteps", "64", "--skip-eval"]) == 0
    teacher = json.loads((run / "teacher.json").read_text())
    assert teacher["seeds"] == [0, 1, 2] and teacher["bc_accuracy"] >= 0.95
    assert (run / "clone.zip").is_file() and (run / "checkpoints" / "ckpt_64_steps.zip").is_file()
    assert json.loads((run / "args.json").read_text())["teacher"] == "force-any"
    assert script.main([*common, "--total-timesteps", "96", "--resume"]) == 0
    assert (run / "model.zip").is_file()  # to resume from
    meta = json.loads((run / "agent.json").read_text())  # the safe format, its network described
    assert (run / "model.pt").is_file() and meta["model"]["format"] == "hetgym-agent/1"
    assert meta["env_kwargs"] == {"flatten": True} and meta["recipe"] == "events-kickstart"
    result = json.loads((run / "eval.json").read_text())
    assert result["seeds"] == [1000] and 0.0 <= result["agent_dsr"] <= 1.0
    assert set(result) >= {"elasticflow", "edf-admission", "train_wall_s"}


def test_kickstart_refuses_teacher_seeds_among_the_held_out(tmp_path: Path) -> None:
    script = load_script("train_events_kickstart")
    with pytest.raises(SystemExit, match="held-out"):
        script.main(["--env-id", "HetClusterEvents-Tiny-v0", "--teacher-seeds", "999-1000", "--out", str(tmp_path)])


@pytest.mark.slow
def test_curriculum_recipe_runs_its_stages_resumes_and_evaluates(tmp_path: Path) -> None:
    script = load_script("train_events_curriculum")
    run = tmp_path / "run"
    common = ["--env-id", "HetClusterEvents-Tiny-v0", "--n-envs", "2", "--n-steps", "16", "--batch-size", "16"]
    common += ["--checkpoint-steps", "32", "--eval-seeds", "1000", "--out", str(run)]
    assert script.main([*common, "--stages", "4:2:32,12:8:32", "--skip-eval"]) == 0
    assert (run / "checkpoints" / "ckpt_64_steps.zip").is_file()
    meta = json.loads((run / "agent.json").read_text())
    assert meta["recipe"] == "events-curriculum" and meta["args"]["total_timesteps"] == 64
    assert meta["env_kwargs"] == {"flatten": True} and meta["results"]["cpu_hours"] > 0
    assert script.main([*common, "--stages", "4:2:32,12:8:64", "--resume"]) == 0
    result = json.loads((run / "eval.json").read_text())
    assert result["seeds"] == [1000] and 0.0 <= result["agent_dsr"] <= 1.0


@pytest.mark.parametrize("stages", ["30:6", "0:6:10", "30:x:10", "30:6:0"])
def test_curriculum_refuses_malformed_stages(stages: str, tmp_path: Path) -> None:
    script = load_script("train_events_curriculum")
    with pytest.raises(SystemExit, match="--stages"):
        script.main(["--stages", stages, "--out", str(tmp_path / "run")])


@pytest.mark.parametrize("text", ["{", "[1]", '{"flatten": false}'])
def test_env_kwargs_must_be_a_json_object_without_flatten(text: str, tmp_path: Path) -> None:
    script = load_script("train_events_ppo")
    with pytest.raises(SystemExit, match="--env-kwargs"):
        script.main(["--env-id", "HetClusterEvents-Tiny-v0", "--env-kwargs", text, "--out", str(tmp_path / "run")])
    assert not (tmp_path / "run").exists()
