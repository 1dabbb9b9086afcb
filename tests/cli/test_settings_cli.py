"""Bad scenario settings on the command line: one line naming the flag, the value, the range and a fix;
exit status 2; no traceback; nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from hetgym.cli import main


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--restart-penalty-s", "inf"], "--restart-penalty-s: SimConfig.restart_penalty_s=inf is not finite"),
        (["--round-s", "1e-9"], "--round-s: SimConfig.round_s=1e-09 is out of range; give a finite number of seconds"),
        (["--max-time-s", "nan"], "--max-time-s: SimConfig.max_time_s=nan is not a number"),
        (["--max-time-s", "-5"], "--max-time-s: SimConfig.max_time_s=-5.0 is out of range"),
        (["--utilisation", "0"], "--utilisation: WorkloadConfig.target_utilisation=0.0 is out of range"),
        (["--max-gpus-per-job", "0"], "--max-gpus-per-job: WorkloadConfig.max_gpus_per_job=0 is out of range"),
        (["--max-gpus-per-job", "-3"], "give an integer >= 1"),
        (["--num-jobs", "0"], "--num-jobs: WorkloadConfig.num_jobs=0 is out of range"),
    ],
)
@pytest.mark.parametrize("command", ["simulate", "compare"])
def test_bad_settings_exit_2_with_one_line(
    command: str,
    flags: list[str],
    expected: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    policy = ["--policy", "fifo"] if command == "simulate" else ["--policies", "fifo", "--seeds", "0"]
    code = main([command, *policy, "--scenario", "tiny", "--no-progress", "--out", str(out), *flags])
    captured = capsys.readouterr()
    assert code == 2
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0] and "give " in lines[0]
    assert "Traceback" not in captured.err + captured.out
    assert not out.exists() and not (tmp_path / "results").exists()
