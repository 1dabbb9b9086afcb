"""Small hand-written traces in the Philly, Helios and PAI formats, with the values the readers must
produce (worked out by hand from each format's rules)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def attempt(start: str | None, end: str | None, gpus_per_server: list[int]) -> dict[str, Any]:
    """A Philly scheduling attempt on servers holding ``gpus_per_server`` GPUs each."""
    return {
        "start_time": start,
        "end_time": end,
        "detail": [{"ip": f"m{i}", "gpus": [f"gpu{k}" for k in range(n)]} for i, n in enumerate(gpus_per_server)],
    }


#: Philly jobs: (record, expected (num_gpus, duration_s, status) or the drop reason).
PHILLY_JOBS: list[tuple[dict[str, Any], Any]] = [
    (
        {
            "status": "Pass",
            "vc": "vc1",
            "jobid": "application_1",
            "attempts": [
                attempt("2017-10-07 01:12:09", "2017-10-07 01:13:23", [8]),
                attempt("2017-10-07 01:13:30", "2017-10-09 06:53:12", [4]),
            ],
            "submitted_time": "2017-10-07 01:11:39",
            "user": "u1",
        },
        # GPUs of the FIRST attempt; run time from the first start to the last end.
        (8, 2 * 86400 + 5 * 3600 + 41 * 60 + 3, "Pass"),
    ),
    (
        {
            "status": "Killed",
            "vc": "vc2",
            "jobid": "application_2",
            "attempts": [attempt("2017-10-07 02:00:00", "2017-10-07 03:00:00", [4, 4])],
            "submitted_time": "2017-10-07 01:59:00",
            "user": "u2",
        },
        (8, 3600, "Killed"),
    ),
    (
        {
            "status": "Failed",
            "vc": "vc1",
            "jobid": "application_3",
            "attempts": [attempt("2017-10-07 05:00:00", "2017-10-07 05:00:30", [1])],
            "submitted_time": "2017-10-07 04:00:00",
            "user": "u1",
        },
        (1, 30, "Failed"),
    ),
    (
        {
            "status": "Killed",
            "vc": "vc1",
            "jobid": "application_4",
            "attempts": [],
            "submitted_time": "2017-10-07 06:00:00",
            "user": "u3",
        },
        "no scheduling attempt",
    ),
    (
        {
            "status": "Pass",
            "vc": "vc2",
            "jobid": "application_5",
            "attempts": [attempt("2017-10-07 07:00:00", None, [2])],
            "submitted_time": "2017-10-07 06:30:00",
            "user": "u1",
        },
        "still running (last attempt has no end time)",
    ),
    (
        {
            "status": "Pass",
            "vc": "vc2",
            "jobid": "application_6",
            "attempts": [attempt(None, "2017-10-07 09:00:00", [2])],
            "submitted_time": "2017-10-07 08:00:00",
            "user": "u4",
        },
        "first attempt has no start time",
    ),
    (
        {
            "status": "Pass",
            "vc": "vc1",
            "jobid": "application_7",
            "attempts": [attempt("2017-10-08 00:00:00", "2017-10-08 12:00:00", [2])],
            "submitted_time": "2017-10-07 23:00:00",
            "user": "u2",
        },
        (2, 12 * 3600, "Pass"),
    ),
]


def write_philly(path: Path, jobs: list[dict[str, Any]] | None = None) -> Path:
    """``cluster_job_log`` with ``jobs`` (default: :data:`PHILLY_JOBS`), pretty-printed like the original."""
    records = [j for j, _ in PHILLY_JOBS] if jobs is None else jobs
    path.write_text(json.dumps(records, indent=4))
    return path


HELIOS_HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"
#: Helios rows: (row text, expected (num_gpus, duration_s, status) or the drop reason).
HELIOS_ROWS: list[tuple[str, Any]] = [
    (
        "1425511,uXBbc,vcJkd,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-10 04:55:09,36848,0",
        (1, 36848, "COMPLETED"),
    ),
    (
        "1425512,uVMrF,vchbv,4,16,1,FAILED,2020-06-09 18:41:27,2020-06-09 18:41:27,2020-06-09 18:45:36,249,0",
        (4, 249, "FAILED"),
    ),
    (
        "1425513,uzqls,vcpDC,8,8,1,CANCELLED,2020-06-09 18:41:28,2020-06-09 18:41:28,2020-06-17 14:15:21,675233,0",
        (8, 675233, "CANCELLED"),
    ),
    ("1425514,uzqls,vcpDC,0,4,1,COMPLETED,2020-06-09 18:42:00,2020-06-09 18:42:00,2020-06-09 19:42:00,3600,0", "cpu"),
    # Duration empty: computed from the start and end times (2 h).
    (
        "1425515,uXBbc,vcJkd,2,8,1,COMPLETED,2020-06-09 19:00:00,2020-06-09 19:10:00,2020-06-09 21:10:00,,600",
        (2, 7200, "COMPLETED"),
    ),
]


def write_helios(path: Path, rows: list[str] | None = None, header: str = HELIOS_HEADER) -> Path:
    lines = [header, *([r for r, _ in HELIOS_ROWS] if rows is None else rows)]
    path.write_text("\n".join(lines) + "\n")
    return path


#: pai_job_table rows (no header, as published): job_name,inst_id,user,status,start_time,end_time.
PAI_JOBS = [
    "jobA,instA,userA,Terminated,1000.0,5000.0",
    "jobB,instB,userB,Terminated,2000.0,9000.0",
    "jobC,instC,userA,Failed,3000.0,3500.0",
    "jobD,instD,userC,Terminated,3100.0,3200.0",
    "jobE,instE,userB,Running,4000.0,",
    "jobF,instF,userC,Terminated,4500.0,20000.0",
    "jobG,instG,userA,Terminated,6000.0,8000.0",
]
#: pai_task_table rows: job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type.
PAI_TASKS = [
    # A: 2 workers x 50% of a V100 (= 1 GPU) and a CPU parameter server; runs 1100..4900.
    "jobA,worker,2.0,Terminated,1100.0,4900.0,400.0,29.3,50.0,V100",
    "jobA,ps,1.0,Terminated,1050.0,4950.0,600.0,29.3,0.0,",
    # B: one instance of 800% (8 GPUs) on a V100M32 machine; runs 2100..8100.
    "jobB,tensorflow,1.0,Terminated,2100.0,8100.0,600.0,29.3,800.0,V100M32",
    # C: 25% of a T4 -> rounded up to 1 GPU; runs 3010..3410.
    "jobC,worker,1.0,Failed,3010.0,3410.0,100.0,10.0,25.0,T4",
    # D: CPU only.
    "jobD,worker,1.0,Terminated,3110.0,3190.0,100.0,10.0,,",
    # E: still running.
    "jobE,worker,1.0,Running,4010.0,,100.0,10.0,100.0,P100",
    # F: 4 x 100% MISC (-> k80); two tasks, runs 4600..19000.
    "jobF,worker,2.0,Terminated,4600.0,18000.0,100.0,10.0,100.0,MISC",
    "jobF,worker2,2.0,Terminated,4700.0,19000.0,100.0,10.0,100.0,MISC",
    # G: a P100 task and a V100 task (pinned to both when pinning); 1 + 1 GPU; runs 6100..7900.
    "jobG,a,1.0,Terminated,6100.0,7900.0,100.0,10.0,100.0,P100",
    "jobG,b,1.0,Terminated,6200.0,7800.0,100.0,10.0,100.0,V100",
]
#: job -> (num_gpus, duration_s, status, mapped GPU types, plan_gpu_pct) or the drop reason.
PAI_EXPECTED: dict[str, Any] = {
    "jobA": (1, 3800.0, "Terminated", ("v100",), 100.0),
    "jobB": (8, 6000.0, "Terminated", ("v100",), 800.0),
    "jobC": (1, 400.0, "Failed", ("t4",), 25.0),
    "jobD": "no GPU task (CPU-only job)",
    "jobE": "still running (a GPU task has no end time)",
    "jobF": (4, 14400.0, "Terminated", ("k80",), 400.0),
    "jobG": (2, 1800.0, "Terminated", ("p100", "v100"), 200.0),
}


def write_pai(directory: Path, jobs: list[str] | None = None, tasks: list[str] | None = None) -> Path:
    """``pai_job_table.csv`` and ``pai_task_table.csv`` (headerless) in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pai_job_table.csv").write_text("\n".join(PAI_JOBS if jobs is None else jobs) + "\n")
    (directory / "pai_task_table.csv").write_text("\n".join(PAI_TASKS if tasks is None else tasks) + "\n")
    return directory
