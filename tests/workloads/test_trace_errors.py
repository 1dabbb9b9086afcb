"""Malformed input of each kind gets an error naming the file, the row and the field, and a conversion
that fails writes no output file."""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from trace_fixtures import (
    HELIOS_HEADER,
    HELIOS_ROWS,
    PAI_JOBS,
    PAI_TASKS,
    PHILLY_JOBS,
    write_helios,
    write_pai,
    write_philly,
)

from hetgym.cli import main
from hetgym.workloads.schema import TraceError
from hetgym.workloads.traces import CleanOptions, load_trace

# Each case builds a bad source in a directory and returns (source, format, reader options, the file
# the error must name, the expected 'row N' and field).
Case = Callable[[Path], tuple[Path, str, dict[str, Any], Path, int, str]]


def _philly_records() -> list[dict[str, Any]]:
    return copy.deepcopy([j for j, _ in PHILLY_JOBS])


def philly_truncated(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    path = write_philly(d / "cluster_job_log")
    text = path.read_text()
    cut = text.index('"application_3"') + 200  # inside the third job
    path.write_text(text[:cut])
    return path, "philly", {}, path, 3, ""


def philly_bad_timestamp(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    recs = _philly_records()
    recs[1]["submitted_time"] = "2017-13-45 25:00:00"
    path = write_philly(d / "cluster_job_log", recs)
    return path, "philly", {}, path, 2, "submitted_time"


def philly_negative_duration(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    recs = _philly_records()
    recs[2]["attempts"][0]["end_time"] = "2017-10-07 04:59:00"  # before its start 05:00:00
    path = write_philly(d / "cluster_job_log", recs)
    return path, "philly", {}, path, 3, "attempts[0].end_time"


def philly_truncated_gzip(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    plain = write_philly(d / "log.json")
    path = d / "cluster_job_log.gz"
    path.write_bytes(gzip.compress(plain.read_bytes())[:-40])
    return path, "philly", {}, path, 0, ""


def helios_missing_column(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    header = HELIOS_HEADER.replace("gpu_num,", "")
    rows = [",".join(f for i, f in enumerate(r.split(",")) if i != 3) for r, _ in HELIOS_ROWS]
    path = write_helios(d / "cluster_log.csv", rows, header=header)
    return path, "helios", {}, path, 0, "gpu_num"


def helios_bad_timestamp(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    rows = [r for r, _ in HELIOS_ROWS]
    rows[2] = rows[2].replace("2020-06-09 18:41:28,2020", "09/06/2020 18:41,2020", 1)
    path = write_helios(d / "cluster_log.csv", rows)
    return path, "helios", {}, path, 3, "submit_time"


def helios_negative_duration(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    rows = [r for r, _ in HELIOS_ROWS]
    rows[1] = rows[1].replace(",249,0", ",-249,0")
    path = write_helios(d / "cluster_log.csv", rows)
    return path, "helios", {}, path, 2, "duration"


def pai_unknown_gpu_type(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    tasks = list(PAI_TASKS)
    tasks[3] = tasks[3].replace(",T4", ",A10")
    directory = write_pai(d / "pai", tasks=tasks)
    return directory, "pai", {}, directory / "pai_task_table.csv", 4, "gpu_type"


def pai_missing_column(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    tasks = list(PAI_TASKS)
    tasks[2] = tasks[2].rsplit(",", 1)[0]  # the third task row lost its gpu_type
    directory = write_pai(d / "pai", tasks=tasks)
    return directory, "pai", {}, directory / "pai_task_table.csv", 3, "gpu_type"


def pai_missing_header_column(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    directory = write_pai(d / "pai")
    path = directory / "pai_job_table.csv"
    rows = [",".join(r.split(",")[:4] + r.split(",")[5:]) for r in PAI_JOBS]
    path.write_text("job_name,inst_id,user,status,end_time\n" + "\n".join(rows) + "\n")
    return directory, "pai", {}, path, 0, "start_time"


def pai_bad_timestamp(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    jobs = list(PAI_JOBS)
    jobs[1] = jobs[1].replace("2000.0", "2020-07-01 10:00")
    directory = write_pai(d / "pai", jobs=jobs)
    return directory, "pai", {}, directory / "pai_job_table.csv", 2, "start_time"


def pai_negative_duration(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    tasks = list(PAI_TASKS)
    tasks[0] = tasks[0].replace("1100.0,4900.0", "4900.0,1100.0")
    directory = write_pai(d / "pai", tasks=tasks)
    return directory, "pai", {}, directory / "pai_task_table.csv", 1, "end_time"


_EF_HEADER = "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration"
_EF_ROWS = [
    "a,100,6503,bert,554,128,16,604",
    "b,200,8258,bert,1059,128,16,767",
    "c,300,616709,vgg16,81890,64,2,68253",
]


def _ef(d: Path, header: str, rows: list[str]) -> Path:
    path = d / "cluster01.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def elasticflow_missing_column(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    header = _EF_HEADER.replace(",duration", "")
    path = _ef(d, header, [r.rsplit(",", 1)[0] for r in _EF_ROWS])
    return path, "elasticflow", {}, path, 0, "duration"


def elasticflow_negative_duration(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    rows = list(_EF_ROWS)
    rows[2] = rows[2].replace(",68253", ",-68253")
    path = _ef(d, _EF_HEADER, rows)
    return path, "elasticflow", {}, path, 3, "duration"


def elasticflow_unknown_model(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    rows = list(_EF_ROWS)
    rows[1] = rows[1].replace("bert", "llama70b")
    path = _ef(d, _EF_HEADER, rows)
    return path, "elasticflow", {}, path, 2, "model_name"


def elasticflow_bad_time(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    rows = list(_EF_ROWS)
    rows[0] = rows[0].replace("a,100,", "a,2021-03-04,")
    path = _ef(d, _EF_HEADER, rows)
    return path, "elasticflow", {}, path, 1, "submission_time"


_GAVEL_ROWS = [
    "ResNet-18 (batch size 32)\tpython3 main.py\tcifar10\t--num_steps\t1\t3948\t2\t1\t-1.000000\t0",
    "LM (batch size 20)\tpython3 main.py\tlm\t--steps\t1\t1000\t1\t1\t-1.000000\t10",
    "A3C\tpython3 main.py\ta3c\t--max_steps\t0\t500\t1\t1\t2.000000\t20",
]


def gavel_missing_column(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    rows = list(_GAVEL_ROWS)
    rows[1] = rows[1].rsplit("\t", 1)[0]
    path = d / "x.trace"
    path.write_text("\n".join(rows) + "\n")
    return path, "gavel", {}, path, 2, "arrival_time"


def gavel_unknown_job_type(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    rows = list(_GAVEL_ROWS)
    rows[2] = rows[2].replace("A3C", "VGG-16 (batch size 8)", 1)
    path = d / "x.trace"
    path.write_text("\n".join(rows) + "\n")
    return path, "gavel", {}, path, 3, "job_type"


def gavel_negative_arrival(d: Path) -> tuple[Path, str, dict[str, Any], Path, int, str]:
    rows = list(_GAVEL_ROWS)
    rows[1] = rows[1].rsplit("\t", 1)[0] + "\t-5"
    path = d / "x.trace"
    path.write_text("\n".join(rows) + "\n")
    return path, "gavel", {}, path, 2, "arrival_time"


CASES: list[Case] = [
    philly_truncated,
    philly_bad_timestamp,
    philly_negative_duration,
    philly_truncated_gzip,
    helios_missing_column,
    helios_bad_timestamp,
    helios_negative_duration,
    pai_unknown_gpu_type,
    pai_missing_column,
    pai_missing_header_column,
    pai_bad_timestamp,
    pai_negative_duration,
    elasticflow_missing_column,
    elasticflow_negative_duration,
    elasticflow_unknown_model,
    elasticflow_bad_time,
    gavel_missing_column,
    gavel_unknown_job_type,
    gavel_negative_arrival,
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_malformed_input_names_file_row_and_field(tmp_path: Path, case: Case) -> None:
    source, fmt, options, named, row, fld = case(tmp_path)
    with pytest.raises(TraceError) as info:
        load_trace(source, fmt, **options)
    msg = str(info.value)
    assert str(named) in msg
    if row:
        assert f"row {row}" in msg
    elif fld:
        assert "row 0 (header)" in msg
    if fld:
        assert f"field {fld!r}" in msg
    if case is philly_truncated:
        assert "truncated JSON" in msg and "field" in msg  # the innermost key read before the cut


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_failed_conversion_writes_nothing(tmp_path: Path, case: Case, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "in").mkdir()
    source, fmt, _options, named, _row, _fld = case(tmp_path / "in")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    argv = ["trace", "convert", str(source), "--format", fmt, "--out", str(out_dir / "t.parquet")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "hetgym trace: error:" in err and str(named) in err
    assert list(out_dir.iterdir()) == []


def test_skip_counts_bad_rows_and_keeps_the_rest(tmp_path: Path) -> None:
    rows = [r for r, _ in HELIOS_ROWS]
    rows[1] = rows[1].replace(",249,0", ",-249,0")
    rows[2] = rows[2].replace("2020-06-09 18:41:28,2020", "yesterday,2020", 1)
    path = write_helios(tmp_path / "cluster_log.csv", rows)
    wl = load_trace(path, "helios", clean=CleanOptions(on_error="skip"))
    report = wl.metadata["report"]
    assert report["dropped"] == {"invalid duration": 1, "invalid submit_time": 1, "CPU-only job (gpu_num 0)": 1}
    assert report["read"] == 5 and report["kept"] == 2


def test_skip_drops_pai_jobs_with_bad_task_rows(tmp_path: Path) -> None:
    tasks = list(PAI_TASKS)
    tasks[3] = tasks[3].replace(",T4", ",A10")  # jobC
    wl = load_trace(write_pai(tmp_path / "pai", tasks=tasks), "pai", clean=CleanOptions(on_error="skip"))
    assert "jobC" not in {j.features["source_id"] for j in wl}
    assert wl.metadata["report"]["dropped"]["invalid task row"] == 1


def test_gpu_map_accepts_other_pai_types(tmp_path: Path) -> None:
    tasks = list(PAI_TASKS)
    tasks[3] = tasks[3].replace(",T4", ",A10")
    directory = write_pai(tmp_path / "pai", tasks=tasks)
    wl = load_trace(directory, "pai", gpu_map={"A10": "t4"}, gpu_type_mode="pin")
    assert {j.features["source_id"]: j.gpu_types for j in wl}["jobC"] == ("t4",)
    with pytest.raises(TraceError, match="unknown GPU type 'b200'"):
        load_trace(directory, "pai", gpu_map={"A10": "b200"})


def test_not_a_json_array_and_trailing_text(tmp_path: Path) -> None:
    path = tmp_path / "cluster_job_log"
    path.write_text(json.dumps({"jobs": []}))
    with pytest.raises(TraceError, match="expected a JSON array"):
        load_trace(path, "philly")
    path.write_text(json.dumps([j for j, _ in PHILLY_JOBS]) + " trailing")
    with pytest.raises(TraceError, match="unexpected text after the closing"):
        load_trace(path, "philly")
    path.write_text("[1, 2]")
    with pytest.raises(TraceError, match=r"row 1.*field '<job>'"):
        load_trace(path, "philly")


def test_unknown_format_and_option_name_the_nearest(tmp_path: Path) -> None:
    path = write_philly(tmp_path / "cluster_job_log")
    with pytest.raises(KeyError, match="did you mean 'philly'"):
        load_trace(path, "phily")
    with pytest.raises(KeyError, match="did you mean 'members'"):
        load_trace(path, "philly", member=("x",))
    with pytest.raises(TraceError, match="no such file"):
        load_trace(tmp_path / "missing", "philly")


def test_bad_cleaning_options_are_rejected() -> None:
    with pytest.raises(ValueError, match="subsample"):
        CleanOptions(subsample=1.5)
    with pytest.raises(ValueError, match="load_cluster"):
        CleanOptions(target_load=0.8)
    with pytest.raises(ValueError, match="not both"):
        CleanOptions(target_load=0.8, load_cluster="default", time_scale=2.0)
    with pytest.raises(ValueError, match="empty"):
        CleanOptions(window_start_s=10, window_end_s=10)
    with pytest.raises(KeyError, match="did you mean 'max_gpus'"):
        CleanOptions.from_dict({"max_gpu": 8})
