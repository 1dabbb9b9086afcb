"""A stray ``baselines.py`` or ``agents.py`` in the working directory is named, not silently loaded.

Each case runs a fresh interpreter whose working directory holds the stray module, as a user's
``python -c`` or notebook would; ``python -c`` puts that directory first on ``sys.path``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_registry_is_intact_without_a_stray_module(tmp_path: Path) -> None:
    proc = _run(tmp_path, "-c", "import hetgym; print(sorted(hetgym.list_policies()))")
    assert proc.returncode == 0, proc.stderr
    assert "'edf'" in proc.stdout and "'fifo'" in proc.stdout


@pytest.mark.parametrize("as_folder", [False, True], ids=["baselines.py", "baselines/"])
def test_stray_baselines_is_named_by_the_error(tmp_path: Path, as_folder: bool) -> None:
    if as_folder:
        (tmp_path / "baselines").mkdir()
        stray = tmp_path / "baselines" / "__init__.py"
    else:
        stray = tmp_path / "baselines.py"
    # The stray module's code must never run: it would print this marker.
    stray.write_text("print('STRAY MODULE RAN')\n")
    proc = _run(tmp_path, "-c", "import hetgym; hetgym.make_policy('edf')")
    assert proc.returncode != 0
    assert "STRAY MODULE RAN" not in proc.stdout
    assert "ShadowedPackageError" in proc.stderr
    assert str(stray.resolve()) in proc.stderr
    assert str(ROOT / "baselines") in proc.stderr
    assert "unknown policy" not in proc.stderr


def test_cli_names_a_stray_baselines_without_traceback(tmp_path: Path) -> None:
    (tmp_path / "baselines.py").write_text("x = 1\n")
    proc = _run(tmp_path, "-m", "hetgym.cli", "policies")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "baselines.py" in proc.stderr and "shadows" in proc.stderr


def test_cli_names_a_stray_agents_without_traceback(tmp_path: Path) -> None:
    # ``train`` comes from the agents package's entry point, so the command line loads it and names the file.
    (tmp_path / "agents.py").write_text("x = 1\n")
    proc = _run(tmp_path, "-m", "hetgym.cli", "train", "--help")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "agents.py" in proc.stderr and "shadows" in proc.stderr


def test_a_stray_agents_does_not_stop_a_builtin_command(tmp_path: Path) -> None:
    # A built-in command's process reads no plug-in (the command line stops at the module registering it).
    (tmp_path / "agents.py").write_text("x = 1\n")
    proc = _run(tmp_path, "-m", "hetgym.cli", "policies")
    assert proc.returncode == 0, proc.stderr
    assert "edf" in proc.stdout


def test_unrelated_files_in_the_working_directory_are_harmless(tmp_path: Path) -> None:
    (tmp_path / "baselines_notes.py").write_text("print('unrelated')\n")
    proc = _run(tmp_path, "-m", "hetgym.cli", "policies")
    assert proc.returncode == 0, proc.stderr
    assert "edf" in proc.stdout
