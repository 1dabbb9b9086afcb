"""The ``hetgym`` command.

Each subcommand lives in a module of this package that defines ``register(subparsers)``; modules are
discovered automatically, so adding a command means adding a module. Other packages contribute commands
through the ``hetgym.commands`` entry point group, each entry a module with the same ``register`` (the
project's ``agents`` package contributes ``train`` and ``evaluate`` that way, so ``hetgym`` never imports
it). ``main`` turns hetgym's input errors into a one-line message and exit status 2, and an error raised by
code (a user's ``--import`` file, custom policy or plug-in, or hetgym's own) into one line naming the file,
the line and the exception, with exit status 1; ``--debug`` or ``HETGYM_DEBUG=1`` shows the traceback.

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

from hetgym.cli._errors import DEBUG_ENV, DEBUG_HELP, DEBUG_HINT, add_debug_flag, debug_wanted
from hetgym.sim.errors import HetgymError
from hetgym.sim.layout import require_project_package
from hetgym.sim.usercode import UserCodeError, describe, locate, user_place

#: The end of ``hetgym --help``: how errors are reported.
ERRORS_EPILOG = (
    "Errors come as one line; for an --import file, a custom policy or a plug-in it\n"
    "names the file, the line and the exception. --debug (before or after the\n"
    f"command's name) or {DEBUG_ENV}=1 shows the full traceback instead."
)


def build_parser(command: str | None = None) -> _Parser:
    """The argument parser with every discovered subcommand.

    With ``command``, discovery stops at the first module that registers it (modules in name order, then
    the entry points): the parser then holds that command and those registered before it.
    """
    from hetgym import __version__

    parser = _Parser(
        prog="hetgym",
        description="Simulate and compare scheduling policies on heterogeneous GPU clusters.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hetgym {__version__}")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    parser.epilog = ERRORS_EPILOG
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{module.name}")
        register = getattr(mod, "register", None)
        if register is not None:
            register(sub)
            if command is not None and command in sub.choices:
                return _with_debug_flags(parser, sub, [])
    failed = []
    for ep in sorted(entry_points(group="hetgym.commands"), key=lambda e: e.name):
        if ep.value.split(".")[0] in ("agents", "baselines"):
            # A stray agents.py in the working directory would be loaded instead: name it.
            require_project_package(ep.value.split(".")[0])
        try:
            register = getattr(ep.load(), "register", None)
        except ImportError as exc:  # a plug-in whose dependencies are missing: the other commands still work
            failed.append(f"{ep.name} ({ep.value}): {exc}{user_place(exc)}")
            continue
        except Exception as exc:  # any other error of the plug-in's code: named by file and line
            failed.append(f"{ep.name} ({ep.value}): {describe(exc)}")
            continue
        if register is None:
            failed.append(f"{ep.name} ({ep.value}): the module has no register(subparsers)")
            continue
        known = set(sub.choices)
        try:
            register(sub)
        except Exception as exc:
            for name in set(sub.choices) - known:  # a command half-registered would fail later, unexplained
                del sub.choices[name]
            failed.append(f"{ep.name} ({ep.value}): register(subparsers) failed: {describe(exc)}")
            continue
        if command is not None and command in sub.choices:
            break
    return _with_debug_flags(parser, sub, failed)


def _with_debug_flags(parser: _Parser, sub: Any, failed: list[str]) -> _Parser:
    """``parser`` with ``--debug`` on each of its commands and the plug-ins that failed named in its help."""
    for command_parser in dict.fromkeys(sub.choices.values()):  # aliases share a parser
        add_debug_flag(command_parser)
    parser.failed_plugins = failed
    if failed:
        parser.epilog = "commands that could not be loaded: " + "; ".join(failed) + "\n\n" + ERRORS_EPILOG
    return parser


class _Parser(argparse.ArgumentParser):
    """The command's parser, which remembers the plug-in commands that could not be loaded."""

    failed_plugins: list[str]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hetgym`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command(argv)
    try:
        parser = build_parser(command)
    except Exception as exc:  # e.g. a stray agents.py shadowing the project's package
        if debug_wanted(argv=argv):
            raise
        hint = "" if isinstance(exc, HetgymError) else f" ({DEBUG_HINT})"
        print(f"hetgym: error: {describe(exc) if hint else exc}{hint}", file=sys.stderr)
        return 2 if not hint else 1
    if command is not None and parser.failed_plugins and command not in _commands(parser):
        print(
            f"hetgym: error: unknown command {command!r}; the plug-in commands that could not be loaded: "
            + "; ".join(parser.failed_plugins),
            file=sys.stderr,
        )
        return 2
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    debug = debug_wanted(args)
    try:
        return int(args.func(args) or 0)
    except UserCodeError as exc:  # the user's code raised: its file and line, the traceback on demand
        if debug:
            raise
        print(f"hetgym {args.command}: error: {exc} ({DEBUG_HINT})", file=sys.stderr)
        return 1
    except (HetgymError, KeyError, ValueError, OSError) as exc:
        if debug:
            raise
        if not isinstance(exc, HetgymError) and locate(exc) is not None:  # raised by the user's code: where
            print(f"hetgym {args.command}: error: {describe(exc)} ({DEBUG_HINT})", file=sys.stderr)
            return 1
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"hetgym {args.command}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # code's own failure (the user's, a plug-in's, or a bug in hetgym): one line
        if debug:
            raise
        print(f"hetgym {args.command}: error: {describe(exc)} ({DEBUG_HINT})", file=sys.stderr)
        return 1


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    """The names of the commands ``parser`` knows."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


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
