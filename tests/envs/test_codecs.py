"""Action codecs: the inverse map reaches any expressible target with valid actions, and says when it cannot."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetgym.envs import HetClusterEnv
from hetgym.experts import ExpertTracker
from hetgym.sim import Allocation, AllocationBuilder, JobAllocation

MODES = ("sync", "proportional", "fork")


def warm_env(
    codec: str,
    levels: Any,
    slots: int,
    seed: int,
    epochs: int,
    modes: tuple[str, ...] = ("sync",),
    scenario: str = "tiny",
) -> HetClusterEnv:
    """An env advanced ``epochs`` decision epochs by SRTF, so that jobs run and wait."""
    env = HetClusterEnv(scenario=scenario, codec=codec, count_levels=levels, queue_slots=slots, modes=modes)
    env.reset(seed=seed)
    tracker = ExpertTracker("srtf")
    for _ in range(epochs):
        if env.view is None:
            break
        key = env.decision_key
        while env.view is not None and env.decision_key == key:
            env.step(tracker.label(env))
    return env


def draw_target(data: st.DataObject, env: HetClusterEnv) -> Allocation:
    """A random feasible allocation the codec can express: window jobs get level counts within their
    ``max_gpus``, others keep theirs."""
    state = env.state
    free = state.capacity - state.outside_held
    levels = env.levels
    jobs: dict[int, JobAllocation] = {}
    reject: set[int] = set()
    for job in state.outside:
        if job.allocation:
            jobs[job.job_id] = job.allocation
    for slot, job in enumerate(state.jobs):
        if env.config.allow_reject and data.draw(st.integers(0, 5)) == 0:
            reject.add(job.job_id)
            continue
        counts = {}
        room = job.spec.max_gpus if job.spec.max_gpus is not None else int(state.capacity.sum())
        for ti, t in enumerate(state.types):
            if not state.allowed[slot, ti]:
                continue
            fitting = [lv for lv in levels if lv <= min(free[ti], room)]
            n = data.draw(st.sampled_from(fitting))
            if n:
                counts[t] = n
                free[ti] -= n
                room -= n
        if counts:
            mode = data.draw(st.sampled_from(state.modes)) if len(counts) > 1 or len(state.modes) > 1 else "sync"
            jobs[job.job_id] = JobAllocation(counts, mode=mode)
    return Allocation(jobs, frozenset(reject))


def same_state(env_alloc: Allocation, target: Allocation) -> bool:
    if env_alloc.reject != target.reject or set(env_alloc.jobs) != set(target.jobs):
        return False
    return all(
        env_alloc.jobs[j].counts == target.jobs[j].counts and env_alloc.jobs[j].mode == target.jobs[j].mode
        for j in target.jobs
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    seed=st.integers(0, 1000),
    epochs=st.integers(0, 120),
    slots=st.sampled_from([1, 2, 4, 16]),
    levels=st.sampled_from(["pow2", "all"]),
    modes=st.sampled_from([("sync",), MODES]),
    scenario=st.sampled_from(["tiny", "default"]),
)
def test_sequential_inverse_map_is_valid_and_reaches_the_target(
    data: st.DataObject, seed: int, epochs: int, slots: int, levels: str, modes: tuple[str, ...], scenario: str
) -> None:
    env = warm_env("sequential", levels, slots, seed, epochs, modes, scenario)
    if env.view is None:
        return
    target = draw_target(data, env)
    enc = env.encode(target)
    assert enc.exact, enc.reasons
    assert enc.actions[-1] == env.codec.commit
    epoch = env.view.epoch
    for action in enc.actions[:-1]:
        mask = env.action_masks()
        assert mask[action], env.codec.decode(action)
        assert env.encode_next(target) == action  # the next-action map follows the same plan
        _, _, _, _, info = env.step(action)
        assert not info["committed"] and not info["invalid_action"]
    assert env.encode_next(target) == env.codec.commit
    assert same_state(env.draft_allocation(), target)
    before = {j.job_id for j in env.view.jobs}
    _, _, _, _, info = env.step(env.codec.commit)
    assert info["committed"] and info["target_exact"] is True
    # Jobs still active at the next epoch hold exactly the target's GPUs.
    if env.view is not None:
        assert env.view.epoch == epoch + 1
        for job in env.view.jobs:
            if job.job_id in before and job.job_id not in target.reject:
                want = target.jobs.get(job.job_id)
                assert (job.allocation.counts if job.allocation else ()) == (want.counts if want else ())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    seed=st.integers(0, 1000),
    epochs=st.integers(0, 120),
    slots=st.sampled_from([1, 2, 4, 16]),
    levels=st.sampled_from(["pow2", "all"]),
    modes=st.sampled_from([("sync",), MODES]),
    scenario=st.sampled_from(["tiny", "default"]),
)
def test_one_shot_inverse_map_is_valid_and_reaches_the_target(
    data: st.DataObject, seed: int, epochs: int, slots: int, levels: str, modes: tuple[str, ...], scenario: str
) -> None:
    env = warm_env("multidiscrete", levels, slots, seed, epochs, modes, scenario)
    if env.view is None:
        return
    target = draw_target(data, env)
    enc = env.encode(target)
    assert enc.exact, enc.reasons
    (action,) = enc.actions
    assert action in env.action_space
    mask, offset = env.action_masks(), 0
    for dim, n in enumerate(env.action_space.nvec):
        assert mask[offset + action[dim]], dim
        offset += n
    assert same_state(enc.expressed, target)
    _, _, _, _, info = env.step(action)
    assert info["committed"] and info["repaired"] == 0 and info["target_exact"] is True


def test_one_shot_repair_order() -> None:
    env = HetClusterEnv(scenario="tiny", codec="multidiscrete", queue_slots=4, count_levels="all")
    env.reset(seed=0)
    tracker = ExpertTracker("fifo")
    while env.view is not None and len(env.view.jobs) < 3:
        env.step(tracker.label(env))
    state = env.state
    n = len(state.jobs)
    assert n >= 3
    nvec = env.action_space.nvec
    action = np.zeros(len(nvec), dtype=np.int64)
    t = env.action_space.nvec  # all slots ask for 4 V100 (4 is level index 4 with "all" levels)
    for slot in range(4):
        action[slot * 2 + 0] = 4
    action[4 * 2 + 3] = 1  # reject flag on slot 3 (empty when fewer than 4 jobs)
    snap = state.copy_draft()
    step = env.codec.apply(state, action, env.action_masks())
    draft = state.draft.copy()
    state.restore_draft(snap)
    # Slot 0 (most urgent) gets the 4 V100, the others nothing; empty-slot entries count as repairs.
    assert draft[0, 0] == 4 and draft[1:, 0].sum() == 0
    expected_repairs = (n - 1) + (4 - n) + (1 if n < 4 else 0)
    assert step.repaired == expected_repairs and step.invalid
    del t


# ------------------------------------------------------------------------------------------------
# What the codecs cannot express, and how they say so


def tiny_at_first_epoch(**kwargs: Any) -> HetClusterEnv:
    env = HetClusterEnv(scenario="tiny", **kwargs)
    env.reset(seed=0)
    return env


@pytest.mark.parametrize("codec", ["sequential", "multidiscrete", "score"])
def test_count_off_the_levels_is_rounded_down_and_flagged(codec: str) -> None:
    env = tiny_at_first_epoch(codec=codec)  # pow2 levels: 0, 1, 2, 4
    jid = env.view.jobs[0].job_id
    enc = env.encode(Allocation({jid: JobAllocation({"v100": 3})}))
    assert not enc.exact
    assert "not on the count levels" in enc.reasons[0]
    assert enc.expressed.jobs[jid].as_dict() == {"v100": 2}
    exact = tiny_at_first_epoch(codec=codec, count_levels="all").encode(Allocation({jid: JobAllocation({"v100": 3})}))
    assert exact.exact


@pytest.mark.parametrize("codec", ["sequential", "multidiscrete"])
def test_execution_mode_needs_the_modes_option(codec: str) -> None:
    env = tiny_at_first_epoch(codec=codec)
    jid = env.view.jobs[0].job_id
    target = Allocation({jid: JobAllocation({"v100": 1, "k80": 1}, mode="fork")})
    enc = env.encode(target)
    assert not enc.exact and "execution mode 'fork'" in enc.reasons[0]
    env2 = tiny_at_first_epoch(codec=codec, modes=list(MODES))
    assert env2.encode(target).exact


@pytest.mark.parametrize("codec", ["sequential", "multidiscrete", "score"])
def test_explicit_servers_are_exact_only_when_they_keep_a_job_in_place(codec: str) -> None:
    env = HetClusterEnv(scenario="tiny", codec=codec)
    env.reset(seed=0)
    tracker = ExpertTracker("fifo")
    while env.view is not None and not any(j.num_servers == 1 for j in env.view.running):
        env.step(tracker.label(env))
    job = next(j for j in env.view.running if j.num_servers == 1)
    here = job.allocation
    assert here is not None and here.servers is not None
    # Keeping it (servers spelled out, as AllocationBuilder.keep does, or left to the simulator) is exact.
    kept = {j.job_id: j.allocation for j in env.view.running}
    assert env.encode(Allocation(kept)).exact
    assert env.encode(Allocation({**kept, job.job_id: JobAllocation(here.counts)})).exact
    # Moving it to other servers of the same type is not expressible.
    (gpu_type, n), *_ = here.counts
    others = [s for s in env.cluster.servers_by_type[gpu_type] if s not in dict(here.servers)]
    moved = Allocation({**kept, job.job_id: JobAllocation(here.counts, servers={others[0]: n})})
    enc = env.encode(moved)
    assert not enc.exact and "explicit server placements" in enc.reasons[0]


def test_jobs_outside_the_window_are_flagged() -> None:
    env = HetClusterEnv(scenario="default", queue_slots=1)
    env.reset(seed=0)
    while len(env.state.outside) == 0:
        env.step(env.codec.commit)
    outsider = env.state.outside[0]
    builder = AllocationBuilder(env.view)
    builder.assign(outsider.job_id, {env.cluster.gpu_types[0]: 1})
    enc = env.encode(builder.build())
    assert not enc.exact and "outside the 1-slot window" in " ".join(enc.reasons)
    # The env reports it on the steps of this epoch.
    for action in enc.actions:
        _, _, _, _, info = env.step(action)
    assert info["target_exact"] is False and info["target_reasons"]


def test_rejection_needs_allow_reject() -> None:
    env = tiny_at_first_epoch(allow_reject=False)
    jid = env.view.jobs[0].job_id
    enc = env.encode(Allocation(reject=frozenset({jid})))
    assert not enc.exact and "allow_reject=False" in enc.reasons[0]
    assert enc.expressed.reject == frozenset()
