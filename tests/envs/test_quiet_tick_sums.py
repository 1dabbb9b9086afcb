"""The reward terms of the quiet ticks passed over: the loop and numpy's running sum give the same bits.

:func:`hetgym.envs.intervals.add_quiet_ticks` adds each tick's terms to the components one by one, in tick
order, in a Python loop for a few ticks and with ``np.add.accumulate`` for many. Random runs of ticks (with
components already holding non-whole values, so that every addition rounds) compare both ways with the plain
tick-by-tick addition the replay does.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import pytest

from hetgym.envs import intervals
from hetgym.envs.rewards import RewardComponents


@dataclass
class _View:
    """The counts of a view that the interval accounting reads."""

    running: tuple[int, ...]
    waiting: tuple[int, ...] = ()
    jobs: tuple[int, ...] = field(default=())


def _replay(comps: RewardComponents, active: int, gpus: int, times: list[float], total: int) -> None:
    for previous, t in itertools.pairwise(times):
        dt = t - previous
        comps.dt_s += dt
        comps.job_s += active * dt
        comps.busy_gpu_s += gpus * dt
        comps.idle_gpu_s += max(0.0, total * dt - gpus * dt)


@pytest.mark.parametrize("loop_ticks", [0, 10**9])
def test_tick_sums_equal_the_replay(loop_ticks: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intervals, "_LOOP_TICKS", loop_ticks)
    rng = np.random.default_rng(loop_ticks % 7)
    for _ in range(2000):
        round_s = float(rng.choice([1.0, 60.0, 300.0, 360.0]))
        k0 = int(rng.integers(1, 10**5))
        times = [(k0 + j) * round_s for j in range(int(rng.integers(1, 200)))]
        held = [(i, int(rng.integers(0, 5))) for i in range(int(rng.integers(0, 8)))]
        gpus = sum(n for _, n in held)
        active = len(held) + int(rng.integers(0, 4))
        total = int(rng.choice([gpus, gpus + 3, 48]))
        start = float(rng.random() * 1000.0)
        t0 = times[0] - float(rng.random() * round_s) - 1e-3
        got, expected = RewardComponents(), RewardComponents()
        for c in (got, expected):
            c.dt_s, c.job_s, c.busy_gpu_s, c.idle_gpu_s = start, 3.3 * start, 1.7 * start, 0.1 * start
        intervals.add_quiet_ticks(got, _View(tuple(range(active))), t0, held, times, total)
        intervals.add_interval(expected, _View(tuple(range(active))), t0, times[0], held, frozenset(), None, total)
        _replay(expected, active, gpus, times, total)
        assert {k: v.hex() for k, v in got.as_dict().items()} == {k: v.hex() for k, v in expected.as_dict().items()}
