"""``hetgym train --n-envs N --vec dummy|subproc``: the vector env MaskablePPO trains on, and its errors."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch as th
from sb3_contrib.common.maskable.utils import get_action_masks
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from agents import ppo
from agents.args import AgentError, PPOArgs
from agents.vec import EnvFactory, make_train_venv, subproc_start_method, worker_env_id
from hetgym.cli import main

TINY = "HetCluster-Tiny-v1"
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--algo", "maskable-ppo", "--n-envs", "0"], "--n-envs 0: give the number of environments"),
        (["--algo", "ppo", "--n-envs", "-2", "--vec", "subproc"], "an integer >= 1"),
        (["--algo", "maskable-ppo", "--vec", "threads"], "--vec 'threads': give dummy"),
        (["--algo", "maskable-ppo", "--n-envs", "100000"], "give at most"),
        (["--algo", "bc", "--vec", "subproc"], "--vec does not apply to this recipe"),
    ],
)
def test_nonsense_vector_options_fail_naming_the_fix(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(["train", *argv, "--preset", "tiny", "--out-dir", str(tmp_path), "--no-progress"])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # refused before any run folder is written


def test_ppo_args_refuse_bad_vector_options() -> None:
    with pytest.raises(AgentError, match="--vec 'fork'"):
        PPOArgs(vec="fork")
    with pytest.raises(AgentError, match="--n-envs 0"):
        PPOArgs(n_envs=0)


def test_workers_make_the_env_through_the_module_prefixed_id() -> None:
    assert worker_env_id(TINY) == "hetgym:HetCluster-Tiny-v1"
    assert worker_env_id("mypkg:Other-v0") == "mypkg:Other-v0"
    factory = pickle.loads(pickle.dumps(EnvFactory(TINY, {"queue_slots": 8})))  # what a worker receives
    env = factory()
    assert env.spec is not None and env.spec.id == TINY
    assert env.unwrapped.config.queue_slots == 8  # type: ignore[attr-defined]
    assert subproc_start_method() in ("forkserver", "spawn")


def test_dummy_vec_env_batches_the_masks_maskable_ppo_reads() -> None:
    venv = make_train_venv(TINY, {}, 2, "dummy")
    try:
        assert isinstance(venv, DummyVecEnv) and venv.num_envs == 2
        venv.seed(3)
        venv.reset()
        masks = get_action_masks(venv)  # sb3-contrib: env_method("action_masks")
        assert masks.shape == (2, venv.action_space.n) and masks.dtype == np.bool_
        single = EnvFactory(TINY, {})()
        for i in range(2):
            single.reset(seed=3 + i)  # SB3 seeds environment i with seed + i
            np.testing.assert_array_equal(masks[i], single.unwrapped.action_masks())  # type: ignore[attr-defined]
    finally:
        venv.close()


@pytest.mark.slow
def test_subproc_vec_env_gives_the_same_steps_as_dummy() -> None:
    dummy = make_train_venv(TINY, {}, 2, "dummy")
    subproc = make_train_venv(TINY, {}, 2, "subproc")
    try:
        assert isinstance(subproc, SubprocVecEnv)
        for venv in (dummy, subproc):
            venv.seed(5)
        obs_d, obs_s = dummy.reset(), subproc.reset()
        rng = np.random.default_rng(0)
        for _ in range(60):
            for key in obs_d:
                np.testing.assert_array_equal(obs_d[key], obs_s[key], err_msg=key)
            masks = get_action_masks(subproc)
            np.testing.assert_array_equal(masks, get_action_masks(dummy))
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            obs_d, rew_d, done_d, _ = dummy.step(actions)
            obs_s, rew_s, done_s, _ = subproc.step(actions)
            np.testing.assert_array_equal(rew_d, rew_s)
            np.testing.assert_array_equal(done_d, done_s)
    finally:
        dummy.close()
        subproc.close()


@pytest.mark.slow
def test_train_maskable_ppo_on_subprocess_workers_saves_the_agent_a_dummy_run_saves(tmp_path: Path) -> None:
    budget = ["--total-timesteps", "256", "--n-steps", "64", "--batch-size", "64", "--n-epochs", "1"]
    budget += ["--hidden", "16", "--eval-seeds", "", "--seed", "3", "--no-track"]
    argv = ["train", "--algo", "maskable-ppo", "--preset", "tiny", "--n-envs", "2", "--vec", "subproc", *budget]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}  # this checkout's packages in the command's process
    proc = subprocess.run(
        [sys.executable, "-m", "hetgym.cli", *argv, "--out-dir", str(tmp_path), "--run-name", "sub", "--no-progress"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    run = tmp_path / "sub"
    meta = json.loads((run / "agent.json").read_text())
    assert meta["args"]["n_envs"] == 2 and meta["args"]["vec"] == "subproc" and meta["env_id"] == TINY
    assert meta["results"]["timesteps"] >= 256 and meta["results"]["stage"] == "evaluated"
    # The same run on DummyVecEnv in this process: the same seeds per environment, so the same weights.
    same = PPOArgs(
        env_id=TINY,
        total_timesteps=256,
        n_steps=64,
        batch_size=64,
        n_epochs=1,
        hidden=16,
        eval_seeds="",
        seed=3,
        track=False,
        n_envs=2,
        vec="dummy",
        out_dir=str(tmp_path),
        run_name="dummy",
    )
    ppo.train(same)
    sub_weights = th.load(run / "model.pt", weights_only=True)
    dummy_weights = th.load(tmp_path / "dummy" / "model.pt", weights_only=True)
    assert sub_weights.keys() == dummy_weights.keys()
    for key in sub_weights:
        assert th.equal(sub_weights[key], dummy_weights[key]), key
