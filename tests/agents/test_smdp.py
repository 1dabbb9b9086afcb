"""Discounting by simulated time: zero-time steps are free, so padding an epoch earns nothing."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th
from gymnasium import spaces

from agents.args import AgentError
from agents.smdp import TimeDiscountedRolloutBuffer, step_discounts


def returns_of(rewards: list[float], dts: list[float], gamma: float, values: list[float] | None = None) -> np.ndarray:
    n = len(rewards)
    buf = TimeDiscountedRolloutBuffer(n, spaces.Box(0, 1, (1,)), spaces.Discrete(2), gae_lambda=1.0, gamma=gamma)
    for i in range(n):
        buf.pending = step_discounts(np.array([dts[i]]), gamma, 3600.0)
        buf.add(
            np.zeros((1, 1), np.float32),
            np.zeros((1, 1)),
            np.array([rewards[i]], np.float32),
            np.array([i == 0], np.float32),
            th.tensor([values[i] if values else 0.0]),
            th.zeros(1),
        )
    buf.compute_returns_and_advantage(th.zeros(1), np.array([True]))
    return buf.returns[:, 0]


def test_a_step_is_discounted_by_its_simulated_time() -> None:
    # Two commits of one hour each, rewards -1 then -1: G0 = -1 + 0.9 * -1.
    got = returns_of([-1.0, -1.0], [3600.0, 3600.0], 0.9)
    np.testing.assert_allclose(got, [-1.9, -1.0], rtol=1e-6)


def test_padding_an_epoch_with_zero_time_edits_changes_no_return() -> None:
    # The pathology of per-step discounting: the same decisions expressed with extra zero-time edits.
    plain = returns_of([-1.0, -2.0, -1.0], [1800.0, 3600.0, 600.0], 0.95)
    padded = returns_of([0.0, 0.0, -1.0, 0.0, 0.0, 0.0, -2.0, -1.0], [0, 0, 1800.0, 0, 0, 0, 3600.0, 600.0], 0.95)
    np.testing.assert_allclose(padded[[2, 6, 7]], plain, rtol=1e-6)
    np.testing.assert_allclose(padded[0], plain[0], rtol=1e-6)  # the edits before a commit share its return


def test_bad_discounts_and_a_missing_callback_are_refused() -> None:
    with pytest.raises(AgentError, match=r"\(0, 1\]"):
        step_discounts(np.zeros(1), 1.5, 3600.0)
    buf = TimeDiscountedRolloutBuffer(2, spaces.Box(0, 1, (1,)), spaces.Discrete(2))
    with pytest.raises(AgentError, match="TimeDiscountCallback"):
        buf.add(np.zeros((1, 1)), np.zeros((1, 1)), np.zeros(1), np.zeros(1), th.zeros(1), th.zeros(1))


@pytest.mark.parametrize("algo", ["maskable-ppo", "ppo"])
def test_the_ppo_recipe_trains_with_time_discounting(tmp_path, algo: str) -> None:  # type: ignore[no-untyped-def]
    from agents import ppo
    from agents.args import PPOArgs

    run = ppo.train(
        PPOArgs(
            env_id="HetCluster-Tiny-v0",
            algo=algo,
            time_discount=True,
            total_timesteps=128,
            n_steps=64,
            batch_size=32,
            n_epochs=1,
            hidden=16,
            eval_seeds="",
            track=False,
            out_dir=str(tmp_path),
            run_name=algo,
        )
    )
    buf = run.model.rollout_buffer
    assert "TimeDiscounted" in type(buf).__name__
    # Draft edits (no simulated time) are not discounted; commits that advance the clock are.
    assert (buf.discounts == 1.0).any() and (buf.discounts < 1.0).any()
    assert run.meta.args["time_discount"] is True
