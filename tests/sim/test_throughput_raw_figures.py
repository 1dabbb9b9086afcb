"""The table's figures as given (``measured_rate``, ``measured_gpu_counts``), next to the processed rates."""

from __future__ import annotations

import pytest

from hetgym.sim.throughput import ThroughputModel


def test_measured_rate_is_the_raw_table_value() -> None:
    tp = ThroughputModel.default()
    # Gavel ('ResNet-50 (batch size 64)', 4) on v100 is 9.45195 summed over 4 workers -> 2.36299 per job.
    assert tp.measured_rate("resnet50", 256, "v100", 4) == 2.36299
    # LM on v100 at global batch 20: 4 GPUs measured slower than 2; rate() takes the running maximum,
    # measured_rate() keeps the figure.
    raw_4 = tp.measured_rate("lm", 20, "v100", 4)
    raw_2 = tp.measured_rate("lm", 20, "v100", 2)
    assert raw_4 is not None and raw_2 is not None and raw_4 < raw_2
    assert tp.rate("lm", 20, "v100", 4) == pytest.approx(raw_2)
    assert tp.measured_rate("resnet50", 256, "v100", 3) is None
    assert tp.measured_rate("resnet50", 256, "v100", 4, "unconsolidated") is not None


def test_measured_gpu_counts() -> None:
    tp = ThroughputModel.default()
    assert tp.measured_gpu_counts("resnet50", "v100", 256) == (2, 4, 8)
    assert tp.measured_gpu_counts("cyclegan", "v100") == (1,)
    assert tp.measured_gpu_counts("bert", "a100", 128) == (1, 2, 4, 8, 16, 32, 64)
    assert tp.measured_gpu_counts("bert", "v100") == ()
