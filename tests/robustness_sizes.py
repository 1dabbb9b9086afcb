"""Robustness corpus cases of size settings and of output folders (part of tests/robustness_corpus.py).

* ``size (CLI)`` / ``size (API)``: every size setting (jobs, window slots, sub-environments, seeds, runs
  of a grid or a comparison, cluster scales, workers) at 10^6 to 10^9 must answer at once with an error
  that names the setting and its bound, never start building what it asks for;
* ``output``: ``--out`` naming no new folder, or one that cannot be written, and a sweep name that is not
  one plain folder name (on the command line and in the sweep file) must fail before anything is written.

A full disk or file-size limit and two runs claiming one ``--out`` at once cannot run in this process;
``tests/cli/test_out_claims.py`` covers them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from robustness_corpus import Case

from hetgym.limits import (
    MAX_CLUSTER_SERVERS,
    MAX_DRAWN_JOBS,
    MAX_NUM_ENVS,
    MAX_QUEUE_SLOTS,
    MAX_RUNS,
)

#: The sizes every size setting is tried at.
SIZES: tuple[int, ...] = (10**6, 10**7, 10**8, 10**9)

_COMPARE = ("compare", "--scenario", "tiny", "--policies", "fifo", "--no-plots", "--no-progress")
_SWEEP = ("sweep", "--policies", "fifo", "--scenarios", "tiny", "--no-progress")


def _bound(number: int) -> str:
    """How a message writes ``number`` (plain or with thousands separators)."""
    return f"{number:,}"


def _cli_size_cases() -> list[Case]:
    cases = []
    for n in SIZES:
        e = f"1e{len(str(n)) - 1}"
        plain = (str(MAX_DRAWN_JOBS),)
        cases += [
            Case(
                id=f"simulate--num-jobs-{e}",
                category="size (CLI)",
                argv=("simulate", "--scenario", "tiny", "--policy", "fifo", "--no-progress", "--num-jobs", str(n)),
                expect=("--num-jobs", *plain),
            ),
            Case(
                id=f"compare--num-jobs-{e}",
                category="size (CLI)",
                argv=(*_COMPARE, "--seeds", "0", "--out", "out", "--num-jobs", str(n)),
                expect=("--num-jobs", *plain),
            ),
            Case(
                id=f"trace-sample--num-jobs-{e}",
                category="size (CLI)",
                argv=("trace", "sample", "--num-jobs", str(n), "--out", "s.csv"),
                expect=("--num-jobs", *plain),
            ),
            Case(
                id=f"sweep--set-num-jobs-{e}",
                category="size (CLI)",
                argv=(*_SWEEP, "--dry-run", "--set", f"workload.num_jobs={n}"),
                expect=("num_jobs", *plain),
            ),
            Case(
                id=f"sweep--seeds-count-{e}",
                category="size (CLI)",
                argv=(*_SWEEP, "--dry-run", "--seeds", str(n)),
                expect=("seeds", _bound(MAX_RUNS)),
            ),
            Case(
                id=f"sweep--seeds-range-{e}",
                category="size (CLI)",
                argv=(*_SWEEP, "--dry-run", "--seeds", f"0-{n - 1}"),
                expect=("seeds", _bound(MAX_RUNS)),
            ),
            Case(
                id=f"sweep--cluster-scales-{e}",
                category="size (CLI)",
                argv=(*_SWEEP, "--dry-run", "--cluster-scales", str(n)),
                expect=("cluster_scales", _bound(MAX_CLUSTER_SERVERS)),
            ),
            Case(
                id=f"sweep--workers-{e}",
                category="size (CLI)",
                argv=(*_SWEEP, "--backend", "local", "--workers", str(n), "--out", "out"),
                expect=("workers",),
            ),
            Case(
                id=f"evaluate--seeds-range-{e}",
                category="size (CLI)",
                argv=("evaluate", "--preset", "tiny", "--experts", "fifo", "--no-progress", "--seeds", f"0-{n - 1}"),
                expect=("seeds", _bound(MAX_RUNS)),
            ),
            Case(
                id=f"train--train-seeds-range-{e}",
                category="size (CLI)",
                argv=("train", "--algo", "bc", "--preset", "tiny", "--no-progress", "--train-seeds", f"0-{n - 1}"),
                expect=("seeds", _bound(MAX_RUNS)),
            ),
            Case(
                id=f"sweep-file-seeds-{e}",
                category="size (CLI)",
                argv=("sweep", "big.yaml", "--dry-run"),
                files={"big.yaml": f"policies: [fifo]\nscenarios: [tiny]\nseeds: {n}\n".encode()},
                expect=("big.yaml", "seeds", _bound(MAX_RUNS)),
            ),
        ]
    # A grid whose axes are each small but whose product is not.
    axis = ",".join(str(1 + i / 1000) for i in range(1000))
    cases.append(
        Case(
            id="sweep--grid-product-1e6",
            category="size (CLI)",
            argv=(*_SWEEP, "--dry-run", "--seeds", "1000", "--grid", f"workload.tightness={axis}"),
            expect=("runs", _bound(MAX_RUNS)),
        )
    )
    cases.append(
        Case(
            id="compare--seeds-1e6",
            category="size (CLI)",
            argv=(*_COMPARE, "--out", "out", "--seeds", ",".join(str(s) for s in range(10**6))),
            expect=("--seeds", _bound(MAX_RUNS)),
        )
    )
    return cases


def _gym(env_id: str, *, vector: bool = False, **kwargs: Any) -> Callable[[Path], Any]:
    def call(_: Path) -> Any:
        import gymnasium as gym

        import hetgym  # noqa: F401

        if vector:
            return gym.make_vec(env_id, **kwargs)
        env = gym.make(env_id, **kwargs)
        env.reset(seed=0)
        for _ in range(3):
            env.step(env.unwrapped.noop_action())
        return env

    return call


def _sweep_spec(**values: Any) -> Callable[[Path], Any]:
    def call(_: Path) -> Any:
        from hetgym.sweep import SweepSpec

        return SweepSpec.from_dict({"policies": ["fifo"], "scenarios": ["tiny"], **values}).expand()

    return call


def _recipe(name: str, **kwargs: Any) -> Callable[[Path], Any]:
    def call(_: Path) -> Any:
        import importlib

        from hetgym.sim.cluster import get_cluster

        module = "recurring" if name == "recurring" else "generators"
        recipe = getattr(importlib.import_module(f"hetgym.workloads.{module}"), name)
        return recipe(cluster=get_cluster("tiny"), seed=0, **kwargs)

    return call


def _api_size_cases() -> list[Case]:
    cases = []
    for n in SIZES:
        e = f"1e{len(str(n)) - 1}"
        jobs = ("num_jobs", str(MAX_DRAWN_JOBS))
        cases += [
            Case(
                id=f"make-queue-slots-{e}",
                category="size (API)",
                api=_gym("HetCluster-Tiny-v1", queue_slots=n),
                expect=("queue_slots", str(MAX_QUEUE_SLOTS)),
            ),
            Case(
                id=f"make-workload-num-jobs-{e}",
                category="size (API)",
                api=_gym("HetCluster-Tiny-v1", workload={"num_jobs": n}),
                expect=jobs,
            ),
            Case(
                id=f"make-events-num-jobs-{e}",
                category="size (API)",
                api=_gym("HetClusterEvents-Tiny-v0", workload={"num_jobs": n}),
                expect=jobs,
            ),
            Case(
                id=f"make-vec-num-envs-{e}",
                category="size (API)",
                api=_gym("HetCluster-Tiny-v1", vector=True, num_envs=n),
                expect=("num_envs", str(MAX_NUM_ENVS)),
            ),
            Case(
                id=f"sweepspec-seeds-{e}",
                category="size (API)",
                api=_sweep_spec(seeds=n),
                expect=("seeds", _bound(MAX_RUNS)),
            ),
            Case(
                id=f"sweepspec-cluster-scales-{e}",
                category="size (API)",
                api=_sweep_spec(cluster_scales=[n]),
                expect=("cluster_scales", _bound(MAX_CLUSTER_SERVERS)),
            ),
            Case(
                id=f"recipe-elasticflow-num-jobs-{e}",
                category="size (API)",
                api=_recipe("elasticflow", num_jobs=n),
                expect=jobs,
            ),
            Case(
                id=f"recipe-recurring-num-templates-{e}",
                category="size (API)",
                api=_recipe("recurring", num_jobs=10, num_templates=n),
                expect=("num_templates", str(MAX_DRAWN_JOBS)),
            ),
        ]
    return cases


def size_cases() -> list[Case]:
    """Every size setting at 10^6 to 10^9, on the command line and through the Python API."""
    return [*_cli_size_cases(), *_api_size_cases()]


def output_cases() -> list[Case]:
    """``--out`` naming no new folder or an unwritable one; sweep names that leave results/sweeps."""
    cases = []
    for value, why in (("", "empty"), (".", "dot"), ("..", "dotdot")):
        cases += [
            Case(
                id=f"compare-out-{why}",
                category="output",
                argv=(*_COMPARE, "--seeds", "0", "--out", value),
                expect=("--out",),
            ),
            Case(
                id=f"simulate-out-{why}",
                category="output",
                argv=("simulate", "--scenario", "tiny", "--policy", "fifo", "--no-progress", "--out", value),
                expect=("--out",),
            ),
        ]
    # /proc takes no new folder, even from root (for whom every permission check passes).
    for command in ("compare", "simulate"):
        argv = (
            (*_COMPARE, "--seeds", "0")
            if command == "compare"
            else ("simulate", "--scenario", "tiny", "--policy", "fifo", "--no-progress")
        )
        cases.append(
            Case(
                id=f"{command}-out-unwritable",
                category="output",
                argv=(*argv, "--out", "/proc/hetgym-robustness-out"),
                expect=("--out /proc/hetgym-robustness-out",),
            )
        )
    for name, why in (("../../../x", "traversal"), ("a/b", "slash"), ("..", "dotdot"), ("/tmp/x", "absolute")):
        cases.append(
            Case(
                id=f"sweep--name-{why}",
                category="output",
                argv=(*_SWEEP, "--name", name),
                expect=("name", name),
            )
        )
        cases.append(
            Case(
                id=f"sweep-file-name-{why}",
                category="output",
                argv=("sweep", "s.yaml", "--no-progress"),
                files={"s.yaml": f"name: '{name}'\npolicies: [fifo]\nscenarios: [tiny]\n".encode()},
                expect=("s.yaml", "name", name),
            )
        )
    return cases
