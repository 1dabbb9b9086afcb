"""Trace readers on the real files of the shared data (ElasticFlow, Gavel, PAI machine spec) and on
small hand-written Philly, Helios and PAI fixtures whose expected values are worked out by hand."""

from __future__ import annotations

import gzip
import json
import math
import tarfile
from pathlib import Path

import numpy as np
import pytest
from trace_fixtures import (
    HELIOS_ROWS,
    PAI_EXPECTED,
    PHILLY_JOBS,
    write_helios,
    write_pai,
    write_philly,
)

from hetgym.sim.cluster import get_cluster
from hetgym.sim.inventories import INVENTORIES
from hetgym.sim.throughput import ThroughputModel
from hetgym.workloads.schema import read_trace, write_trace
from hetgym.workloads.traces import CleanOptions, FillOptions, load_trace
from hetgym.workloads.traces.gavel import parse_gavel_job_type
from hetgym.workloads.traces.pai import machine_spec_counts, machine_spec_inventory

EF = "elasticflow_traces"


def _by_source(workload):  # type: ignore[no-untyped-def]
    return {j.features["source_id"]: j for j in workload}


# --------------------------------------------------------------------------------------------
# ElasticFlow (real files)


def test_elasticflow_extended_keeps_every_job_and_its_fields(shared_data: Path) -> None:
    src = shared_data / EF / "elasticflow-traces.tar.gz"
    wl = load_trace(src, "elasticflow", members=("cluster10.csv",))
    with tarfile.open(src) as tf:
        member = tf.extractfile("cluster10.csv")
        assert member is not None
        lines = member.read().decode().strip().splitlines()
    header, rows = lines[0].split(","), [dict(zip(lines[0].split(","), r.split(","), strict=True)) for r in lines[1:]]
    assert header == [
        "job_id",
        "submission_time",
        "num_iteration",
        "model_name",
        "deadline",
        "batch_size",
        "num_gpu",
        "duration",
    ]
    assert len(wl) == len(rows) == 260
    assert wl.metadata["report"]["dropped"] == {}
    assert wl.metadata["samplers"] == {}  # nothing to fill in the extended trace
    first = min(float(r["submission_time"]) for r in rows)
    jobs = _by_source(wl)
    for r in rows:
        j = jobs[r["job_id"]]
        assert j.job_type == r["model_name"]
        assert j.batch_size == int(r["batch_size"])
        assert j.num_gpus == int(r["num_gpu"])
        assert j.total_iters == float(r["num_iteration"])
        assert j.duration_s == float(r["duration"])
        assert j.submit_s == pytest.approx(float(r["submission_time"]) - first)  # rebased
        # deadlines keep their slack
        assert j.deadline_s - j.submit_s == pytest.approx(float(r["deadline"]) - float(r["submission_time"]))
    assert [j.job_id for j in wl] == list(range(len(wl)))
    assert wl[0].submit_s == 0.0


def test_elasticflow_iterations_match_the_a100_table(shared_data: Path) -> None:
    """ElasticFlow's iterations are its duration x A100 throughput: our table gives the same run time back."""
    wl = load_trace(shared_data / EF / "elasticflow-traces.tar.gz", "elasticflow")
    tp = ThroughputModel.default()
    ratios = []
    for j in wl:
        rate = tp.measured_rate(j.job_type, j.batch_size, "a100", j.num_gpus)
        assert rate is not None, (j.job_type, j.batch_size, j.num_gpus)
        ratios.append(j.total_iters / rate / j.duration_s)
    # Iterations are rounded to integers in the trace; the shortest jobs (600 s) carry the largest error.
    assert np.abs(np.array(ratios) - 1).max() < 2e-3


def test_elasticflow_full_set_and_variants(shared_data: Path) -> None:
    ext = load_trace(shared_data / EF / "elasticflow-traces.tar.gz", "elasticflow")
    raw = load_trace(shared_data / EF / "raw-traces.tar.gz", "elasticflow")
    assert len(ext) == len(raw) == 69_351
    assert set(ext.metadata["variants"].values()) == {"extended"}
    assert set(raw.metadata["variants"].values()) == {"raw"}
    counts = {}
    for j in raw:
        counts[j.num_gpus] = counts.get(j.num_gpus, 0) + 1
    # The ten clusters (the shared data's MANIFEST counts also include the 195 jobs of 195job.csv).
    assert counts == {1: 57_682, 2: 1_483, 4: 2_371, 8: 7_009, 16: 381, 32: 354, 64: 71}
    # Same jobs in both: same ids, submissions, GPU counts and durations.
    e, r = _by_source(ext), _by_source(raw)
    assert e.keys() == r.keys()
    for sid in list(e)[:2000]:
        assert (e[sid].submit_s, e[sid].num_gpus, e[sid].duration_s) == (
            r[sid].submit_s,
            r[sid].num_gpus,
            r[sid].duration_s,
        )


def test_elasticflow_raw_is_filled_by_named_samplers(shared_data: Path) -> None:
    src = shared_data / EF / "raw-traces.tar.gz"
    wl = load_trace(src, "elasticflow", members=("cluster06.csv",), fill=FillOptions(seed=3))
    meta = wl.metadata["samplers"]
    assert meta["model"]["name"] == "table-uniform" and meta["model"]["jobs"] == len(wl)
    assert meta["iterations"] == {
        "name": "duration-x-reference-rate",
        "jobs": len(wl),
        "reference_gpu": {"a100": len(wl)},
    }
    assert meta["deadline"]["name"] == "elasticflow" and meta["deadline"]["jobs"] == len(wl)
    tp = ThroughputModel.default()
    a100_types = {t for t in tp.job_types if "a100" in tp.measured_gpu_types(t)}
    for j in wl:
        assert j.job_type in a100_types
        assert j.num_gpus in tp.measured_gpu_counts(j.job_type, "a100", j.batch_size)
        rate = tp.rate(j.job_type, j.batch_size, "a100", j.num_gpus)
        assert rate > 0
        assert j.duration_s is not None
        assert j.total_iters / rate == pytest.approx(j.duration_s)  # runs its recorded time on A100
        assert 0.5 * j.duration_s - 1e-6 <= j.deadline_s - j.submit_s <= 1.5 * j.duration_s + 1e-6
    again = load_trace(src, "elasticflow", members=("cluster06.csv",), fill=FillOptions(seed=3))
    assert [(j.job_type, j.batch_size, j.deadline_s) for j in wl] == [
        (j.job_type, j.batch_size, j.deadline_s) for j in again
    ]
    other = load_trace(src, "elasticflow", members=("cluster06.csv",), fill=FillOptions(seed=4))
    assert [j.job_type for j in wl] != [j.job_type for j in other]
    types = {j.job_type for j in wl}
    assert len(types) >= 5  # spread over the table's A100 job types


# --------------------------------------------------------------------------------------------
# Gavel (real files)


def _gavel_v100_figures(shared_data: Path) -> dict[str, float]:
    with gzip.open(shared_data / "gavel" / "simulation_throughputs.json.gz", "rt") as fh:
        table = json.load(fh)
    return {k: v["null"] for k, v in table["v100"].items()}


def test_gavel_job_type_names() -> None:
    assert parse_gavel_job_type("ResNet-50 (batch size 64)") == ("resnet50", 64)
    assert parse_gavel_job_type("LM (batch size 5)") == ("lm", 5)
    assert parse_gavel_job_type("CycleGAN") == ("cyclegan", 1)
    with pytest.raises(KeyError):
        parse_gavel_job_type("VGG (batch size 3)")


@pytest.mark.parametrize("name", ["small_test", "minimize_makespan", "artifact_evaluation", "max_min_fairness"])
def test_gavel_10_column_units_keep_gavel_run_times(shared_data: Path, name: str) -> None:
    """Gavel job (model, per-GPU batch b, scale factor s, steps S) -> global batch b*s, s GPUs, S/s iterations,
    and the V100 run time (S/s) / (figure/s) equals Gavel's S / figure."""
    path = shared_data / "gavel" / "traces" / "physical_cluster" / f"{name}.trace"
    figures = _gavel_v100_figures(shared_data)
    rows = [line.split("\t") for line in path.read_text().splitlines() if line.strip()]
    wl = load_trace(path, "gavel", clean=CleanOptions(rebase=False))
    assert wl.metadata["variants"] == {str(path): "10-column"}
    jobs = _by_source(wl)
    tp = ThroughputModel.default()
    for i, f in enumerate(rows, start=1):
        j = jobs[f"{name}:{i}"]
        jt, per_gpu = parse_gavel_job_type(f[0])
        steps, scale, slo, arrival = float(f[5]), int(f[6]), float(f[8]), float(f[9])
        assert (j.job_type, j.batch_size, j.num_gpus) == (jt, per_gpu * scale, scale)
        assert j.total_iters == pytest.approx(steps / scale)
        assert j.submit_s == arrival
        gavel_s = steps / figures[str((f[0], scale))]
        assert j.duration_s == pytest.approx(gavel_s, rel=1e-5)
        measured = tp.measured_rate(j.job_type, j.batch_size, "v100", j.num_gpus)
        assert measured is not None
        assert j.total_iters / measured == pytest.approx(gavel_s, rel=1e-5)
        assert j.priority_weight == float(f[7])
        if slo > 0:
            assert j.deadline_s == pytest.approx(arrival + slo * gavel_s, rel=1e-5)
        else:
            assert math.isinf(j.deadline_s)


def test_gavel_example_from_the_unit_note() -> None:
    """ResNet-50 (batch size 64), scale factor 4, S steps -> resnet50, batch 256, 4 GPUs, S/4 iterations."""
    tp = ThroughputModel.default()
    figure = 9.45195  # Gavel v100 ('ResNet-50 (batch size 64)', 4): sum over the 4 workers
    measured = tp.measured_rate("resnet50", 256, "v100", 4)
    assert measured == pytest.approx(figure / 4, rel=1e-5)
    steps = 100_000.0
    assert (steps / 4) / measured == pytest.approx(steps / figure, rel=1e-5)


def test_gavel_7_column_per_vc_trace(shared_data: Path) -> None:
    src = shared_data / "gavel" / "traces" / "msr" / "seed0_per_vc_traces.tar.gz"
    figures = _gavel_v100_figures(shared_data)
    with tarfile.open(src) as tf:
        member = tf.extractfile("msr_seed0/6214e9.trace")
        assert member is not None
        rows = [line.split("\t") for line in member.read().decode().splitlines() if line.strip()]
    wl = load_trace(src, "gavel", members=("6214e9.trace",), clean=CleanOptions(rebase=False))
    assert len(wl) == len(rows) == 2000
    jobs = _by_source(wl)
    unmeasured = 0
    for i, f in enumerate(rows, start=1):
        j = jobs[f"6214e9:{i}"]
        steps, arrival, scale = float(f[4]), float(f[5]), int(f[6])
        assert j.num_gpus == scale and j.submit_s == arrival
        assert j.total_iters == pytest.approx(steps / scale)
        key = str((f[0], scale))
        if key in figures:
            assert j.duration_s == pytest.approx(steps / figures[key], rel=1e-5)
        else:
            unmeasured += 1
        assert j.deadline_s > j.submit_s  # the 7-column format has no SLO: filled by gavel-slo
    assert wl.metadata["samplers"]["deadline"]["name"] == "gavel-slo"
    assert wl.metadata["report"]["notes"] == {
        "no Gavel V100 figure for (model, scale factor): run time extrapolated": unmeasured
    }
    dropped = load_trace(src, "gavel", members=("6214e9.trace",), unmeasured="drop")
    assert len(dropped) == 2000 - unmeasured
    assert dropped.metadata["report"]["dropped"] == {"no Gavel V100 figure for (model, scale factor)": unmeasured}


def test_gavel_all_vc_traces(shared_data: Path) -> None:
    wl = load_trace(shared_data / "gavel" / "traces" / "msr" / "seed0_per_vc_traces.tar.gz", "gavel")
    assert len(wl) == 15_264
    assert len(wl.metadata["source"]) == 15
    counts: dict[int, int] = {}
    for j in wl:
        counts[j.num_gpus] = counts.get(j.num_gpus, 0) + 1
    assert {k: counts[k] for k in (1, 2, 4, 8, 16, 32)} == {1: 10_480, 2: 463, 4: 2_044, 8: 1_916, 16: 255, 32: 91}


# --------------------------------------------------------------------------------------------
# PAI machine spec and the cluster presets


def test_pai_machine_spec_gives_the_embedded_preset(shared_data: Path) -> None:
    spec = shared_data / "alibaba_pai_gpu_v2020" / "pai_machine_spec.tar.gz"
    counts = machine_spec_counts(spec)
    assert counts == {
        ("CPU", 0): 83,
        ("MISC", 8): 280,
        ("P100", 2): 798,
        ("T4", 2): 497,
        ("V100", 8): 104,
        ("V100M32", 8): 135,
    }
    assert sum(counts.values()) == 1_897  # the shared MANIFEST says 1,896; the file has 1,897 rows
    inventory = machine_spec_inventory(spec)
    assert inventory == INVENTORIES["alibaba-pai-2020"][1]
    cluster = get_cluster("alibaba-pai-2020")
    assert cluster.capacity == {"v100": 1_912, "p100": 1_596, "t4": 994, "k80": 2_240}
    assert cluster.total_gpus == 6_742


def test_real_inventory_presets_are_registered() -> None:
    assert get_cluster("philly").capacity == {"v100": 500}
    assert get_cluster("philly-het").capacity == {"v100": 300, "p100": 300, "k80": 300}
    for n in (1, 4, 8, 16, 32, 48, 64, 128):
        c = get_cluster(f"elasticflow-n{n}g8")
        assert c.capacity == {"a100": 8 * n} and c.max_gpus_per_server == {"a100": 8}
    mini = get_cluster("alibaba-pai-2020-mini")
    assert set(mini.capacity) == {"v100", "p100", "t4", "k80"}


# --------------------------------------------------------------------------------------------
# Fixtures in the Philly, Helios and PAI formats


def test_philly_fixture(tmp_path: Path) -> None:
    path = write_philly(tmp_path / "cluster_job_log")
    wl = load_trace(path, "philly", fill=FillOptions(deadline="none"))
    jobs = _by_source(wl)
    dropped: dict[str, int] = {}
    for rec, expected in PHILLY_JOBS:
        if isinstance(expected, str):
            assert rec["jobid"] not in jobs
            dropped[expected] = dropped.get(expected, 0) + 1
            continue
        j = jobs[rec["jobid"]]
        assert (j.num_gpus, j.duration_s, j.features["status"]) == expected
        assert j.user == rec["user"] and j.features["vc"] == rec["vc"]
    assert wl.metadata["report"] == {"read": len(PHILLY_JOBS), "dropped": dropped, "kept": 4, "notes": {}}
    # Submission order and rebasing: application_1 was submitted first (01:11:39).
    assert [j.features["source_id"] for j in wl] == ["application_1", "application_2", "application_3", "application_7"]
    assert [j.submit_s for j in wl] == [0.0, 47 * 60 + 21, 2 * 3600 + 48 * 60 + 21, 21 * 3600 + 48 * 60 + 21]
    assert all(math.isinf(j.deadline_s) for j in wl)
    tp = ThroughputModel.default()
    for j in wl:  # filled on the reference V100
        assert j.total_iters == pytest.approx(j.duration_s * tp.rate(j.job_type, j.batch_size, "v100", j.num_gpus))


def test_philly_reads_gzip_and_tar_members(tmp_path: Path) -> None:
    plain = write_philly(tmp_path / "cluster_job_log")
    gz = tmp_path / "cluster_job_log.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    tgz = tmp_path / "trace-data.tar.gz"
    with tarfile.open(tgz, "w:gz") as tf:
        tf.add(plain, arcname="trace-data/cluster_job_log")
        tf.add(plain, arcname="trace-data/cluster_machine_list")
    ref = [(j.submit_s, j.num_gpus, j.duration_s) for j in load_trace(plain, "philly")]
    assert [(j.submit_s, j.num_gpus, j.duration_s) for j in load_trace(gz, "philly")] == ref
    assert [(j.submit_s, j.num_gpus, j.duration_s) for j in load_trace(tgz, "philly")] == ref


def test_philly_status_filter(tmp_path: Path) -> None:
    path = write_philly(tmp_path / "cluster_job_log")
    wl = load_trace(path, "philly", clean=CleanOptions(statuses=("pass",)))
    assert {j.features["status"] for j in wl} == {"Pass"}
    assert wl.metadata["report"]["dropped"]["status Killed"] == 1
    assert wl.metadata["report"]["dropped"]["status Failed"] == 1


def test_helios_fixture(tmp_path: Path) -> None:
    path = write_helios(tmp_path / "cluster_log.csv")
    wl = load_trace(path, "helios")
    jobs = _by_source(wl)
    for row, expected in HELIOS_ROWS:
        jid = row.split(",")[0]
        if expected == "cpu":
            assert jid not in jobs
            continue
        j = jobs[jid]
        assert (j.num_gpus, j.duration_s, j.features["status"]) == expected
    assert wl.metadata["report"]["dropped"] == {"CPU-only job (gpu_num 0)": 1}
    assert [j.submit_s for j in wl] == [0.0, 26.0, 27.0, 18 * 60 + 59]


def test_pai_fixture(tmp_path: Path) -> None:
    directory = write_pai(tmp_path / "pai")
    for mode in ("prefer", "pin", "ignore"):
        wl = load_trace(directory, "pai", gpu_type_mode=mode)
        jobs = _by_source(wl)
        expected_drops: dict[str, int] = {}
        for name, expected in PAI_EXPECTED.items():
            if isinstance(expected, str):
                assert name not in jobs
                expected_drops[expected] = expected_drops.get(expected, 0) + 1
                continue
            gpus, duration, status, types, pct = expected
            j = jobs[name]
            assert (j.num_gpus, j.duration_s, j.features["status"], j.features["plan_gpu_pct"]) == (
                gpus,
                duration,
                status,
                pct,
            )
            if mode == "pin":
                assert j.gpu_types == types
            else:
                assert j.gpu_types is None
            if mode == "prefer":
                assert j.features["preferred_gpu_type"] == "|".join(types)
        assert wl.metadata["report"]["dropped"] == expected_drops
        assert wl.metadata["report"]["notes"] == {"fractional GPU request rounded up to whole GPUs": 1}
    # The run time is taken as measured on the job's own GPU type (when it has one).
    wl = load_trace(directory, "pai")
    tp = ThroughputModel.default()
    jobs = _by_source(wl)
    for name, ref in (("jobA", "v100"), ("jobC", "t4"), ("jobF", "k80"), ("jobG", "v100")):
        j = jobs[name]
        assert j.total_iters == pytest.approx(j.duration_s * tp.rate(j.job_type, j.batch_size, ref, j.num_gpus))
    assert wl.metadata["samplers"]["iterations"]["reference_gpu"] == {"v100": 3, "t4": 1, "k80": 1}


def test_pai_with_header_rows_and_task_table_elsewhere(tmp_path: Path) -> None:
    from trace_fixtures import PAI_JOBS, PAI_TASKS

    jobs = tmp_path / "a" / "jobs.csv"
    jobs.parent.mkdir()
    jobs.write_text("job_name,inst_id,user,status,start_time,end_time\n" + "\n".join(PAI_JOBS) + "\n")
    tasks = tmp_path / "b.csv"
    tasks.write_text(
        "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type\n"
        + "\n".join(PAI_TASKS)
        + "\n"
    )
    wl = load_trace(jobs, "pai", task_table=str(tasks))
    assert sorted(_by_source(wl)) == ["jobA", "jobB", "jobC", "jobF", "jobG"]


def test_pinned_pai_jobs_run_on_the_pai_cluster(tmp_path: Path) -> None:
    from hetgym.sim import Simulator, make_policy

    wl = load_trace(write_pai(tmp_path / "pai"), "pai", gpu_type_mode="pin")
    result = Simulator("alibaba-pai-2020-mini", wl).run(make_policy("fifo"))
    assert result.metrics["num_completed"] == len(wl)
    per_job = result.jobs.set_index("job_id")
    assert set(per_job.columns) >= {"status"}


def test_canonical_round_trip_of_a_converted_trace(tmp_path: Path) -> None:
    directory = write_pai(tmp_path / "pai")
    wl = load_trace(directory, "pai", gpu_type_mode="pin")
    for suffix in (".csv", ".parquet"):
        out = write_trace(wl, tmp_path / f"pai{suffix}")
        back = read_trace(out, throughput=ThroughputModel.default())
        if suffix == ".parquet":
            assert back.jobs == wl.jobs
            assert [j.features for j in back] == [j.features for j in wl]
        else:  # CSV keeps 10 significant digits
            for a, b in zip(back, wl, strict=True):
                assert (a.job_id, a.job_type, a.batch_size, a.num_gpus, a.gpu_types, a.user) == (
                    b.job_id,
                    b.job_type,
                    b.batch_size,
                    b.num_gpus,
                    b.gpu_types,
                    b.user,
                )
                assert (a.total_iters, a.deadline_s, a.submit_s) == pytest.approx(
                    (b.total_iters, b.deadline_s, b.submit_s)
                )
        assert back.metadata["report"] == wl.metadata["report"]
        assert back.metadata["loader"] == "pai"


def test_written_trace_has_the_default_permissions(tmp_path: Path) -> None:
    import os
    import stat

    wl = load_trace(write_helios(tmp_path / "cluster_log.csv"), "helios")
    old = os.umask(0o022)
    try:
        for suffix in (".csv", ".parquet"):
            out = write_trace(wl, tmp_path / f"h{suffix}")
            assert stat.S_IMODE(out.stat().st_mode) == 0o644
    finally:
        os.umask(old)
