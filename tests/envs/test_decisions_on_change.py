"""decisions="on-change": the agent is asked only when something changed; quiet round ticks pass."""

from __future__ import annotations

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
