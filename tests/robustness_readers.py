"""Robustness corpus cases (see tests/robustness_corpus.py) for the trace readers, and the helpers that build
them (shared with tests/robustness_inputs.py).

Three categories, one per class of fault (the last two in tests/robustness_inputs.py):

* ``missing value``: a numeric field written as ``nan``, ``NA``, ``null``, ``None``, ``inf``, ``-inf`` (or
  left empty where the field has no "none"), in every numeric field of every reader, through the CLI and
  the Python API; each must be refused naming the field, never read as "absent" or as a value;
* ``empty or something else``: a file with no job row, a ``#`` row after the header, a boolean where a
  number belongs, a code out of its domain, a repeated job id, a key given twice in a sweep YAML;
* ``message names the wrong thing``: a column named twice, a byte-order mark followed by a real fault, a
  huge ``batch_size``, ``env.reset`` options of the wrong kind, a damaged result file for ``hetgym report``.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from robustness_corpus import GOOD_ROW, HEADER, Case

MISSING = "missing value"
EMPTY = "empty or something else"
NAMING = "message names the wrong thing"

BOM = b"\xef\xbb\xbf"
#: Spellings that are no number, or no finite one: each must be refused where a number belongs.
SPELLINGS = {"nan": "nan", "NaN": "nan-upper", "NA": "na", "null": "null", "None": "none", "inf": "inf", "-inf": "ninf"}

# A canonical row with every optional numeric column.
_FULL_HEADER = HEADER + ",priority_weight,duration_s,model_bytes,min_gpus,max_gpus"
_FULL_ROW = GOOD_ROW + ",1,3600,1000000,1,2"
_FULL_FIELDS = _FULL_HEADER.split(",")

EF_RAW_HEADER = "job_id,submission_time,duration,num_gpu"
EF_RAW_ROW = "a1,0,3600,2"
EF_EXT_HEADER = "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration"
EF_EXT_ROW = "a1,0,6503,bert,10000,128,16,604"
HELIOS_HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"
HELIOS_ROW = "1425512,u1,vc1,4,16,1,FAILED,2020-06-09 18:41:27,2020-06-09 18:41:27,2020-06-09 18:45:36,249,0"
PAI_JOB_HEADER = "job_name,inst_id,user,status,start_time,end_time"
PAI_JOB_ROW = "jobA,instA,userA,Terminated,1000.0,5000.0"
PAI_TASK_ROW = "jobA,worker,2.0,Terminated,1100.0,4900.0,400.0,29.3,50.0,V100"
GAVEL_FIELDS = ["ResNet-50 (batch size 64)", "python3 main.py", "image_classification", "--num_steps", "1"]
GAVEL_INDEX = {"total_steps": 5, "scale_factor": 6, "priority_weight": 7, "SLO": 8, "arrival_time": 9}


def csv_lines(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def with_field(row: str, header: str, field: str, value: str) -> str:
    cells = row.split(",")
    cells[header.split(",").index(field)] = value
    return ",".join(cells)


def gavel_row(**changes: str) -> bytes:
    cells = [*GAVEL_FIELDS, "1000", "1", "1", "-1.000000", "0"]
    for key, value in changes.items():
        cells[GAVEL_INDEX[key]] = value
    return ("\t".join(cells) + "\n").encode()


def philly_job(**changes: Any) -> dict[str, Any]:
    job: dict[str, Any] = {
        "status": "Pass",
        "vc": "vc1",
        "jobid": "application_1",
        "attempts": [
            {"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-07 03:13:23", "detail": [{"gpus": ["g0"]}]}
        ],
        "submitted_time": "2017-10-07 01:11:39",
        "user": "u1",
    }
    for key, value in changes.items():
        if key in ("start_time", "end_time"):
            job["attempts"][0][key] = value
        else:
            job[key] = value
    return job


def json_bytes(records: list[dict[str, Any]]) -> bytes:
    return json.dumps(records).encode()


def convert_argv(fmt: str, fname: str) -> tuple[str, ...]:
    return ("trace", "convert", fname, "--format", fmt, "--out", "out.csv")


def info_argv(fname: str) -> tuple[str, ...]:
    return ("trace", "info", fname)


def simulate_argv(fname: str) -> tuple[str, ...]:
    return ("simulate", "--policy", "fifo", "--cluster", "default", "--no-progress", "--trace", fname)


def cli_case(cid: str, category: str, argv: tuple[str, ...], files: dict[str, bytes], *expect: str) -> Case:
    return Case(id=cid, category=category, argv=argv, files=files, expect=tuple(w.lower() for w in expect))


def api_case(cid: str, category: str, call: Callable[[Path], Any], *expect: str) -> Case:
    return Case(id=cid, category=category, api=call, expect=tuple(w.lower() for w in expect))


def read_trace_call(name: str, content: bytes) -> Callable[[Path], Any]:
    def call(workdir: Path) -> Any:
        from hetgym.workloads import read_trace

        (workdir / name).write_bytes(content)
        return read_trace(workdir / name)

    return call


def load_trace_call(name: str, content: bytes, fmt: str) -> Callable[[Path], Any]:
    def call(workdir: Path) -> Any:
        from hetgym.workloads.traces import load_trace

        (workdir / name).write_bytes(content)
        return load_trace(workdir / name, fmt)

    return call


def make_with_trace_call(name: str, content: bytes) -> Callable[[Path], Any]:
    def call(workdir: Path) -> Any:
        import gymnasium as gym

        import hetgym  # noqa: F401

        (workdir / name).write_bytes(content)
        return gym.make("HetCluster-Tiny-v1", trace=str(workdir / name))

    return call


def parquet_bytes(columns: dict[str, Any]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = [pa.array(v, from_pandas=False) for v in columns.values()]
    table = pa.Table.from_arrays(arrays, names=list(columns))
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def parquet_row(**changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "job_id": [0],
        "submit_s": [0.0],
        "job_type": ["resnet50"],
        "batch_size": [64],
        "total_iters": [1000.0],
        "num_gpus": [1],
        "deadline_s": [36000.0],
    }
    row.update({k: [v] for k, v in changes.items()})
    return row


# ------------------------------------------------------------------------------------------------
# Missing values that become meaning


def missing_value_cases() -> list[Case]:
    cases: list[Case] = []
    # Canonical CSV: every numeric field, every spelling, through `trace info`; a few through simulate/API.
    numeric = [f for f in _FULL_FIELDS if f not in ("job_type",)]
    for fld in numeric:
        for text, tag in SPELLINGS.items():
            content = csv_lines(_FULL_HEADER, with_field(_FULL_ROW, _FULL_HEADER, fld, text))
            name = f"{fld}-{tag}.csv"
            cases.append(
                cli_case(f"missing-canonical-{fld}-{tag}", MISSING, info_argv(name), {name: content}, name, fld)
            )
    for fld in ("job_id", "submit_s", "job_type", "batch_size", "total_iters", "num_gpus"):
        content = csv_lines(_FULL_HEADER, with_field(_FULL_ROW, _FULL_HEADER, fld, ""))
        cases.append(
            cli_case(f"missing-canonical-{fld}-empty", MISSING, info_argv("t.csv"), {"t.csv": content}, "t.csv", fld)
        )
    for fld in ("deadline_s", "priority_weight", "duration_s"):
        content = csv_lines(_FULL_HEADER, with_field(_FULL_ROW, _FULL_HEADER, fld, "nan"))
        cases.append(
            cli_case(f"missing-simulate-{fld}-nan", MISSING, simulate_argv("t.csv"), {"t.csv": content}, "t.csv", fld)
        )
        cases.append(
            api_case(
                f"missing-read-trace-{fld}-inf", MISSING, read_trace_call("t.csv", content.replace(b"nan", b"inf")), fld
            )
        )
    content = csv_lines(_FULL_HEADER, with_field(_FULL_ROW, _FULL_HEADER, "deadline_s", "NaN"))
    cases.append(
        api_case("missing-make-trace-deadline-nan", MISSING, make_with_trace_call("t.csv", content), "deadline_s")
    )
    # Canonical parquet: a NaN (not null) in a numeric column.
    for fld in ("deadline_s", "submit_s", "total_iters", "priority_weight", "duration_s"):
        content = parquet_bytes(parquet_row(**{fld: float("nan")}))
        cases.append(
            cli_case(
                f"missing-parquet-{fld}-nan", MISSING, info_argv("t.parquet"), {"t.parquet": content}, "t.parquet", fld
            )
        )
    for fld in ("deadline_s", "priority_weight"):
        content = parquet_bytes(parquet_row(**{fld: float("inf")}))
        cases.append(api_case(f"missing-parquet-{fld}-inf", MISSING, read_trace_call("t.parquet", content), fld))
    # ElasticFlow raw and extended.
    for header, row, fields in (
        (EF_RAW_HEADER, EF_RAW_ROW, ("submission_time", "duration", "num_gpu")),
        (EF_EXT_HEADER, EF_EXT_ROW, ("num_iteration", "deadline", "batch_size")),
    ):
        for fld in fields:
            for text, tag in (*SPELLINGS.items(), ("", "empty")):
                content = csv_lines(header, with_field(row, header, fld, text))
                name = f"ef-{fld}-{tag}.csv"
                cases.append(
                    cli_case(
                        f"missing-elasticflow-{fld}-{tag}",
                        MISSING,
                        convert_argv("elasticflow", name),
                        {name: content},
                        name,
                        fld,
                    )
                )
    cases.append(
        api_case(
            "missing-load-trace-elasticflow-deadline-inf",
            MISSING,
            load_trace_call(
                "c.csv",
                csv_lines(EF_EXT_HEADER, with_field(EF_EXT_ROW, EF_EXT_HEADER, "deadline", "inf")),
                "elasticflow",
            ),
            "deadline",
        )
    )
    # Gavel: every numeric field.
    for fld in GAVEL_INDEX:
        for text, tag in (("nan", "nan"), ("NA", "na"), ("inf", "inf"), ("-inf", "ninf"), ("", "empty")):
            name = f"g-{fld}-{tag}.trace"
            cases.append(
                cli_case(
                    f"missing-gavel-{fld}-{tag}",
                    MISSING,
                    convert_argv("gavel", name),
                    {name: gavel_row(**{fld: text})},
                    name,
                    fld,
                )
            )
    # Helios: gpu_num and duration have no null spelling; submit_time none.
    for fld, values in (
        ("gpu_num", ("nan", "NA", "null", "None", "inf", "")),
        ("duration", ("nan", "NA", "null", "inf", "-inf")),
        ("submit_time", ("nan", "None", "")),
        ("job_id", ("",)),
    ):
        for text in values:
            tag = SPELLINGS.get(text, "empty")
            name = f"cluster_log-{fld}-{tag}.csv"
            content = csv_lines(HELIOS_HEADER, with_field(HELIOS_ROW, HELIOS_HEADER, fld, text))
            cases.append(
                cli_case(
                    f"missing-helios-{fld}-{tag}", MISSING, convert_argv("helios", name), {name: content}, name, fld
                )
            )
    # PAI: task numbers (empty is a documented none there; text null markers are not).
    task_header = "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type"
    for fld in ("inst_num", "start_time", "end_time", "plan_gpu"):
        for text in ("nan", "NA", "null", "inf"):
            tasks = csv_lines(with_field(PAI_TASK_ROW, task_header, fld, text))
            files = {"pai_job_table.csv": csv_lines(PAI_JOB_ROW), "pai_task_table.csv": tasks}
            cases.append(
                cli_case(
                    f"missing-pai-task-{fld}-{SPELLINGS[text]}",
                    MISSING,
                    convert_argv("pai", "pai_job_table.csv"),
                    files,
                    "pai_task_table.csv",
                    fld,
                )
            )
    for text in ("nan", "NA", "inf"):
        jobs = csv_lines(with_field(PAI_JOB_ROW, PAI_JOB_HEADER, "start_time", text))
        files = {"pai_job_table.csv": jobs, "pai_task_table.csv": csv_lines(PAI_TASK_ROW)}
        cases.append(
            cli_case(
                f"missing-pai-job-start-{SPELLINGS[text]}",
                MISSING,
                convert_argv("pai", "pai_job_table.csv"),
                files,
                "pai_job_table.csv",
                "start_time",
            )
        )
    # Philly: timestamps are null/"None" when absent, never NaN.
    for fld, value, tag in (
        ("submitted_time", None, "null"),
        ("submitted_time", "nan", "nan"),
        ("start_time", "NaN", "nan"),
        ("end_time", "inf", "inf"),
        ("jobid", "", "empty"),
    ):
        content = json_bytes([philly_job(**{fld: value})])
        cases.append(
            cli_case(
                f"missing-philly-{fld}-{tag}",
                MISSING,
                convert_argv("philly", "cluster_job_log"),
                {"cluster_job_log": content},
                "cluster_job_log",
                fld,
            )
        )
    return cases


def reader_cases() -> list[Case]:
    """Every case of this module, in a fixed order."""
    return missing_value_cases()
