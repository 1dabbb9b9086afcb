"""Run the robustness corpus (tests/robustness_corpus.py) and write docs/results/robustness.md.

Every case runs in a fresh temporary directory, in this process, with the corpus' hang timeout. The page
leads with the answer (how many cases pass) and gives, per category, how many cases ended in each verdict
(``ok``, ``hang``, ``traceback``, ``accepted silently``, ``output left``, ``input changed``, a message that
does not name what is wrong), then the cases that are not ``ok``, if any. Every case, with the error line the
user sees, goes to ``robustness_cases.csv`` beside the page. Exit status 1 when any case is not ``ok``.

Usage::

    python scripts/robustness.py                      # writes docs/results/robustness.md and robustness_cases.csv
    python scripts/robustness.py --out /tmp/robustness.md
"""

from __future__ import annotations

import argparse
import collections
import csv
import importlib.util
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hetgym.atomic import atomic_write

ROOT = Path(__file__).resolve().parents[1]


def _load_corpus():  # type: ignore[no-untyped-def]
    """Import tests/robustness_corpus.py by file location (tests/ on the import path would shadow packages)."""
    spec = importlib.util.spec_from_file_location("robustness_corpus", ROOT / "tests" / "robustness_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["robustness_corpus"] = module
    spec.loader.exec_module(module)
    return module


def _verdict_class(verdict: str) -> str:
    for prefix in ("ok", "hang", "traceback", "accepted silently", "output left", "input changed"):
        if verdict.startswith(prefix):
            return prefix
    return "unclear message"


#: Most failing cases listed in the page (the rest are rows of the CSV).
MAX_LISTED = 100
CSV_COLUMNS = ("case", "category", "verdict", "exit", "message")


def _message(outcome: Any) -> str:
    return " ".join(outcome.message.split())


def _case_table(outcomes: list[tuple[Any, Any]]) -> list[str]:
    lines = ["| case | verdict | exit | what the user sees |", "|---|---|---|---|"]
    for case, outcome in outcomes:
        message = _message(outcome).replace("|", "\\|")
        if len(message) > 160:
            message = message[:157] + "..."
        exit_code = "" if outcome.exit_code is None else str(outcome.exit_code)
        lines.append(f"| `{case.id}` | {outcome.verdict} | {exit_code} | {message} |")
    return lines


def _write_cases(path: Path, outcomes: list[tuple[Any, Any]]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS)
        for case, outcome in outcomes:
            exit_code = "" if outcome.exit_code is None else outcome.exit_code
            writer.writerow([case.id, case.category, outcome.verdict, exit_code, _message(outcome)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "robustness.md")
    args = parser.parse_args(argv)
    corpus = _load_corpus()
    cases = corpus.build_corpus()
    outcomes = []
    t0 = time.perf_counter()
    for case in cases:
        with tempfile.TemporaryDirectory() as tmp:
            outcome = corpus.run_case(case, Path(tmp))
        outcomes.append((case, outcome))
        if not outcome.ok:
            print(f"{case.id}: {outcome.verdict}: {outcome.message}", file=sys.stderr)
    total_s = time.perf_counter() - t0
    classes = ["ok", "hang", "traceback", "accepted silently", "output left", "input changed", "unclear message"]
    by_category: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for case, outcome in outcomes:
        by_category[case.category][_verdict_class(outcome.verdict)] += 1
    cases_name = args.out.stem + "_cases.csv"
    passed = sum(o.ok for _, o in outcomes)
    if passed == len(cases):
        answer = (
            f"**Answer**: all {len(cases)} cases pass. Every bad input tried (settings, names, trace files, outputs, "
            "environment actions, sizes) ends in one error that names what is wrong, with no traceback, no hang, no "
            "file left behind and no input changed."
        )
    else:
        answer = f"**Answer**: {len(cases) - passed} of {len(cases)} cases fail; they are listed below the table."
    lines = [
        "# Robustness corpus",
        "",
        answer,
        "",
        "| category | cases | " + " | ".join(classes) + " |",
        "|---|---|" + "---|" * len(classes),
    ]
    for category, counts in by_category.items():
        lines.append(f"| {category} | {sum(counts.values())} | " + " | ".join(str(counts[c]) for c in classes) + " |")
    totals = collections.Counter(_verdict_class(o.verdict) for _, o in outcomes)
    lines.append(f"| **all** | {len(cases)} | " + " | ".join(str(totals[c]) for c in classes) + " |")
    lines += [
        "",
        "Generated by `python scripts/robustness.py` from `tests/robustness_corpus.py` (the same cases run as",
        "`tests/cli/test_robustness_corpus.py`). A CLI case passes when `hetgym` exits non-zero with exactly one",
        "`error:` line naming the setting, file or row, prints no traceback, creates no file and changes no input;",
        "an API case passes when it raises `ValueError`, `KeyError` or `HetgymError` naming the setting or action.",
        f"A case still running after {corpus.CASE_TIMEOUT_S:.0f} s counts as a hang. Every case, with its",
        f"verdict, exit status and the error line the user sees: [{cases_name}]({cases_name}).",
    ]
    cases_csv = args.out.with_name(args.out.stem + "_cases.csv")
    failing = [(case, outcome) for case, outcome in outcomes if not outcome.ok]
    if failing:
        lines += ["", f"## The {len(failing)} cases not ok", "", *_case_table(failing[:MAX_LISTED])]
        if len(failing) > MAX_LISTED:
            lines += ["", f"{len(failing) - MAX_LISTED} more in [{cases_csv.name}]({cases_csv.name})."]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(cases_csv, lambda tmp: _write_cases(tmp, outcomes))
    atomic_write(args.out, lambda tmp: tmp.write_text("\n".join(lines) + "\n"))
    print(f"{len(cases)} cases, {sum(o.ok for _, o in outcomes)} ok in {total_s:.1f} s; wrote {args.out}")
    return 0 if all(o.ok for _, o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
