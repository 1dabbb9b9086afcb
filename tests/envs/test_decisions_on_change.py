"""decisions="on-change": the agent is asked only when something changed; quiet round ticks pass."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from expert_episodes import expert_episode

import hetgym  # noqa: F401  (registers the ids)
from hetgym.sim import Simulator, make_policy


@pytest.mark.parametrize("reward", ["jct", "deadline"])
def test_an_event_driven_expert_gets_the_same_results_with_fewer_decisions(reward: str) -> None:
    # EDF decides on arrivals and completions only (uses_ticks=False): skipping quiet ticks changes nothing.
    _, r_every, i_every = expert_episode("edf", 4, reward=reward)
    change, r_change, i_change = expert_episode("edf", 4, reward=reward, decisions="on-change")
    commits_every = sum(i["committed"] for i in i_every)
    commits_change = sum(i["committed"] for i in i_change)
    assert commits_change < commits_every
    assert sum(r_change) == pytest.approx(sum(r_every), rel=1e-9, abs=1e-9)
    u = change.unwrapped
    direct = Simulator(u.cluster, u.jobs, config=u.sim_config).run(make_policy("edf"))
    np.testing.assert_allclose(
        u.result().jobs.sort_values("job_id")["finish_s"], direct.jobs.sort_values("job_id")["finish_s"], atol=1e-6
    )
    assert any(i.get("asked_at_quiet_tick") for i in i_every)
    assert not any(i.get("asked_at_quiet_tick") for i in i_change)
    assert i_change[-1]["metrics"]["num_decisions"] == i_every[-1]["metrics"]["num_decisions"]  # same epochs ran


def test_the_setting_is_validated() -> None:
    with pytest.raises(Exception, match="on-change"):
        gym.make("HetCluster-Tiny-v0", decisions="on_change")


def _quiet(env: gym.Env) -> bool:
    u = env.unwrapped
    view = u.view  # type: ignore[attr-defined]
    return bool(view is not None and view.is_tick and not view.arrived and not view.completed and not u.quiet.changed)  # type: ignore[attr-defined]


def test_request_decision_shows_the_next_quiet_tick_once() -> None:
    env = gym.make("HetCluster-Tiny-v1", sim={"round_s": 360.0})
    env.reset(seed=3)
    u = env.unwrapped
    asked_quiet = []  # per commit: (requested before it, the epoch shown after it is a quiet tick)
    for commit in range(20):
        requested = commit % 2 == 0
        if requested:
            u.request_decision()  # type: ignore[attr-defined]
        while True:  # the noop action decides nothing; it commits once the window is walked
            *_, term, trunc, info = env.step(u.noop_action())  # type: ignore[attr-defined]
            if info["committed"] or term or trunc:
                break
        if term or trunc:
            break
        asked_quiet.append((requested, _quiet(env)))
    # Asked at a quiet tick only right after a request; never without one.
    assert len(asked_quiet) >= 6
    assert any(req and quiet for req, quiet in asked_quiet)
    assert not any(quiet and not req for req, quiet in asked_quiet)
    env.close()


def test_request_decision_after_the_end_is_refused() -> None:
    env = gym.make("HetCluster-Tiny-v1", max_decisions=1)
    env.reset(seed=0)
    u = env.unwrapped
    while True:
        *_, term, trunc, _ = env.step(u.noop_action())  # type: ignore[attr-defined]
        if term or trunc:
            break
    with pytest.raises(Exception, match="call reset"):
        u.request_decision()  # type: ignore[attr-defined]


def test_a_postponed_gavel_recompute_is_asked_for_and_the_episode_ends() -> None:
    # Gavel's FIFO postpones a recompute to a later round; asked only on news it never ran the job that
    # arrived meanwhile and the watchdog stopped the episode (seed 1002, before wants_next_epoch).
    from hetgym.experts import ExpertAgent

    env = gym.make("HetCluster-Tiny-v1")
    with warnings.catch_warnings():
        # No physics warning: the id runs Gavel's own physics (360 s rounds, the default placer, sync).
        warnings.simplefilter("error", UserWarning)
        agent = ExpertAgent("gavel-fifo", env)
        obs, _ = env.reset(seed=1002)
        action, _ = agent.predict(obs)
    while True:
        obs, _, term, trunc, info = env.step(action)
        if term or trunc:
            break
        action, _ = agent.predict(obs)
    assert info["stop_reason"] == "done" and info["metrics"]["num_unfinished"] == 0
    assert make_policy("fifo").wants_next_epoch() is False  # the default


def test_only_an_acting_expert_asks_for_ticks_and_only_if_ticks_change_it() -> None:
    from hetgym.experts import ExpertAgent, ExpertTracker

    assert make_policy("dancer").wants_next_epoch() and make_policy("gandiva").wants_next_epoch()
    assert not make_policy("edf").wants_next_epoch()  # uses_ticks=False: decides on news only
    env = gym.make("HetCluster-Tiny-v1")
    obs, _ = env.reset(seed=0)
    with pytest.warns(UserWarning, match="physics differ"):
        ExpertTracker("dancer").label(env)  # the labelling wrapper's tracker
    assert not env.unwrapped.quiet.requested  # type: ignore[attr-defined]
    with pytest.warns(UserWarning, match="physics differ"):
        ExpertAgent("dancer", env).predict(obs)
    assert env.unwrapped.quiet.requested  # type: ignore[attr-defined]
