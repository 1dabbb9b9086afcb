"""Policies for the sweep tests, loaded by path through a sweep's ``imports``.

``sweep-test-flaky`` behaves as FIFO unless told to fail: ``fail=True`` raises inside ``schedule``
(a failing configuration), ``die=True`` kills its own process (a worker lost to the OOM killer), and
``kill_after`` names a counter file that makes the process kill itself once the counter reaches zero
(an interrupted sweep, at a known point), and ``sleep_s`` makes each run last at least that long (a sweep
still running when it is killed).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from baselines.fifo import FIFO
from hetgym.sim.allocation import Allocation
from hetgym.sim.policy import register_policy
from hetgym.sim.view import ClusterView


@register_policy("sweep-test-flaky")
class Flaky(FIFO):
    """FIFO that fails, dies or kills the sweep on request (tests only)."""

    name = "sweep-test-flaky"

    def __init__(self, fail: bool = False, die: bool = False, kill_after: str = "", sleep_s: float = 0.0) -> None:
        super().__init__()
        self.fail = fail
        self.die = die
        self.kill_after = kill_after
        self.sleep_s = sleep_s

    def _reset(self) -> None:
        if self.sleep_s:
            time.sleep(self.sleep_s)
        if self.die:
            os.kill(os.getpid(), signal.SIGKILL)
        if self.kill_after:
            counter = Path(self.kill_after)
            if counter.exists():
                left = int(counter.read_text())
                if left == 0:
                    counter.unlink()
                    os.kill(os.getpid(), signal.SIGKILL)
                counter.write_text(str(left - 1))

    def schedule(self, view: ClusterView) -> Allocation:
        if self.fail:
            raise RuntimeError("deliberate failure of this configuration")
        return super().schedule(view)
