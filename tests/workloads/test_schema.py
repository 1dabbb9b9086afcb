"""The canonical trace schema: round trips, validation errors naming file, row and field, atomic writes."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from hetgym.sim import JobSpec, ThroughputModel
from hetgym.workloads import SCHEMA_VERSION, TraceError, Workload, read_trace, write_trace


def sample_jobs() -> list[JobSpec]:
    return [
        JobSpec(0, 0.0, "resnet50", 256, 1000.0, 4, deadline_s=5000.0, user="u1", duration_s=900.0),
        JobSpec(
            1,
            12.5,
            "bert",
            128,
            50.0,
            8,
            parallelism=(2, 2, 2),
            model_bytes=1.3e9,
            template_id="t7",
            gpu_types=("a100", "v100"),
            features={"lr": 0.1, "dataset": "wiki"},
        ),
        JobSpec(2, 30.0, "lm", 20, 7.25, 1, min_gpus=1, max_gpus=4, best_effort=True, priority_weight=2.0),
    ]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_round_trip_keeps_every_field(tmp_path: Path, suffix: str) -> None:
    path = write_trace(Workload(tuple(sample_jobs()), {"generator": "test", "seed": 3}), tmp_path / f"t{suffix}")
    back = read_trace(path)
    assert list(back) == sample_jobs()
    assert back.metadata["generator"] == "test" and back.metadata["schema_version"] == SCHEMA_VERSION
    assert back[1].features == {"lr": 0.1, "dataset": "wiki"}
    assert math.isinf(back[1].deadline_s)


def test_csv_starts_with_the_metadata_line(tmp_path: Path) -> None:
    path = write_trace(sample_jobs(), tmp_path / "t.csv")
    first = path.read_text().splitlines()[0]
    assert first.startswith("# hetgym-trace {") and '"schema_version": 1' in first


def _write_csv(tmp_path: Path, frame: pd.DataFrame) -> Path:
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    return path


def _good_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "job_id": [0, 1],
            "submit_s": [0.0, 5.0],
            "job_type": ["resnet50", "lm"],
            "batch_size": [256, 20],
            "total_iters": [100.0, 50.0],
            "num_gpus": [4, 1],
            "deadline_s": [900.0, None],
        }
    )


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda f: f.drop(columns=["num_gpus"]), r"missing required column\(s\) \['num_gpus'\]"),
        (lambda f: f.assign(submit_s=[0.0, -5.0]), r"row 2, field 'submit_s': is negative"),
        (lambda f: f.assign(total_iters=[100.0, -1.0]), r"row 2, field 'total_iters': is negative"),
        (lambda f: f.assign(num_gpus=["4", "two"]), r"row 2, field 'num_gpus': value 'two' is not an integer"),
        (
            lambda f: f.assign(submit_s=["0", "yesterday"]),
            r"row 2, field 'submit_s': value 'yesterday' is not a number",
        ),
        (lambda f: f.assign(job_id=[3, 3]), r"row 2, field 'job_id': duplicate id 3 \(first at row 1\)"),
        (
            lambda f: f.assign(job_type=["resnet50", "resnet5O"]),
            r"row 2, field 'job_type': unknown job type 'resnet5O'",
        ),
        (lambda f: f.assign(deadline_s=[900.0, 1.0]), r"row 2: job 1: field 'deadline_s'"),
        (lambda f: f.assign(job_type=["resnet50", None]), r"row 2, field 'job_type': is empty"),
    ],
)
def test_malformed_rows_name_file_row_and_field(tmp_path: Path, mutate, match: str) -> None:  # type: ignore[no-untyped-def]
    path = _write_csv(tmp_path, mutate(_good_frame()))
    with pytest.raises(TraceError, match=match) as info:
        read_trace(path, throughput=ThroughputModel.default())
    assert str(path) in str(info.value)


def test_unknown_job_type_only_checked_with_a_model(tmp_path: Path) -> None:
    path = _write_csv(tmp_path, _good_frame().assign(job_type=["mystery", "lm"]))
    assert read_trace(path)[0].job_type == "mystery"


def test_missing_file_and_wrong_suffix(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such file"):
        read_trace(tmp_path / "nope.csv")
    (tmp_path / "x.json").write_text("[]")
    with pytest.raises(TraceError, match="unknown file type"):
        read_trace(tmp_path / "x.json")
    with pytest.raises(TraceError, match=r"choose a \.csv or \.parquet"):
        write_trace(sample_jobs(), tmp_path / "out.txt")


def test_a_failed_write_leaves_nothing_behind(tmp_path: Path) -> None:
    class Boom(Workload):
        def to_frame(self) -> pd.DataFrame:
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        write_trace(Boom(tuple(sample_jobs())), tmp_path / "t.parquet")
    assert list(tmp_path.iterdir()) == []


def test_unsupported_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "v9.csv"
    path.write_text('# hetgym-trace {"schema_version": 9}\njob_id,submit_s,job_type,batch_size,total_iters,num_gpus\n')
    with pytest.raises(TraceError, match="schema_version 9 is not supported"):
        read_trace(path)


def test_workload_is_sorted_by_submission() -> None:
    w = Workload(tuple(reversed(sample_jobs())))
    assert [j.job_id for j in w] == [0, 1, 2] and len(w) == 3 and w.span_s() == 30.0
