"""t intervals against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hetgym.stats import paired_interval, t_interval


def test_t_interval_matches_the_textbook_formula() -> None:
    # mean 3, sample std sqrt(2.5), n = 5: t_{0.975, 4} = 2.776445 -> half-width 2.776445 * 1.581139 / 2.236068.
    iv = t_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    assert iv.mean == pytest.approx(3.0)
    assert iv.half_width == pytest.approx(2.776445 * math.sqrt(2.5) / math.sqrt(5), rel=1e-6)
    assert iv.n == 5
    assert iv.low < 3.0 < iv.high
    assert iv.excludes_zero()


def test_t_interval_edge_cases() -> None:
    assert math.isnan(t_interval([]).mean)
    one = t_interval([2.0])
    assert one.mean == 2.0 and math.isnan(one.half_width) and not one.excludes_zero()
    assert t_interval([1.0, math.nan, 3.0]).n == 2
    assert t_interval([4.0, 4.0, 4.0]).half_width == 0.0
    with pytest.raises(ValueError, match="confidence"):
        t_interval([1.0, 2.0], confidence=95)


def test_paired_interval_removes_the_shared_seed_effect() -> None:
    base = np.array([10.0, 50.0, 200.0, 1000.0])
    iv = paired_interval(base + 1.0, base)
    assert iv.mean == pytest.approx(1.0) and iv.half_width == pytest.approx(0.0)
    assert t_interval(base + 1.0).half_width > 100
    with pytest.raises(ValueError, match="pair each seed"):
        paired_interval([1.0, 2.0], [1.0])
