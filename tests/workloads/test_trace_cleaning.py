"""Cleaning options shared by all formats, the drop report, the samplers, arrival rescaling, and the
streaming JSON reader (property-based)."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trace_fixtures import write_helios, write_philly

from hetgym.sim.throughput import ThroughputModel
from hetgym.workloads.schema import TraceError
from hetgym.workloads.traces import CleanOptions, FillOptions, load_trace, offered_load
from hetgym.workloads.traces._io import iter_json_array
from hetgym.workloads.traces.samplers import TableModelSampler

EF_RAW = "elasticflow_traces/raw-traces.tar.gz"


def _ef(
    shared_data: Path, clean: CleanOptions | None = None, fill: FillOptions | None = None, member: str = "cluster06.csv"
):  # type: ignore[no-untyped-def]
    return load_trace(shared_data / EF_RAW, "elasticflow", members=(member,), clean=clean, fill=fill)


def test_duration_and_gpu_filters_count_their_drops(shared_data: Path) -> None:
    full = _ef(shared_data)
    clean = CleanOptions(min_duration_s=1800, max_duration_s=86400, max_gpus=8)
    wl = _ef(shared_data, clean)
    report = wl.metadata["report"]
    durations = [j.duration_s for j in full]
    gpus = [j.num_gpus for j in full]
    too_short = sum(d < 1800 for d in durations)
    too_long = sum(d > 86400 for d in durations)
    too_big = sum(g > 8 and 1800 <= d <= 86400 for g, d in zip(gpus, durations, strict=True))
    assert report["dropped"] == {
        "shorter than min_duration_s": too_short,
        "longer than max_duration_s": too_long,
        "more GPUs than max_gpus": too_big,
    }
    assert report["read"] == len(full) and report["kept"] == len(wl) == len(full) - too_short - too_long - too_big
    assert all(1800 <= j.duration_s <= 86400 and j.num_gpus <= 8 for j in wl)  # type: ignore[operator]
    assert wl.metadata["cleaning"]["max_gpus"] == 8


def test_gpu_clip_keeps_iterations(shared_data: Path) -> None:
    ref = _ef(shared_data)
    clipped = _ef(shared_data, CleanOptions(max_gpus=4, gpu_cap="clip"))
    assert len(clipped) == len(ref)
    n_big = sum(j.num_gpus > 4 for j in ref)
    assert clipped.metadata["report"]["notes"] == {"GPUs clipped to max_gpus (iterations kept)": n_big}
    for a, b in zip(ref, clipped, strict=True):
        assert b.num_gpus == min(a.num_gpus, 4)
        assert (a.total_iters, a.job_type, a.batch_size) == (b.total_iters, b.job_type, b.batch_size)


def test_time_window_is_relative_to_the_trace_start(shared_data: Path) -> None:
    day = 86400.0
    full = _ef(shared_data, CleanOptions(rebase=False))
    wl = _ef(shared_data, CleanOptions(window_start_s=10 * day, window_end_s=20 * day, rebase=False))
    inside = [j for j in full if 10 * day <= j.submit_s < 20 * day]
    assert [j.features["source_id"] for j in wl] == [j.features["source_id"] for j in inside]
    assert wl.metadata["report"]["dropped"] == {"outside the time window": len(full) - len(inside)}
    rebased = _ef(shared_data, CleanOptions(window_start_s=10 * day, window_end_s=20 * day))
    assert rebased[0].submit_s == 0.0
    assert rebased.metadata["time"]["rebase_offset_s"] == inside[0].submit_s


def test_philly_window_counts_from_the_earliest_submission(tmp_path: Path) -> None:
    path = write_philly(tmp_path / "cluster_job_log")
    wl = load_trace(path, "philly", clean=CleanOptions(window_start_s=3600, window_end_s=86400))
    assert [j.features["source_id"] for j in wl] == ["application_3", "application_7"]


def test_subsample_and_max_jobs_are_seeded(shared_data: Path) -> None:
    full = _ef(shared_data)
    a = _ef(shared_data, CleanOptions(subsample=0.25), FillOptions(seed=1))
    b = _ef(shared_data, CleanOptions(subsample=0.25), FillOptions(seed=1))
    c = _ef(shared_data, CleanOptions(subsample=0.25), FillOptions(seed=2))
    ids = [j.features["source_id"] for j in a]
    assert ids == [j.features["source_id"] for j in b]
    assert ids != [j.features["source_id"] for j in c]
    assert len(a) == round(0.25 * len(full))
    assert a.metadata["report"]["dropped"] == {"subsampled out": len(full) - len(a)}
    order = [j.features["source_id"] for j in full]
    positions = [order.index(i) for i in ids]
    assert positions == sorted(positions)  # submission order preserved
    first = _ef(shared_data, CleanOptions(max_jobs=100))
    assert [j.features["source_id"] for j in first] == order[:100]
    assert first.metadata["report"]["dropped"] == {"beyond max_jobs": len(full) - 100}


def test_time_scale_keeps_deadline_slack(shared_data: Path) -> None:
    ref = _ef(shared_data)
    fast = _ef(shared_data, CleanOptions(time_scale=0.5))
    for a, b in zip(ref, fast, strict=True):
        assert b.submit_s == pytest.approx(0.5 * a.submit_s)
        assert b.deadline_s - b.submit_s == pytest.approx(a.deadline_s - a.submit_s)
        assert b.total_iters == a.total_iters
    assert fast.metadata["time"]["time_scale"] == 0.5


@pytest.mark.parametrize("target", [0.5, 0.9, 1.5])
def test_target_load_sets_the_offered_load(shared_data: Path, target: float) -> None:
    wl = _ef(shared_data, CleanOptions(max_gpus=8, target_load=target, load_cluster="elasticflow-n8g8"))
    assert offered_load(wl.jobs, "elasticflow-n8g8")["load"] == pytest.approx(target, rel=1e-9)
    before = wl.metadata["time"]["load_before_rescale"]["load"]
    assert wl.metadata["time"]["time_scale"] == pytest.approx(before / target)


def test_offered_load_by_hand() -> None:
    from hetgym.sim.job import JobSpec

    tp = ThroughputModel.default()
    rate = tp.rate("resnet50", 64, "a100", 1)
    jobs = [
        JobSpec(0, 0.0, "resnet50", 64, 3600 * rate, 1),  # 1 GPU-hour on A100
        JobSpec(1, 3600.0, "resnet50", 64, 3600 * rate, 1),
    ]
    load = offered_load(jobs, "elasticflow-n1g8", tp)
    assert load["gpu_s"] == pytest.approx(7200)
    assert load["load"] == pytest.approx(7200 / (8 * 3600))


def test_status_filter_is_case_insensitive_and_reported(tmp_path: Path) -> None:
    path = write_helios(tmp_path / "cluster_log.csv")
    wl = load_trace(path, "helios", clean=CleanOptions(statuses=("completed",)))
    assert {j.features["status"] for j in wl} == {"COMPLETED"}
    assert wl.metadata["report"]["dropped"] == {
        "status FAILED": 1,
        "status CANCELLED": 1,
        "CPU-only job (gpu_num 0)": 1,
    }


def test_nothing_left_is_an_error(tmp_path: Path) -> None:
    path = write_helios(tmp_path / "cluster_log.csv")
    with pytest.raises(TraceError, match="no job left after cleaning"):
        load_trace(path, "helios", clean=CleanOptions(statuses=("TIMEOUT",)))


def test_models_restrict_the_sampler_and_reference_gpu_applies(tmp_path: Path) -> None:
    path = write_helios(tmp_path / "cluster_log.csv")
    wl = load_trace(path, "helios", fill=FillOptions(models=("resnet50", "transformer"), reference_gpu="p100"))
    tp = ThroughputModel.default()
    for j in wl:
        assert j.job_type in ("resnet50", "transformer")
        assert j.total_iters == pytest.approx(j.duration_s * tp.rate(j.job_type, j.batch_size, "p100", j.num_gpus))  # type: ignore[operator]
    assert wl.metadata["samplers"]["iterations"]["reference_gpu"] == {"p100": len(wl)}
    with pytest.raises(TraceError, match="no job type among"):
        load_trace(path, "helios", fill=FillOptions(models=("a3c",)))  # single-GPU only, and jobs of 4 and 8 GPUs


def test_explicit_deadline_model_and_tightness(tmp_path: Path) -> None:
    path = write_helios(tmp_path / "cluster_log.csv")
    loose = load_trace(path, "helios", fill=FillOptions(deadline="gavel-slo"))
    tight = load_trace(path, "helios", fill=FillOptions(deadline="gavel-slo", tightness=2.0))
    for a, b in zip(loose, tight, strict=True):
        assert b.deadline_s - b.submit_s == pytest.approx((a.deadline_s - a.submit_s) / 2)
    ratios = {round((j.deadline_s - j.submit_s) / j.duration_s, 6) for j in loose}  # type: ignore[operator]
    assert ratios <= {1.2, 2.0, 10.0}
    none = load_trace(path, "helios", fill=FillOptions(deadline="none"))
    assert all(math.isinf(j.deadline_s) for j in none)


def test_gavel_slo_minus_one_is_kept_unless_a_model_is_asked_for(shared_data: Path) -> None:
    path = shared_data / "gavel" / "traces" / "physical_cluster" / "small_test.trace"
    kept = load_trace(path, "gavel")
    assert all(math.isinf(j.deadline_s) for j in kept) and "deadline" not in kept.metadata["samplers"]
    filled = load_trace(path, "gavel", fill=FillOptions(deadline="elasticflow"))
    assert all(math.isfinite(j.deadline_s) for j in filled)
    assert filled.metadata["samplers"]["deadline"]["jobs"] == len(filled)


def test_sampler_candidates_follow_the_measured_table() -> None:
    tp = ThroughputModel.default()
    sampler = TableModelSampler(tp)
    one = dict(sampler.candidates("v100", 1))
    assert set(one) == {"a3c", "cyclegan", "lm", "recommendation", "resnet18", "resnet50", "transformer"}
    assert one["resnet50"] == (16, 32, 64, 128)  # Gavel's per-GPU batches at 1 GPU
    four = dict(sampler.candidates("v100", 4))
    assert "a3c" not in four and "recommendation" not in four
    assert four["resnet50"] == (64, 128, 256, 512)  # per-GPU 16..128 x 4
    sixteen = dict(sampler.candidates("v100", 16))
    assert sixteen["resnet18"] == tuple(sorted(b * 8 for b in (16, 32, 64, 128, 256)))  # measured at 8, the largest


# --------------------------------------------------------------------------------------------
# Streaming JSON reader

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_json_values, max_size=8), st.integers(1, 64), st.sampled_from([None, 0, 2]))
def test_streaming_json_array_equals_json_loads(values: list, chunk: int, indent: int | None) -> None:  # type: ignore[type-arg]
    text = json.dumps(values, indent=indent)
    got = [v for _, _, v in iter_json_array(io.StringIO(text), "t", chunk_chars=chunk)]
    assert got == json.loads(text)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.dictionaries(st.text(min_size=1, max_size=5), st.integers(), min_size=1), min_size=1, max_size=6),
    st.data(),
)
def test_streaming_json_truncation_is_always_reported(values: list, data: st.DataObject) -> None:  # type: ignore[type-arg]
    text = json.dumps(values)
    cut = data.draw(st.integers(1, len(text) - 1))
    with pytest.raises(TraceError, match=r"t: (row \d+|line \d+)"):
        list(iter_json_array(io.StringIO(text[:cut]), "t", chunk_chars=7))


def test_streaming_json_reads_incrementally() -> None:
    """Elements come out while most of the stream is still unread, in chunk-sized reads."""
    records = [{"jobid": i, "pad": "x" * 50} for i in range(2000)]
    text = json.dumps(records)
    stream = io.StringIO(text)
    seen = 0
    for _i, _line, rec in iter_json_array(stream, "t", chunk_chars=256):
        assert rec["jobid"] == seen
        if seen == 0:
            assert stream.tell() <= 2 * 256  # only the first chunks were read
        seen += 1
    assert seen == 2000 and stream.tell() == len(text)


def test_rates_in_filled_jobs_are_positive_for_every_format(tmp_path: Path) -> None:
    path = write_philly(tmp_path / "cluster_job_log")
    wl = load_trace(path, "philly", fill=FillOptions(seed=5))
    tp = ThroughputModel.default()
    assert all(tp.rate(j.job_type, j.batch_size, "v100", j.num_gpus) > 0 for j in wl)
    assert np.all(np.array([j.total_iters for j in wl]) > 0)


_helios_row = st.tuples(
    st.integers(0, 16),  # gpu_num
    st.integers(0, 200_000),  # duration
    st.sampled_from(["COMPLETED", "FAILED", "CANCELLED"]),
    st.integers(0, 30 * 86400),  # submit offset
)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(_helios_row, min_size=1, max_size=40),
    max_gpus=st.none() | st.integers(1, 16),
    gpu_cap=st.sampled_from(["drop", "clip"]),
    min_d=st.none() | st.integers(0, 50_000),
    statuses=st.none() | st.sampled_from([("COMPLETED",), ("FAILED", "CANCELLED")]),
    window=st.none() | st.tuples(st.integers(0, 15 * 86400), st.integers(1, 15 * 86400)),
    subsample=st.none() | st.floats(0.1, 1.0),
    max_jobs=st.none() | st.integers(1, 30),
)
def test_every_read_job_is_kept_or_dropped_for_a_reason(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[tuple[int, int, str, int]],
    max_gpus: int | None,
    gpu_cap: str,
    min_d: int | None,
    statuses: tuple[str, ...] | None,
    window: tuple[int, int] | None,
    subsample: float | None,
    max_jobs: int | None,
) -> None:
    from datetime import datetime, timedelta

    base = datetime(2020, 6, 1)
    text = [
        f"{i},u,vc,{g},1,1,{s},{(base + timedelta(seconds=t)):%Y-%m-%d %H:%M:%S},,,{d},0"
        for i, (g, d, s, t) in enumerate(rows)
    ]
    path = write_helios(tmp_path_factory.mktemp("h") / "cluster_log.csv", text)
    clean = CleanOptions(
        max_gpus=max_gpus,
        gpu_cap=gpu_cap,  # type: ignore[arg-type]
        min_duration_s=min_d,
        statuses=statuses,
        window_start_s=window[0] if window else None,
        window_end_s=window[0] + window[1] if window else None,
        subsample=subsample,
        max_jobs=max_jobs,
    )
    try:
        wl = load_trace(path, "helios", clean=clean)
    except TraceError as exc:
        assert "no job left after cleaning" in str(exc)
        return
    report = wl.metadata["report"]
    assert report["read"] == len(rows)
    assert report["kept"] == len(wl) == report["read"] - sum(report["dropped"].values())
    first = min(t for _, _, _, t in rows)
    for j in wl:
        g, d, s, t = rows[int(j.features["source_id"])]
        assert g > 0 and d > 0
        assert j.num_gpus == (min(g, max_gpus) if max_gpus else g)
        if max_gpus and gpu_cap == "drop":
            assert g <= max_gpus
        if min_d is not None:
            assert d >= min_d
        if statuses:
            assert s in statuses
        if window:
            assert window[0] <= t - first < window[0] + window[1]
        assert j.deadline_s > j.submit_s >= 0
    assert [j.submit_s for j in wl] == sorted(j.submit_s for j in wl)
    if max_jobs is not None:
        assert len(wl) <= max_jobs
