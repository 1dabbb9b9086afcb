"""The ``hetgym`` command.

Each subcommand lives in a module of this package that defines ``register(subparsers)``; modules are
discovered automatically, so adding a command means adding a module. Other packages contribute commands
through the ``hetgym.commands`` entry point group, each entry a module with the same ``register`` (the
project's ``agents`` package contributes ``train`` and ``evaluate`` that way, so ``hetgym`` never imports
it). ``main`` turns hetgym's input errors into a one-line message and exit status 2 (``--debug`` shows the
traceback).

When the command line names a command, ``main`` imports the command modules in name order only until one
registers it, and reads the entry points only when none does: a built-in command's process imports
neither the other commands nor the plug-ins (``--help`` and unknown commands still see every command).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from typing import Any

from hetgym.sim.errors import HetgymError
from hetgym.sim.layout import require_project_package


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every discovered subcommand.

    With ``command``, discovery stops at the first module that registers it (modules in name order, then
    the entry points): the parser then holds that command and those registered before it.
    """
    from hetgym import __version__

    parser = argparse.ArgumentParser(
        prog="hetgym",
        description="Simulate and compare scheduling policies on heterogeneous GPU clusters.",
    )
    parser.add_argument("--version", action="version", version=f"hetgym {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{module.name}")
        register = getattr(mod, "register", None)
        if register is not None:
            register(sub)
            if command is not None and command in sub.choices:
                return parser
    failed = []
    for ep in sorted(entry_points(group="hetgym.commands"), key=lambda e: e.name):
        if ep.value.split(".")[0] in ("agents", "baselines"):
            # A stray agents.py in the working directory would be loaded instead: name it.
            require_project_package(ep.value.split(".")[0])
        try:
            register = getattr(ep.load(), "register", None)
        except ImportError as exc:  # a plug-in whose dependencies are missing: the other commands still work
            failed.append(f"{ep.name} ({ep.value}): {exc}")
            continue
        if register is None:
            failed.append(f"{ep.name} ({ep.value}): the module has no register(subparsers)")
            continue
        register(sub)
        if command is not None and command in sub.choices:
            break
    if failed:
        parser.epilog = "commands that could not be loaded: " + "; ".join(failed)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hetgym`` console script."""
    try:
        parser = build_parser(_command(sys.argv[1:] if argv is None else argv))
    except HetgymError as exc:  # e.g. a stray agents.py shadowing the project's package
        if "--debug" in (sys.argv[1:] if argv is None else argv):
            raise
        print(f"hetgym: error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except (HetgymError, KeyError, ValueError, FileNotFoundError) as exc:
        if args.debug:
            raise
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"hetgym {args.command}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def entry_points(group: str) -> Any:
    """``importlib.metadata.entry_points(group=group)``, imported only when a command line needs the plug-ins."""
    from importlib.metadata import entry_points as found

    return found(group=group)


def _command(argv: Sequence[str]) -> str | None:
    """The command the arguments name (their first word that is not an option), or ``None``."""
    for arg in argv:
        if arg in ("-h", "--help", "--version"):
            return None
        if not arg.startswith("-"):
            return arg
    return None


if __name__ == "__main__":
    sys.exit(main())
