"""The one spelling of "none" per field still reads as none, and the input around it still loads.

The refusals (``nan``, ``NA``, ``inf`` in numeric fields, ``#`` rows after the header, repeated columns and
ids, out-of-domain codes) are cases of the robustness corpus (tests/robustness_readers.py,
tests/robustness_inputs.py); these tests pin the legitimate input beside them: an empty field, a
byte-order mark, comment lines before the header, Gavel's SLO -1, Philly's null times, text kept as text.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from trace_fixtures import HELIOS_HEADER, HELIOS_ROWS, PAI_JOBS, PAI_TASKS, write_pai

import hetgym  # noqa: F401  (registers the ids)
from hetgym.workloads import TraceError, frame_to_jobs, read_trace
from hetgym.workloads.traces import load_trace

BOM = b"\xef\xbb\xbf"
HEADER = "job_id,submit_s,job_type,batch_size,total_iters,num_gpus,deadline_s,priority_weight,user,best_effort"


def test_an_empty_field_is_none_and_text_stays_text(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(f"{HEADER}\n0,0,resnet50,64,1000,1,,,NA,\n1,5,resnet50,64,1000,1,9000,2,None,true\n")
    jobs = list(read_trace(path))
    assert math.isinf(jobs[0].deadline_s) and jobs[0].priority_weight == 1.0 and jobs[0].best_effort is False
    assert [j.user for j in jobs] == ["NA", "None"]  # a user's name, not a missing value
    assert jobs[1].deadline_s == 9000.0 and jobs[1].priority_weight == 2.0 and jobs[1].best_effort is True


def test_a_bom_and_comment_lines_before_the_header_are_read(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    body = f'# hetgym-trace {{"schema_version": 1, "note": "x"}}\n# another comment\n\n{HEADER}\n'
    path.write_bytes(BOM + (body + "0,0,resnet50,64,1000,1,,,u#1,\n").encode())
    workload = read_trace(path)
    assert workload.metadata["note"] == "x"
    assert [j.user for j in workload] == ["u#1"]  # a '#' inside a field is text, not a comment


def test_a_written_trace_reads_back_the_same(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(f"{HEADER}\n0,0,resnet50,64,1000,1,,,,\n1,5.123456789,resnet50,64,1e3,2,36000.5,0.5,u,\n")
    jobs = list(read_trace(path))
    for suffix in (".csv", ".parquet"):
        again = read_trace(read_trace(path).save(tmp_path / f"again{suffix}"))
        assert list(again) == jobs


def test_parquet_null_is_none_and_nan_is_refused(tmp_path: Path) -> None:
    columns = {
        "job_id": pa.array([0]),
        "submit_s": pa.array([0.0]),
        "job_type": pa.array(["resnet50"]),
        "batch_size": pa.array([64]),
        "total_iters": pa.array([1000.0]),
        "num_gpus": pa.array([1]),
    }
    null = tmp_path / "null.parquet"
    pq.write_table(pa.table({**columns, "deadline_s": pa.array([None], type=pa.float64())}), null)
    assert math.isinf(read_trace(null)[0].deadline_s)
    nan = tmp_path / "nan.parquet"
    pq.write_table(pa.table({**columns, "deadline_s": pa.array([float("nan")], from_pandas=False)}), nan)
    with pytest.raises(TraceError, match="row 1, field 'deadline_s'"):
        read_trace(nan)


def test_a_pandas_table_uses_nan_for_none_but_refuses_inf() -> None:
    frame = pd.DataFrame(
        {
            "job_id": [0],
            "submit_s": [0.0],
            "job_type": ["resnet50"],
            "batch_size": [64],
            "total_iters": [1000.0],
            "num_gpus": [1],
            "deadline_s": [np.nan],
        }
    )
    assert math.isinf(frame_to_jobs(frame)[0].deadline_s)
    with pytest.raises(TraceError, match=r"field 'deadline_s'.*not a finite number"):
        frame_to_jobs(frame.assign(deadline_s=[np.inf]))
    with pytest.raises(TraceError, match=r"field 'num_gpus'.*boolean"):
        frame_to_jobs(frame.assign(num_gpus=[True]))


def test_every_foreign_reader_reads_past_a_bom(tmp_path: Path) -> None:
    ef = tmp_path / "c.csv"
    ef.write_bytes(BOM + b"job_id,submission_time,duration,num_gpu\na,0,3600,2\nb,60,600,1\n")
    assert len(load_trace(ef, "elasticflow")) == 2
    helios = tmp_path / "cluster_log.csv"
    helios.write_bytes(BOM + "\n".join([HELIOS_HEADER, *(r for r, _ in HELIOS_ROWS)]).encode() + b"\n")
    assert len(load_trace(helios, "helios")) == sum(1 for _, want in HELIOS_ROWS if isinstance(want, tuple))
    pai = write_pai(tmp_path / "pai")
    (pai / "pai_job_table.csv").write_bytes(BOM + ("\n".join(PAI_JOBS) + "\n").encode())
    (pai / "pai_task_table.csv").write_bytes(BOM + ("\n".join(PAI_TASKS) + "\n").encode())
    assert {j.features["source_id"] for j in load_trace(pai, "pai")} == {"jobA", "jobB", "jobC", "jobF", "jobG"}
    gavel = tmp_path / "g.trace"
    row = "ResNet-50 (batch size 64)\tpython3 main.py\tdir\t--num_steps\t1\t1000\t1\t1\t-1.000000\t0\n"
    gavel.write_bytes(BOM + row.encode())
    (job,) = load_trace(gavel, "gavel")
    assert math.isinf(job.deadline_s)  # SLO -1: no deadline, as before
    philly = tmp_path / "cluster_job_log"
    record = {
        "status": "Pass",
        "jobid": "application_1",
        "submitted_time": "2017-10-07 01:11:39",
        "attempts": [{"start_time": "2017-10-07 01:12:09", "end_time": "None", "detail": [{"gpus": ["g0"]}]}],
    }
    done = {**record, "jobid": "application_2", "attempts": [{**record["attempts"][0], "end_time": None}]}
    ended = {**record, "jobid": "application_3"}
    ended["attempts"] = [{**record["attempts"][0], "end_time": "2017-10-07 02:12:09"}]
    philly.write_bytes(BOM + json.dumps([record, done, ended]).encode())
    workload = load_trace(philly, "philly")
    assert len(workload) == 1 and workload.metadata["report"]["dropped"] == {
        "still running (last attempt has no end time)": 2
    }


def test_reset_options_still_take_a_seed_and_jobs() -> None:
    env = gym.make("HetCluster-Tiny-v1").unwrapped
    _, info = env.reset(seed=0, options={"workload_seed": np.int64(7)})
    assert info["workload_seed"] == 7
    jobs = env.jobs[:2]
    env.reset(seed=0, options={"jobs": list(jobs)})
    assert env.jobs == tuple(jobs)
