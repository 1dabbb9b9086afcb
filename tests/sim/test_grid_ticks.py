"""The fast-forward's run of ticks on the whole-second grid equals the engine's tick-by-tick placement.

``_grid_ticks`` gives in one go the ticks that ``FastForwardMixin._pass_quiet_ticks`` would otherwise place one
at a time, ``(floor(t / round_s + eps) + 1) * round_s`` after ``t``, while they come before ``end_s``, up to
``until_s`` and within the epochs left. Random cases compare the two to the bit (the end-to-end check, every
fast-forwarded run against its replay, is in ``test_fastforward.py``).
"""

from __future__ import annotations

import math

import numpy as np

from hetgym.sim.fastforward import _EPS_S, _grid_ticks


def _one_by_one(k: int, round_s: float, end_s: float, until_s: float, room: int) -> list[float]:
    t = k * round_s
    out: list[float] = []
    while t < end_s and t <= until_s and len(out) < room:
        out.append(t)
        t = (math.floor(t / round_s + _EPS_S) + 1) * round_s
    return out


def test_grid_ticks_equal_the_engines_placement() -> None:
    rng = np.random.default_rng(0)
    for _ in range(5000):
        round_s = float(rng.choice([1.0, 6.0, 60.0, 300.0, 360.0, 3600.0]))
        k = int(rng.integers(0, 10**6))
        # Half the bounds on the grid itself (a tick at end_s is not passed over; one at until_s is).
        span = float(rng.random() * 400 * round_s) if rng.random() < 0.5 else float(rng.integers(0, 400)) * round_s
        t = k * round_s
        end_s = t + span + float(rng.choice([0.0, 1e-7, -1e-7, 0.5]))
        until_s = t + float(rng.random() * 400 * round_s) if rng.random() < 0.5 else math.inf
        if rng.random() < 0.2:
            until_s = end_s  # a tick exactly at both bounds: passed over up to until_s, not at end_s
        room = int(rng.integers(1, 500))
        if not (t < end_s and t <= until_s):
            continue  # the caller passes a tick that may be passed over
        got = _grid_ticks(k, round_s, end_s, until_s, room)
        assert got == _one_by_one(k, round_s, end_s, until_s, room)
        assert all(type(x) is float for x in got)
