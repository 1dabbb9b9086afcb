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


def _run_code(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return out.stdout.strip()


def test_import_hetgym_is_light_and_its_names_load_on_first_access() -> None:
    code = (
        "import sys, hetgym\n"
        "print(sorted(m for m in ('numpy', 'gymnasium', 'hetgym.sim', 'pandas') if m in sys.modules))\n"
        "print(hetgym.Simulator.__module__, hetgym.sim.make_policy is hetgym.make_policy, hetgym.workloads.__name__)\n"
    )
    light, names = _run_code(code).splitlines()
    assert light == "[]"
    assert names == "hetgym.sim.engine True hetgym.workloads"


@pytest.mark.parametrize("order", ["hetgym first", "gymnasium first"])
def test_the_gym_ids_are_registered_whichever_is_imported_first(order: str) -> None:
    first, second = ("hetgym", "gymnasium") if order == "hetgym first" else ("gymnasium", "hetgym")
    code = (
        f"import {first}\nimport {second}\nimport gymnasium\n"
        "print(all(i in gymnasium.registry for i in ('HetCluster-v0', 'HetCluster-Tiny-v1', 'HetClusterEvents-v0')))\n"
    )
    assert _run_code(code) == "True"
