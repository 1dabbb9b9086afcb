"""scripts/bench/bench.py --cases-only: part 1 alone, printed as JSON, bench/results.json left alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "scripts/bench/bench.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_cases_only_prints_the_chosen_cases_and_writes_nothing() -> None:
    results = ROOT / "bench" / "results.json"
    before = results.read_bytes() if results.exists() else None
    run = _bench(
        "--cases-only",
        "--case-policies",
        "fifo,tiresias",
        "--clusters",
        "gavel-108",
        "--num-jobs",
        "40",
        "--repeats",
        "2",
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    cases = report["cases"]
    assert [(c["policy"], c["cluster"]) for c in cases] == [("fifo", "gavel-108"), ("tiresias", "gavel-108")]
    for case in cases:
        assert case["num_jobs"] == 40 and case["median_completed"] == 40
        assert len(case["cpu_s_all"]) == 2 and all(c > 0 for c in case["cpu_s_all"])
        assert case["median_epochs"] > 40  # at least an arrival and a completion epoch per job, less merges
        # The run's wall time splits into the policy's schedule() calls and the rest.
        assert 0 < case["median_policy_wall_s"] < case["median_wall_s"]
        assert case["median_engine_wall_s"] > 0
    assert "tiresias  gavel-108" in run.stderr  # progress lines go to stderr, the JSON alone to stdout
    assert (results.read_bytes() if results.exists() else None) == before


@pytest.mark.slow  # three runs of the script: its imports take seconds each
def test_filters_without_cases_only_and_unknown_names_are_refused() -> None:
    run = _bench("--case-policies", "fifo")
    assert run.returncode == 2 and "give --cases-only with them" in run.stderr
    run = _bench("--cases-only", "--case-policies", "fifo,nope")
    assert run.returncode == 2 and "--case-policies: unknown or none: ['nope']" in run.stderr
    run = _bench("--cases-only", "--clusters", "nowhere")
    assert run.returncode == 2 and "--clusters:" in run.stderr and "nowhere" in run.stderr
    assert "Traceback" not in run.stderr
