"""Expert iteration (``agents.exit``): the recipe end to end on a small Tiny event workload, exact resume,
the student finishing the teacher's rollouts from round 1, and refused input."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch as th

from agents.args import AgentError, ExItArgs
from agents.common import load_agent, make_env
from agents.evaluation import evaluate_model
from agents.exit import CHECKPOINT_FILE, ROUNDS_FILE, labelled_episode, round_seeds, teacher_for_round, train

#: Four jobs a workload, two futures, rollouts of one further decision: a label costs little.
SMALL = {
    "env_id": "HetClusterEvents-Tiny-v0",
    "env": {"workload": {"num_jobs": 4}},
    "train_seeds": "0",
    "val_seeds": "900",
    "episodes_per_round": 2,
    "teacher_episodes": 1,
    "label_fraction": 0.5,
    "k_initial": 2,
    "k_step": 1,
    "k_max": 2,
    "horizon_arrivals": 1,
    "epochs": 2,
    "epochs_per_round": 1,
    "batch_size": 8,
    "track": False,
}
#: Per-round fields that depend on the machine's speed, not on the run.
TIMINGS = {"label_cpu_s", "label_cpu_s_per_label", "fit_cpu_s", "worker_cpu_s"}


def _args(tmp_path, **over):
    return ExItArgs(**{**SMALL, "out_dir": str(tmp_path), **over})


def _weights(folder):
    with np.load(folder / CHECKPOINT_FILE) as data:
        return {k: data[k].copy() for k in data.files if k.startswith("w::")}


def _rounds(folder):
    return [{k: v for k, v in json.loads(line).items() if k not in TIMINGS} for line in (folder / ROUNDS_FILE).open()]


def test_recipe_runs_saves_and_evaluates(tmp_path):
    result = train(_args(tmp_path, rounds=1, run_name="smoke"))
    folder = result.path
    rounds = _rounds(folder)
    assert [r["round"] for r in rounds] == [0, 1]
    assert rounds[0]["teacher_base"] == "force (fixed)" and rounds[1]["teacher_base"] == "student"
    assert rounds[0]["labels"] == 4  # round 0: the teacher decides, and labels, every decision
    assert rounds[1]["labels"] >= 4  # its own episode at least
    for key in ("teacher_dsr", "teacher_base_dsr", "student_val_dsr"):
        assert all(0.0 <= r[key] <= 1.0 for r in rounds)
    for key in ("deviation_share", "agreement_before_fit", "train_agreement", "student_modal_action_share"):
        assert all(0.0 <= r[key] <= 1.0 for r in rounds)
    assert rounds[1]["labels_total"] == rounds[0]["labels"] + rounds[1]["labels"]
    assert result.meta.results["student_decision_cpu_us"] > 0
    # The run folder is an agent like any other: agent.json + model.pt, evaluated without unpickling.
    model, meta = load_agent(folder)
    assert meta.recipe == "exit" and meta.env_kwargs["flatten"] is True
    runs = evaluate_model(model, meta.env_id, meta.env_kwargs, [1000, 1001])
    assert runs["modal_action_share"].between(0.0, 1.0).all()
    assert runs["action_counts"].map(lambda text: sum(json.loads(text).values())).tolist() == runs["steps"].tolist()


@pytest.mark.slow
def test_resume_continues_exactly(tmp_path):
    whole = train(_args(tmp_path, rounds=1, run_name="whole")).path
    train(_args(tmp_path, rounds=0, run_name="cut"))
    cut = train(_args(tmp_path, rounds=1, run_name="cut", resume=True)).path
    assert _rounds(cut) == _rounds(whole)
    mine, theirs = _weights(cut), _weights(whole)
    assert mine.keys() == theirs.keys()
    for key in mine:
        np.testing.assert_array_equal(mine[key], theirs[key])


def test_student_finishes_the_rollouts_from_round_one(tmp_path):
    env = make_env("HetClusterEvents-Tiny-v0", {"flatten": True, "workload": {"num_jobs": 4}})
    args = _args(tmp_path)

    class CountingStudent:
        """Always action 0, counting the decisions it is asked for."""

        calls = 0

        def predict(self, obs, state=None, episode_start=None, deterministic=True, action_masks=None):
            CountingStudent.calls += 1
            return np.int64(0), state

    student = CountingStudent()
    assert type(teacher_for_round(args, 0, student).base).__name__ == "_Force"
    teacher = teacher_for_round(args, 1, student)
    assert teacher.base.agent is student  # the latest student is the teacher's base
    labelled_episode(env, 0, teacher, None, beta=1.0, label_fraction=1.0, rng=np.random.default_rng(0))
    # The student was asked only inside the teacher's rollouts (it did not act: student=None).
    assert CountingStudent.calls > 0


def test_bad_input_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(AgentError, match="val_seeds"):
        train(_args(tmp_path, val_seeds="1000"))
    with pytest.raises(AgentError, match="label_fraction"):
        train(_args(tmp_path, label_fraction=1.5))
    with pytest.raises(AgentError, match="held out"):
        round_seeds(_args(tmp_path, train_seeds="900"))
    with pytest.raises(AgentError, match="--resume"):
        train(_args(tmp_path, run_name="none", resume=True))
    with pytest.raises(AgentError, match="event-driven"):
        train(_args(tmp_path, env_id="HetCluster-Tiny-v1", env={}))
    with pytest.raises(AgentError, match="base"):
        train(_args(tmp_path, base="nonsense"))
    assert not any(tmp_path.iterdir())


def test_a_finished_run_is_not_overwritten_and_resume_checks_the_arguments(tmp_path):
    train(_args(tmp_path, rounds=0, run_name="r"))
    before = (tmp_path / "r" / CHECKPOINT_FILE).read_bytes()
    with pytest.raises(AgentError, match="--resume"):
        train(_args(tmp_path, rounds=0, run_name="r"))
    with pytest.raises(AgentError, match="k_max"):
        train(_args(tmp_path, rounds=1, run_name="r", resume=True, k_max=3))
    assert (tmp_path / "r" / CHECKPOINT_FILE).read_bytes() == before


def test_round_seeds_skip_held_out_ones(tmp_path):
    args = dataclasses.replace(_args(tmp_path), train_seeds="997-998", val_seeds="999", rounds=2)
    assert round_seeds(args) == [[997, 998], [1020, 1021], [1022, 1023]]


def test_fit_reads_flat_observations(tmp_path):
    train(_args(tmp_path, rounds=0, run_name="f"))
    weights = _weights(tmp_path / "f")
    model, _ = load_agent(tmp_path / "f")
    saved = {k: v.detach().numpy() for k, v in model.policy.state_dict().items()}
    for key, value in saved.items():
        np.testing.assert_array_equal(value, weights["w::" + key])
    assert th.get_num_threads() >= 1
