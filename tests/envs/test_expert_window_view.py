"""Experts shown only the env's window (``sees="window"``): what they see, and that none stalls.

An expert shown the whole cluster may give the free GPUs to waiting jobs outside the window, which the
codec cannot express; when it always prefers such jobs the GPUs stay idle and the episode stalls
(Gandiva, Gavel's makespan policy and the agnostic ElasticFlow did so at ``HetCluster-v1``'s
defaults). A two-slot window on ``HetCluster-Tiny-v1`` reproduces that in a second.
"""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import pytest

from hetgym.experts import ExpertAgent, ExpertLabelWrapper, ExpertTracker, window_view
from hetgym.sim import list_policies
from hetgym.sim.errors import HetgymError


def run(policy: str, seed: int, sees: str, **env_kwargs: Any) -> tuple[dict[str, Any], ExpertAgent]:
    env = gym.make("HetCluster-Tiny-v1", **env_kwargs)
    with warnings.catch_warnings():  # the id's physics differ from some policies' own: the point here
        warnings.simplefilter("ignore", UserWarning)
        agent = ExpertAgent(policy, env, sees=sees)
        obs, info = env.reset(seed=seed)
        for _ in range(20_000):
            action, _ = agent.predict(obs)
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                return info, agent
    raise AssertionError(f"{policy} seed {seed}: no end in 20,000 steps")


def busy_view(**env_kwargs: Any) -> tuple[Any, list[int]]:
    """An epoch of seed 5 with some jobs running and more waiting than a 2-slot window holds."""
    env = gym.make("HetCluster-Tiny-v1", queue_slots=2, **env_kwargs)
    agent = ExpertAgent("fifo", env)
    obs, _ = env.reset(seed=5)
    u = env.unwrapped
    for _ in range(5_000):
        view = u.view  # type: ignore[attr-defined]
        if view is not None and view.running and len(view.waiting) >= 3:
            return view, [job.job_id for job in u.state.jobs]  # type: ignore[attr-defined]
        action, _ = agent.predict(obs)
        obs, *_ = env.step(action)
    raise AssertionError("no busy epoch found")


def test_the_window_view_hides_exactly_the_waiting_jobs_outside_the_window() -> None:
    view, window = busy_view()
    shown, ids = window_view(view, window, shown_before=())
    running = {j.job_id for j in view.running}
    assert {j.job_id for j in shown.running} == running
    assert {j.job_id for j in shown.waiting} == {j.job_id for j in view.waiting} & set(window)
    assert len(shown.waiting) < len(view.waiting)  # something is hidden
    assert ids == frozenset(window) | running
    assert dict(shown.free_gpus) == dict(view.free_gpus)
    assert shown.previous_token is None and shown.active.token is not view.active.token
    # Nothing shown before: to the policy every job it is shown arrives now.
    assert set(shown.arrived) == ids and len(shown.arrived) == len(ids)
    # A job shown before and hidden now leaves; one the simulator completed stays completed.
    hidden = next(j.job_id for j in view.waiting if j.job_id not in window)
    again, _ = window_view(view, window, shown_before=ids | {hidden})
    assert hidden in again.completed and set(view.completed) <= set(again.completed)
    assert not set(again.arrived) - set(view.arrived)  # nothing new to it


def test_the_window_view_is_the_view_itself_when_nothing_is_hidden() -> None:
    view, _ = busy_view()
    everything = [j.job_id for j in view.jobs]
    first, ids = window_view(view, everything, shown_before=())
    assert first is not view  # jobs it has not been shown arrive
    same, ids_again = window_view(view, everything, shown_before=ids)
    assert same is view and ids_again == ids


@pytest.mark.parametrize(("policy", "seed"), [("gandiva", 2), ("gavel-makespan", 2), ("elasticflow-agnostic", 5)])
def test_experts_that_stall_when_shown_everything_finish_when_shown_the_window(policy: str, seed: int) -> None:
    final, everything = run(policy, seed, "all", queue_slots=2)
    assert final["stop_reason"] == "stalled"  # the failure this option exists for
    final, window = run(policy, seed, "window", queue_slots=2)
    assert final["stop_reason"] == "done"
    # What is still inexact concerns running jobs outside the window (they keep their GPUs), never a
    # waiting job the policy was not shown.
    all_t, win_t = everything.trackers[0], window.trackers[0]
    assert win_t.num_inexact / win_t.num_epochs < all_t.num_inexact / all_t.num_epochs
    assert not any("expressible no GPUs (the job is outside" in r for r in win_t.reasons)


@pytest.mark.parametrize("policy", sorted(list_policies()))
def test_no_expert_shown_the_window_stalls_in_a_two_slot_window(policy: str) -> None:
    final, _ = run(policy, 5, "window", queue_slots=2)
    assert final["stop_reason"] == "done", final.get("stall_reason")
    assert final["metrics"]["num_unfinished"] == 0


def test_a_full_window_changes_nothing() -> None:
    # Tiny-v1's 32 slots hold every job of the tiny scenario: both views give the same episode.
    a, _ = run("elasticflow", 3, "all")
    b, _ = run("elasticflow", 3, "window")
    assert a["metrics"] == b["metrics"]


def test_sees_is_checked_and_reaches_the_label_wrapper() -> None:
    with pytest.raises(HetgymError, match="sees='jobs' is not one of"):
        ExpertTracker("fifo", sees="jobs")
    wrapper = ExpertLabelWrapper(gym.make("HetCluster-Tiny-v1"), "fifo", sees="window")
    assert wrapper.tracker.sees == "window"
