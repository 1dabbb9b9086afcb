"""Output folders under contention and faults: one claim wins, a failed write is one line and leaves nothing.

Two runs writing the same ``--out`` at once: exactly one succeeds, the other fails with one ``error:``
line naming the folder. A write that fails for want of space (here a file-size limit, ``EFBIG``) fails
with one line naming ``--out`` and the cause, and leaves neither the folder nor a temporary one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hetgym.atomic import atomic_dir

COMPARE = ["compare", "--scenario", "tiny", "--policies", "fifo", "--seeds", "0", "--no-plots", "--no-progress"]
SIMULATE = ["simulate", "--scenario", "tiny", "--policy", "fifo", "--no-progress"]


def _hetgym(args: list[str], cwd: Path, *, prelude: str = "") -> subprocess.Popen[str]:
    code = f"import sys\n{prelude}\nfrom hetgym.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "100"}
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ": error: " in line]


def test_two_runs_claiming_one_out_at_once_one_wins(tmp_path: Path) -> None:
    procs = [_hetgym([*COMPARE, "--out", "out"], tmp_path) for _ in range(2)]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    _, _, loser_err = next(r for r in results if r[0] == 2)
    assert "Traceback" not in loser_err
    errors = _error_lines(loser_err)
    assert len(errors) == 1 and "--out out" in errors[0], loser_err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary folder left
    assert (tmp_path / "out" / "runs.csv").is_file()


def test_a_second_claim_fails_at_once_and_the_first_is_kept(tmp_path: Path) -> None:
    target = tmp_path / "out"
    with atomic_dir(target) as first:
        (first / "a.txt").write_text("first\n")
        with pytest.raises(FileExistsError), atomic_dir(target):
            pass
    assert (target / "a.txt").read_text() == "first\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_an_existing_empty_folder_is_claimed_too(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.mkdir()
    with atomic_dir(target) as first:
        (first / "a.txt").write_text("first\n")
        with pytest.raises(FileExistsError, match="another run"), atomic_dir(target):
            pass
    assert sorted(p.name for p in target.iterdir()) == ["a.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_the_final_rename_replaces_only_an_empty_folder(tmp_path: Path) -> None:
    target = tmp_path / "out"
    with pytest.raises(FileExistsError, match="another run"), atomic_dir(target) as tmp:
        (tmp / "a.txt").write_text("mine\n")
        (target / "theirs.txt").write_text("written past the claim\n")
    assert sorted(p.name for p in target.iterdir()) == ["theirs.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_failed_write_releases_the_claim(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), atomic_dir(tmp_path / "out") as tmp:
        (tmp / "a.txt").write_text("partial\n")
        raise RuntimeError("writer failed")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [COMPARE, SIMULATE], ids=["compare", "simulate"])
def test_a_file_size_limit_is_one_error_line_and_leaves_nothing(command: list[str], tmp_path: Path) -> None:
    prelude = (
        "import resource, signal\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))\n"
    )
    proc = _hetgym([*command, "--out", "out"], tmp_path, prelude=prelude)
    code = proc.wait(timeout=300)
    _, stderr = proc.communicate()
    assert code == 2, stderr
    assert "Traceback" not in stderr
    errors = _error_lines(stderr)
    assert len(errors) == 1, stderr
    assert "--out out" in errors[0] and "File too large" in errors[0] and "EFBIG" in errors[0]
    assert list(tmp_path.iterdir()) == []
