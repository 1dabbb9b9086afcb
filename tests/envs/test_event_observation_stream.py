"""The event-driven env's observation, mask and reward stream stays exactly what it was.

The streams of :func:`event_env_digests.cases` (seeded random masked episodes of the ``HetClusterEvents`` ids,
``Dict`` and flattened observations) hash to the committed ``tests/data/event_env_digests.json``.
"""

from __future__ import annotations

import json

import pytest
from event_env_digests import DIGESTS_PATH, Case, cases, digest
from helpers import drift_line

COMMITTED: dict[str, dict[str, object]] = json.loads(DIGESTS_PATH.read_text())


def test_every_case_has_a_committed_digest() -> None:
    assert {c.key for c in cases()} == set(COMMITTED), "regenerate with python tests/event_env_digests.py --write"


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.key)
def test_stream_is_bit_identical(case: Case) -> None:
    got = digest(case)
    assert got["records"] > case.steps  # the reset and every step were hashed
    assert got == COMMITTED[case.key], f"the env's stream changed: {drift_line(case.key, COMMITTED[case.key], got)}"
