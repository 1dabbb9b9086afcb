"""The priority-score codec: its layout and mask, the allocator on hand-made actions, and the inverse map."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import hetgym  # noqa: F401  (registers the ids)
from hetgym.envs import HetClusterEnv
from hetgym.envs.codecs import CODECS, ScoreCodec, ScoreKnobs
from hetgym.envs.codecs.score import CHOICE, COUNT, MODE, PRIORITY
from hetgym.experts import ExpertAgent, ExpertTracker, expert_env_kwargs
from hetgym.sim import Allocation, JobAllocation, Simulator, UnknownNameError, make_policy
from hetgym.sim.registry import KnobError


def env_with_jobs(min_jobs: int, seed: int = 0, **kwargs: Any) -> HetClusterEnv:
    """A Tiny env (score codec) advanced by FIFO until the window holds at least ``min_jobs`` jobs."""
    env = HetClusterEnv(scenario="tiny", codec="score", **kwargs)
    env.reset(seed=seed)
    tracker = ExpertTracker("fifo")
    while env.view is not None and len(env.state.jobs) < min_jobs:
        env.step(tracker.label(env))
    assert env.view is not None and len(env.state.jobs) >= min_jobs
    return env


def decode(env: HetClusterEnv, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The draft and rejections the allocator makes of ``rows``, and the repairs (the draft is restored)."""
    state = env.state
    snap = state.copy_draft()
    step = env.codec.apply(state, rows.reshape(-1), env.action_masks())
    draft, rejected = state.draft.copy(), state.rejected.copy()
    state.restore_draft(snap)
    assert step.commit
    return draft, rejected, step.repaired


def assert_allowed(mask: np.ndarray, nvec: np.ndarray, action: np.ndarray) -> None:
    """Every entry of ``action`` passes its dimension's mask (a label behaviour cloning keeps)."""
    offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])
    assert mask[offsets + action].all(), np.flatnonzero(~mask[offsets + action])


def test_score_is_registered_and_passes_the_checkers() -> None:
    assert CODECS.get("score") is ScoreCodec
    assert CODECS.entry("score").knobs is ScoreKnobs
    for env_id in ("HetCluster-Tiny-v0", "HetCluster-v0"):
        env = gym.make(env_id, codec="score")
        check_env(env.unwrapped, skip_render_check=True)
        sb3_check_env(env.unwrapped, warn=False)


@pytest.mark.parametrize(
    ("kwargs", "row"),
    [
        ({}, [2 + 3, 3, 4]),  # Tiny: T=2 types + none, keep, reject; levels 1, 2, 4; P=4
        ({"allow_reject": False}, [2 + 2, 3, 4]),
        ({"codec_knobs": {"priority_levels": 2}, "count_levels": "all"}, [2 + 3, 4, 2]),
        ({"modes": ["sync", "fork"]}, [2 + 3, 3, 4, 2]),
    ],
)
def test_space_and_mask_shapes(kwargs: dict[str, Any], row: list[int]) -> None:
    env = gym.make("HetCluster-Tiny-v0", codec="score", queue_slots=5, **kwargs)
    space = env.action_space
    assert isinstance(space, gym.spaces.MultiDiscrete)
    assert space.nvec.tolist() == row * 5  # slot-major: one row per slot
    _, info = env.reset(seed=0)
    mask = info["action_mask"]
    assert mask.shape == (int(space.nvec.sum()),) and mask.dtype == bool
    assert np.array_equal(mask, env.unwrapped.action_masks())
    # Per slot and dimension, entry 0 is always valid; an empty slot allows nothing else.
    state = env.unwrapped.state
    offset = 0
    for slot in range(5):
        for n in row:
            part = mask[offset : offset + n]
            assert part[0]
            if not state.used[slot]:
                assert not part[1:].any()
            offset += n
    assert state.used.sum() >= 1 and mask[: row[0]].sum() > 1  # the first job may take a type


def test_the_mask_lists_the_types_a_job_may_use_and_the_counts_that_fit() -> None:
    env = env_with_jobs(2)
    codec, state = env.codec, env.state
    mask = env.action_masks().reshape(state.num_slots, -1)
    n_choice, n_count = codec.row[0], codec.row[1]
    for slot in range(len(state.jobs)):
        choice = mask[slot, :n_choice]
        assert choice[0] and choice[codec.reject_choice]
        assert np.array_equal(choice[1:3], state.allowed[slot])  # nothing outside the window: every type fits
        assert choice[codec.keep_choice] == state.current[slot].any()  # keep only what a job holds
        assert mask[slot, n_choice : n_choice + n_count].all()  # 1, 2 and 4 GPUs fit a 4-GPU type


def test_hand_made_actions_are_served_by_priority_then_window_order() -> None:
    env = env_with_jobs(3, allow_reject=True)
    state, codec = env.state, env.codec
    assert not state.outside and state.allowed[:3].all()
    k, d = state.num_slots, codec.dims_per_slot
    v100, k80 = 1, 2  # choices: 1 + type index in ("v100", "k80")
    four, two = 2, 1  # count indices into the positive levels (1, 2, 4)

    # Slot 0 and slot 1 both ask for all 4 V100; slot 1 has the higher priority and gets them.
    rows = np.zeros((k, d), dtype=np.int64)
    rows[0] = [v100, four, 0]
    rows[1] = [v100, four, 3]
    rows[2] = [k80, two, 0]
    draft, rejected, repaired = decode(env, rows)
    assert draft[1].tolist() == [4, 0] and draft[0].tolist() == [0, 0] and draft[2].tolist() == [0, 2]
    assert not rejected.any() and repaired == 1  # slot 0's request was dropped

    # Equal priorities: window order (slot 0 first); slot 1 shrinks to what is left on its type.
    rows[0] = [v100, two, 2]
    rows[1] = [v100, four, 2]
    draft, _, repaired = decode(env, rows)
    assert draft[0].tolist() == [2, 0] and draft[1].tolist() == [2, 0] and repaired == 1

    # Without shrinking, a request that does not fit gets nothing.
    strict = env_with_jobs(3, allow_reject=True, codec_knobs={"shrink": False})
    draft, _, repaired = decode(strict, rows)
    assert draft[0].tolist() == [2, 0] and draft[1].tolist() == [0, 0] and repaired == 1

    # Choice 0 gives no GPUs; the last choice rejects; entries of empty slots are ignored but counted.
    rows[:] = 0
    rows[0, CHOICE] = codec.reject_choice
    rows[1] = [0, four, 3]  # a count and priority without a type: no GPUs, not a repair
    rows[k - 1] = [k80, 1, 1]  # an empty slot (the window holds fewer than K jobs)
    assert not state.used[k - 1]
    draft, rejected, repaired = decode(env, rows)
    assert rejected.tolist()[:3] == [True, False, False] and not draft.any()
    assert repaired == 3  # the empty slot's three non-zero entries

    # Committing the hand-made action applies exactly the decoded allocation.
    rows[:] = 0
    rows[0] = [k80, four, 0]
    rows[1] = [v100, 0, 0]
    jobs = [int(j) for j in state.ids[:2]]
    _, _, _, _, info = env.step(rows.reshape(-1))
    assert info["committed"] and info["repaired"] == 0 and not info["invalid_action"]
    held = {j.job_id: j.allocation.as_dict() for j in env.view.jobs if j.allocation}
    for jid, want in zip(jobs, [{"k80": 4}, {"v100": 1}], strict=True):
        assert held.get(jid, want) == want  # (unless the job completed at once)


def test_keep_holds_a_job_in_place_at_its_priority() -> None:
    env = env_with_jobs(3)
    state, codec = env.state, env.codec
    # Run slot 0 on 4 V100 (the whole type) for one epoch, then try to keep it.
    rows = np.zeros((state.num_slots, codec.dims_per_slot), dtype=np.int64)
    rows[0] = [1, 2, 0]
    env.step(rows.reshape(-1))
    slot = int(np.flatnonzero(env.state.current[:, 0] == 4)[0])
    held = env.view.job_index[int(env.state.ids[slot])].allocation
    other = next(s for s in range(len(env.state.jobs)) if s != slot and env.state.allowed[s, 0])
    keep = np.zeros_like(rows)
    keep[slot] = [codec.keep_choice, 0, 1]
    draft, _, repaired = decode(env, keep)
    assert draft[slot].tolist() == [4, 0] and repaired == 0
    # A more urgent request on V100 at a higher priority takes the GPUs: the keep gets nothing.
    keep[other] = [1, 0, 2]
    draft, _, repaired = decode(env, keep)
    assert draft[slot].tolist() == [0, 0] and draft[other].tolist() == [1, 0] and repaired == 1
    # At equal priorities the slot earlier in the window is served first.
    keep[other] = [1, 0, 1]
    draft, _, _ = decode(env, keep)
    assert draft[min(slot, other)].sum() > 0 and draft[max(slot, other)].sum() == 0
    # Committing a keep leaves the job's allocation (servers included) untouched: no restart.
    noop = codec.noop(env.state)
    assert noop.reshape(state.num_slots, -1)[slot].tolist() == [codec.keep_choice, 0, codec.priority_levels - 1]
    jid = int(state.ids[slot])
    env.step(noop)
    if env.view is not None and jid in env.view.job_index:  # (unless it completed)
        assert env.view.job_index[jid].allocation == held


def test_a_job_spread_over_types_can_be_kept_but_not_started() -> None:
    # The score codec never spreads a job, but an expert's trajectory (driven through another codec) does.
    env = HetClusterEnv(scenario="tiny", codec="multidiscrete", modes=["sync", "fork"])
    env.reset(seed=0)
    jid = env.view.jobs[0].job_id
    env.step(env.encode(Allocation({jid: JobAllocation({"v100": 2, "k80": 1}, mode="fork")})).actions[0])
    assert env.view is not None and env.view.job_index[jid].allocation.as_dict() == {"v100": 2, "k80": 1}
    score = ScoreCodec(env.state, env.config.settings(env.throughput), ScoreKnobs())
    kept = Allocation({j.job_id: j.allocation for j in env.view.jobs if j.allocation})
    enc = score.encode(env.state, kept)
    assert enc.exact, enc.reasons
    slot = int(np.flatnonzero(env.state.ids == jid)[0])
    assert enc.actions[0].reshape(env.state.num_slots, -1)[slot, CHOICE] == score.keep_choice
    assert enc.actions[0].tolist() == score.noop(env.state).tolist()
    spread = Allocation({**kept.jobs, jid: JobAllocation({"v100": 1, "k80": 1}, mode="fork")})  # a change
    enc = score.encode(env.state, spread)
    assert not enc.exact and any("one type" in r for r in enc.reasons)


def test_modes_are_set_per_slot() -> None:
    env = env_with_jobs(1, modes=["sync", "fork"])
    rows = np.zeros((env.state.num_slots, env.codec.dims_per_slot), dtype=np.int64)
    rows[0] = [1, 0, 0, 1]
    state = env.state
    snap = state.copy_draft()
    env.codec.apply(state, rows.reshape(-1), env.action_masks())
    assert state.draft_mode[0] == 1 and state.allocation().jobs[int(state.ids[0])].mode == "fork"
    state.restore_draft(snap)
    assert MODE == 3 and (CHOICE, COUNT, PRIORITY) == (0, 1, 2)


@pytest.mark.parametrize(
    ("action", "match"),
    [
        (np.zeros(5, dtype=np.int64), r"a score action is an integer array of shape \(48,\)"),
        (np.zeros((16, 3), dtype=np.int64), r"integer array of shape \(48,\).*one row of \[5, 3, 4\]"),
        (np.full(48, 0.5), "integer array"),
        (np.full(48, 9, dtype=np.int64), r"outside the action space.*entry 0 is 9, allowed 0..4"),
        (np.full(48, -1, dtype=np.int64), "outside the action space"),
        ("v100", "integer array"),
    ],
)
def test_a_malformed_action_raises_a_clear_error(action: Any, match: str) -> None:
    env = gym.make("HetCluster-Tiny-v0", codec="score")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=match):
        env.step(action)
    # Nothing was half-applied: a valid action still works.
    _, _, _, _, info = env.step(env.unwrapped.noop_action())
    assert info["committed"]


def test_knobs_are_checked_with_clear_errors() -> None:
    with pytest.raises(KnobError, match="priority_levels=0"):
        gym.make("HetCluster-Tiny-v0", codec="score", codec_knobs={"priority_levels": 0})
    with pytest.raises(KnobError, match="shrink='yes'"):
        gym.make("HetCluster-Tiny-v0", codec="score", codec_knobs={"shrink": "yes"})
    with pytest.raises(UnknownNameError, match="priority_levels"):
        gym.make("HetCluster-Tiny-v0", codec="score", codec_knobs={"priority_level": 2})
    env = gym.make("HetCluster-Tiny-v0", codec="score", codec_knobs={"priority_levels": 1})
    assert env.unwrapped.codec.knob_values == ScoreKnobs(priority_levels=1)


def single_type_target(env: HetClusterEnv, rng: np.random.Generator) -> Allocation:
    """A random feasible allocation giving each window job one type on the levels (or none, or a rejection)."""
    state = env.state
    free = state.capacity - state.outside_held
    jobs = {j.job_id: j.allocation for j in state.outside if j.allocation}
    reject: set[int] = set()
    for slot, job in enumerate(state.jobs):
        if env.config.allow_reject and rng.random() < 0.1:
            reject.add(job.job_id)
            continue
        types = [t for t in np.flatnonzero(state.allowed[slot]) if free[t] >= 1]
        if not types or rng.random() < 0.3:
            continue
        t = int(rng.choice(types))
        n = int(rng.choice([lv for lv in env.levels if 0 < lv <= free[t]]))
        free[t] -= n
        jobs[job.job_id] = JobAllocation({state.types[t]: n})
    return Allocation(jobs, frozenset(reject))


@pytest.mark.parametrize(
    ("scenario", "kwargs"),
    [
        ("tiny", {}),
        ("tiny", {"count_levels": "all", "queue_slots": 3}),
        ("default", {"queue_slots": 8}),
        ("default", {"codec_knobs": {"priority_levels": 1, "shrink": False}}),
    ],
)
def test_single_type_targets_round_trip_exactly(scenario: str, kwargs: dict[str, Any]) -> None:
    env = HetClusterEnv(scenario=scenario, codec="score", **kwargs)
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    tracker = ExpertTracker("srtf")
    checked = 0
    for epoch in range(60):
        if env.view is None:
            break
        if epoch % 3 == 0 and env.state.jobs:
            target = single_type_target(env, rng)
            enc = env.encode(target)
            assert enc.exact, enc.reasons
            (action,) = enc.actions
            assert action in env.action_space
            assert_allowed(env.action_masks(), env.action_space.nvec, action)
            assert env.encode_next(target).tolist() == action.tolist()
            _, _, _, _, info = env.step(action)
            assert info["committed"] and info["repaired"] == 0 and info["target_exact"] is True
            checked += 1
        else:
            env.step(tracker.label(env))
    assert checked >= 5


def test_a_job_spread_over_types_is_reported_inexact() -> None:
    env = env_with_jobs(1)
    jid = int(env.state.ids[0])
    enc = env.encode(Allocation({jid: JobAllocation({"v100": 2, "k80": 1})}))
    assert not enc.exact and any("one type" in r for r in enc.reasons)
    assert enc.expressed.jobs[jid].as_dict() == {"v100": 2}  # the largest share
    assert env.encode(Allocation({jid: JobAllocation({"k80": 2})})).exact


def test_noop_keeps_every_allocation() -> None:
    env = env_with_jobs(3)
    before = {j.job_id: j.allocation for j in env.view.jobs if j.allocation}
    assert before
    enc = env.encode(Allocation(before))
    assert enc.exact and enc.actions[0].tolist() == env.noop_action().tolist()


@pytest.mark.parametrize("policy", ["edf-admission", "srtf", "dancer", "elasticflow", "gavel-mmf"])
def test_one_type_experts_act_exactly_through_score(policy: str) -> None:
    env = gym.make("HetCluster-Tiny-v0", **{**expert_env_kwargs(policy), "codec": "score"})
    agent = ExpertAgent(policy, env)
    obs, _ = env.reset(seed=2)
    mask = env.unwrapped.action_masks()
    while True:
        action, _ = agent.predict(obs)
        assert_allowed(mask, env.action_space.nvec, action)
        obs, _, term, trunc, info = env.step(action)
        mask = info["action_mask"]
        assert info["committed"] and info["target_exact"], info["target_reasons"]  # one step per epoch
        if term or trunc:
            break
    u = env.unwrapped
    direct = Simulator(u.cluster, u.jobs, config=u.sim_config).run(make_policy(policy))
    np.testing.assert_allclose(
        u.result().jobs.sort_values("job_id")["finish_s"],
        direct.jobs.sort_values("job_id")["finish_s"],
        atol=1e-6,
        equal_nan=True,
    )


def test_a_random_masked_agent_plays_an_episode_to_its_end() -> None:
    env = gym.make("HetCluster-Tiny-v0", codec="score")
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=5)
    nvec = env.action_space.nvec
    for _ in range(20_000):
        mask, out, offset = info["action_mask"], [], 0
        for n in nvec:
            out.append(int(rng.choice(np.flatnonzero(mask[offset : offset + n]))))
            offset += n
        _, _, term, trunc, info = env.step(np.array(out, dtype=np.int64))
        assert info["committed"]
        if term or trunc:
            break
    assert term or trunc
    assert info["stop_reason"] in ("done", "stalled", "max_time", "max_decisions")
