"""The throughput model: interpolation, quirk handling, estimation and the three execution modes."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from hetgym.sim import ServerGroup, ThroughputModel, UnknownNameError, allocation_rate
from hetgym.sim.throughput import table_from_records


def test_measured_points_and_linear_interpolation(toy: ThroughputModel) -> None:
    assert toy.rate("a", 1, "v100", 2) == 2.0
    assert toy.rate("a", 1, "v100", 3) == pytest.approx(3.0)
    assert toy.rate("a", 1, "k80", 3) == pytest.approx(1.5)
    assert toy.rate("a", 1, "v100", 0) == 0.0


def test_extrapolation_beyond_the_table_fits_the_last_two_points(toy: ThroughputModel) -> None:
    # 2 -> 4 GPUs doubles the rate, so the fitted exponent is 1 and 8 GPUs give 8 it/s.
    assert toy.rate("a", 1, "v100", 8) == pytest.approx(8.0)
    sub = ThroughputModel(table_from_records({("x", 1, "v100", 1): 1.0, ("x", 1, "v100", 2): 1.5}), _speeds())
    expo = math.log(1.5) / math.log(2)
    assert sub.rate("x", 1, "v100", 8) == pytest.approx(1.5 * 4**expo)


def _speeds() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "gpu_type": ["v100", "k80"],
            "speed_index": [1.0, 0.25],
            "mem_gb": [16, 12],
            "source": ["t", "t"],
            "note": ["", ""],
        }
    )


def test_superlinear_points_are_clamped_and_dips_take_the_running_max() -> None:
    table = table_from_records(
        {("x", 1, "v100", 1): 1.0, ("x", 1, "v100", 2): 3.0, ("x", 1, "v100", 4): 1.5, ("x", 1, "v100", 8): 6.0}
    )
    model = ThroughputModel(table, _speeds())
    assert model.rate("x", 1, "v100", 2) == 2.0  # clamped to 2 x rate(1)
    assert model.rate("x", 1, "v100", 4) == 2.0  # running max over smaller counts
    raw = ThroughputModel(table, _speeds(), clamp_superlinear=False, monotone=False)
    assert raw.rate("x", 1, "v100", 2) == 3.0
    assert raw.rate("x", 1, "v100", 4) == 1.5


def test_zero_means_infeasible() -> None:
    table = table_from_records({("x", 1, "k80", 1): 0.0, ("x", 1, "k80", 2): 0.0, ("x", 1, "k80", 4): 2.0})
    model = ThroughputModel(table, _speeds())
    assert model.rate("x", 1, "k80", 1) == 0.0
    assert model.rate("x", 1, "k80", 3) == 0.0
    assert model.rate("x", 1, "k80", 4) == 2.0


def test_unmeasured_type_is_estimated_from_the_speed_index(toy: ThroughputModel) -> None:
    # a100 has speed 2.0 against v100's 1.0: the estimate doubles V100's rate.
    assert toy.rate("a", 1, "a100", 4) == pytest.approx(8.0)
    assert toy.source("a", "a100") == "estimate-speed-index"
    assert toy.source("a", "v100") == "user"


def test_unmeasured_batch_size_uses_the_nearest_at_constant_samples_per_second(toy: ThroughputModel) -> None:
    assert toy.rate("a", 2, "v100", 1) == pytest.approx(0.5)


def test_unknown_names_raise(toy: ThroughputModel) -> None:
    with pytest.raises(UnknownNameError, match="job type 'zz'"):
        toy.rate("zz", 1, "v100", 1)
    with pytest.raises(UnknownNameError, match="GPU type 'tpu'"):
        toy.rate("a", 1, "tpu", 1)


def test_consolidation_factor_measured_and_fallback(toy: ThroughputModel) -> None:
    assert toy.consolidation_factor("a", 1, "v100", 4) == pytest.approx(0.5)
    assert toy.consolidation_factor("a", 1, "v100", 1) == 1.0
    # k80 has no unconsolidated figure: the geometric mean of the measured factors at that count.
    assert toy.consolidation_factor("a", 1, "k80", 2) == pytest.approx(1.0)
    assert toy.consolidation_factor("a", 1, "k80", 4) == pytest.approx(0.5)


def test_sync_mode_is_bounded_by_the_slowest_type(toy: ThroughputModel) -> None:
    groups = [ServerGroup(0, "v100", 2), ServerGroup(2, "k80", 2)]
    # 4 GPUs in total; the K80 rate at 4 GPUs (2.0) bounds the step; two servers: k80 factor at 4 (0.5).
    assert allocation_rate(toy, "a", 1, groups, "sync") == pytest.approx(2.0 * 0.5)


def test_proportional_mode_splits_the_batch_by_speed(toy: ThroughputModel) -> None:
    groups = [ServerGroup(0, "v100", 2), ServerGroup(2, "k80", 2)]
    # (2/4) * 4.0 + (2/4) * 2.0 = 3.0, times the multi-server factor 0.5.
    assert allocation_rate(toy, "a", 1, groups, "proportional") == pytest.approx(1.5)


def test_fork_mode_sums_copies_less_aggregation(toy: ThroughputModel) -> None:
    groups = [ServerGroup(0, "v100", 2), ServerGroup(2, "k80", 2)]
    assert allocation_rate(toy, "a", 1, groups, "fork") == pytest.approx(3.0)
    assert allocation_rate(
        toy, "a", 1, groups, "fork", aggregation_s=36.0, round_s=360.0, fork_efficiency=0.5
    ) == pytest.approx(3.0 * 0.5 * 0.9)
    # One copy pays no aggregation.
    assert allocation_rate(toy, "a", 1, groups[:1], "fork", aggregation_s=36.0) == pytest.approx(2.0)


def test_single_server_has_no_multi_server_factor(toy: ThroughputModel) -> None:
    assert allocation_rate(toy, "a", 1, [ServerGroup(0, "v100", 2)], "sync") == 2.0


def test_embedded_model_covers_every_job_type_on_every_known_gpu_type() -> None:
    model = ThroughputModel.default()
    for job_type in model.job_types:
        bs = model.batch_sizes(job_type)[0]
        for gpu in model.speed_index:
            rate = model.rate(job_type, bs, gpu, 1)
            assert rate >= 0 and math.isfinite(rate), (job_type, gpu)
    # The Recommendation inversion of Gavel's table is kept: faster on P100 than on V100.
    assert model.rate("recommendation", 2048, "p100", 1) > model.rate("recommendation", 2048, "v100", 1)


@pytest.mark.parametrize("options", [{}, {"clamp_superlinear": False, "monotone": False, "full_precision": True}])
def test_the_embedded_tables_read_without_pandas_give_the_frame_models_figures(options: dict[str, bool]) -> None:
    """``ThroughputModel()`` reads the package's CSV files with the csv module (no pandas); the model must be
    the one the pandas frames of ``load_table()`` give, to the last bit of every figure."""
    from hetgym.sim.throughput import load_gpu_types, load_table

    plain = ThroughputModel(**options)
    framed = ThroughputModel(load_table(), load_gpu_types(), **options)
    assert list(plain._curves) == list(framed._curves)
    for key, curves in framed._curves.items():
        assert list(plain._curves[key]) == list(curves)
        for bs, curve in curves.items():
            assert plain._curves[key][bs].ns == curve.ns
            assert [r.hex() for r in plain._curves[key][bs].rates] == [r.hex() for r in curve.rates]
    assert {k: v.hex() for k, v in plain._raw.items()} == {k: float(v).hex() for k, v in framed._raw.items()}
    assert plain._sources == framed._sources and plain._job_types == framed._job_types
    assert plain.speed_index == framed.speed_index and plain._mean_factor == framed._mean_factor


def test_the_embedded_models_do_not_import_pandas() -> None:
    import subprocess
    import sys

    code = (
        "import sys\nfrom hetgym.sim.throughput import ThroughputModel\n"
        "ThroughputModel.default().rate('resnet50', 64, 'v100', 2); ThroughputModel.raw()\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"
