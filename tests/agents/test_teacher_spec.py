"""Teachers with knobs: ``--teacher dancer:memory=observed`` reaches the labelling policy, bad knobs are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents import dagger
from agents.args import AgentError, DAggerArgs, parse_teacher
from agents.common import agent_env_kwargs, make_env, run_name
from agents.evaluation import evaluate_expert
from hetgym.sim.errors import UnknownNameError
from hetgym.sim.registry import KnobError

TINY = "HetCluster-Tiny-v0"


def test_a_spec_names_the_policy_and_its_knobs() -> None:
    assert parse_teacher("dancer") == ("dancer", {})
    assert parse_teacher("dancer:memory=observed") == ("dancer", {"memory": "observed"})
    assert parse_teacher("elasticflow:memory=observed,round_s=120,overhead_aware=false") == (
        "elasticflow",
        {"memory": "observed", "round_s": 120, "overhead_aware": False},
    )


@pytest.mark.parametrize(
    ("spec", "error", "match"),
    [
        ("dancer:memroy=observed", UnknownNameError, "did you mean 'memory'"),
        ("dancer:memory=forgetful", KnobError, "knob memory='forgetful'"),
        ("dancer:memory", AgentError, "is not KEY=VALUE"),
        (":memory=observed", AgentError, "give a policy name"),
        ("dancr:memory=observed", UnknownNameError, "did you mean 'dancer'"),
    ],
)
def test_a_bad_spec_is_refused_naming_what_to_fix(spec: str, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        parse_teacher(spec)
    with pytest.raises(error, match=match):
        agent_env_kwargs(spec)  # where every recipe starts


def test_the_knobs_reach_the_labelling_policy_and_the_reference_runs() -> None:
    spec = "dancer:memory=observed"
    kwargs = agent_env_kwargs(spec, {"max_decisions": 20})
    assert kwargs == agent_env_kwargs("dancer", {"max_decisions": 20})  # the same physics
    env = make_env(TINY, kwargs, teacher=spec)
    try:
        policy = env.tracker.policy  # type: ignore[attr-defined]
        assert policy.name == "dancer" and policy.knob_values.memory == "observed"
        _, info = env.reset(seed=1000)
        assert "expert_action" in info
    finally:
        env.close()
    observed = evaluate_expert(spec, TINY, kwargs, [1000])
    assert observed.shape[0] == 1 and 0.0 <= float(observed["dsr"].iloc[0]) <= 1.0
    assert run_name(TINY, "dagger", spec, 0).startswith("HetCluster-Tiny-v0__dagger-dancer-memory-observed__0__")


def test_dagger_runs_with_an_observed_teacher(tmp_path: Path) -> None:
    # Seconds: 60 decisions an episode.
    args = DAggerArgs(
        env_id=TINY,
        env={"max_decisions": 60},
        teacher="dancer:memory=observed",
        train_seeds="0",
        val_seeds="100",
        eval_seeds="",
        rounds=1,
        epochs=1,
        epochs_per_round=1,
        hidden=16,
        out_dir=str(tmp_path),
        run_name="observed",
        track=False,
    )
    run = dagger.train(args)
    assert run.meta.teacher == "dancer:memory=observed"
    assert len(run.meta.results["rounds"]) == 2


def test_recipes_on_v1_keep_its_window_and_cadence_over_the_teachers_physics() -> None:
    from agents.common import agent_env_kwargs

    v1 = agent_env_kwargs("dancer", {}, "HetCluster-Tiny-v1")
    assert v1["decisions"] == "on-change" and v1["queue_slots"] == 32 and "observation" not in v1
    assert v1["policy_compat"] == "dancer"  # the teacher's round, placer and modes still apply
    v0 = agent_env_kwargs("dancer", {}, "HetCluster-Tiny-v0")
    assert v0["observation"] == "window-levels" and "decisions" not in v0
    assert agent_env_kwargs("dancer", {"decisions": "every-epoch"}, "HetCluster-v1")["decisions"] == "every-epoch"
