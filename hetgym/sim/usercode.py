"""Errors raised by code hetgym runs on a user's behalf, located in the user's own file.

hetgym runs code it does not own: ``--import`` files and modules, custom policies (their constructor and
``schedule``), and plug-ins registered through the ``hetgym.policies`` and ``hetgym.commands`` entry-point
groups. When such code raises, the user needs the file, the line and the exception, not a traceback
through hetgym's internals. :func:`locate` finds the frame of the traceback that belongs to that code,
:func:`describe` puts it in one line, and :class:`UserCodeError` carries it (chained to the original
exception, whose full traceback ``hetgym --debug`` still shows).

Standard library only (and :mod:`hetgym.sim.errors`): the simulator's policy registry raises it.
"""

from __future__ import annotations

import os
import site
import sysconfig
from pathlib import Path

from hetgym.sim.errors import HetgymError

#: The folders of hetgym's own packages: frames there are hetgym's, never the user's.
_OWN_ROOTS: tuple[str, ...] = tuple(
    str(Path(__file__).resolve().parents[2] / name) + os.sep for name in ("hetgym", "baselines", "agents")
)


def _library_roots() -> tuple[str, ...]:
    """The standard library's folders and the site-packages folders (installed third-party libraries)."""
    paths = sysconfig.get_paths()
    found = {paths.get(key, "") for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    if hasattr(site, "getsitepackages"):  # an old virtualenv's site module has none
        found.update(site.getsitepackages())
    if site.ENABLE_USER_SITE and site.USER_SITE:
        found.add(site.USER_SITE)
    return tuple(str(Path(p).resolve()) + os.sep for p in found if p)


class UserCodeError(HetgymError):
    """Code run on the user's behalf (an ``--import``, a custom policy, a plug-in) raised.

    Attributes:
        what: What was being run, e.g. ``"--import my_policy.py"``.
        original: The exception that code raised (also the ``__cause__``).
        where: ``(file, line)`` of the user's frame, or ``None`` when no frame of the traceback is theirs.
    """

    def __init__(self, what: str, original: BaseException) -> None:
        self.what = what
        self.original = original
        self.where = locate(original)
        super().__init__(f"{what}: {describe(original)}")


def _is_own(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_OWN_ROOTS)


def _plugin_modules() -> frozenset[str]:
    """Top-level modules of the plug-ins registered in the ``hetgym.*`` entry-point groups, hetgym's own excepted."""
    from importlib.metadata import entry_points

    found = set()
    for group in ("hetgym.policies", "hetgym.commands"):
        for ep in entry_points(group=group):
            found.add(ep.value.split(":")[0].split(".")[0])
    return frozenset(found - {"hetgym", "baselines", "agents"})


def _frames(exc: BaseException) -> list[tuple[str, int, str]]:
    """``(file, line, top-level module)`` of each frame of ``exc``'s traceback, outermost first."""
    out = []
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if not code.co_filename.startswith("<frozen"):
            module = str(tb.tb_frame.f_globals.get("__name__", ""))
            out.append((code.co_filename, int(tb.tb_lineno), module.split(".")[0]))
        tb = tb.tb_next
    return out


def locate(exc: BaseException) -> tuple[str, int] | None:
    """The ``(file, line)`` in the user's code where ``exc`` was raised, or ``None``.

    A ``SyntaxError`` gives its own file and line. Otherwise the traceback's frames below hetgym's first
    frame (the code hetgym called, not the code that called hetgym) are searched, innermost first, for one
    that is neither hetgym's nor an installed library's (the standard library, site-packages), a plug-in
    registered in the ``hetgym.*`` entry-point groups counting as the user's wherever it is installed.
    ``None`` when there is none: the exception was raised in hetgym or in a library hetgym called.
    """
    if isinstance(exc, SyntaxError) and exc.filename:
        return exc.filename, int(exc.lineno or 0)
    frames = _frames(exc)
    first_own = next((i for i, f in enumerate(frames) if _is_own(f[0])), None)
    if first_own is not None:
        frames = frames[first_own + 1 :]
    candidates = [f for f in reversed(frames) if not _is_own(f[0])]
    if not candidates:
        return None
    libraries = _library_roots()
    plugins: frozenset[str] | None = None
    for filename, line, module in candidates:
        if not os.path.abspath(filename).startswith(libraries):
            return filename, line
        if plugins is None:
            plugins = _plugin_modules()
        if module in plugins:
            return filename, line
    return None


def shown_path(filename: str) -> str:
    """``filename`` relative to the working folder when it lies under it, else as it is."""
    try:
        return os.path.relpath(filename) if Path(filename).resolve().is_relative_to(Path.cwd()) else filename
    except (OSError, ValueError):
        return filename


def user_place(exc: BaseException) -> str:
    """`` (file, line N)`` naming the user's code that raised ``exc`` (:func:`locate`), or ``""`` if none did."""
    where = locate(exc)
    return "" if where is None else f" ({shown_path(where[0])}, line {where[1]})"


def describe(exc: BaseException) -> str:
    """``exc`` in one line: ``Type: message (file, line N)``, the place being the user's code (:func:`locate`).

    Without a frame of the user's, the innermost frame of hetgym's own is named (``in hetgym's FILE``, which
    makes a bug in hetgym recognisable as such), else the innermost frame; with no traceback, no place. A
    :class:`UserCodeError` is its own message (it names the place already), and hetgym's input errors
    (:class:`HetgymError`) raised by hetgym itself name no place: their message says what to fix.
    """
    if isinstance(exc, UserCodeError):
        return str(exc)
    if isinstance(exc, SyntaxError):
        text = f"{type(exc).__name__}: {exc.msg}"
    elif isinstance(exc, SystemExit):
        text = f"SystemExit: the code called sys.exit({exc.code!r})"
    else:
        message = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    where = locate(exc)
    if where is not None:
        return f"{text} ({shown_path(where[0])}, line {where[1]})"
    if isinstance(exc, HetgymError):
        return text
    frames = _frames(exc)
    own = [f for f in frames if _is_own(f[0])]
    if own:
        return f"{text} (in hetgym's {shown_path(own[-1][0])}, line {own[-1][1]})"
    if frames:
        return f"{text} ({shown_path(frames[-1][0])}, line {frames[-1][1]})"
    return text


__all__ = ["UserCodeError", "describe", "locate", "shown_path", "user_place"]
