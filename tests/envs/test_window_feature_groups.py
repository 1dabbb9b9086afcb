"""The window encoder's feature-group knobs: the old encoder names are aliases presetting them, bit for bit."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import hetgym  # noqa: F401  (registers the ids)
from hetgym.envs.observations import OBSERVATIONS, WindowKnobs, WindowObservation
from hetgym.sim.registry import KnobError

TINY = "HetCluster-Tiny-v1"
ALIASES = {
    "window-levels": {"levels": True},
    "window-cursor": {"levels": True, "cursor": True},
    "window-nodes": {"levels": True, "cursor": True, "nodes": True},
}


def _rollout(env: gym.Env, seed: int, steps: int) -> list[dict[str, np.ndarray]]:
    """The observations of a seeded random masked rollout."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    out = [obs]
    for _ in range(steps):
        obs, _, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        out.append(obs)
        if terminated or truncated:
            obs, info = env.reset()
            out.append(obs)
    return out


def _same(a: list[dict[str, np.ndarray]], b: list[dict[str, np.ndarray]]) -> bool:
    return len(a) == len(b) and all(
        list(x) == list(y) and all(x[k].tobytes() == y[k].tobytes() for k in x) for x, y in zip(a, b, strict=True)
    )


@pytest.mark.parametrize(("alias", "knobs"), ALIASES.items())
def test_each_old_name_is_the_window_encoder_with_its_groups_preset(alias: str, knobs: dict[str, bool]) -> None:
    assert OBSERVATIONS.get(alias) is WindowObservation
    assert OBSERVATIONS.describe()[alias].startswith("alias of 'window' with levels=True")
    named = gym.make(TINY, observation=alias)
    knobbed = gym.make(TINY, observation="window", observation_knobs=knobs)
    preset = named.unwrapped.config.observation_knobs
    assert preset == knobbed.unwrapped.config.observation_knobs == WindowKnobs(**knobs)
    assert named.observation_space == knobbed.observation_space
    assert _same(_rollout(named, 5, 150), _rollout(knobbed, 5, 150))


def test_the_nodes_group_alone_adds_only_its_keys_with_the_same_values() -> None:
    window, full = gym.make(TINY, observation="window"), gym.make(TINY, observation="window-nodes")
    nodes = gym.make(TINY, observation="window", observation_knobs={"nodes": True})
    layout = nodes.unwrapped.encoder.layout
    assert list(layout) == [*window.unwrapped.encoder.layout, "server_free", "job_server"]
    for a, b in zip(_rollout(nodes, 6, 120), _rollout(full, 6, 120), strict=True):
        for key in layout:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_the_cursor_group_needs_the_levels_group() -> None:
    with pytest.raises(KnobError, match="cursor=True needs levels=True"):
        WindowKnobs(cursor=True)
    with pytest.raises(KnobError, match="presets levels=True"):
        gym.make(TINY, observation="window-cursor", observation_knobs={"levels": False})
