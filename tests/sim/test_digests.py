"""The per-job tables of a fixed set of runs are bit-identical to the committed digests.

Speed work on the simulator and the policies must not change any result: every case of
:func:`sim_digests.cases` is re-run and its per-job table, usage timeline and epoch count compared
with ``tests/data/sim_digests.json``. The cheap cases run by default (a few seconds in all); the
expensive policies' larger runs and the 3,000-job runs are marked slow.
"""

from __future__ import annotations

import json

import pytest
from helpers import drift_line
from sim_digests import DIGESTS_PATH, Case, cases, digest

COMMITTED: dict[str, dict[str, object]] = json.loads(DIGESTS_PATH.read_text())
CASES = cases()


def _param(case: Case) -> object:
    return pytest.param(case, id=case.key, marks=[pytest.mark.slow] if case.slow else [])


def test_every_case_has_a_committed_digest() -> None:
    missing = sorted({c.key for c in CASES} - COMMITTED.keys())
    assert not missing, f"no committed digest for {missing}; regenerate with python tests/sim_digests.py --write"
    assert len(CASES) == len(COMMITTED)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_per_job_table_is_bit_identical(case: Case) -> None:
    got = digest(case)
    want = COMMITTED[case.key]
    assert got == want, f"the run's results changed: {drift_line(case.key, want, got)}"
