"""The robustness corpus: bad settings, malformed traces, misused outputs, env misuse and files that would run
code when read, each a case.

Every case is generated here (no stored files) and states what a user must get back:

* a CLI case runs ``hetgym ARGV`` in a fresh directory holding the case's input files and expects a
  non-zero exit, no traceback, exactly one ``hetgym COMMAND: error:`` line on stderr that names what is
  wrong (``expect``: lower-case substrings that line must contain, e.g. the setting, the file, the row),
  no file created and no input file changed;
* an API case calls the Python API and expects a ``ValueError``/``KeyError``/``HetgymError`` whose message
  contains ``expect``, and never another exception type (``TypeError``, ``ZeroDivisionError``,
  ``OverflowError``, ``AttributeError`` are tracebacks in a user's script).

Both must finish within :data:`CASE_TIMEOUT_S`: a case that runs longer is a hang.
The cases of size settings and of output folders live in ``tests/robustness_sizes.py``.
``tests/cli/test_robustness_corpus.py`` runs every case; ``scripts/robustness.py`` runs them and writes the
table of docs/results/robustness.md.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Seconds after which a case counts as a hang.
CASE_TIMEOUT_S = 60.0

HEADER = "job_id,submit_s,job_type,batch_size,total_iters,num_gpus,deadline_s"
GOOD_ROW = "0,0,resnet50,64,1000,1,36000"
GOOD_ROW2 = "1,60,resnet50,64,1000,1,36000"


@dataclass(frozen=True)
class Case:
    """One corpus case (see the module docstring)."""

    id: str
    category: str
    expect: tuple[str, ...]
    argv: tuple[str, ...] = ()
    files: dict[str, bytes] = field(default_factory=dict)
    api: Callable[[Path], Any] | None = None
    #: Files the case may legitimately leave (none by default).
    allowed_outputs: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return "api" if self.api is not None else "cli"


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


# ------------------------------------------------------------------------------------------------
# Code from data: model files and sweep configs that would run code when read

#: The file a crafted input's code writes when it runs (a case fails with "output left" if it appears).
MARKER = "pwned.txt"
#: Python that writes :data:`MARKER` in the working directory.
MARKER_CODE = f"open({MARKER!r}, 'w').write('code from data ran')"


class _RunsCode:
    """Pickles as a call of ``exec(code)``: unpickling it runs ``code`` (the classic crafted pickle)."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self) -> tuple[Any, ...]:
        return (exec, (self.code,))


def crafted_sb3_zip(code: str = MARKER_CODE, base: bytes | None = None) -> bytes:
    """An SB3 ``.zip`` archive whose ``data`` entry carries a pickle that runs ``code`` when SB3 loads it.

    ``base``: a real archive to add the entry to (it then still loads as that model once trusted); by
    default an archive holding only the crafted entry.
    """
    import base64
    import pickle
    import zipfile

    payload = {":type:": "<class 'builtins.NoneType'>", ":serialized:": base64.b64encode(pickle.dumps(_RunsCode(code)))}
    data: dict[str, Any] = {}
    entries: dict[str, bytes] = {}
    if base is not None:
        with zipfile.ZipFile(io.BytesIO(base)) as source:
            entries = {name: source.read(name) for name in source.namelist()}
        data = json.loads(entries["data"])
    data["crafted"] = {**payload, ":serialized:": payload[":serialized:"].decode()}
    entries["data"] = json.dumps(data).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return out.getvalue()


#: The ``agent.json`` of the crafted run folders (what ``hetgym train`` writes, without the network).
_AGENT_JSON = json.dumps(
    {"env_id": "HetCluster-Tiny-v1", "env_kwargs": {}, "teacher": None, "recipe": "bc", "algo": "maskable-ppo",
     "arch": "mlp", "seed": 0, "args": {}, "results": {}}
).encode()  # fmt: skip

_EVALUATE = ("--experts", "none", "--seeds", "1000", "--no-plots", "--no-progress", "--out", "out")


def _crafted_weights(workdir: Path) -> Any:
    """``load_agent`` of a ``model.pt`` that is a crafted pickle (not tensors); refused, the code not run."""
    import torch

    from agents.common import load_agent

    torch.save({"weights": _RunsCode(MARKER_CODE)}, workdir / "model.pt")
    (workdir / "agent.json").write_bytes(
        json.dumps({**json.loads(_AGENT_JSON), "model": {"format": "hetgym-agent/1"}}).encode()
    )
    try:
        return load_agent(workdir)
    finally:
        if (workdir / MARKER).exists():
            raise RuntimeError(f"loading the weights ran the code in the file ({MARKER} written)")


def code_from_data_cases() -> list[Case]:
    zip_words = ("pickle", "--trust-pickle")
    marker_py = f"{MARKER_CODE}\n".encode()
    sweep = b"policies: [fifo]\nscenarios: [tiny]\nworkload: {num_jobs: 0}\n"
    return [
        Case(
            id="evaluate-crafted-zip",
            category="code from data",
            argv=("evaluate", "model.zip", *_EVALUATE),
            files={"model.zip": crafted_sb3_zip(), "agent.json": _AGENT_JSON},
            expect=zip_words,
        ),
        Case(
            id="evaluate-crafted-zip-in-run-folder",
            category="code from data",
            argv=("evaluate", "run", *_EVALUATE),
            files={"run/model.zip": crafted_sb3_zip(), "run/agent.json": _AGENT_JSON},
            expect=zip_words,
        ),
        Case(
            id="evaluate-crafted-zip-external",
            category="code from data",
            argv=("evaluate", "evil.zip", "--algo", "maskable-ppo", "--env-id", "HetCluster-Tiny-v1", *_EVALUATE),
            files={"evil.zip": crafted_sb3_zip()},
            expect=zip_words,
        ),
        Case(
            id="train-init-crafted-zip",
            category="code from data",
            argv=("train", "--algo", "ppo", "--smoke", "--init", "run/model.zip", "--out-dir", "out", "--no-progress"),
            files={"run/model.zip": crafted_sb3_zip(), "run/agent.json": _AGENT_JSON},
            expect=zip_words,
        ),
        Case(
            id="load-agent-crafted-weights",
            category="code from data",
            api=_crafted_weights,
            expect=("weights",),
        ),
        Case(
            id="sweep-dry-run-imports-file",
            category="code from data",
            argv=("sweep", "sweep.yaml", "--dry-run"),
            files={"sweep.yaml": sweep + b"imports: [marker.py]\n", "marker.py": marker_py},
            expect=("num_jobs",),
        ),
        Case(
            id="sweep-dry-run-import-flag",
            category="code from data",
            argv=("sweep", "sweep.yaml", "--dry-run", "--import", "marker.py"),
            files={"sweep.yaml": sweep, "marker.py": marker_py},
            expect=("num_jobs",),
        ),
    ]


# ------------------------------------------------------------------------------------------------
# The Python API: gym.make settings and actions


def _make(**kwargs: Any) -> Callable[[Path], Any]:
    def call(_: Path) -> Any:
        import gymnasium as gym

        import hetgym  # noqa: F401

        return gym.make("HetCluster-Tiny-v1", **kwargs)

    return call


def _step_with(action: Any, **kwargs: Any) -> Callable[[Path], Any]:
    def call(_: Path) -> Any:
        import gymnasium as gym

        import hetgym  # noqa: F401

        env = gym.make("HetCluster-Tiny-v1", **kwargs).unwrapped
        env.reset(seed=0)
        return env.step(action)

    return call


def _simulate(**sim: Any) -> Callable[[Path], Any]:
    def call(_: Path) -> Any:
        from hetgym.sim import SimConfig

        return SimConfig(**sim)

    return call


class _Opaque:
    """An object that is no action (its repr is fixed, so the page of results is the same run to run)."""

    def __repr__(self) -> str:
        return "<opaque>"


def api_cases() -> list[Case]:
    import numpy as np

    nan, inf = float("nan"), float("inf")
    make_cases: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
        "unknown-key": ({"queue_slot": 4}, ("queue_slot",)),
        "queue-slots-zero": ({"queue_slots": 0}, ("queue_slots",)),
        "queue-slots-negative": ({"queue_slots": -1}, ("queue_slots",)),
        "queue-slots-text": ({"queue_slots": "a"}, ("queue_slots",)),
        "queue-slots-nan": ({"queue_slots": nan}, ("queue_slots",)),
        "time-scale-zero": ({"time_scale_s": 0}, ("time_scale_s",)),
        "time-scale-nan": ({"time_scale_s": nan}, ("time_scale_s",)),
        "codec-unknown": ({"codec": "nosuch"}, ("nosuch",)),
        "reward-unknown": ({"reward": "nosuch"}, ("nosuch",)),
        "observation-unknown": ({"observation": "nosuch"}, ("nosuch",)),
        "scenario-unknown": ({"scenario": "nosuch"}, ("nosuch",)),
        "sim-penalty-inf": ({"sim": {"restart_penalty_s": inf}}, ("restart_penalty_s",)),
        "sim-round-tiny": ({"sim": {"round_s": 1e-9}}, ("round_s",)),
        "sim-round-nan": ({"sim": {"round_s": nan}}, ("round_s",)),
        "sim-max-time-negative": ({"sim": {"max_time_s": -5}}, ("max_time_s",)),
        "sim-unknown-key": ({"sim": {"round": 60}}, ("round",)),
        "workload-num-jobs-text": ({"workload": {"num_jobs": "50"}}, ("num_jobs",)),
        "workload-num-jobs-zero": ({"workload": {"num_jobs": 0}}, ("num_jobs",)),
        "workload-unknown-key": ({"workload": {"num_job": 5}}, ("num_job",)),
        "workload-max-gpus-negative": ({"workload": {"max_gpus_per_job": -3}}, ("max_gpus_per_job",)),
        "invalid-penalty-nan": ({"invalid_action_penalty": nan}, ("invalid_action_penalty",)),
    }
    cases = [
        Case(id=f"make-{name}", category="env settings (API)", api=_make(**kw), expect=words)
        for name, (kw, words) in make_cases.items()
    ]
    actions: dict[str, tuple[Any, dict[str, Any]]] = {
        "nan": (nan, {}),
        "inf": (inf, {}),
        "text": ("a", {}),
        "negative": (-1, {}),
        "too-large": (10**6, {}),
        "float-array": (np.array([0.5]), {}),
        "object-array": (np.array([_Opaque()], dtype=object), {}),
        "multidiscrete-text": ("abc", {"codec": "multidiscrete"}),
        "multidiscrete-object": (np.array([None] * 3, dtype=object), {"codec": "multidiscrete"}),
        "multidiscrete-wrong-shape": (np.zeros(3, dtype=np.int64), {"codec": "multidiscrete"}),
        "multidiscrete-nan": (np.full(4, nan), {"codec": "multidiscrete"}),
    }
    for name, (action, kw) in actions.items():
        cases.append(
            Case(id=f"step-{name}", category="env action (API)", api=_step_with(action, **kw), expect=("action",))
        )
    sims: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
        "penalty-inf": ({"restart_penalty_s": inf}, ("restart_penalty_s",)),
        "penalty-negative": ({"restart_penalty_s": -1.0}, ("restart_penalty_s",)),
        "round-tiny": ({"round_s": 1e-9}, ("round_s",)),
        "round-inf": ({"round_s": inf}, ("round_s",)),
        "max-time-nan": ({"max_time_s": nan}, ("max_time_s",)),
        "max-time-zero": ({"max_time_s": 0.0}, ("max_time_s",)),
    }
    for name, (kw, words) in sims.items():
        cases.append(Case(id=f"simconfig-{name}", category="sim settings (API)", api=_simulate(**kw), expect=words))
    return cases


def _sibling(name: str) -> Any:
    """The corpus module ``tests/NAME.py``, loaded by file location like this one (see scripts/robustness.py)."""
    import importlib.util
    import sys

    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def build_corpus() -> list[Case]:
    """Every case, in a fixed order (ids are unique)."""
    readers = _sibling("robustness_readers").reader_cases()  # before robustness_inputs, which imports it
    inputs = _sibling("robustness_inputs").input_cases()
    sizes = _sibling("robustness_sizes")
    cases = [*setting_cases(), *trace_cases(), *output_cases(), *sizes.output_cases(), *api_cases()]
    cases += [*code_from_data_cases(), *readers, *inputs, *sizes.size_cases()]
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "corpus case ids must be unique"
    return cases


# ------------------------------------------------------------------------------------------------
# Running a case


@dataclass
class Outcome:
    """What a case gave back; ``verdict`` is ``"ok"`` or what went wrong."""

    case_id: str
    verdict: str
    exit_code: int | None
    message: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"


#: The one line a CLI error must print on stderr: ``hetgym COMMAND: error: ...`` (argparse's form too).
_ERROR_LINE = re.compile(r"^hetgym( [\w-]+)*: error: ")


class _Hang(Exception):
    """Raised by the alarm when a case runs past :data:`CASE_TIMEOUT_S`."""


ACCEPTED_ERRORS: tuple[type[BaseException], ...] = (ValueError, KeyError, LookupError)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run_case(case: Case, workdir: Path, timeout_s: float = CASE_TIMEOUT_S) -> Outcome:
    """Run ``case`` in the empty directory ``workdir`` (in this process) and judge it."""
    import contextlib
    import os
    import signal
    import time

    from hetgym.sim.errors import HetgymError

    for name, content in case.files.items():
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).write_bytes(content)
    before = _snapshot(workdir)

    def on_alarm(signum: int, frame: Any) -> None:
        raise _Hang

    old_handler = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    cwd = os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    code: int | None = None
    raised: BaseException | None = None
    try:
        os.chdir(workdir)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            if case.api is not None:
                case.api(workdir)
            else:
                from hetgym.cli import main

                code = main(list(case.argv))
    except _Hang:
        return Outcome(case.id, "hang", None, f"still running after {timeout_s:.0f} s", time.perf_counter() - t0)
    except SystemExit as exc:  # argparse's errors
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:
        raised = exc
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        os.chdir(cwd)
    seconds = time.perf_counter() - t0
    if case.api is not None:
        if raised is None:
            return Outcome(case.id, "accepted silently", None, "no error raised", seconds)
        message = str(raised.args[0]) if isinstance(raised, KeyError) and raised.args else str(raised)
        if not isinstance(raised, (*ACCEPTED_ERRORS, HetgymError)):
            return Outcome(case.id, f"traceback ({type(raised).__name__})", None, message, seconds)
        missing = [w for w in case.expect if w.lower() not in message.lower()]
        verdict = "ok" if not missing else f"message lacks {missing}"
        return Outcome(case.id, verdict, None, message.splitlines()[0] if message else "", seconds)
    text = out.getvalue() + err.getvalue()
    if raised is not None:
        return Outcome(case.id, f"traceback ({type(raised).__name__})", None, str(raised)[:300], seconds)
    after = _snapshot(workdir)
    changed = [n for n in before if after.get(n) != before[n]]
    created = [n for n in after if n not in before and n not in case.allowed_outputs]
    errors = [line.strip() for line in err.getvalue().splitlines() if _ERROR_LINE.match(line)]
    message = errors[-1] if errors else ""
    if "Traceback" in text:
        verdict = "traceback (printed)"
    elif code == 0 or code is None:
        verdict = "accepted silently"
    elif changed:
        verdict = f"input changed: {changed}"
    elif created:
        verdict = f"output left: {created[:3]}"
    elif len(errors) != 1:
        verdict = f"{len(errors)} error lines"
    else:
        missing = [w for w in case.expect if w.lower() not in message.lower()]
        verdict = "ok" if not missing else f"message lacks {missing}"
    return Outcome(case.id, verdict, code, message, seconds)
