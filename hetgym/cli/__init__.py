"""The ``hetgym`` command.

Each subcommand lives in a module of this package that defines ``register(subparsers)``; modules are
discovered automatically, so adding a command means adding a module. ``main`` turns hetgym's input
errors into a one-line message and exit status 2 (``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from hetgym.sim.errors import HetgymError


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every discovered subcommand."""
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hetgym`` console script."""
    try:
        parser = build_parser()
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


if __name__ == "__main__":
    sys.exit(main())
