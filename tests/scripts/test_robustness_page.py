"""``scripts/robustness.py``'s page and CSV on a stand-in corpus: the answer and the verdict table lead, every case
goes to the CSV beside the page, and the cases that are not ok are listed in the page."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from helpers import load_script


@dataclass(frozen=True)
class Case:
    id: str
    category: str


@dataclass(frozen=True)
class Outcome:
    ok: bool
    verdict: str
    exit_code: int | None
    message: str


def _corpus(outcomes: dict[str, Outcome]) -> Any:
    cases = [Case(cid, "setting (CLI)" if i % 2 else "size (API)") for i, cid in enumerate(outcomes)]
    return SimpleNamespace(
        CASE_TIMEOUT_S=60.0, build_corpus=lambda: cases, run_case=lambda case, tmp: outcomes[case.id]
    )


def _run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, outcomes: dict[str, Outcome]) -> tuple[int, str, list]:
    mod = load_script("robustness")
    monkeypatch.setattr(mod, "_load_corpus", lambda: _corpus(outcomes))
    page = tmp_path / "robustness.md"
    rc = mod.main(["--out", str(page)])
    with (tmp_path / "robustness_cases.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    return rc, page.read_text(), rows


def test_all_ok_page_leads_with_the_answer_and_lists_cases_in_the_csv(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    outcomes = {f"case-{i}": Outcome(True, "ok", 2, f"hetgym: error: bad | value {i}\nsecond line") for i in range(5)}
    rc, text, rows = _run(monkeypatch, tmp_path, outcomes)
    assert rc == 0
    lines = text.splitlines()
    assert lines[2].startswith("**Answer**: all 5 cases pass.")
    assert lines[4].startswith("| category | cases | ok |") and "| **all** | 5 | 5 |" in text
    assert "[robustness_cases.csv](robustness_cases.csv)" in text and "case-0" not in text
    assert [r["case"] for r in rows] == list(outcomes)
    assert rows[1] == {
        "case": "case-1",
        "category": "setting (CLI)",
        "verdict": "ok",
        "exit": "2",
        "message": "hetgym: error: bad | value 1 second line",
    }
    assert not list(tmp_path.glob("*.tmp*"))


def test_failing_cases_are_listed_in_the_page(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    outcomes = {
        "good": Outcome(True, "ok", 2, "error: fine"),
        "bad": Outcome(False, "traceback", 1, "Traceback | (most recent call last)"),
        "slow": Outcome(False, "hang", None, ""),
    }
    rc, text, rows = _run(monkeypatch, tmp_path, outcomes)
    assert rc == 1
    assert "**Answer**: 2 of 3 cases fail" in text and "## The 2 cases not ok" in text
    assert "| `bad` | traceback | 1 | Traceback \\| (most recent call last) |" in text
    assert "| `slow` | hang |  |  |" in text and "`good`" not in text
    assert len(rows) == 3
