"""How the ``hetgym`` command reports an error: one line, the full traceback only when asked for.

An error in hetgym's input, or in code hetgym runs for the user (an ``--import`` file, a custom policy, a
plug-in command), is one line on stderr naming what failed and where (file and line, for the user's
code); ``hetgym --debug COMMAND ...``, ``hetgym COMMAND ... --debug`` or the environment variable
``HETGYM_DEBUG=1`` raise it instead, so Python prints the whole traceback (the user's code's, chained).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

#: The environment variable that asks for tracebacks, like ``--debug`` (any value but empty, 0, false, no, off).
DEBUG_ENV = "HETGYM_DEBUG"

#: Appended to an error from code: how to see where it came from.
DEBUG_HINT = f"run with --debug, or {DEBUG_ENV}=1, for the traceback"

#: What ``--debug`` does, for the help of the command and of each subcommand.
DEBUG_HELP = f"on an error, show the full traceback instead of one line (the same as {DEBUG_ENV}=1)"


def debug_from_env() -> bool:
    """Whether ``HETGYM_DEBUG`` asks for tracebacks."""
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def debug_wanted(args: argparse.Namespace | None = None, argv: Sequence[str] = ()) -> bool:
    """Whether tracebacks are wanted: ``--debug`` parsed into ``args``, present in ``argv``, or the environment."""
    return bool(getattr(args, "debug", False)) or "--debug" in argv or debug_from_env()


def add_debug_flag(parser: argparse.ArgumentParser) -> None:
    """Accept ``--debug`` after the command's name too (``hetgym compare ... --debug``), and after the names
    of its own subcommands (``hetgym trace sample ... --debug``).

    Its default is left unset so that the flag given before the command's name is not overwritten. A
    command that has an option of that name already (``hetgym gavel``'s, Gavel's own) keeps it.
    """
    if "--debug" not in parser._option_string_actions:
        parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subcommand in dict.fromkeys(action.choices.values()):  # aliases share a parser
                add_debug_flag(subcommand)


__all__ = ["DEBUG_ENV", "DEBUG_HELP", "DEBUG_HINT", "add_debug_flag", "debug_from_env", "debug_wanted"]
