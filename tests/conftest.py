"""Shared fixtures (a hand-made throughput table whose rates make expected results easy to compute) and
the hypothesis profiles (``default``, ``slow``, ``nightly``; see :data:`helpers.HYPOTHESIS_PROFILES`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import register_hypothesis_profiles, toy_model

from hetgym.sim import ClusterSpec, ThroughputModel

# --hypothesis-profile=NAME picks one; "default" otherwise.
register_hypothesis_profiles()

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def toy() -> ThroughputModel:
    return toy_model()


@pytest.fixture
def two_by_two() -> ClusterSpec:
    """2 V100 servers of 2 GPUs and 2 K80 servers of 2 GPUs (the ``tiny`` preset's shape)."""
    return ClusterSpec.from_inventory("2x2", {"v100": (2, 2), "k80": (2, 2)})


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip(f"reference data not found at {SHARED_DATA}")
    return SHARED_DATA
