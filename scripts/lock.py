"""Write the lock (``constraints.txt``) of every runtime, test and extra dependency, or compare one with it.

The lock is what ``.ci/run`` and the README's test command install with ``pip install -c constraints.txt``,
so the tested set is the installed set. It is made as a new user's install would be: a new virtual
environment, the machine's CPU torch (``torch==2.13.0``) first, then ``pip install -e ".[rl,dev,ray]"``
at the newest releases, then ``pip freeze``. Moving the lock is a deliberate step: run the tests and the
digests' drift report (``.ci/latest`` does both) before committing a new one.

Usage::

    python scripts/lock.py                      # rewrite constraints.txt (a few minutes)
    python scripts/lock.py --out /tmp/new.txt   # write elsewhere, e.g. to compare first
    pip freeze --all --exclude-editable | python scripts/lock.py --diff constraints.txt
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TORCH = "torch==2.13.0"
HEADER = """\
# The tested set: every runtime, test and extra (rl, dev, ray) dependency of hetgym, pinned.
# Installed with -c by .ci/run and the README's test command, so the tested set is the installed set.
# Made by scripts/lock.py: a new venv, pip install {torch}, pip install -e '.[rl,dev,ray]' at the newest
# releases, then pip freeze (hetgym's own line dropped; torch written without its local +cpu label, which
# == matches). Python {python} on {platform}. The newest-releases path is .ci/latest.
"""

_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;#]+)")


def canonical(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_pins(text: str) -> dict[str, str]:
    """``{canonical name: version}`` of the ``name==version`` lines of a freeze or constraints file."""
    pins: dict[str, str] = {}
    for line in text.splitlines():
        match = _NAME.match(line.strip())
        if match:
            pins[canonical(match.group(1))] = match.group(2)
    return pins


def freeze_lines(freeze: str) -> list[str]:
    """The pinned lines of ``pip freeze``: editable installs (hetgym) and pip dropped, torch's local label cut."""
    out = []
    for line in freeze.splitlines():
        line = line.strip()
        if not line or line.startswith(("-e ", "#")) or "==" not in line:
            continue
        name, version = line.split("==", 1)
        if canonical(name) == "pip":
            continue
        if canonical(name) == "torch":
            version = version.split("+", 1)[0]
        out.append(f"{name}=={version}")
    return sorted(out, key=lambda s: canonical(s.split("==", 1)[0]))


def diff(lock: dict[str, str], installed: dict[str, str]) -> list[str]:
    """One line per package whose version differs (or that only one side has); pip itself is not locked."""
    lines = []
    for name in sorted((set(lock) | set(installed)) - {"pip"}):
        old, new = lock.get(name, "-"), installed.get(name, "-")
        if old.split("+", 1)[0] != new.split("+", 1)[0]:
            lines.append(f"{name}: {old} -> {new}")
    return lines


def make_lock(out: Path) -> None:
    """Install into a new venv and write its freeze to ``out`` (through a temporary sibling)."""
    with tempfile.TemporaryDirectory(prefix="hetgym-lock-") as tmp:
        env_dir = Path(tmp) / "venv"
        venv.EnvBuilder(with_pip=True).create(env_dir)
        py = str(env_dir / "bin" / "python")
        for args in (["install", "-q", TORCH], ["install", "-q", "-e", f"{ROOT}[rl,dev,ray]"]):
            print("pip", " ".join(args), flush=True)
            subprocess.run([py, "-m", "pip", *args], check=True)
        # --all: setuptools too (torch asks for it at run time); pip itself is left out below.
        freeze = subprocess.run([py, "-m", "pip", "freeze", "--all"], check=True, capture_output=True, text=True).stdout
        platform = subprocess.run(
            [py, "-c", "import platform; print(platform.python_version(), platform.system(), platform.machine())"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
    text = HEADER.format(torch=TORCH, python=platform[0], platform=" ".join(platform[1:]))
    text += "\n".join(freeze_lines(freeze)) + "\n"
    tmp_out = out.with_name(out.name + ".tmp")
    tmp_out.write_text(text)
    os.replace(tmp_out, out)
    print(f"wrote {len(parse_pins(text))} pins to {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "constraints.txt", help="the lock to write")
    parser.add_argument(
        "--diff", type=Path, metavar="LOCK", help="compare a pip freeze read on stdin with LOCK; write nothing"
    )
    args = parser.parse_args(argv)
    if args.diff is not None:
        if not args.diff.is_file():
            parser.error(f"--diff {args.diff}: no such file")
        changes = diff(parse_pins(args.diff.read_text()), parse_pins(sys.stdin.read()))
        print("\n".join(changes) if changes else "(none: the installed set is the lock)")
        return 0
    make_lock(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
