"""The user-written placer and the policy declaring it in docs/writing-a-policy.md: run as documented.

The page's code block is executed as it stands (so the page cannot drift from what works), then the
policy runs on the simulator and through the Gym environment with ``policy_compat``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import hetgym  # noqa: F401  (registers the env ids)
from hetgym.experts import ExpertAgent
from hetgym.sim import ClusterSpec, JobSpec, Simulator, make_policy
from hetgym.sim import policy as policy_module
from hetgym.sim.placement import PlacementRequest, list_placers, make_placer
from hetgym.sim.placement import base as placement_base

PAGE = Path(__file__).resolve().parents[2] / "docs" / "writing-a-policy.md"


@pytest.fixture(scope="module")
def documented() -> Iterator[dict[str, object]]:
    text = PAGE.read_text()
    section = text[text.index("## Placement: declare a placer") :]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    namespace: dict[str, object] = {"__name__": "docs_writing_a_policy"}
    exec(compile(code.group(1), str(PAGE), "exec"), namespace)  # the page's code, as a user would run it
    yield namespace
    # Leave the registries as other tests expect them.
    policy_module.POLICIES.unregister("packed-fifo")
    placement_base.PLACERS.unregister("lowest-id-first")


def test_the_documented_placer_packs_the_lowest_servers(documented: dict[str, object]) -> None:
    assert "lowest-id-first" in list_placers()
    cluster = ClusterSpec.from_inventory("four", {"v100": (4, 4)})
    free = np.array([4, 4, 4, 4])
    spec = JobSpec(0, 0.0, "resnet18", 64, 1e3, 6)
    placed = make_placer("lowest-id-first").place(cluster, free, [PlacementRequest(0, spec, (("v100", 6),), "sync")])
    assert [(g.server_id, g.num_gpus) for g in placed[0]] == [(0, 4), (1, 2)]
    assert free.tolist() == [0, 2, 4, 4]


def test_the_documented_policy_runs_with_its_placer_on_the_simulator_and_in_the_env(
    documented: dict[str, object],
) -> None:
    policy = make_policy("packed-fifo")
    assert policy.placer == "lowest-id-first"
    env = gym.make("HetCluster-Tiny-v0", policy_compat="packed-fifo")
    assert env.unwrapped.sim_config.placer == "lowest-id-first"
    agent = ExpertAgent("packed-fifo", env)
    obs, _ = env.reset(seed=3)
    done = False
    used_servers: set[int] = set()
    while not done:
        view = env.unwrapped.view
        used_servers |= {g.server_id for job in view.running for g in job.groups}
        action, _ = agent.predict(obs)
        obs, _, terminated, truncated, info = env.step(action)
        assert info.get("target_exact", True)
        done = terminated or truncated
    u = env.unwrapped
    direct = Simulator(u.cluster, u.jobs, config=u.sim_config).run(make_policy("packed-fifo"))
    np.testing.assert_allclose(
        u.result().jobs.sort_values("job_id")["finish_s"], direct.jobs.sort_values("job_id")["finish_s"], atol=1e-6
    )
    assert 0 in used_servers  # the packed end of the cluster is used
