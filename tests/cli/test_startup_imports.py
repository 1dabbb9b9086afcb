"""``hetgym --help``, ``hetgym <command> --help`` and a small ``hetgym simulate`` leave the heavy libraries
unimported: the command's start-up is the time a user waits before anything happens."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pandas", "pyarrow", "scipy", "matplotlib", "torch", "stable_baselines3", "sb3_contrib")

_PROBE = """
import contextlib, io, json, sys
from hetgym.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


def _imported(*argv: str) -> list[str]:
    code = _PROBE.format(heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120, check=True)
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "argv",
    [("--help",), ("simulate", "--help"), ("compare", "--help"), ("trace", "convert", "--help"), ("train", "--help")],
)
def test_help_imports_no_heavy_library(argv: tuple[str, ...]) -> None:
    assert _imported(*argv) == []


def test_small_simulate_imports_no_solver_plotting_or_learning_library() -> None:
    imported = _imported("simulate", "--scenario", "tiny", "--policy", "fifo", "--no-progress")
    assert not {"scipy", "matplotlib", "torch", "stable_baselines3"} & set(imported)
