"""Robustness corpus cases (see tests/robustness_corpus.py): input that reads as empty or as something else,
and messages that name the wrong thing (the categories are described in tests/robustness_readers.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from robustness_corpus import GOOD_ROW, HEADER, Case
from robustness_readers import (
    BOM,
    EF_EXT_HEADER,
    EF_EXT_ROW,
    EF_RAW_HEADER,
    EF_RAW_ROW,
    EMPTY,
    HELIOS_HEADER,
    HELIOS_ROW,
    NAMING,
    PAI_JOB_HEADER,
    PAI_JOB_ROW,
    PAI_TASK_ROW,
    api_case,
    cli_case,
    convert_argv,
    csv_lines,
    gavel_row,
    info_argv,
    json_bytes,
    make_with_trace_call,
    parquet_bytes,
    parquet_row,
    philly_job,
    read_trace_call,
    simulate_argv,
    with_field,
)

# ------------------------------------------------------------------------------------------------
# Input that reads as empty or as something else


def empty_or_else_cases() -> list[Case]:
    cases: list[Case] = []
    header_only = {
        "canonical-csv": ("t.csv", csv_lines(HEADER), info_argv("t.csv")),
        "canonical-csv-with-metadata": (
            "t.csv",
            csv_lines('# hetgym-trace {"schema_version": 1}', HEADER),
            simulate_argv("t.csv"),
        ),
        "canonical-parquet": (
            "t.parquet",
            parquet_bytes({k: v[:0] for k, v in parquet_row().items()}),
            info_argv("t.parquet"),
        ),
        "elasticflow-raw": ("c.csv", csv_lines(EF_RAW_HEADER), convert_argv("elasticflow", "c.csv")),
        "elasticflow-extended": ("c.csv", csv_lines(EF_EXT_HEADER), convert_argv("elasticflow", "c.csv")),
        "helios": ("cluster_log.csv", csv_lines(HELIOS_HEADER), convert_argv("helios", "cluster_log.csv")),
        "gavel": ("g.trace", b"\n", convert_argv("gavel", "g.trace")),
        "philly": ("cluster_job_log", b"[]\n", convert_argv("philly", "cluster_job_log")),
    }
    for tag, (name, content, argv) in header_only.items():
        cases.append(cli_case(f"header-only-{tag}", EMPTY, argv, {name: content}, name))
    pai = {"pai_job_table.csv": csv_lines(PAI_JOB_HEADER), "pai_task_table.csv": csv_lines(PAI_TASK_ROW)}
    cases.append(cli_case("header-only-pai", EMPTY, convert_argv("pai", "pai_job_table.csv"), pai, "pai_job_table.csv"))
    cases.append(
        api_case("header-only-read-trace", EMPTY, read_trace_call("t.csv", csv_lines(HEADER)), "t.csv", "no job")
    )
    cases.append(
        api_case("header-only-make-trace", EMPTY, make_with_trace_call("t.csv", csv_lines(HEADER)), "t.csv", "no job")
    )
    # A '#' row after the header.
    for tag, rows in (
        ("middle", (GOOD_ROW, "#1,60,resnet50,64,1000,1,36000", "2,90,resnet50,64,1000,1,36000")),
        ("last", (GOOD_ROW, "# 1,60,resnet50,64,1000,1,36000")),
        ("first", ("#0,0,resnet50,64,1000,1,36000", "1,60,resnet50,64,1000,1,36000")),
    ):
        content = csv_lines(HEADER, *rows)
        cases.append(
            cli_case(
                f"comment-row-{tag}-simulate", EMPTY, simulate_argv("t.csv"), {"t.csv": content}, "t.csv", "row", "#"
            )
        )
        cases.append(
            cli_case(f"comment-row-{tag}-info", EMPTY, info_argv("t.csv"), {"t.csv": content}, "t.csv", "row", "#")
        )
    # Booleans where numbers belong.
    for fld in ("job_id", "submit_s", "batch_size", "total_iters", "num_gpus", "deadline_s"):
        content = csv_lines(HEADER, with_field(GOOD_ROW, HEADER, fld, "True"))
        cases.append(cli_case(f"bool-canonical-{fld}", EMPTY, info_argv("t.csv"), {"t.csv": content}, "t.csv", fld))
    for fld, value in (("num_gpus", True), ("batch_size", False), ("deadline_s", True)):
        content = parquet_bytes(parquet_row(**{fld: value}))
        cases.append(
            cli_case(f"bool-parquet-{fld}", EMPTY, info_argv("t.parquet"), {"t.parquet": content}, "t.parquet", fld)
        )
    cases.append(
        cli_case(
            "bool-elasticflow-num-gpu",
            EMPTY,
            convert_argv("elasticflow", "c.csv"),
            {"c.csv": csv_lines(EF_RAW_HEADER, with_field(EF_RAW_ROW, EF_RAW_HEADER, "num_gpu", "True"))},
            "c.csv",
            "num_gpu",
        )
    )
    cases.append(
        cli_case(
            "bool-helios-gpu-num",
            EMPTY,
            convert_argv("helios", "cluster_log.csv"),
            {"cluster_log.csv": csv_lines(HELIOS_HEADER, with_field(HELIOS_ROW, HELIOS_HEADER, "gpu_num", "true"))},
            "cluster_log.csv",
            "gpu_num",
        )
    )
    cases.append(
        cli_case(
            "bool-gavel-scale-factor",
            EMPTY,
            convert_argv("gavel", "g.trace"),
            {"g.trace": gavel_row(scale_factor="True")},
            "g.trace",
            "scale_factor",
        )
    )
    # Codes out of their domain.
    for value, tag in (("-2", "neg2"), ("-0.5", "neg-half"), ("0", "zero"), ("-1.5", "neg1-5")):
        name = f"slo-{tag}.trace"
        cases.append(
            cli_case(f"gavel-slo-{tag}", EMPTY, convert_argv("gavel", name), {name: gavel_row(SLO=value)}, name, "slo")
        )
    cases.append(
        cli_case(
            "gavel-slo-simulate",
            EMPTY,
            (*simulate_argv("g.trace")[:-2], "--cluster", "gavel-108", "--trace", "g.trace", "--trace-format", "gavel"),
            {"g.trace": gavel_row(SLO="-3")},
            "g.trace",
            "slo",
        )
    )
    for value, tag in (("0", "zero"), ("-1", "neg")):
        name = f"weight-{tag}.trace"
        cases.append(
            cli_case(
                f"gavel-priority-weight-{tag}",
                EMPTY,
                convert_argv("gavel", name),
                {name: gavel_row(priority_weight=value)},
                name,
                "priority_weight",
            )
        )
    cases.append(
        cli_case(
            "elasticflow-num-gpu-zero",
            EMPTY,
            convert_argv("elasticflow", "c.csv"),
            {"c.csv": csv_lines(EF_RAW_HEADER, with_field(EF_RAW_ROW, EF_RAW_HEADER, "num_gpu", "0"))},
            "c.csv",
            "num_gpu",
        )
    )
    cases.append(
        cli_case(
            "pai-gpu-type-unknown",
            EMPTY,
            convert_argv("pai", "pai_job_table.csv"),
            {
                "pai_job_table.csv": csv_lines(PAI_JOB_ROW),
                "pai_task_table.csv": csv_lines(PAI_TASK_ROW.replace("V100", "H100")),
            },
            "pai_task_table.csv",
            "gpu_type",
        )
    )
    # Repeated job ids, which a converter would renumber 0..n-1 unseen.
    dup = {
        "elasticflow": (
            "c.csv",
            csv_lines(EF_RAW_HEADER, EF_RAW_ROW, with_field(EF_RAW_ROW, EF_RAW_HEADER, "submission_time", "60")),
            "job_id",
        ),
        "helios": ("cluster_log.csv", csv_lines(HELIOS_HEADER, HELIOS_ROW, HELIOS_ROW), "job_id"),
        "philly": ("cluster_job_log", json_bytes([philly_job(), philly_job()]), "jobid"),
    }
    for fmt, (name, content, fld) in dup.items():
        cases.append(
            cli_case(f"duplicate-id-{fmt}", EMPTY, convert_argv(fmt, name), {name: content}, name, fld, "duplicate")
        )
    cases.append(
        cli_case(
            "duplicate-id-pai",
            EMPTY,
            convert_argv("pai", "pai_job_table.csv"),
            {"pai_job_table.csv": csv_lines(PAI_JOB_ROW, PAI_JOB_ROW), "pai_task_table.csv": csv_lines(PAI_TASK_ROW)},
            "pai_job_table.csv",
            "job_name",
            "duplicate",
        )
    )
    cases.append(
        cli_case(
            "duplicate-key-philly",
            EMPTY,
            convert_argv("philly", "cluster_job_log"),
            {
                "cluster_job_log": b'[{"jobid": "a", "jobid": "b", "submitted_time": "2017-10-07 01:11:39", '
                b'"attempts": []}]'
            },
            "cluster_job_log",
            "jobid",
        )
    )
    # Keys given twice in a sweep YAML.
    for tag, text in (
        ("top", "name: s\npolicies: [fifo]\npolicies: [srtf]\nseeds: 1\n"),
        ("nested", "name: s\npolicies: [fifo]\nseeds: 1\nsim: {round_s: 60, round_s: 30}\n"),
        ("seeds", "name: s\nseeds: 1\npolicies: [fifo]\nseeds: 2\n"),
    ):
        cases.append(
            cli_case(
                f"sweep-yaml-duplicate-{tag}", EMPTY, ("sweep", "s.yaml"), {"s.yaml": text.encode()}, "s.yaml", "twice"
            )
        )
    return cases


# ------------------------------------------------------------------------------------------------
# Messages that name the wrong thing


def _reset(env_id: str, options: Any) -> Callable[[Path], Any]:
    def call(_: Path) -> Any:
        import gymnasium as gym

        import hetgym  # noqa: F401

        env = gym.make(env_id).unwrapped
        return env.reset(seed=0, options=options)

    return call


def _reset_vector(options: Any) -> Callable[[Path], Any]:
    def call(_: Path) -> Any:
        from hetgym.envs.vector import HetClusterVectorEnv

        env = HetClusterVectorEnv(2, scenario="tiny")
        return env.reset(seed=0, options=options)

    return call


def naming_cases() -> list[Case]:
    cases: list[Case] = []
    # A column named twice.
    dup_headers = {
        "canonical-num-gpus": (
            "t.csv",
            csv_lines(HEADER + ",num_gpus", GOOD_ROW + ",2"),
            info_argv("t.csv"),
            "num_gpus",
        ),
        "canonical-job-id": ("t.csv", csv_lines("job_id," + HEADER, "7," + GOOD_ROW), simulate_argv("t.csv"), "job_id"),
        "elasticflow": (
            "c.csv",
            csv_lines(EF_RAW_HEADER + ",num_gpu", EF_RAW_ROW + ",4"),
            convert_argv("elasticflow", "c.csv"),
            "num_gpu",
        ),
        "helios": (
            "cluster_log.csv",
            csv_lines(HELIOS_HEADER + ",gpu_num", HELIOS_ROW + ",4"),
            convert_argv("helios", "cluster_log.csv"),
            "gpu_num",
        ),
    }
    for tag, (name, content, argv, fld) in dup_headers.items():
        cases.append(cli_case(f"duplicate-column-{tag}", NAMING, argv, {name: content}, name, fld, "twice"))
    cases.append(
        cli_case(
            "duplicate-column-pai",
            NAMING,
            convert_argv("pai", "pai_job_table.csv"),
            {
                "pai_job_table.csv": csv_lines(PAI_JOB_HEADER + ",user", PAI_JOB_ROW + ",u2"),
                "pai_task_table.csv": csv_lines(PAI_TASK_ROW),
            },
            "pai_job_table.csv",
            "user",
            "twice",
        )
    )
    cases.append(
        api_case(
            "duplicate-column-read-trace",
            NAMING,
            read_trace_call("t.csv", csv_lines(HEADER + ",deadline_s", GOOD_ROW + ",1")),
            "deadline_s",
            "twice",
        )
    )
    # A byte-order mark, then a real fault: the message names the fault, not the first column.
    bom = {
        "canonical": (
            "t.csv",
            BOM + csv_lines(HEADER, with_field(GOOD_ROW, HEADER, "num_gpus", "nan")),
            info_argv("t.csv"),
            "num_gpus",
        ),
        "canonical-metadata": (
            "t.csv",
            BOM + csv_lines('# hetgym-trace {"schema_version": 2}', HEADER, GOOD_ROW),
            info_argv("t.csv"),
            "schema_version",
        ),
        "elasticflow": (
            "c.csv",
            BOM + csv_lines(EF_RAW_HEADER, with_field(EF_RAW_ROW, EF_RAW_HEADER, "num_gpu", "nan")),
            convert_argv("elasticflow", "c.csv"),
            "num_gpu",
        ),
        "elasticflow-extended": (
            "c.csv",
            BOM + csv_lines(EF_EXT_HEADER, with_field(EF_EXT_ROW, EF_EXT_HEADER, "deadline", "-5")),
            convert_argv("elasticflow", "c.csv"),
            "deadline",
        ),
        "helios": (
            "cluster_log.csv",
            BOM + csv_lines(HELIOS_HEADER, with_field(HELIOS_ROW, HELIOS_HEADER, "duration", "nan")),
            convert_argv("helios", "cluster_log.csv"),
            "duration",
        ),
        "gavel": ("g.trace", BOM + gavel_row(SLO="-2"), convert_argv("gavel", "g.trace"), "slo"),
        "philly": (
            "cluster_job_log",
            BOM + json_bytes([philly_job(jobid="a"), philly_job(jobid="a")]),
            convert_argv("philly", "cluster_job_log"),
            "jobid",
        ),
    }
    for tag, (name, content, argv, fld) in bom.items():
        cases.append(cli_case(f"bom-{tag}", NAMING, argv, {name: content}, name, fld))
    cases.append(
        cli_case(
            "bom-pai-header",
            NAMING,
            convert_argv("pai", "pai_job_table.csv"),
            {
                "pai_job_table.csv": BOM
                + csv_lines(PAI_JOB_HEADER, with_field(PAI_JOB_ROW, PAI_JOB_HEADER, "start_time", "nan")),
                "pai_task_table.csv": csv_lines(PAI_TASK_ROW),
            },
            "pai_job_table.csv",
            "start_time",
        )
    )
    cases.append(
        cli_case(
            "bom-pai-task",
            NAMING,
            convert_argv("pai", "pai_job_table.csv"),
            {
                "pai_job_table.csv": csv_lines(PAI_JOB_ROW),
                "pai_task_table.csv": BOM + csv_lines(PAI_TASK_ROW.replace("400.0", "NA").replace("50.0", "nan")),
            },
            "pai_task_table.csv",
            "plan_gpu",
        )
    )
    # A batch far outside the measured range: blamed on batch_size, not total_iters.
    for value, tag in (("100000000000000000000", "1e20"), ("1e15", "1e15")):
        content = csv_lines(HEADER, with_field(GOOD_ROW, HEADER, "batch_size", value))
        cases.append(
            cli_case(
                f"batch-size-{tag}-simulate", NAMING, simulate_argv("t.csv"), {"t.csv": content}, "t.csv", "batch_size"
            )
        )
    # env.reset options of the wrong kind.
    resets: dict[str, Any] = {
        "string": "x",
        "list": ["jobs"],
        "seed-text": {"workload_seed": "3"},
        "seed-float": {"workload_seed": 1.5},
        "seed-negative": {"workload_seed": -1},
        "seed-bool": {"workload_seed": True},
        "seed-nan": {"workload_seed": float("nan")},
        "jobs-text": {"jobs": "abc"},
        "jobs-empty": {"jobs": []},
        "jobs-ints": {"jobs": [1, 2]},
    }
    for tag, options in resets.items():
        expect = "workload_seed" if tag.startswith("seed") else "jobs" if tag.startswith("jobs") else "options"
        cases.append(api_case(f"reset-{tag}", NAMING, _reset("HetCluster-Tiny-v1", options), expect))
    for tag in ("string", "seed-float", "jobs-ints"):
        options = resets[tag]
        expect = "workload_seed" if tag.startswith("seed") else "jobs" if tag.startswith("jobs") else "options"
        cases.append(api_case(f"reset-events-{tag}", NAMING, _reset("HetClusterEvents-Tiny-v0", options), expect))
    cases.append(api_case("reset-vector-string", NAMING, _reset_vector("x"), "options"))
    # A damaged result file: `hetgym report` names it.
    compare_runs = b"policy,seed,dsr\nfifo,0,0.5\n"
    reports = {
        "summary-truncated": ({"summary.json": b'{"config": {"a": 1', "runs.csv": compare_runs}, "summary.json"),
        "summary-list": ({"summary.json": b"[1, 2]", "runs.csv": compare_runs}, "summary.json"),
        "summary-csv-garbage": (
            {"summary.json": b"{}", "runs.csv": compare_runs, "summary.csv": b'a,b\n"unterminated\n'},
            "summary.csv",
        ),
        "evaluation-not-utf8": ({"evaluation.csv": b"kind,dsr\n\xff\xfe,0.5\n"}, "evaluation.csv"),
        "sweep-json-truncated": ({"results.csv": b"run_id,status\na,ok\n", "sweep.json": b'{"name": '}, "sweep.json"),
        "sweep-parquet-truncated": ({"results.parquet": b"PAR1\x00\x00"}, "results.parquet"),
    }
    for tag, (files, fname) in reports.items():
        prefixed = {f"res/{k}": v for k, v in files.items()}
        cases.append(
            Case(
                id=f"report-{tag}",
                category=NAMING,
                argv=("report", "res"),
                files=prefixed,
                expect=(fname,),
            )
        )
    return cases


def input_cases() -> list[Case]:
    """Every case of this module, in a fixed order."""
    return [*empty_or_else_cases(), *naming_cases()]
