"""Run the property tests with a large hypothesis profile and write a summary (a nightly-style job).

Usage::

    python scripts/bench/nightly_properties.py [--profile nightly] [--out bench/nightly_properties.json]

It runs pytest on the property tests (``tests/sim/test_properties.py`` and
``tests/sim/test_determinism_processes.py``) marked ``slow``, with ``--hypothesis-profile=PROFILE``:
``nightly`` draws 10,000 examples per property test and per policy, ``slow`` 1,000 (see
``HYPOTHESIS_PROFILES`` in ``tests/helpers.py``). The summary (profile, examples per test, per-test
outcome and time, the first lines of each failure, the pytest exit status) is printed and written to
``--out`` as JSON, atomically. The exit status is pytest's, so a scheduler sees a failure.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PROPERTY_TESTS = ("tests/sim/test_properties.py", "tests/sim/test_determinism_processes.py")


def profile_examples(profile: str) -> int:
    """Examples per test of a registered profile (the ``slow`` tests use at least the ``slow`` one's)."""
    spec = importlib.util.spec_from_file_location("_test_helpers", ROOT / "tests" / "helpers.py")
    assert spec is not None and spec.loader is not None
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)  # by file location: tests/ on the import path would shadow packages
    HYPOTHESIS_PROFILES: dict[str, int] = helpers.HYPOTHESIS_PROFILES
    if profile not in HYPOTHESIS_PROFILES:
        raise SystemExit(f"error: unknown --profile {profile!r}; use one of {sorted(HYPOTHESIS_PROFILES)}")
    return HYPOTHESIS_PROFILES[profile]


def summarise(junit: Path) -> dict[str, Any]:
    """Counts, per-test outcome and time, and failure excerpts from a pytest JUnit XML report."""
    root = ET.parse(junit).getroot()
    cases = []
    for case in root.iter("testcase"):
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            found = case.find(tag)
            if found is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                message = "\n".join(((found.get("message") or "") + "\n" + (found.text or "")).splitlines()[:40])
                break
        cases.append(
            {
                "test": f"{case.get('classname', '')}::{case.get('name', '')}",
                "outcome": outcome,
                "time_s": round(float(case.get("time", 0.0)), 2),
                **({"message": message} if message else {}),
            }
        )
    counts = {k: sum(c["outcome"] == k for c in cases) for k in ("passed", "failed", "error", "skipped")}
    return {"counts": counts, "tests": cases}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="nightly", help="hypothesis profile (default: nightly)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "nightly_properties.json")
    parser.add_argument("--marker", default="slow", help="pytest -m expression (default: slow)")
    parser.add_argument("--select", default=None, help="pytest -k expression, to run a subset")
    args = parser.parse_args(argv)
    examples = profile_examples(args.profile)
    if args.out.is_dir():
        raise SystemExit(f"error: --out {args.out} is a directory; give a file path")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            *PROPERTY_TESTS,
            "-m",
            args.marker,
            f"--hypothesis-profile={args.profile}",
            "-p",
            "no:cacheprovider",
            "-q",
            f"--junitxml={junit}",
        ]
        if args.select:
            cmd += ["-k", args.select]
        start = time.perf_counter()
        rc = subprocess.run(cmd, cwd=ROOT, check=False).returncode
        wall_s = time.perf_counter() - start
        if not junit.exists():
            print(f"error: pytest wrote no report (exit status {rc})", file=sys.stderr)
            return rc or 1
        summary = summarise(junit)
    report = {
        "profile": args.profile,
        "examples_per_test": examples,
        "slow_tests_examples_per_test": max(examples, profile_examples("slow")),
        "marker": args.marker,
        "select": args.select,
        "pytest_exit_status": rc,
        "wall_s": round(wall_s, 1),
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        **summary,
    }
    fd, tmp_path = tempfile.mkstemp(dir=args.out.parent, prefix=f".{args.out.name}.")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(report, fh, indent=1)
            fh.write("\n")
        os.replace(tmp_path, args.out)
    except BaseException:
        Path(tmp_path).unlink(missing_ok=True)
        raise
    c = summary["counts"]
    print(
        f"profile {args.profile}: {c['passed']} passed, {c['failed']} failed, {c['error']} errors, "
        f"{c['skipped']} skipped in {wall_s:.0f} s; summary in {args.out}"
    )
    for case in summary["tests"]:
        if case["outcome"] in ("failed", "error"):
            print(f"  {case['outcome']}: {case['test']}\n    " + case.get("message", "").replace("\n", "\n    "))
    return rc


if __name__ == "__main__":
    sys.exit(main())
