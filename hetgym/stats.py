"""Confidence intervals for results over seeds: Student-t intervals of a mean and of paired differences.

Every reproduction reports a figure over ``n`` seeds as its mean and the 95 % t interval
``mean +- t_{0.975, n-1} * s / sqrt(n)`` (``s`` the sample standard deviation). Comparisons of two
policies on the same workloads use the per-seed differences (paired), which removes the variation
between seeds that both share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike


@dataclass(frozen=True)
class Interval:
    """A mean with its t confidence interval.

    Attributes:
        mean: The sample mean.
        half_width: Half-width of the interval (NaN with fewer than two finite values).
        n: Number of finite values used.
        confidence: Coverage of the interval, e.g. 0.95.
    """

    mean: float
    half_width: float
    n: int
    confidence: float = 0.95

    @property
    def low(self) -> float:
        """Lower end of the interval."""
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        """Upper end of the interval."""
        return self.mean + self.half_width

    def excludes_zero(self) -> bool:
        """Whether the interval lies strictly on one side of zero."""
        return bool(self.n >= 2 and (self.low > 0 or self.high < 0))


def t_interval(values: ArrayLike, confidence: float = 0.95) -> Interval:
    """The mean of ``values`` and its Student-t confidence interval (non-finite values are left out).

    Raises:
        ValueError: ``confidence`` outside (0, 1).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence={confidence}; give a value in (0, 1), e.g. 0.95")
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr)]
    n = int(arr.size)
    if n == 0:
        return Interval(math.nan, math.nan, 0, confidence)
    mean = float(arr.mean())
    if n < 2:
        return Interval(mean, math.nan, n, confidence)
    from scipy.stats import t as student_t

    half = float(student_t.ppf(0.5 + confidence / 2.0, n - 1) * arr.std(ddof=1) / math.sqrt(n))
    return Interval(mean, half, n, confidence)


def paired_interval(a: ArrayLike, b: ArrayLike, confidence: float = 0.95) -> Interval:
    """The mean of the paired differences ``a[i] - b[i]`` and its t interval.

    Raises:
        ValueError: ``a`` and ``b`` of different lengths.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"paired samples of lengths {x.size} and {y.size}; pair each seed's two values")
    return t_interval(x - y, confidence)
