"""The lookahead teacher: common random numbers, the deviation rule, determinism across workers, the oracle."""

from __future__ import annotations

import zlib

import gymnasium as gym
import numpy as np
import pytest

import hetgym  # noqa: F401  (registers the ids)
import hetgym.lookahead.rollout as rollout_mod
from hetgym.envs.events.experts import make_event_agent
from hetgym.lookahead import (
    ORACLE_LABEL,
    LookaheadAgent,
    LookaheadKnobs,
    LookaheadTeacher,
    hindsight_oracle,
    resolve_base,
)
from hetgym.lookahead.significance import paired_gain, significant
from hetgym.sim.errors import ConfigError, HetgymError, UnknownNameError
from hetgym.sim.pending import pending_specs

TINY = "HetClusterEvents-Tiny-v0"


def _env(seed: int = 1000) -> gym.Env:
    env = gym.make(TINY)
    env.reset(seed=seed, options={"workload_seed": seed})
    return env


def _future_key(env) -> int:
    """A number that identifies the future a fork holds (its jobs still to arrive)."""
    return zlib.crc32(repr([(j.submit_s, j.total_iters) for j in pending_specs(env.sim)]).encode())


def test_every_candidate_is_scored_on_the_same_futures(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[int, set[int]] = {}

    def record(env, action, base, horizon):
        seen.setdefault(_future_key(env), set()).add(int(action))
        return 0.0

    monkeypatch.setattr(rollout_mod, "rollout", record)
    env = _env()
    teacher = LookaheadTeacher(0, LookaheadKnobs(k_initial=3, k_max=3))
    teacher.decide(env)
    candidates = set(teacher.records[0].candidates)
    assert len(candidates) > 2
    assert len(seen) == 3  # three futures ...
    assert all(actions == candidates for actions in seen.values())  # ... each seen by every candidate
    true_key = _future_key(env.unwrapped)
    assert true_key not in seen  # none of them the true one


def _noisy_scores(gain_of: dict[int, float], noise_jobs: float):
    """A rollout stand-in: a large score shared by the future plus small independent noise per candidate."""

    def score(env, action, base, horizon):
        key = _future_key(env)
        shared = np.random.default_rng(key).normal(0.0, 5.0)
        own = np.random.default_rng([key, int(action)]).normal(0.0, noise_jobs)
        return float(shared + own + gain_of.get(int(action), 0.0))

    return score


def test_noise_alone_never_causes_a_deviation(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every candidate equals the base in expectation; per-candidate noise of 0.7 jobs on top of a future
    # noise of 5 jobs that common random numbers cancel.
    monkeypatch.setattr(rollout_mod, "rollout", _noisy_scores({}, 0.7))
    env = _env()
    teacher = LookaheadTeacher(0, LookaheadKnobs(k_initial=4, k_step=3, k_max=10))
    for _ in range(6):
        env.step(teacher.decide(env))
    assert len(teacher.records) == 6
    assert not any(r.deviated for r in teacher.records)
    assert all(r.chosen == r.base_action == 0 for r in teacher.records)


def test_a_consistent_gain_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rollout_mod, "rollout", _noisy_scores({1: 2.0}, 0.3))
    env = _env()
    teacher = LookaheadTeacher(0, LookaheadKnobs(k_initial=4, k_max=10))
    assert teacher.decide(env) == 1
    record = teacher.records[0]
    assert record.deviated and record.margin_jobs > 1.0 and record.p_value < 0.05


def test_adaptive_futures_are_added_only_when_the_leader_is_close(monkeypatch: pytest.MonkeyPatch) -> None:
    # A steady gain of 0.8 jobs: close (above close_gain_jobs) but under the margin, so futures are added up
    # to k_max, for the base action and the one leader kept by the prune only.
    scored: list[int] = []
    score = _noisy_scores({1: 0.8}, 0.0)

    def counting(env, action, base, horizon):
        scored.append(int(action))
        return score(env, action, base, horizon)

    monkeypatch.setattr(rollout_mod, "rollout", counting)
    teacher = LookaheadTeacher(0, LookaheadKnobs(k_initial=4, k_step=3, k_max=10, prune_to=1))
    assert teacher.decide(_env()) == 0
    record = teacher.records[0]
    assert record.futures == 10 and record.margin_jobs == pytest.approx(0.8)
    assert len(scored) == 4 * len(record.candidates) + 6 * 2
    # No candidate ahead: the first futures are all it takes.
    monkeypatch.setattr(rollout_mod, "rollout", _noisy_scores({}, 0.0))
    teacher = LookaheadTeacher(0, LookaheadKnobs(k_initial=4, k_step=3, k_max=10))
    teacher.decide(_env())
    assert teacher.records[0].futures == 4


def test_paired_tests() -> None:
    steady = paired_gain(3, np.array([1.0, 1.5, 1.0, 2.0, 1.5]), "t")
    assert steady.mean_jobs == pytest.approx(1.4) and steady.p_value < 0.01
    assert significant(steady, LookaheadKnobs(), 11)
    noisy = paired_gain(3, np.array([6.0, -4.0, 5.0, -3.0]), "t")
    assert noisy.mean_jobs == 1.0 and not significant(noisy, LookaheadKnobs(), 1)
    small = paired_gain(3, np.array([0.5, 0.5, 0.5, 0.5]), "t")
    assert small.p_value == 0.0 and not significant(small, LookaheadKnobs(), 1)  # below the margin
    sign = paired_gain(3, np.array([1.0] * 6), "sign")
    assert sign.p_value == pytest.approx(0.5**6)
    assert significant(sign, LookaheadKnobs(test="sign"), 1)
    assert not significant(sign, LookaheadKnobs(test="sign", bonferroni=True), 11)


def _decisions(workers: int, count: int = 3) -> list[tuple[int, int, float]]:
    env = _env(1003)
    knobs = LookaheadKnobs(k_initial=2, k_step=1, k_max=3, horizon_h=3.0, workers=workers, min_gain_jobs=0.5)
    with LookaheadTeacher("force", knobs) as teacher:
        for _ in range(count):
            env.step(teacher.decide(env))
    return [(r.chosen, r.futures, r.margin_jobs) for r in teacher.records]


def test_the_same_decisions_on_one_worker_or_two() -> None:
    one = _decisions(1, count=1)
    assert one == _decisions(2, count=1)
    assert {futures for _, futures, _ in one} <= {2, 3}


@pytest.mark.slow
def test_the_same_decisions_on_one_worker_or_two_over_an_episode() -> None:
    assert _decisions(1, count=12) == _decisions(2, count=12)


def test_hindsight_is_labelled_an_oracle_and_reads_the_true_future(monkeypatch: pytest.MonkeyPatch) -> None:
    out = hindsight_oracle(TINY, None, 1000, base_action=0, horizon_h=2.0)
    assert out["label"] == ORACLE_LABEL == "oracle (hindsight)"
    assert {r["label"] for r in out["records"]} == {ORACLE_LABEL}
    assert out["decisions"] == 12 and 0.0 <= out["dsr"] <= 1.0 and out["cpu_s"] > 0
    assert all(r["futures"] == 1 for r in out["records"] if len(r["candidates"]) > 1)
    keys: set[int] = set()
    monkeypatch.setattr(rollout_mod, "rollout", lambda env, action, base, horizon: keys.add(_future_key(env)) or 0.0)
    env = _env()
    LookaheadTeacher(0, LookaheadKnobs(future="hindsight")).decide(env)
    assert keys == {_future_key(env.unwrapped)}
    with pytest.raises(HetgymError, match="true one"):
        hindsight_oracle(TINY, None, 1000, future="sampled")


def test_registered_as_an_event_agent_with_predict() -> None:
    env = _env()
    agent = make_event_agent("lookahead", env, k_initial=2, k_max=2, horizon_h=1.0)
    assert isinstance(agent, LookaheadAgent)
    obs = env.unwrapped._observation()
    action, state = agent.predict(obs)
    assert state is None and env.unwrapped.action_masks()[int(action)]
    assert agent.records[0].futures == 2 and agent.records[0].cpu_s > 0


def test_bad_knobs_and_bases_are_named() -> None:
    with pytest.raises(UnknownNameError, match="k_intial"):
        LookaheadKnobs.make(k_intial=3)
    with pytest.raises(ConfigError, match="k_max"):
        LookaheadKnobs(k_initial=5, k_max=3)
    with pytest.raises(ConfigError, match="alpha"):
        LookaheadKnobs(alpha=1.5)
    with pytest.raises(UnknownNameError, match="future"):
        LookaheadKnobs(future="clairvoyant")
    with pytest.raises(HetgymError, match="base="):
        resolve_base("forced")
    with pytest.raises(HetgymError, match="event-driven"):
        LookaheadAgent(gym.make("HetCluster-v1", scenario="tiny"))


@pytest.mark.slow
def test_the_same_decisions_on_ray() -> None:
    pytest.importorskip("ray")
    env = _env(1003)
    knobs = LookaheadKnobs(k_initial=2, k_step=1, k_max=3, horizon_h=3.0, workers=2, backend="ray", min_gain_jobs=0.5)
    try:
        with LookaheadTeacher("force", knobs) as teacher:
            env.step(teacher.decide(env))
    finally:
        import ray

        ray.shutdown()
    assert [(r.chosen, r.futures, r.margin_jobs) for r in teacher.records] == _decisions(1, count=1)


def test_a_rule_base_skips_the_probe_in_rollouts_and_scores_the_same() -> None:
    """The probe fills observation features only: a rule's rollouts without it score exactly as with it."""
    from hetgym.lookahead.rollout import FutureTask, Horizon, score_future

    env = _env(1003)
    u = env.unwrapped
    force = resolve_base("force")
    for _ in range(3):  # a root a few decisions in, with jobs running
        env.step(force(None, u))
    candidates = tuple(int(a) for a in np.flatnonzero(u.action_masks()))
    assert len(candidates) > 2

    def reading(obs, e):  # the same rule, declared as reading observations: the probe stays on
        return force(obs, e)

    seen: list[bool] = []
    original = rollout_mod.rollout

    def spy(fork, action, base, horizon):
        score = original(fork, action, base, horizon)
        seen.append(fork.config.probe)
        return score

    task = FutureTask(0, None, candidates)
    rollout_mod.rollout = spy
    try:
        skipped = score_future(u, task, force, Horizon())
        kept = score_future(u, task, reading, Horizon())
    finally:
        rollout_mod.rollout = original
    assert skipped == kept
    assert seen == [False] * len(candidates) + [True] * len(candidates)
    assert u.config.probe  # the root keeps its probe
