"""HetClusterEvents-v1: the event actions with sharing options (``action_set="share"``).

Action 0 is still ElasticFlow bit for bit, the first ``2T + 4`` actions are v0's, the table's layout and masks
are as documented, each sharing option reaches the allocator, and a fork (deep copy) continues exactly.
(``tests/envs/test_events.py`` runs Gymnasium's and SB3's checkers on every ``HetClusterEvents`` id.)
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence

from hetgym.envs.events import AUTO_ACTION, REJECT_ACTION, EventActions, HetClusterEventEnv
from hetgym.envs.events.actions import SHARE_OPTIONS, SHARED_ADMISSIONS
from hetgym.envs.events.experts import EventExpertAgent
from hetgym.sim import Simulator, UnknownNameError, make_policy
from hetgym.sim.allocation import Allocation
from hetgym.sim.errors import HetgymError
from hetgym.sim.guidance import Directive
from hetgym.sim.job import JobSpec

SHORT = {"workload": {"num_jobs": 30}}


def play(env: gym.Env, choose: Any, seed: int, options: dict[str, Any] | None = None) -> tuple[list[Any], dict]:
    """One episode; ``choose(env, info)`` gives each action. Returns the trace and the last info."""
    obs, info = env.reset(seed=seed, options=options)
    trace: list[Any] = [obs]
    while True:
        obs, reward, terminated, truncated, info = env.step(choose(env, info))
        trace.append((obs, reward, terminated, truncated, info["reward_components"], info["action_mask"]))
        if terminated or truncated:
            return trace, info


def record_allocations(env: gym.Env) -> dict[int, list[dict[str, int]]]:
    """Every allocation the env's allocator returns from now on, per job (the env calls ``schedule``)."""
    allocator: Any = env.unwrapped.allocator  # type: ignore[attr-defined]
    inner = allocator.schedule
    seen: dict[int, list[dict[str, int]]] = {}

    def schedule(view: Any) -> Allocation:
        out = inner(view)
        for jid, ja in out.jobs.items():
            seen.setdefault(jid, []).append(ja.as_dict())
        return out

    allocator.schedule = schedule
    return seen


@pytest.mark.parametrize(
    ("env_id", "seeds", "kwargs"), [("HetClusterEvents-Tiny-v1", (0, 1, 2), {}), ("HetClusterEvents-v1", (3,), SHORT)]
)
@pytest.mark.parametrize("mode", ["auto", "closest"])
def test_action_0_of_v1_is_elasticflow_on_the_simulator(
    env_id: str, seeds: tuple[int, ...], kwargs: dict[str, Any], mode: str
) -> None:
    env = gym.make(env_id, **kwargs)
    u = env.unwrapped
    assert u.actions.action_set == "share"
    agent = EventExpertAgent("elasticflow", env, mode=mode)
    for seed in seeds:
        _, info = play(env, lambda e, i: agent.predict(None)[0], seed=seed)
        direct = Simulator(u.cluster, u.jobs, config=u.config.sim).run(make_policy("elasticflow"))
        assert u.result().jobs.equals(direct.jobs), f"seed {seed}: per-job results differ"
        assert u.result().num_epochs == direct.num_epochs
        assert info["metrics"]["dsr"] == direct.metrics["dsr"]


def test_v1_starts_with_v0s_table_and_plays_it_identically() -> None:
    v0, v1 = gym.make("HetClusterEvents-Tiny-v0"), gym.make("HetClusterEvents-Tiny-v1")
    n0 = v0.unwrapped.actions.n
    assert v1.unwrapped.actions.directives[:n0] == v0.unwrapped.actions.directives
    assert v1.observation_space == v0.observation_space  # the observation is v0's

    def agent(seed: int) -> Any:
        rng = np.random.default_rng(seed)
        return lambda env, info: int(rng.choice(np.flatnonzero(info["action_mask"][:n0])))

    for seed in (0, 5):
        a, info_a = play(v0, agent(seed), seed=seed)
        b, info_b = play(v1, agent(seed), seed=seed)
        assert data_equivalence(a[0], b[0], exact=True)
        for step_a, step_b in zip(a[1:], b[1:], strict=True):
            assert data_equivalence(step_a[:5], step_b[:5], exact=True)
            assert np.array_equal(step_a[5], step_b[5][:n0])
        assert v0.unwrapped.result().jobs.equals(v1.unwrapped.result().jobs)
        assert info_a["metrics"] == info_b["metrics"]


def test_the_table_has_the_documented_layout() -> None:
    types = ("a100", "v100", "p100", "k80")
    acts = EventActions(types, "share")
    t, s = len(types), len(SHARE_OPTIONS)
    assert acts.n == 6 * t + 16 == 40 and len(set(acts.directives)) == acts.n
    for i, admission in enumerate(SHARED_ADMISSIONS):
        for j, (priority, cap) in enumerate(SHARE_OPTIONS):
            assert acts.directive(4 + 2 * t + s * i + j) == Directive(admission, None, priority, cap)
    for k, gpu_type in enumerate(types):
        for j, (priority, cap) in enumerate(SHARE_OPTIONS):
            assert acts.directive(16 + 2 * t + s * k + j) == Directive("force", gpu_type, priority, cap)
    assert all(acts.index(d) == a for a, d in enumerate(acts.directives))
    assert acts.describe(acts.index(Directive("force", "v100", "high"))) == "force on v100, high priority"
    assert EventActions(types).n == 2 * t + 4


def test_masks_forbid_a_cap_that_leaves_no_level_and_a_masked_action_falls_back() -> None:
    acts = EventActions(("v100", "k80"), "share")
    capped = acts.index(Directive("force", "k80", gpu_cap="requested"))
    untyped_capped = acts.index(Directive("force", gpu_cap="requested"))
    high_k80 = acts.index(Directive("force", "k80", "high"))
    mask = acts.mask(("v100", "k80"), ("v100",))
    assert not mask[capped] and mask[untyped_capped] and mask[high_k80]
    assert acts.fallback(capped, mask) == acts.index(Directive("force", "k80"))
    none = acts.mask(("v100", "k80"), ())
    assert not none[untyped_capped] and none[acts.index(Directive("force", gpu_cap="share"))]
    assert acts.fallback(untyped_capped, none) == acts.index(Directive("force"))
    only_v100 = acts.mask(("v100",), ("v100",))
    assert not only_v100[high_k80] and acts.fallback(high_k80, only_v100) == acts.index(
        Directive("force", None, "high")
    )
    assert acts.mask(("v100", "k80"), None).all()
    assert np.flatnonzero(acts.late_mask()).tolist() == [AUTO_ACTION, REJECT_ACTION]


def job(job_id: int, **fields: Any) -> JobSpec:
    base: dict[str, Any] = {
        "job_id": job_id,
        "submit_s": 0.0,
        "job_type": "resnet50",
        "batch_size": 128,
        "total_iters": 10_000.0,
        "num_gpus": 1,
        "deadline_s": 60_000.0,
        "max_gpus": 4,
    }
    return JobSpec(**{**base, **fields})


def test_in_the_env_a_cap_with_no_level_is_masked_and_taken_uncapped() -> None:
    env = HetClusterEventEnv(scenario="tiny", action_set="share")
    # ElasticFlow's levels are powers of two: a job needing three GPUs runs on four, more than it requests.
    _, info = env.reset(seed=0, options={"jobs": [job(0, min_gpus=3, num_gpus=3)]})
    capped = env.actions.index(Directive("force", gpu_cap="requested"))
    assert not info["action_mask"][capped] and info["action_mask"][env.actions.index(Directive("force", "k80"))]
    seen = record_allocations(env)
    _, _, terminated, _, info = env.step(capped)
    assert info["invalid_action"] and terminated and info["metrics"]["dsr"] == 1.0
    assert max(sum(c.values()) for c in seen[0]) == 4  # taken as plain "force": it ran on four GPUs


def test_in_the_env_the_high_priority_job_gets_the_left_over_gpu() -> None:
    # Three jobs forced onto the four K80s, each with a share of one: the fourth K80 is left over.
    jobs = [job(i) for i in range(3)]
    for priorities, want in (
        (("normal", "normal", "normal"), 0),  # ElasticFlow's own order: the first in deadline order
        (("normal", "normal", "high"), 2),
        (("low", "normal", "normal"), 1),
    ):
        env = HetClusterEventEnv(scenario="tiny", action_set="share")
        env.reset(seed=0, options={"jobs": jobs})
        seen = record_allocations(env)
        for p in priorities:
            terminated = env.step(env.actions.index(Directive("force", "k80", p)))[2]
        assert terminated
        first = {jid: allocs[0] for jid, allocs in seen.items()}
        assert first == {jid: {"k80": 2 if jid == want else 1} for jid in range(3)}, priorities


def test_in_the_env_a_job_capped_at_its_request_never_holds_more() -> None:
    for cap, exceeds in (("none", True), ("requested", False)):
        env = gym.make("HetClusterEvents-Tiny-v1")
        action = env.unwrapped.actions.index(Directive("force", gpu_cap=cap))
        seen = record_allocations(env)
        play(env, lambda e, i, a=action: a, seed=1)
        requested = {s.job_id: s.num_gpus for s in env.unwrapped.jobs}
        most = {jid: max(sum(c.values()) for c in allocs) for jid, allocs in seen.items()}
        assert any(n > requested[jid] for jid, n in most.items()) == exceeds, cap


def test_one_priority_for_every_job_is_elasticflows_order() -> None:
    # Classes order jobs only against each other: the same class for all leaves the leftover order as it is.
    env = gym.make("HetClusterEvents-Tiny-v1")
    acts = env.unwrapped.actions
    for admission in SHARED_ADMISSIONS:
        tables = []
        for priority in ("normal", "high", "low"):
            action = acts.index(Directive(admission, None, priority))
            trace, _ = play(env, lambda e, i, a=action: a, seed=2)
            tables.append((trace, env.unwrapped.result().jobs))
        for trace, jobs in tables[1:]:
            assert data_equivalence(trace, tables[0][0], exact=True) and jobs.equals(tables[0][1]), admission


def test_a_fork_of_v1_continues_exactly() -> None:
    env = gym.make("HetClusterEvents-Tiny-v1").unwrapped
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=3)
    sharing = [a for a in range(env.actions.n) if not env.actions.directive(a).shares_by_default]
    for _ in range(4):  # sharing directives in force in the allocator when the copy is taken
        _, _, terminated, _, info = env.step(int(rng.choice([a for a in sharing if info["action_mask"][a]])))
        assert not terminated
    assert env.allocator._directives  # type: ignore[attr-defined]
    fork = copy.deepcopy(env)
    tails = []
    for e in (env, fork):
        pick = np.random.default_rng(1)
        steps = []
        while True:
            allowed = np.flatnonzero(e.action_masks())
            obs, reward, terminated, truncated, info = e.step(int(pick.choice(allowed)))
            steps.append((obs, reward, terminated, truncated, info["reward_components"]))
            if terminated or truncated:
                break
        tails.append((steps, e.result().jobs))
    assert data_equivalence(tails[0][0], tails[1][0], exact=True)
    assert tails[0][1].equals(tails[1][1])


def test_bad_action_sets_and_directives_are_named() -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'share'"):
        gym.make("HetClusterEvents-Tiny-v0", action_set="shares")
    with pytest.raises(UnknownNameError, match="action set"):
        EventActions(("v100",), "all")
    v0 = gym.make("HetClusterEvents-Tiny-v0").unwrapped
    with pytest.raises(HetgymError, match="action_set='share'"):
        v0.actions.index(Directive("force", priority="high"))
    v1 = gym.make("HetClusterEvents-Tiny-v1").unwrapped
    with pytest.raises(HetgymError, match="no action"):
        v1.actions.index(Directive("auto", "k80", "high"))  # a type under sharing options only with force
