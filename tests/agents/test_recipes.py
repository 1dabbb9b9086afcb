"""Smoke runs of every recipe with a tiny budget on the Tiny preset; saved models reload and reproduce their
evaluation; runs are reproducible; TensorBoard gets the losses and the episode metrics.

Behaviour cloning takes seconds here and runs in the default suite; the DAgger and PPO runs are marked
``slow`` (``pytest -m slow``)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest
import torch as th

from agents import bc, dagger, ppo
from agents.args import AgentError, BCArgs, DAggerArgs, PPOArgs
from agents.common import META_FILE, AgentMeta, load_agent, resolve_model_path
from agents.demos import Demonstrations
from agents.evaluation import evaluate_model

TINY = "HetCluster-Tiny-v0"


@pytest.fixture(scope="module")
def bc_run(tmp_path_factory: pytest.TempPathFactory) -> bc.RunResult:
    out = tmp_path_factory.mktemp("runs")
    args = BCArgs(
        env_id=TINY,
        env={"max_decisions": 150},  # short episodes: the PPO smoke runs below finish several
        train_seeds="0-2",
        val_seeds="100",
        eval_seeds="1000-1001",
        epochs=2,
        hidden=32,
        out_dir=str(out),
        run_name="bc",
        save_demos=True,
    )
    return bc.train(args)


def _tb_columns(run: Path) -> set[str]:
    return set(pd.read_csv(run / "tb" / "progress.csv").columns)


def test_bc_run_saves_a_reloadable_model_that_reproduces_its_evaluation(bc_run: bc.RunResult) -> None:
    path = bc_run.path
    assert (path / "model.pt").is_file() and (path / META_FILE).is_file() and (path / "demos.npz").is_file()
    assert any(p.name.startswith("events.out.tfevents") for p in (path / "tb").iterdir())
    assert {"bc/loss", "bc/cross_entropy", "bc/val_agreement", "eval/dsr", "eval/dsr_gap_to_reference"} <= _tb_columns(
        path
    )
    meta = AgentMeta.from_json((path / META_FILE).read_text())
    assert meta.teacher == "dancer" and meta.recipe == "bc" and meta.algo == "maskable-ppo"
    assert meta.env_kwargs["queue_slots"] == 32 and meta.env_kwargs["sim"] == {"round_s": 60.0, "placer": "default"}
    assert meta.env_kwargs["policy_compat"] == "dancer"  # the teacher's own physics
    assert meta.env_kwargs["max_decisions"] == 150
    ev = meta.results["evaluation"]
    assert 0.0 <= meta.results["agreement"]["agreement"] <= 1.0 and ev["seeds"] == [1000, 1001]
    model, meta2 = load_agent(path)
    again = evaluate_model(model, meta2.env_id, meta2.env_kwargs, [1000, 1001])
    assert again["dsr"].round(6).tolist() == ev["per_seed_dsr"]
    assert again["jct_mean_s"].round(3).fillna(-1).tolist() == pd.Series(ev["per_seed_jct_mean_s"]).fillna(-1).tolist()


def test_bc_is_reproducible_and_reads_saved_demonstrations(bc_run: bc.RunResult, tmp_path: Path) -> None:
    args = BCArgs(
        env_id=TINY,
        env={"max_decisions": 150},
        demos=str(bc_run.path / "demos.npz"),
        val_seeds="100",
        eval_seeds="",
        epochs=2,
        hidden=32,
        out_dir=str(tmp_path),
        run_name="again",
        track=False,
    )
    again = bc.train(args)
    for (k1, v1), (k2, v2) in zip(
        bc_run.model.policy.state_dict().items(), again.model.policy.state_dict().items(), strict=True
    ):
        assert k1 == k2 and th.equal(v1, v2), k1
    with pytest.raises(AgentError, match="holds 'dancer' demonstrations"):
        bc.train(BCArgs(env_id=TINY, teacher="edf", demos=str(bc_run.path / "demos.npz"), out_dir=str(tmp_path)))
    with pytest.raises(AgentError, match="both training and held-out"):
        bc.train(BCArgs(env_id=TINY, train_seeds="0-2", eval_seeds="2", out_dir=str(tmp_path)))
    # Saved demonstrations bring their own seeds (0-2): held-out seeds among them are refused, nothing written.
    with pytest.raises(AgentError, match=r"seeds \[1\] are both training and held-out"):
        bc.train(
            BCArgs(
                env_id=TINY,
                env={"max_decisions": 150},
                demos=str(bc_run.path / "demos.npz"),
                val_seeds="1",
                out_dir=str(tmp_path),
                run_name="overlap",
            )
        )
    assert not (tmp_path / "overlap").exists()


def test_dagger_starts_from_saved_demonstrations(bc_run: bc.RunResult, tmp_path: Path) -> None:
    demos_path = str(bc_run.path / "demos.npz")
    args = DAggerArgs(
        env_id=TINY,
        env={"max_decisions": 150},
        init=str(bc_run.path),
        demos=demos_path,
        train_seeds="500-599",  # ignored: the saved episodes bring their seeds (0-2)
        val_seeds="100",
        eval_seeds="",
        rounds=1,
        epochs_per_round=1,
        out_dir=str(tmp_path),
        run_name="dagger-demos",
        track=False,
    )
    run = dagger.train(args)
    assert run.meta.args["hidden"] == 32  # the clone's network, not DAgger's default: ppo --init rebuilds it
    rounds = run.meta.results["rounds"]
    assert rounds[0]["states"] == len(Demonstrations.load(demos_path))
    assert rounds[1]["seeds"] == [3] and rounds[1]["states"] > rounds[0]["states"]
    # Aggregated in float16: the same episodes (the learner acts on the env's float32 observations).
    half = dagger.train(dataclasses.replace(args, obs_dtype="float16", run_name="dagger-half"))
    assert [r["states"] for r in half.meta.results["rounds"]] == [r["states"] for r in rounds]
    # A continuation pass visits other workloads: its rounds start at first_round_seed, skipping held-out seeds.
    later = dagger.train(dataclasses.replace(args, first_round_seed=100, rounds=2, run_name="dagger-later"))
    assert [r.get("seeds") for r in later.meta.results["rounds"]] == [None, [101], [102]]
    with pytest.raises(AgentError, match="first_round_seed=-1"):
        dagger.train(dataclasses.replace(args, first_round_seed=-1, run_name="negative"))
    with pytest.raises(AgentError, match="holds 'dancer' demonstrations"):
        dagger.train(dataclasses.replace(args, teacher="edf", run_name="wrong-teacher"))
    with pytest.raises(AgentError, match=r"seeds \[2\] are both training and held-out"):
        dagger.train(dataclasses.replace(args, val_seeds="2", run_name="overlap"))
    with pytest.raises(AgentError, match=f"trained in {TINY}, not HetCluster-Tiny-v1: give --env-id {TINY}"):
        dagger.train(dataclasses.replace(args, env_id="HetCluster-Tiny-v1", env={}, demos=None, run_name="other-env"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dagger-demos", "dagger-half", "dagger-later"]


@pytest.mark.slow
def test_dagger_runs_from_a_clone_and_logs_its_rounds(bc_run: bc.RunResult, tmp_path: Path) -> None:
    args = DAggerArgs(
        env_id=TINY,
        env={"max_decisions": 150},
        init=str(bc_run.path),
        train_seeds="0-2",
        val_seeds="100",
        eval_seeds="1000",
        rounds=2,
        rampdown_rounds=2,
        epochs_per_round=1,
        max_steps=3000,
        out_dir=str(tmp_path),
        run_name="dagger",
    )
    run = dagger.train(args)
    rounds = run.meta.results["rounds"]
    assert [r["round"] for r in rounds] == [0, 1, 2] and [r["beta"] for r in rounds] == [1.0, 0.5, 0.0]
    assert rounds[2]["learner_action_share"] == 1.0 and 0.0 < rounds[1]["learner_action_share"] < 1.0
    assert rounds[2]["seeds"] == [4] and rounds[2]["states"] > rounds[1]["states"] > rounds[0]["states"]
    assert run.meta.parent == str(bc_run.path) and run.meta.recipe == "dagger"
    assert {"dagger/beta", "dagger/val_agreement", "bc/loss", "eval/dsr"} <= _tb_columns(run.path)
    model, meta = load_agent(run.path)
    again = evaluate_model(model, meta.env_id, meta.env_kwargs, [1000])
    assert again["dsr"].round(6).tolist() == run.meta.results["evaluation"]["per_seed_dsr"]
    # fine-tuning the DAgger run builds the clone's network (hidden=32), not PPO's default width
    tuned = ppo.train(
        PPOArgs(env_id=TINY, init=str(run.path), total_timesteps=256, n_steps=256, batch_size=128, n_epochs=1,
                eval_seeds="", out_dir=str(tmp_path), run_name="ppo-from-dagger", track=False)
    )  # fmt: skip
    assert tuned.meta.args["hidden"] == 32


@pytest.mark.slow
def test_dagger_from_scratch_clones_in_round_zero(tmp_path: Path) -> None:
    args = DAggerArgs(
        env_id=TINY,
        teacher="edf",
        train_seeds="0",
        val_seeds="100",
        eval_seeds="",
        rounds=1,
        epochs=1,
        epochs_per_round=1,
        hidden=16,
        out_dir=str(tmp_path),
        run_name="d0",
        track=False,
    )
    run = dagger.train(args)
    assert run.meta.teacher == "edf" and run.meta.parent is None
    assert len(run.meta.results["rounds"]) == 2


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["maskable-ppo", "ppo"])
def test_ppo_fine_tunes_a_clone_and_logs_episode_metrics(bc_run: bc.RunResult, tmp_path: Path, algo: str) -> None:
    args = PPOArgs(
        env_id=TINY,
        algo=algo,
        init=str(bc_run.path),
        total_timesteps=1024,
        n_steps=512,
        batch_size=128,
        n_epochs=1,
        eval_seeds="1000",
        checkpoint_every=512,
        out_dir=str(tmp_path),
        run_name=algo,
    )
    run = ppo.train(args)
    assert run.meta.recipe == f"{algo}-finetune" and run.meta.algo == algo and run.meta.results["timesteps"] >= 1024
    saved = sorted(p.name for p in run.path.glob("model_*"))
    assert saved == ["model_1024.pt", "model_512.pt"]  # weights only: no SB3 archive is written
    assert resolve_model_path(run.path / "model_512.pt")[1] == run.path / META_FILE
    columns = _tb_columns(run.path)
    assert {"train/value_loss", "train/policy_gradient_loss", "eval/dsr", "eval/dsr_gap_to_reference"} <= columns
    episodes = run.meta.results["episodes"]
    assert episodes and {"dsr", "jct_mean_h", "utilisation", "dsr_gap_to_reference"} <= set(episodes[0])
    assert "episode/dsr" in columns and "episode/dsr_gap_to_reference" in columns
    model, meta = load_agent(run.path)
    again = evaluate_model(model, meta.env_id, meta.env_kwargs, [1000])
    assert again["dsr"].round(6).tolist() == run.meta.results["evaluation"]["per_seed_dsr"]


@pytest.mark.slow
def test_ppo_from_scratch_and_bad_fine_tuning_input(bc_run: bc.RunResult, tmp_path: Path) -> None:
    run = ppo.train(
        PPOArgs(
            env_id=TINY,
            total_timesteps=512,
            n_steps=256,
            batch_size=64,
            n_epochs=1,
            hidden=16,
            eval_seeds="",
            out_dir=str(tmp_path),
            run_name="scratch",
        )
    )
    assert run.meta.recipe == "maskable-ppo" and run.meta.teacher is None and run.meta.parent is None
    assert run.meta.reference == "dancer"  # measured against it, and its round sets the env, but not imitated
    assert json.loads((run.path / META_FILE).read_text())["args"]["learning_rate"] == 3e-4
    with pytest.raises(AgentError, match="drop --env"):
        ppo.train(PPOArgs(env_id=TINY, init=str(bc_run.path), env={"queue_slots": 8}, out_dir=str(tmp_path)))
    with pytest.raises(AgentError, match="no model"):
        load_agent(tmp_path / "nowhere")


def test_critic_warmup_keeps_the_clone_and_trains_only_the_critic(bc_run: bc.RunResult, tmp_path: Path) -> None:
    args = PPOArgs(
        env_id=TINY,
        init=str(bc_run.path),
        total_timesteps=512,
        n_steps=256,
        batch_size=128,
        n_epochs=1,
        learning_rate=1e-3,
        critic_warmup_steps=10_000,  # longer than the run: the actor never trains
        eval_seeds="",
        out_dir=str(tmp_path),
        run_name="warm",
        track=False,
    )
    run = ppo.train(args)
    assert run.meta.results["critic_warmup_updates"] == 2
    before, after = bc_run.model.policy.state_dict(), run.model.policy.state_dict()
    changed = {k for k in before if not th.equal(before[k], after[k])}
    assert changed and all("value" in k for k in changed), changed  # only the critic moved
    assert all(p.requires_grad for p in run.model.policy.parameters())  # unfrozen at the end
    with pytest.raises(AgentError, match="needs --init"):
        ppo.train(PPOArgs(env_id=TINY, critic_warmup_steps=10, out_dir=str(tmp_path)))
    with pytest.raises(AgentError, match="critic_warmup_steps=-1"):
        ppo.train(PPOArgs(env_id=TINY, init=str(bc_run.path), critic_warmup_steps=-1, out_dir=str(tmp_path)))


def test_actor_parameters_follow_the_graph_not_the_names(bc_run: bc.RunResult) -> None:
    from agents.callbacks import actor_parameters

    policy = bc_run.model.policy
    env = bc_run.model.get_env()
    assert env is not None
    obs = env.reset()
    actor = {id(p) for p in actor_parameters(policy, obs)}
    names = {n for n, p in policy.named_parameters() if id(p) in actor}
    assert any(n.startswith("action_net") for n in names)
    assert not any(n.startswith("value_net") for n in names)
    assert len(actor) < len(list(policy.parameters()))


def test_fine_tuning_may_change_the_reward_only(bc_run: bc.RunResult, tmp_path: Path) -> None:
    args = PPOArgs(
        env_id=TINY,
        init=str(bc_run.path),
        env={"reward_baseline": "edf"},
        total_timesteps=256,
        n_steps=256,
        batch_size=128,
        n_epochs=1,
        eval_seeds="",
        out_dir=str(tmp_path),
        run_name="relative",
        track=False,
    )
    run = ppo.train(args)
    assert run.meta.env_kwargs == {**bc_run.meta.env_kwargs, "reward_baseline": "edf"}
    with pytest.raises(AgentError, match="drop --env queue_slots"):
        ppo.train(PPOArgs(env_id=TINY, init=str(bc_run.path), env={"queue_slots": 8, "reward": "jct"}))


def test_bc_pools_several_demonstration_files_and_trains_on_float16_observations(
    bc_run: bc.RunResult, tmp_path: Path
) -> None:
    saved = Demonstrations.load(bc_run.path / "demos.npz")
    first, second = (
        Demonstrations(saved.trajectories[:2], saved.teacher, saved.env_id, saved.env_kwargs),
        Demonstrations(saved.trajectories[2:], saved.teacher, saved.env_id, saved.env_kwargs),
    )
    paths = [str(first.save(tmp_path / "a.npz")), str(second.save(tmp_path / "b.npz"))]
    common = {
        "env_id": TINY,
        "env": {"max_decisions": 150},
        "val_seeds": "100",
        "eval_seeds": "",
        "epochs": 2,
        "hidden": 32,
        "out_dir": str(tmp_path / "runs"),
        "track": False,
    }
    # Two files pooled train exactly as the one file they were split from.
    pooled = bc.train(BCArgs(demos=",".join(paths), run_name="pooled", **common))
    for (k1, v1), (k2, v2) in zip(
        bc_run.model.policy.state_dict().items(), pooled.model.policy.state_dict().items(), strict=True
    ):
        assert k1 == k2 and th.equal(v1, v2), k1
    assert pooled.meta.results["train_states"] == len(saved)
    # float16 storage trains (a different, nearby network) and agrees with the teacher about as well.
    half = bc.train(BCArgs(demos=paths[0] + "," + paths[1], obs_dtype="float16", run_name="half", **common))
    full_agree = bc_run.meta.results["agreement"]["agreement"]
    assert abs(half.meta.results["agreement"]["agreement"] - full_agree) < 0.05
    # A workload in two files, an empty list and an unknown dtype are refused before anything is written.
    with pytest.raises(AgentError, match=r"workload seed 0 is in both .*a\.npz and .*a\.npz"):
        bc.train(BCArgs(demos=f"{paths[0]},{paths[0]}", run_name="twice", **common))
    with pytest.raises(AgentError, match=r"at least one \.npz"):
        bc.train(BCArgs(demos=" , ", run_name="none", **common))
    with pytest.raises(AgentError, match="obs_dtype='bfloat16'"):
        bc.train(BCArgs(demos=paths[0], obs_dtype="bfloat16", run_name="bad", **common))
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["half", "pooled"]
