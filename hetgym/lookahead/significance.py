"""The deviation rule: a candidate replaces the base action only on a significant paired margin.

Each candidate and the base action are scored on the same futures (common random numbers), so their
per-future differences are paired; the noise shared by a future (how loaded it is) cancels. A candidate
qualifies when its mean paired gain is at least ``min_gain_jobs`` *and* a one-sided paired test over the
futures rejects "no gain" at ``alpha`` (Bonferroni-divided over the candidates when asked). With one
future (the hindsight oracle) there is no noise to test, and the margin alone decides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from hetgym.lookahead.knobs import LookaheadKnobs


@dataclass(frozen=True)
class PairedGain:
    """A candidate's paired gain over the base action across the futures scored so far."""

    action: int
    mean_jobs: float
    t_stat: float
    p_value: float
    count: int


def paired_gain(action: int, diffs: np.ndarray, test: str) -> PairedGain:
    """The mean of ``diffs`` (candidate minus base, one per future) and its one-sided p-value under ``test``."""
    n = int(diffs.size)
    mean = float(diffs.mean()) if n else 0.0
    if n < 2 or test == "none":
        return PairedGain(action, mean, math.nan, math.nan, n)
    sd = float(diffs.std(ddof=1))
    if test == "t":
        if sd == 0.0:
            t_stat = math.inf if mean > 0 else (-math.inf if mean < 0 else 0.0)
            p = 0.0 if mean > 0 else 1.0
        else:
            t_stat = mean / (sd / math.sqrt(n))
            p = float(stats.t.sf(t_stat, df=n - 1))
        return PairedGain(action, mean, t_stat, p, n)
    wins = int((diffs > 0).sum())
    trials = int((diffs != 0).sum())
    p = float(stats.binom.sf(wins - 1, trials, 0.5)) if trials else 1.0
    return PairedGain(action, mean, math.nan, p, n)


def significant(gain: PairedGain, knobs: LookaheadKnobs, num_compared: int) -> bool:
    """Whether ``gain`` clears the margin and the paired test (see the module docstring)."""
    if gain.mean_jobs < knobs.min_gain_jobs:
        return False
    if gain.count < 2 or knobs.test == "none":
        return True
    alpha = knobs.alpha / max(1, num_compared) if knobs.bonferroni else knobs.alpha
    return gain.p_value <= alpha


__all__ = ["PairedGain", "paired_gain", "significant"]
