"""Progress of long commands, on a terminal and off it.

:class:`ProgressReport` shows a rich progress bar when standard output is a terminal. Otherwise (a log
file, ``nohup``, CI) a bar would print nothing until the end, so it writes one plain line to standard
output every ``interval_s`` seconds (default :data:`DEFAULT_INTERVAL_S`, or the ``HETGYM_PROGRESS_S``
environment variable; ``0`` writes a line at every update) and one when each task ends::

    progress: compare 12/45 runs (27%) [srtf seed 0], 1:02 elapsed, ETA 2:48
    progress: compare 45/45 runs (100%), done in 3:50

The ETA extrapolates the task's pace so far (``elapsed / done * left``) unless the caller knows better
and sets :attr:`ProgressReport.eta_s`. A task without a total reports its count and elapsed time only.
"""

from __future__ import annotations

import math
import os
import sys
import time
from types import TracebackType
from typing import Any

#: Environment variable: seconds between two progress lines when standard output is not a terminal.
PROGRESS_ENV = "HETGYM_PROGRESS_S"
#: Seconds between two progress lines off a terminal, unless :data:`PROGRESS_ENV` says otherwise.
DEFAULT_INTERVAL_S = 10.0
#: What every plain progress line starts with (``grep '^progress:' log.txt``).
LINE_PREFIX = "progress:"


def interval_from_env() -> float:
    """Seconds between progress lines: :data:`PROGRESS_ENV` if set, else :data:`DEFAULT_INTERVAL_S`."""
    text = os.environ.get(PROGRESS_ENV, "").strip()
    if not text:
        return DEFAULT_INTERVAL_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{PROGRESS_ENV}={text!r}: give the seconds between progress lines, e.g. 10 (0: every update)")
    return value


def format_duration(seconds: float) -> str:
    """``M:SS`` or ``H:MM:SS`` (``-`` for an unknown or infinite duration)."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "-"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _count(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


class ProgressReport:
    """One task at a time, shown as a bar on a terminal or as periodic lines elsewhere.

    Use it as a context manager; :meth:`task` starts a task (ending the previous one), :meth:`advance` and
    :meth:`update` move it, :meth:`log` prints a message. Disabled, every call is a no-op.

    Args:
        enabled: ``False`` silences it (``--no-progress``).
        console: The rich console of the bar and of :meth:`log` (default: a new one on standard output).
        live: Draw a bar (``True``) or write lines (``False``); default: a bar when ``console`` is a terminal.
        interval_s: Seconds between two lines (default: :func:`interval_from_env`).
    """

    def __init__(
        self,
        *,
        enabled: bool = True,
        console: Any = None,
        live: bool | None = None,
        interval_s: float | None = None,
    ) -> None:
        self.enabled = enabled
        self.interval_s = 0.0
        if enabled:
            self.interval_s = interval_from_env() if interval_s is None else float(interval_s)
        if console is None and enabled:
            from rich.console import Console

            console = Console()
        self.console = console
        self.live = bool(console is not None and console.is_terminal) if live is None else live
        #: The caller's estimate of the seconds left in the task (``None``: extrapolate the pace).
        self.eta_s: float | None = None
        self._bar: Any = None
        self._task: Any = None
        self._label = ""
        self._detail = ""
        self._unit = ""
        self._total: float | None = None
        self._done = 0.0
        self._started = 0.0
        self._last_line = 0.0
        self._active = False

    def __enter__(self) -> ProgressReport:
        if self.enabled and self.live:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self._bar.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None:
            self._finish()
        self._active = False
        if self._bar is not None:
            self._bar.__exit__(kind, exc, tb)
            self._bar = None

    # -- the task ---------------------------------------------------------------------------------

    def task(self, label: str, total: float | None, *, unit: str = "steps") -> None:
        """Start a task of ``total`` units (``None``: unknown), ending the current one."""
        if not self.enabled:
            return
        self._finish()
        self._label, self._detail, self._unit = label, "", unit
        self._total = None if total is None else float(total)
        self._done = 0.0
        self.eta_s = None
        self._started = self._last_line = time.monotonic()
        self._active = True
        if self._bar is not None:
            if self._task is not None:
                self._bar.remove_task(self._task)
            self._task = self._bar.add_task(label, total=total)

    def advance(self, n: float = 1) -> None:
        """``n`` more units done."""
        if self._active:
            self._done += n
            if self._bar is not None:
                self._bar.advance(self._task, n)
            else:
                self._maybe_line()

    def update(self, *, completed: float | None = None, detail: str | None = None, advance: float = 0) -> None:
        """Set the units done (``completed``) or add to them (``advance``), and what is being done (``detail``)."""
        if not self._active:
            return
        if completed is not None:
            self._done = float(completed)
        self._done += advance
        if detail is not None:
            self._detail = detail
        if self._bar is not None:
            description = f"{self._label} [{self._detail}]" if self._detail else self._label
            self._bar.update(self._task, completed=self._done, description=description)
        else:
            self._maybe_line()

    def set_total(self, total: float | None) -> None:
        """Change the task's total (e.g. once a resumed sweep knows how many runs are left)."""
        if self._active:
            self._total = None if total is None else float(total)
            if self._bar is not None:
                self._bar.update(self._task, total=total)

    def log(self, text: str) -> None:
        """Print ``text`` (above the bar on a terminal)."""
        if self.enabled and self.console is not None:
            self.console.print(text, highlight=False, markup=False)

    # -- lines ------------------------------------------------------------------------------------

    def line(self, *, final: bool = False) -> str:
        """The current task's progress as one line (:data:`LINE_PREFIX` first)."""
        elapsed = time.monotonic() - self._started
        head = f"{LINE_PREFIX} {self._label} {_count(self._done)}"
        if self._total is not None:
            head += f"/{_count(self._total)} {self._unit}"
            if self._total > 0:
                head += f" ({100 * min(self._done / self._total, 1.0):.0f}%)"
        else:
            head += f" {self._unit}"
        if self._detail and not final:
            head += f" [{self._detail}]"
        if final:
            return f"{head}, done in {format_duration(elapsed)}"
        return f"{head}, {format_duration(elapsed)} elapsed" + self._eta_text(elapsed)

    def _eta_text(self, elapsed: float) -> str:
        if self.eta_s is not None:
            return f", ETA {format_duration(self.eta_s)}"
        if self._total is None or self._done <= 0 or self._done > self._total:
            return ""
        return f", ETA {format_duration(elapsed / self._done * (self._total - self._done))}"

    def _maybe_line(self) -> None:
        now = time.monotonic()
        if now - self._last_line >= self.interval_s:
            self._last_line = now
            self._write(self.line())

    def _finish(self) -> None:
        if self._active and self._bar is None:
            self._write(self.line(final=True))
        self._active = False

    @staticmethod
    def _write(text: str) -> None:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


__all__ = [
    "DEFAULT_INTERVAL_S",
    "LINE_PREFIX",
    "PROGRESS_ENV",
    "ProgressReport",
    "format_duration",
    "interval_from_env",
]
