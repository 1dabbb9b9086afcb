"""``hetgym trace`` (convert, info, sample, formats) and trace-driven ``hetgym compare`` / ``simulate``."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from trace_fixtures import write_helios

from hetgym.cli import main
from hetgym.workloads.scenario import WorkloadConfig
from hetgym.workloads.schema import read_trace
from hetgym.workloads.traces import offered_load

EF_RAW = "elasticflow_traces/raw-traces.tar.gz"
EF_EXT = "elasticflow_traces/elasticflow-traces.tar.gz"
VC_TRACES = "gavel/traces/msr/seed0_per_vc_traces.tar.gz"


def test_formats_lists_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "formats"]) == 0
    out = capsys.readouterr().out
    for name in ("philly", "helios", "pai", "elasticflow", "gavel"):
        assert name in out


def test_convert_prints_the_report_and_info_describes_it(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c10.parquet"
    argv = ["trace", "convert", str(shared_data / EF_RAW), "-f", "elasticflow", "--member", "cluster10.csv"]
    argv += ["--out", str(out), "--max-gpus", "8", "--target-load", "0.7", "--load-cluster", "elasticflow-n1g8"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "258 jobs" in text and "more GPUs than max_gpus" in text and "table-uniform" in text
    wl = read_trace(out)
    assert len(wl) == 258
    assert offered_load(wl.jobs, "elasticflow-n1g8")["load"] == pytest.approx(0.7)
    assert main(["trace", "info", str(out), "--cluster", "elasticflow-n1g8", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["jobs"] == 258
    assert info["load"]["load"] == pytest.approx(0.7)
    assert info["gpus"] == {"1": 193, "2": 51, "4": 14}
    assert info["metadata"]["report"]["dropped"] == {"more GPUs than max_gpus": 2}
    assert main(["trace", "info", str(out), "--cluster", "elasticflow-n1g8"]) == 0
    text = capsys.readouterr().out
    assert "GPUs requested" in text and "offered load on elasticflow-n1g8" in text


def test_info_reads_a_public_trace_with_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_helios(tmp_path / "cluster_log.csv")
    assert main(["trace", "info", str(path), "--format", "helios", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["jobs"] == 4 and info["metadata"]["loader"] == "helios"


def test_convert_json_and_csv_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_helios(tmp_path / "cluster_log.csv")
    out = tmp_path / "h.csv"
    assert (
        main(["trace", "convert", str(path), "-f", "helios", "--out", str(out), "--status", "COMPLETED", "--json"]) == 0
    )
    meta = json.loads(capsys.readouterr().out)
    assert meta["report"]["kept"] == 2
    assert read_trace(out).metadata["report"] == meta["report"]


def test_convert_rejects_a_bad_output_name_before_reading(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_helios(tmp_path / "cluster_log.csv")
    assert main(["trace", "convert", str(path), "-f", "helios", "--out", str(tmp_path / "x.json")]) == 2
    assert "choose a .csv or .parquet" in capsys.readouterr().err
    assert main(["trace", "convert", str(path), "--out", str(tmp_path / "x.csv")]) == 2
    assert "give --format" in capsys.readouterr().err


def test_sample_writes_the_generator_output(tmp_path: Path) -> None:
    out = tmp_path / "s.csv"
    argv = ["trace", "sample", "--recipe", "gavel-philly", "--num-jobs", "30", "--seed", "4", "--cluster", "gavel-108"]
    assert main([*argv, "--utilisation", "0.6", "--out", str(out)]) == 0
    wl = read_trace(out)
    expected = WorkloadConfig(recipe="gavel-philly", num_jobs=30, target_utilisation=0.6).build("gavel-108", seed=4)
    assert [(j.job_type, j.batch_size, j.num_gpus) for j in wl] == [
        (j.job_type, j.batch_size, j.num_gpus) for j in expected
    ]
    assert wl.metadata["generator"] == "gavel-philly" and wl.metadata["seed"] == 4


def _summary(out: Path) -> pd.DataFrame:
    return pd.read_csv(out / "runs.csv")


def test_compare_on_an_elasticflow_cluster_trace(shared_data: Path, tmp_path: Path) -> None:
    trace = tmp_path / "c06.parquet"
    argv = ["trace", "convert", str(shared_data / EF_EXT), "-f", "elasticflow", "--member", "cluster06.csv"]
    argv += ["--out", str(trace), "--max-gpus", "8", "--max-jobs", "120"]
    assert main(argv) == 0
    out = tmp_path / "cmp"
    argv = ["compare", "--trace", str(trace), "--cluster", "elasticflow-n4g8", "--policies", "fifo,edf,srtf"]
    assert main([*argv, "--seeds", "0", "--no-plots", "--no-progress", "--out", str(out)]) == 0
    runs = _summary(out)
    assert sorted(runs["policy"]) == ["edf", "fifo", "srtf"]
    assert (runs["num_jobs"] == 120).all()
    assert (runs["num_completed"] == 120).all()
    assert runs["dsr"].between(0, 1).all()


def test_compare_on_a_gavel_philly_vc_trace(shared_data: Path, tmp_path: Path) -> None:
    trace = tmp_path / "vc.csv"
    argv = ["trace", "convert", str(shared_data / VC_TRACES), "-f", "gavel", "--member", "103959.trace"]
    argv += ["--out", str(trace), "--max-gpus", "8", "--max-jobs", "80", "--max-duration-s", "86400"]
    assert main(argv) == 0
    out = tmp_path / "cmp"
    argv = ["compare", "--trace", str(trace), "--cluster", "gavel-108", "--policies", "fifo,tiresias"]
    assert main([*argv, "--seeds", "0", "--no-plots", "--no-progress", "--out", str(out)]) == 0
    runs = _summary(out)
    assert (runs["num_completed"] == runs["num_jobs"]).all()
    assert (runs["num_jobs"] == 80).all()


def test_simulate_reads_a_public_trace_with_trace_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cluster01.csv"
    path.write_text(
        "job_id,submission_time,duration,num_gpu\n"
        + "\n".join(f"j{i},{600 * i},{1800 + 60 * i},{1 + i % 2}" for i in range(12))
    )
    argv = ["simulate", "--policy", "edf", "--trace", str(path), "--trace-format", "elasticflow", "--cluster", "tiny"]
    assert main([*argv, "--no-progress"]) == 0
    assert "trace-cluster01" in capsys.readouterr().out
    config = WorkloadConfig(trace=str(path), trace_format="elasticflow")
    a, b = config.build("tiny", seed=0), config.build("tiny", seed=0)
    assert len(a) == 12 and a.jobs == b.jobs  # seeded by the workload seed
    assert [j.job_type for j in config.build("tiny", seed=1)] != [j.job_type for j in a]
    assert main(["simulate", "--policy", "edf", "--trace-format", "gavel"]) == 2
    with pytest.raises(KeyError, match="did you mean 'gavel'"):
        WorkloadConfig(trace=str(path), trace_format="gavle")
