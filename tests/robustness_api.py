"""Robustness corpus cases (see tests/robustness_corpus.py) of files that would run code when read (model
files and sweep configs, on the command line and through the API) and of the Python API's settings and actions
(``gym.make``, ``env.step``, ``SimConfig``).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from robustness_corpus import Case

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
