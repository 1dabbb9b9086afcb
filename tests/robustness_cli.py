"""Robustness corpus cases of the command line (see tests/robustness_corpus.py): settings given on the command
line, malformed canonical and Gavel traces, and output paths that would overwrite a source or are checked too late.
"""

from __future__ import annotations

import io
import json

from robustness_corpus import GOOD_ROW, HEADER, Case

GOOD_ROW2 = "1,60,resnet50,64,1000,1,36000"


def _csv(*rows: str, header: str = HEADER) -> bytes:
    return ("\n".join([header, *rows]) + "\n").encode()


# ------------------------------------------------------------------------------------------------
# Settings given on the command line


_SETTINGS: dict[str, tuple[tuple[str, str], ...]] = {
    # flag: (value, why it is wrong)
    "--restart-penalty-s": (("inf", "inf"), ("nan", "nan"), ("-1", "neg"), ("abc", "text")),
    "--round-s": (("1e-9", "tiny"), ("0", "zero"), ("-60", "neg"), ("inf", "inf"), ("nan", "nan")),
    "--max-time-s": (("nan", "nan"), ("-5", "neg"), ("0", "zero")),
    "--utilisation": (("0", "zero"), ("-0.5", "neg"), ("nan", "nan"), ("inf", "inf")),
    "--max-gpus-per-job": (("0", "zero"), ("-3", "neg"), ("1.5", "frac"), ("nan", "nan")),
    "--num-jobs": (("0", "zero"), ("-1", "neg"), ("1.5", "frac"), ("abc", "text")),
    "--arrival-rate-per-h": (("0", "zero"), ("-1", "neg"), ("nan", "nan"), ("inf", "inf")),
    "--tightness": (("-1", "neg"), ("nan", "nan"), ("inf", "inf")),
    "--seed": (("abc", "text"), ("1.5", "frac")),
}


def _setting_name(flag: str) -> str:
    """The words a message must name: ``--round-s`` -> ``round``."""
    return flag.lstrip("-").split("-")[0]


def setting_cases() -> list[Case]:
    cases = []
    for flag, values in _SETTINGS.items():
        for value, why in values:
            name = _setting_name(flag)
            cases.append(
                Case(
                    id=f"simulate{flag}-{why}",
                    category="setting (CLI)",
                    argv=("simulate", "--scenario", "tiny", "--policy", "fifo", "--no-progress", flag, value),
                    expect=(name,),
                )
            )
    # The same settings through `compare` (the shared config dataclasses, not one command's parser).
    for flag, value in (
        ("--restart-penalty-s", "inf"),
        ("--round-s", "1e-9"),
        ("--utilisation", "0"),
        ("--max-time-s", "nan"),
        ("--max-gpus-per-job", "-3"),
    ):
        cases.append(
            Case(
                id=f"compare{flag}-{value}",
                category="setting (CLI)",
                argv=(
                    "compare",
                    "--scenario",
                    "tiny",
                    "--policies",
                    "fifo",
                    "--seeds",
                    "0",
                    "--no-plots",
                    "--no-progress",
                    "--out",
                    "out",
                    flag,
                    value,
                ),
                expect=(_setting_name(flag),),
            )
        )
    names = (
        ("--policy", "fifoo", "fifoo"),
        ("--cluster", "nosuch", "nosuch"),
        ("--scenario", "nosuch", "nosuch"),
        ("--recipe", "nosuch", "nosuch"),
        ("--deadline", "nosuch", "nosuch"),
    )
    for flag, value, expect in names:
        argv = ["simulate", "--no-progress", "--scenario", "tiny", "--policy", "fifo", flag, value]
        cases.append(Case(id=f"simulate{flag}-unknown", category="name (CLI)", argv=tuple(argv), expect=(expect,)))
    for knob, expect in (("srtf:type_choise=order", "type_choise"), ("srtf:type_choice=nosuch", "nosuch")):
        cases.append(
            Case(
                id=f"compare-knob-{expect}",
                category="name (CLI)",
                argv=(
                    "compare",
                    "--scenario",
                    "tiny",
                    "--policies",
                    "srtf",
                    "--seeds",
                    "0",
                    "--no-plots",
                    "--no-progress",
                    "--out",
                    "out",
                    "-P",
                    knob,
                ),
                expect=(expect,),
            )
        )
    cases.append(
        Case(
            id="compare-policies-unknown",
            category="name (CLI)",
            argv=(
                "compare",
                "--scenario",
                "tiny",
                "--policies",
                "fifo,nosuch",
                "--seeds",
                "0",
                "--no-plots",
                "--no-progress",
                "--out",
                "out",
            ),
            expect=("nosuch",),
        )
    )
    return cases


# ------------------------------------------------------------------------------------------------
# Malformed canonical traces, each read by two entry points


def _trace_files() -> dict[str, tuple[bytes, tuple[str, ...]]]:
    """name -> (content, words the message must contain besides the file name)."""
    traces: dict[str, tuple[bytes, tuple[str, ...]]] = {
        "unknown-column": (
            _csv("0,0,resnet50,64,1000,1,36000", header=HEADER.replace("deadline_s", "deadline")),
            ("deadline",),
        ),
        "empty-file": (b"", ()),
        "header-only-no-required": (b"foo,bar\n1,2\n", ("job_id",)),
        "binary-garbage": (bytes(range(256)) * 4, ()),
        "total-iters-1e300": (_csv("0,0,resnet50,64,1e300,1,36000"), ("total_iters",)),
        "total-iters-nan": (_csv("0,0,resnet50,64,nan,1,36000"), ("total_iters",)),
        "total-iters-inf": (_csv("0,0,resnet50,64,inf,1,36000"), ("total_iters",)),
        "total-iters-negative": (_csv("0,0,resnet50,64,-5,1,36000"), ("total_iters",)),
        "total-iters-zero": (_csv("0,0,resnet50,64,0,1,36000"), ("total_iters",)),
        "total-iters-text": (_csv("0,0,resnet50,64,abc,1,36000"), ("total_iters",)),
        "num-gpus-zero": (_csv("0,0,resnet50,64,1000,0,36000"), ("num_gpus",)),
        "num-gpus-negative": (_csv("0,0,resnet50,64,1000,-2,36000"), ("num_gpus",)),
        "num-gpus-fraction": (_csv("0,0,resnet50,64,1000,1.5,36000"), ("num_gpus",)),
        "num-gpus-over-cluster": (_csv(GOOD_ROW, "1,60,resnet50,64,1000,65,36000"), ("num_gpus",)),
        "num-gpus-1e20": (_csv("0,0,resnet50,64,1000,1e20,36000"), ("num_gpus",)),
        "job-id-1e30": (_csv("1e30,0,resnet50,64,1000,1,36000"), ("job_id",)),
        "job-id-duplicate": (_csv(GOOD_ROW, "0,60,resnet50,64,1000,1,36000"), ("job_id",)),
        "job-id-negative": (_csv("-1,0,resnet50,64,1000,1,36000"), ("job_id",)),
        "submit-negative": (_csv("0,-10,resnet50,64,1000,1,36000"), ("submit_s",)),
        "submit-nan": (_csv("0,nan,resnet50,64,1000,1,36000"), ("submit_s",)),
        "submit-inf": (_csv("0,inf,resnet50,64,1000,1,36000"), ("submit_s",)),
        "batch-size-zero": (_csv("0,0,resnet50,0,1000,1,36000"), ("batch_size",)),
        "job-type-unknown": (_csv("0,0,nosuchmodel,64,1000,1,36000"), ("nosuchmodel",)),
        "deadline-nan-text": (_csv("0,0,resnet50,64,1000,1,soon"), ("deadline_s",)),
        "deadline-before-submit": (_csv("0,100,resnet50,64,1000,1,50"), ("deadline_s",)),
        "missing-field": (_csv("0,0,resnet50,64,1000"), ()),
        "extra-field": (_csv("0,0,resnet50,64,1000,1,36000,7"), ()),
        "min-over-max": (
            _csv("0,0,resnet50,64,1000,2,36000,4,2", header=HEADER + ",min_gpus,max_gpus"),
            ("min_gpus",),
        ),
        "max-gpus-zero": (_csv("0,0,resnet50,64,1000,1,36000,0", header=HEADER + ",max_gpus"), ("max_gpus",)),
        "gpu-types-unknown": (_csv("0,0,resnet50,64,1000,1,36000,h999", header=HEADER + ",gpu_types"), ("h999",)),
        "huge-field": (_csv("0,0,resnet50,64,1000,1,36000," + "x" * 3_000_000, header=HEADER + ",user"), ()),
        "metadata-not-json": (b"# hetgym-trace {not json\n" + _csv(GOOD_ROW), ()),
        "metadata-list": (b"# hetgym-trace [1, 2]\n" + _csv(GOOD_ROW), ()),
        "not-utf8": (_csv("0,0,resnet50,64,1000,1,36000").replace(b"resnet50", b"res\xffnet"), ()),
    }
    return traces


#: Rows that are well formed but can never run on the cluster they are simulated on.
_CLUSTER_RELATIVE = frozenset({"total-iters-1e300", "num-gpus-over-cluster", "num-gpus-1e20"})


def trace_cases() -> list[Case]:
    cases = []
    for name, (content, words) in _trace_files().items():
        fname = f"{name}.csv"
        files = {fname: content}
        expect = (fname, *words)
        cases.append(
            Case(
                id=f"trace-simulate-{name}",
                category="trace file",
                argv=("simulate", "--policy", "fifo", "--cluster", "default", "--no-progress", "--trace", fname),
                files=files,
                expect=expect,
            )
        )
        if name in _CLUSTER_RELATIVE:
            continue  # valid until a cluster is named: `trace info` describes it, `simulate` refuses it
        cases.append(
            Case(
                id=f"trace-info-{name}",
                category="trace file",
                argv=("trace", "info", fname),
                files=files,
                expect=expect,
            )
        )
    # Tick-based policy on work that can never finish in time: must stop, not spin.
    cases.append(
        Case(
            id="trace-tiresias-total-iters-1e300",
            category="trace file",
            argv=("simulate", "--policy", "tiresias", "--cluster", "default", "--no-progress", "--trace", "t.csv"),
            files={"t.csv": _csv("0,0,resnet50,64,1e300,1,36000")},
            expect=("t.csv", "total_iters"),
        )
    )
    cases.append(
        Case(
            id="trace-missing-file",
            category="trace file",
            argv=("simulate", "--policy", "fifo", "--no-progress", "--trace", "absent.csv"),
            expect=("absent.csv",),
        )
    )
    cases.append(_parquet_metadata_list_case())
    cases.extend(_gavel_cases())
    return cases


def _parquet_metadata_list_case() -> Case:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "job_id": [0],
            "submit_s": [0.0],
            "job_type": ["resnet50"],
            "batch_size": [64],
            "total_iters": [1000.0],
            "num_gpus": [1],
        }
    )
    table = table.replace_schema_metadata({b"hetgym": json.dumps([1, 2]).encode()})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return Case(
        id="trace-parquet-metadata-list",
        category="trace file",
        argv=("trace", "info", "meta.parquet"),
        files={"meta.parquet": buf.getvalue()},
        expect=("meta.parquet", "metadata"),
    )


_GAVEL_ROW = [
    "ResNet-50 (batch size 64)",
    "python3 main.py",
    "image_classification",
    "--num_steps",
    "1",
    "1000",
    "1",
    "1",
    "-1.000000",
    "0",
]


def _gavel_cases() -> list[Case]:
    def row(**changes: str) -> bytes:
        fields = list(_GAVEL_ROW)
        index = {"total_steps": 5, "scale_factor": 6, "priority_weight": 7, "slo": 8, "arrival_time": 9}
        for key, value in changes.items():
            fields[index[key]] = value
        return ("\t".join(fields) + "\n").encode()

    variants: dict[str, tuple[bytes, tuple[str, ...]]] = {
        # scale_factor is Gavel's GPU count: the canonical job asks for 1e6 GPUs, more than any cluster here.
        "scale-factor-1e6": (row(scale_factor="1000000"), ("num_gpus",)),
        "scale-factor-zero": (row(scale_factor="0"), ("scale_factor",)),
        "total-steps-negative": (row(total_steps="-5"), ("total_steps",)),
        "total-steps-text": (row(total_steps="many"), ("total_steps",)),
        "arrival-nan": (row(arrival_time="nan"), ("arrival_time",)),
        "arrival-negative": (row(arrival_time="-3"), ("arrival_time",)),
        "three-columns": (b"a\tb\tc\n", ("column",)),
        "unknown-model": (("\t".join(["Nosuch (batch size 64)", *_GAVEL_ROW[1:]]) + "\n").encode(), ("nosuch",)),
    }
    cases = []
    for name, (content, words) in variants.items():
        fname = f"{name}.trace"
        cases.append(
            Case(
                id=f"gavel-simulate-{name}",
                category="trace file (gavel)",
                argv=(
                    "simulate",
                    "--policy",
                    "fifo",
                    "--cluster",
                    "gavel-108",
                    "--no-progress",
                    "--trace",
                    fname,
                    "--trace-format",
                    "gavel",
                ),
                files={fname: content},
                expect=(fname, *words),
            )
        )
        if name == "scale-factor-1e6":
            continue  # converting needs no cluster; `trace convert --max-gpus` caps it on request
        cases.append(
            Case(
                id=f"gavel-convert-{name}",
                category="trace file (gavel)",
                argv=("trace", "convert", fname, "--format", "gavel", "--out", "out.csv"),
                files={fname: content},
                expect=(fname, *words),
            )
        )
    return cases


# ------------------------------------------------------------------------------------------------
# Outputs: never overwrite a source, check --out before any work, nothing left on failure


def output_cases() -> list[Case]:
    good = _csv(GOOD_ROW, GOOD_ROW2)
    return [
        Case(
            id="convert-out-is-source",
            category="output",
            argv=("trace", "convert", "src.csv", "--format", "elasticflow", "--out", "src.csv"),
            files={"src.csv": good},
            expect=("src.csv",),
        ),
        Case(
            id="sample-out-exists",
            category="output",
            argv=("trace", "sample", "--out", "taken.csv"),
            files={"taken.csv": b"keep me\n"},
            expect=("taken.csv",),
        ),
        Case(
            id="compare-out-is-a-file",
            category="output",
            argv=(
                "compare",
                "--scenario",
                "tiny",
                "--policies",
                "fifo",
                "--seeds",
                "0",
                "--no-plots",
                "--no-progress",
                "--out",
                "taken",
            ),
            files={"taken": b"keep me\n"},
            expect=("taken",),
        ),
        Case(
            id="simulate-out-is-a-file",
            category="output",
            argv=("simulate", "--scenario", "tiny", "--policy", "fifo", "--no-progress", "--out", "taken"),
            files={"taken": b"keep me\n"},
            expect=("taken",),
        ),
        Case(
            id="compare-every-run-fails",
            category="output",
            argv=(
                "compare",
                "--policies",
                "fifo",
                "--seeds",
                "0",
                "--no-plots",
                "--no-progress",
                "--out",
                "out",
                "--cluster",
                "default",
                "--trace",
                "big.csv",
            ),
            files={"big.csv": _csv("0,0,resnet50,64,1000,65,36000")},
            expect=("big.csv",),
        ),
    ]
