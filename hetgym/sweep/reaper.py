"""End a local Ray instance together with the sweep driver that started it, even after ``kill -9``.

Ray ends most of its processes with the driver that started them (they share its fate), but two of a
local instance's agents (``DashboardAgent``, ``RuntimeEnvAgent``) outlive a driver killed with SIGKILL
for about a minute: they see their raylet die, then wait on the dead GCS before exiting. A reaper
closes that gap. The driver starts it (:func:`start_reaper`) before ``ray.init``, with one end of a pipe
as its standard input, and writes the Ray session directory into the pipe once Ray is up
(:meth:`Reaper.watch_session`). The reaper blocks on that pipe; end of file means the driver closed it
(after ``ray.shutdown()``, :meth:`Reaper.stop`) or died. It then sends SIGKILL to every process of that
session, which it recognises by an open file inside the session directory (each Ray process keeps its
log files there), until none is left, and exits.

If the driver dies before it could tell the session directory, the reaper takes the sessions named
after the driver (``session_<date>_<driver pid>``, Ray's naming) begun after the reaper itself started.
A process that never opened a file in the session directory, or that is not readable in ``/proc``,
is not found; without ``/proc`` (not Linux) no reaper is started.

This file runs as a script in the reaper process and imports only the standard library.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

#: How long the reaper keeps killing the session's processes before it gives up.
REAP_TIMEOUT_S = 8.0
#: Pause between two passes over the process table while reaping.
REAP_POLL_S = 0.05
#: How long :meth:`Reaper.stop` waits for the reaper to exit.
STOP_TIMEOUT_S = REAP_TIMEOUT_S + 2.0
#: Ray's session directory name: ``session_<%Y-%m-%d_%H-%M-%S_%f>_<pid of the process that started it>``.
SESSION_NAME = re.compile(r"session_(\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d_\d{6})_(\d+)")
_SESSION_DATE_FORMAT = "%Y-%m-%d_%H-%M-%S_%f"
_PROC = Path("/proc")


def _open_paths(pid: int) -> list[str]:
    """The paths that process ``pid`` has open (empty if it is gone or not readable)."""
    fd_dir = _PROC / str(pid) / "fd"
    try:
        fds = list(fd_dir.iterdir())
    except OSError:
        return []
    paths = []
    for fd in fds:
        try:
            paths.append(os.readlink(fd))
        except OSError:
            continue
    return paths


def _in_session(path: str, session_dir: str | None, driver_pid: int, not_before: dt.datetime) -> bool:
    """Whether an open ``path`` lies in the driver's Ray session.

    With ``session_dir`` known, the path must lie inside it. Otherwise one of its directories must be a Ray
    session named after ``driver_pid`` and begun at or after ``not_before`` (local time, as Ray names it).
    """
    if session_dir is not None:
        return path.startswith(session_dir.rstrip("/") + "/")
    for part in path.split("/"):
        match = SESSION_NAME.fullmatch(part)
        if match and int(match.group(2)) == driver_pid:
            try:
                begun = dt.datetime.strptime(match.group(1), _SESSION_DATE_FORMAT)
            except ValueError:
                continue
            if begun >= not_before:
                return True
    return False


def session_processes(session_dir: str | None, driver_pid: int, not_before: dt.datetime) -> set[int]:
    """The live processes (other than this one and the driver) with a file open in the driver's Ray session."""
    skip = {os.getpid(), driver_pid}
    found = set()
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        if any(_in_session(p, session_dir, driver_pid, not_before) for p in _open_paths(int(entry.name))):
            found.add(int(entry.name))
    return found


def reap(session_dir: str | None, driver_pid: int, not_before: dt.datetime, timeout_s: float = REAP_TIMEOUT_S) -> int:
    """Send SIGKILL to the session's processes until none is left (or ``timeout_s``); returns how many were hit."""
    hit: set[int] = set()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        left = session_processes(session_dir, driver_pid, not_before)
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:  # already gone
                continue
            hit.add(pid)
        time.sleep(REAP_POLL_S)
    return len(hit)


class Reaper:
    """The driver's handle on its reaper process (see the module docstring)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc

    def watch_session(self, session_dir: str) -> None:
        """Tell the reaper which Ray session to end when the driver dies."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.write(session_dir + "\n")
            self.proc.stdin.flush()

    def stop(self) -> None:
        """Close the pipe (the reaper then ends what is left of the session, normally nothing) and wait for it."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(OSError):  # a reaper already gone
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_reaper() -> Reaper | None:
    """Start a reaper for a Ray session this process is about to start; None where ``/proc`` is missing.

    The reaper runs in a session of its own, so that a Ctrl-C or hang-up meant for the driver does not end
    it before the driver has shut Ray down.
    """
    if not (_PROC / "self" / "fd").is_dir():
        return None
    not_before = dt.datetime.now() - dt.timedelta(seconds=1)  # the clock's resolution in Ray's session name
    proc = subprocess.Popen(
        [
            sys.executable,
            "-I",
            str(Path(__file__).resolve()),
            str(os.getpid()),
            not_before.strftime(_SESSION_DATE_FORMAT),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    return Reaper(proc)


def main(argv: list[str]) -> int:
    """The reaper process: ``reaper.py DRIVER_PID NOT_BEFORE``, session directory lines on standard input."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    driver_pid = int(argv[1])
    not_before = dt.datetime.strptime(argv[2], _SESSION_DATE_FORMAT)
    session_dir = None
    for line in sys.stdin:  # until the driver closes the pipe or dies
        if line.strip():
            session_dir = line.strip()
    reap(session_dir, driver_pid, not_before)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
