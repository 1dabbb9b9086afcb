"""Every case of the robustness corpus (tests/robustness_corpus.py) gets a clear error and leaves nothing behind.

A case fails with its verdict: ``hang``, ``traceback (...)``, ``accepted silently``, ``output left``,
``input changed``, or ``message lacks [...]`` (the one error line must name the setting, file or row).
``scripts/robustness.py`` runs the same corpus in subprocesses and writes docs/results/robustness.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from robustness_corpus import build_corpus, run_case

CASES = build_corpus()


def test_the_corpus_is_large_and_covers_every_category() -> None:
    assert len(CASES) >= 150
    categories = {case.category for case in CASES}
    assert {"setting (CLI)", "name (CLI)", "trace file", "trace file (gavel)", "output"} <= categories
    assert {"env settings (API)", "env action (API)", "sim settings (API)"} <= categories
    assert {"size (CLI)", "size (API)"} <= categories


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_case_gets_a_clear_error(case, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    outcome = run_case(case, tmp_path)
    assert outcome.ok, f"{case.id}: {outcome.verdict} (exit {outcome.exit_code}): {outcome.message}"
