"""Progress off a terminal: plain lines with done/total and an ETA, in a log file too."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hetgym.progress import PROGRESS_ENV, ProgressReport, format_duration, interval_from_env

#: ``progress: LABEL DONE/TOTAL UNIT (PCT%) [DETAIL], M:SS elapsed, ETA M:SS``.
RUNNING = re.compile(
    r"^progress: (\S.*?) ([\d,]+)/([\d,]+) (\w[\w ]*) \((\d+)%\)( \[.+\])?, \d+:\d\d elapsed, ETA \d+:\d\d$"
)
#: ``progress: LABEL DONE/TOTAL UNIT (100%), done in M:SS``.
FINAL = re.compile(r"^progress: (\S.*?) ([\d,]+)/([\d,]+) (\w[\w ]*) \((\d+)%\), done in \d+:\d\d$")


def test_lines_off_a_terminal_carry_done_total_and_eta(capsys: pytest.CaptureFixture[str]) -> None:
    with ProgressReport(live=False, interval_s=0) as report:
        report.task("compare", 4, unit="runs")
        for i in range(4):
            report.update(advance=1, detail=f"fifo seed {i}")
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5, lines  # one per update, and one when the task ends
    for done, line in enumerate(lines[:4], start=1):
        match = RUNNING.match(line)
        assert match, line
        assert match.group(1) == "compare" and int(match.group(2)) == done and match.group(3) == "4"
        assert match.group(6) == f" [fifo seed {done - 1}]"
    assert FINAL.match(lines[4]) and lines[4].startswith("progress: compare 4/4 runs (100%), done in ")


def test_lines_are_spaced_by_the_interval(capsys: pytest.CaptureFixture[str]) -> None:
    with ProgressReport(live=False, interval_s=3600) as report:
        report.task("train", 1000, unit="timesteps")
        for _ in range(1000):
            report.advance()
        report.task("evaluate", None)  # ends the first task; no total: no ETA
        report.advance(7)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("progress: train 1,000/1,000 timesteps (100%), done in ")
    assert lines[1].startswith("progress: evaluate 7 steps, done in ")
    assert len(lines) == 2


def test_disabled_report_prints_nothing(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROGRESS_ENV, "not a number")  # not even read when disabled
    with ProgressReport(enabled=False) as report:
        report.task("x", 3)
        report.advance(3)
        report.log("hidden")
    assert capsys.readouterr().out == ""


def test_interval_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROGRESS_ENV, "2.5")
    assert interval_from_env() == 2.5
    monkeypatch.setenv(PROGRESS_ENV, "-1")
    with pytest.raises(ValueError, match="HETGYM_PROGRESS_S='-1'"):
        interval_from_env()
    assert format_duration(3725) == "1:02:05" and format_duration(65) == "1:05" and format_duration(float("nan")) == "-"


def test_compare_redirected_to_a_file_logs_its_plan_and_progress(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    env = {**os.environ, PROGRESS_ENV: "0"}
    env.pop("COLUMNS", None)
    argv = [sys.executable, "-m", "hetgym.cli", "compare", "--scenario", "tiny", "--policies", "fifo,srtf,edf"]
    argv += ["--seeds", "0,1", "--out", str(tmp_path / "out"), "--no-plots"]
    with log.open("w") as out:
        proc = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = log.read_text()
    assert "6 runs (3 policies x 2 seeds, 12 jobs each)" in text
    # One estimate, once each policy has run (after the first seed), none extrapolated from the first run.
    assert len(re.findall(r"^estimate: about \d+:\d\d in all, \d+:\d\d left", text, re.M)) == 1
    assert "the first run took" not in text
    running = [m for m in map(RUNNING.match, text.splitlines()) if m]
    assert [int(m.group(2)) for m in running] == [1, 2, 3, 4, 5, 6]
    assert all(m.group(1) == "compare" and m.group(3) == "6" and m.group(4) == "runs" for m in running)
    assert re.search(r"^progress: compare 6/6 runs \(100%\), done in \d+:\d\d$", text, re.M)
    assert "\x1b[" not in text  # plain text, no terminal escapes


def test_simulate_reports_its_jobs_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    from hetgym.cli import main

    assert main(["simulate", "--scenario", "tiny", "--policy", "fifo"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^progress: simulate fifo 12/12 jobs ended \(100%\), done in \d+:\d\d$", out, re.M), out


class _FakeClock:
    """Seconds that the test advances by hand."""

    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


def test_the_estimate_leaves_out_the_first_run_and_counts_each_policys_own_time() -> None:
    from hetgym.cli.run import RunClock

    clock = _FakeClock()
    runs = RunClock(["slow", "fast", "mid"], [0, 1, 2], clock=clock)
    assert runs.left_s() is None and runs.estimate_note() is None
    # The first run took 60 s, most of it one-off costs: while it is the only figure, it stands for all.
    clock.now_s += 60.0
    runs.ran("slow", 0)
    assert runs.times == {} and runs.left_s() == pytest.approx(8 * 60.0)
    assert runs.estimate_note() is None  # not every policy has run yet: no estimate printed
    clock.now_s += 1.0
    runs.ran("fast", 0)
    # slow and mid are not timed: they count fast's 1 s (the median of the timed policies' means).
    assert runs.left_s() == pytest.approx(2 * 1.0 + 2 * 1.0 + 3 * 1.0)
    clock.now_s += 4.0
    runs.ran("mid", 0)
    # slow 2 x median(1, 4) = 2.5, fast 2 x 1, mid 2 x 4.
    assert runs.left_s() == pytest.approx(2 * 2.5 + 2 * 1.0 + 2 * 4.0)
    note = runs.estimate_note()
    assert note is not None and note.startswith("estimate: about 1:20 in all, 0:15 left")
    assert runs.estimate_note() is None  # printed once
    clock.now_s += 9.0
    runs.ran("slow", 1)  # slow's own time from its second run on
    assert runs.times["slow"] == [9.0] and runs.left_s() == pytest.approx(9.0 + 2 * 1.0 + 2 * 4.0)


def test_the_estimate_counts_only_the_runs_each_policy_has() -> None:
    from hetgym.cli.run import RunClock

    clock = _FakeClock()
    runs = RunClock(["fifo", "jps"], [0, 1, 2], {"fifo": [0]}, clock=clock)
    assert runs.total == 4
    clock.now_s += 2.0
    runs.ran("fifo", 0)
    clock.now_s += 8.0
    runs.ran("jps", 0)
    assert runs.left_s() == pytest.approx(2 * 8.0)  # fifo is done; jps has two seeds left
    assert runs.estimate_note() is not None
