"""The env's observation, mask and reward stream stays exactly what it was, and the incremental encoding
equals a from-scratch one.

Two checks for speed work on the env: the streams of :func:`env_digests.cases` (seeded random masked
episodes over the built-in codecs and observations) hash to the committed ``tests/data/env_digests.json``;
and along random episodes every observation equals the one a freshly built encoder (no state carried
over from earlier epochs) computes for the same decision state, and every mask equals the codec's mask
recomputed from the state.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from env_digests import DIGESTS_PATH, Case, cases, digest
from helpers import drift_line

from hetgym.envs.codecs import CODECS
from hetgym.envs.env import HetClusterEnv
from hetgym.envs.observations import OBSERVATIONS

COMMITTED: dict[str, dict[str, object]] = json.loads(DIGESTS_PATH.read_text())


def test_every_case_has_a_committed_digest() -> None:
    assert {c.key for c in cases()} == set(COMMITTED), "regenerate with python tests/env_digests.py --write"


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.key)
def test_stream_is_bit_identical(case: Case) -> None:
    got = digest(case)
    assert got["records"] > case.steps  # the reset and every step were hashed
    assert got == COMMITTED[case.key], f"the env's stream changed: {drift_line(case.key, COMMITTED[case.key], got)}"


def _from_scratch(env: HetClusterEnv) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The observation and mask of ``env``'s current decision state, from new encoder and codec objects."""
    config = env.config
    settings = config.settings(env.throughput)
    encoder = OBSERVATIONS.get(config.observation)(env.state, settings, config.knobs("observation"))
    codec = CODECS.get(config.codec)(env.state, settings, config.knobs("codec"))
    encoder.begin_epoch(env.state, env.sim.rate_table, len(env.jobs))  # type: ignore[union-attr]
    return encoder.observe(env.state), codec.mask(env.state)


@pytest.mark.parametrize(
    ("env_id", "overrides", "seed"),
    [
        ("HetCluster-v1", {}, 11),
        ("HetCluster-Tiny-v1", {}, 12),
        ("HetCluster-v0", {"observation": "window-levels"}, 13),
        ("HetCluster-v1", {"modes": ("sync", "fork"), "queue_slots": 4}, 14),
        ("HetCluster-v1", {"observation": "window-nodes", "codec": "jobwise-types"}, 15),
    ],
)
def test_observations_equal_a_from_scratch_encoding(env_id: str, overrides: dict[str, Any], seed: int) -> None:
    env = HetClusterEnv(**{**gym.spec(env_id).kwargs, **overrides})
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    commits = 0
    for _ in range(400):
        want_obs, want_mask = _from_scratch(env)
        assert obs.keys() == want_obs.keys()
        for key, value in want_obs.items():
            np.testing.assert_array_equal(obs[key], value, err_msg=key)
        np.testing.assert_array_equal(info["action_mask"], want_mask)
        np.testing.assert_array_equal(env.action_masks(), want_mask)
        obs, _, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        commits += int(info["committed"])
        if terminated or truncated:
            obs, info = env.reset()
    assert commits > 20  # the stream went through many epochs, not one
