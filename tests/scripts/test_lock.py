"""scripts/lock.py: the lock's lines from a freeze, the comparison with it, and the committed lock itself."""

from __future__ import annotations

from pathlib import Path

from helpers import load_script

ROOT = Path(__file__).resolve().parents[2]


def test_freeze_lines_drop_editables_and_pip_and_cut_torch_label() -> None:
    lock = load_script("lock")
    freeze = "pip==26.0\n-e git+file:///x#egg=hetgym\ntorch==2.13.0+cpu\nNumPy==2.4.6\nsetuptools==84.2.1\n"
    assert lock.freeze_lines(freeze) == ["NumPy==2.4.6", "setuptools==84.2.1", "torch==2.13.0"]


def test_diff_names_moved_added_and_missing_packages() -> None:
    lock = load_script("lock")
    pins = lock.parse_pins("numpy==2.4.6\nPyYAML==6.0.4\ntorch==2.13.0\n")
    installed = lock.parse_pins("numpy==2.5.0\npip==26.0\npyyaml==6.0.4\ntorch==2.13.0+cpu\nnew_pkg==1.0\n")
    assert lock.diff(pins, installed) == ["new-pkg: - -> 1.0", "numpy: 2.4.6 -> 2.5.0"]


def test_the_committed_lock_pins_the_declared_dependencies() -> None:
    lock = load_script("lock")
    pins = lock.parse_pins((ROOT / "constraints.txt").read_text())
    for name in ("numpy", "pandas", "scipy", "gymnasium", "stable-baselines3", "sb3-contrib", "pytest", "ruff", "mypy"):
        assert name in pins, f"constraints.txt pins no {name}; remake it with python scripts/lock.py"
    assert pins["torch"] == "2.13.0"
