"""Plugging in components by name: a codec, an observation encoder, a reward and a window order.

Each is defined here, registered for this module only (and unregistered at teardown, so other tests see
the registries as they were), and used through ``gym.make`` like a built-in one: the Gymnasium checker
passes, an expert and a random masked agent play episodes, and the configuration checks the names and
the components' own knobs. ``docs/environment.md`` ("Plugging in your own codec, observation, reward or
window order") shows the same code.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env

from hetgym.envs import (
    CODECS,
    OBSERVATIONS,
    REWARDS,
    WINDOW_ORDERS,
    ActionCodec,
    CodecStep,
    DecisionState,
    EnvSettings,
    HetClusterConfig,
    ObservationEncoder,
    RewardComponents,
    register_codec,
    register_observation,
    register_reward,
    register_window_order,
)
from hetgym.envs.config import EnvConfigError
from hetgym.envs.exactness import Encoding
from hetgym.envs.state import JobStatics
from hetgym.experts import ExpertAgent
from hetgym.sim import Allocation, UnknownNameError
from hetgym.sim.registry import KnobError, Knobs, knob
from hetgym.sim.view import JobView

TINY = "HetCluster-Tiny-v0"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "environment.md"


# ------------------------------------------------------------------------------------------------
# The components (the docs show the same code, with the decorators applied at import time)


@dataclass(frozen=True)
class OneJobKnobs(Knobs):
    cap: int | None = knob(None, low=1, integer=True, optional=True, doc="largest count one action may set")


class OneJobCodec(ActionCodec):
    """One job at a time: ``Discrete(K*T*C + 1)``, set one slot's count on one type to a level and commit."""

    name = "one-job"
    knobs = OneJobKnobs

    def __init__(self, state: DecisionState, settings: EnvSettings, knobs: Knobs | None = None) -> None:
        super().__init__(state, settings, knobs)
        assert isinstance(knobs, OneJobKnobs)
        self.cap = knobs.cap
        self.n = self.num_slots * self.num_types * len(self.levels) + 1  # the last action keeps the draft
        self._space = spaces.Discrete(self.n)

    @property
    def space(self) -> spaces.Discrete:
        return self._space

    def noop(self, state: DecisionState) -> int:
        return self.n - 1

    def _fits(self, state: DecisionState) -> np.ndarray:
        """(K, T, C): the level fits the free GPUs plus what the slot holds, differs from it, is allowed."""
        draft = state.draft[:, :, None]
        ok = (self.levels <= state.free[None, :, None] + draft) & (self.levels != draft)
        ok &= state.allowed[:, :, None] & (state.used & ~state.rejected)[:, None, None]
        if self.cap is not None:
            ok &= self.levels <= self.cap
        return ok

    def mask(self, state: DecisionState) -> np.ndarray:
        return np.append(self._fits(state).reshape(-1), True)

    def apply(self, state: DecisionState, action: Any, mask: np.ndarray) -> CodecStep:
        a = int(action)
        if not 0 <= a < self.n:
            raise ValueError(f"a one-job action is an integer in [0, {self.n}), got {action!r}")
        if a == self.n - 1:
            return CodecStep(commit=True)
        state.num_actions += 1
        if not mask[a]:
            return CodecStep(commit=True, invalid=True)
        slot, rest = divmod(a, self.num_types * len(self.levels))
        gpu_type, level = divmod(rest, len(self.levels))
        state.set_count(slot, gpu_type, int(self.levels[level]))
        return CodecStep(commit=True)

    def encode(self, state: DecisionState, target: Allocation) -> Encoding:
        want = self.target_rows(state, target)[0]
        fits = self._fits(state)
        diffs = np.argwhere(want != state.draft)
        # Decreases first (they free GPUs), then the first increase that fits.
        for k, t in sorted(diffs.tolist(), key=lambda kt: want[kt[0], kt[1]] > state.draft[kt[0], kt[1]]):
            c = int(self.floor_index[want[k, t]])
            if fits[k, t, c]:
                draft = state.draft.copy()
                draft[k, t] = want[k, t]
                action = (k * self.num_types + t) * len(self.levels) + c
                expressed = state.allocation_of(draft, state.draft_mode, state.rejected)
                return self.make_encoding(state, target, (action,), expressed)
        return self.make_encoding(state, target, (self.n - 1,), state.allocation())


@dataclass(frozen=True)
class SlotsKnobs(Knobs):
    with_free: bool = knob(True, choices=(True, False), doc="add the free GPUs per type")


class SlotsObservation(ObservationEncoder):
    """The draft's GPUs per slot and type, which slots are used, and (a knob) the free GPUs per type."""

    name = "slots"
    knobs = SlotsKnobs

    def __init__(self, state: DecisionState, settings: EnvSettings, knobs: Knobs | None = None) -> None:
        super().__init__(state, settings, knobs)
        assert isinstance(knobs, SlotsKnobs)
        self.with_free = knobs.with_free
        k, t = state.num_slots, len(state.types)
        boxes = {"alloc": spaces.Box(0.0, 1.0, (k * t,), np.float32), "used": spaces.Box(0.0, 1.0, (k,), np.float32)}
        if self.with_free:
            boxes["free"] = spaces.Box(0.0, 1.0, (t,), np.float32)
        self._space = spaces.Dict(boxes)

    @property
    def space(self) -> spaces.Dict:
        return self._space

    def observe(self, state: DecisionState) -> dict[str, np.ndarray]:
        obs = {
            "alloc": (state.draft / state.capacity).astype(np.float32).reshape(-1),
            "used": state.used.astype(np.float32),
        }
        if self.with_free:
            obs["free"] = (state.free / state.capacity).astype(np.float32)
        return obs


def completions_reward(c: RewardComponents, time_scale_s: float, total_gpus: int) -> float:
    """+1 per job completed."""
    return float(c.completed)


def largest_first(job: JobView, slack_s: float, statics: JobStatics) -> tuple[float, ...]:
    """Largest GPU request first."""
    return (-float(job.num_gpus),)


@pytest.fixture(scope="module", autouse=True)
def plugins() -> Iterator[None]:
    register_codec("one-job")(OneJobCodec)
    register_observation("slots")(SlotsObservation)
    register_reward("completions")(completions_reward)
    register_window_order("largest-first")(largest_first)
    yield
    CODECS.unregister("one-job")
    OBSERVATIONS.unregister("slots")
    REWARDS.unregister("completions")
    WINDOW_ORDERS.unregister("largest-first")
    assert "one-job" not in CODECS and "slots" not in OBSERVATIONS
    assert "completions" not in REWARDS and "largest-first" not in WINDOW_ORDERS


# ------------------------------------------------------------------------------------------------


def random_masked_action(info: dict[str, Any], rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(info["action_mask"])))


def test_the_checker_passes_with_a_registered_codec_and_observation() -> None:
    env = gym.make(TINY, codec="one-job", observation="slots")
    assert env.action_space == spaces.Discrete(16 * 2 * 4 + 1)  # K=16 slots x T=2 types x levels 0, 1, 2, 4, then keep
    assert set(env.observation_space.spaces) == {"alloc", "used", "free"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    assert [str(w.message) for w in caught] == []


def test_an_expert_plays_an_episode_through_the_registered_codec() -> None:
    env = gym.make(TINY, codec="one-job", observation="slots", reward="jct")
    agent = ExpertAgent("edf", env)
    obs, info = env.reset(seed=0)
    exact = []
    for _ in range(5000):
        assert env.observation_space.contains(obs)
        action, _ = agent.predict(obs)
        assert info["action_mask"][int(action)]  # the codec's encoding is always a valid action
        obs, _, terminated, truncated, info = env.step(action)
        assert info["committed"] and not info["invalid_action"]  # every one-job step commits
        exact.append(info["target_exact"])
        if terminated or truncated:
            break
    assert terminated and info["stop_reason"] == "done"
    assert info["metrics"]["num_completed"] == len(env.unwrapped.jobs)
    assert info["metrics"]["num_decisions"] == len(exact)
    # One change per epoch: exact when EDF changes at most one count, not when it starts several jobs.
    assert any(exact) and not all(exact)
    assert agent.num_inexact == exact.count(False)


def test_random_masked_actions_play_an_episode_and_are_seeded() -> None:
    def run(seed: int) -> list[Any]:
        env = gym.make(TINY, codec="one-job", observation="slots", max_decisions=200)
        rng = np.random.default_rng(seed)
        obs, info = env.reset(seed=seed)
        trace: list[Any] = [obs["alloc"].tolist()]
        while True:
            obs, reward, terminated, truncated, info = env.step(random_masked_action(info, rng))
            assert not info["invalid_action"]
            trace.append((obs["alloc"].tolist(), reward))
            if terminated or truncated:
                return trace

    a = run(4)
    assert len(a) > 1 and a == run(4)


def test_a_registered_reward_and_window_order_are_used_by_name() -> None:
    env = gym.make(TINY, reward="completions", window_order="largest-first", queue_slots=3, max_decisions=300)
    base = env.unwrapped
    rng = np.random.default_rng(1)
    _, info = env.reset(seed=1)
    total, full_windows = 0.0, 0
    while True:
        requests = [job.num_gpus for job in base.state.jobs]
        assert requests == sorted(requests, reverse=True)
        if base.state.outside:
            full_windows += 1
            assert max(job.num_gpus for job in base.state.outside) <= requests[-1]
        _, reward, terminated, truncated, info = env.step(random_masked_action(info, rng))
        assert reward == info["reward_components"]["completed"]
        total += float(reward)
        if terminated or truncated:
            break
    assert full_windows > 0  # the order chose which jobs fill the window
    assert total == info["metrics"]["num_completed"]


def test_the_configuration_checks_names_and_knobs_against_the_registries() -> None:
    for option, typo, nearest in [
        ("codec", "one-jb", "one-job"),
        ("observation", "slot", "slots"),
        ("reward", "completion", "completions"),
        ("window_order", "largest-frst", "largest-first"),
    ]:
        with pytest.raises(UnknownNameError, match=f"did you mean '{nearest}'"):
            HetClusterConfig.make("tiny", **{option: typo})
    cfg = HetClusterConfig.make("tiny", codec="one-job", codec_knobs={"cap": 1}, observation="slots")
    assert cfg.codec_knobs == OneJobKnobs(cap=1) and cfg.observation_knobs == SlotsKnobs()
    assert HetClusterConfig.make(**cfg.to_kwargs()) == cfg
    env = gym.make(
        TINY, codec="one-job", codec_knobs={"cap": 1}, observation="slots", observation_knobs={"with_free": False}
    )
    assert "free" not in env.observation_space.spaces
    _, info = env.reset(seed=0)
    levels = np.asarray(env.unwrapped.levels)
    assert not info["action_mask"][:-1].reshape(-1, len(levels))[:, levels > 1].any()  # the cap holds
    with pytest.raises(UnknownNameError, match="did you mean 'cap'"):
        HetClusterConfig.make("tiny", codec="one-job", codec_knobs={"cpa": 1})
    with pytest.raises(KnobError, match="cap=0"):
        HetClusterConfig.make("tiny", codec="one-job", codec_knobs={"cap": 0})
    with pytest.raises(EnvConfigError, match="has no knobs"):
        HetClusterConfig.make("tiny", codec="sequential", codec_knobs={"cap": 1})  # the sequential codec has none
    with pytest.raises(UnknownNameError, match="did you mean 'nodes'"):
        HetClusterConfig.make("tiny", observation_knobs={"node": True})  # window's knobs are its feature groups


def test_the_docs_show_these_components() -> None:
    text = DOCS.read_text()
    section = text[text.index("## Plugging in your own codec, observation, reward or window order") :]
    start = section.index("```python")
    example = section[start : section.index("```\n", start + 9)]
    for obj in (OneJobKnobs, OneJobCodec, SlotsKnobs, SlotsObservation, completions_reward, largest_first):
        assert inspect.getsource(obj).strip() in example, f"docs/environment.md differs from {obj.__name__}"
