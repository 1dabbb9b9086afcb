"""The benchmark suite's scenarios: named, tiered, with fixed training and held-out test seeds.

Every scenario is a set of ``gym.make`` keyword arguments for both learning interfaces (``HetCluster-v1``,
one job at a time; ``HetClusterEvents-v0``, one decision per job arrival) over the same cluster, workload
recipe and simulator settings, so workload seed ``n`` (``reset(options={"workload_seed": n})``) is the same
jobs through either interface and on the raw simulator. The test seeds (1000-1019) are held out: training
uses :attr:`SuiteScenario.train_seeds` only. The definitions are fixed; a changed scenario is a new name.

The trace scenarios read the published raw ElasticFlow traces from the shared reference data folder,
``$HETGYM_SHARED_DATA`` or, when unset, ``../shared/data`` relative to the working directory (the layout
the tests and benchmarks use); :meth:`SuiteScenario.check_data` says how to fix a missing file.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hetgym.sim.errors import HetgymError, UnknownNameError

#: The interfaces every scenario is defined for.
INTERFACES = ("HetCluster-v1", "HetClusterEvents-v0")
#: Held-out workload seeds: every score of the leaderboard is over these; never train on them.
TEST_SEEDS = tuple(range(1000, 1020))
#: Workload seeds for training (disjoint from :data:`TEST_SEEDS`).
TRAIN_SEEDS = tuple(range(100))
#: Environment variable naming the shared reference data folder (default ``../shared/data``).
DATA_ENV = "HETGYM_SHARED_DATA"
#: The tiers, in the order the leaderboard shows them.
TIERS = ("reference", "load", "deadline", "heterogeneity", "trace")
#: The published raw ElasticFlow traces, relative to the shared data folder.
ELASTICFLOW_RAW = "elasticflow_traces/raw-traces.tar.gz"


def data_dir() -> Path:
    """The shared reference data folder: ``$HETGYM_SHARED_DATA``, else ``../shared/data``."""
    return Path(os.environ.get(DATA_ENV) or "../shared/data")


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    return copy.deepcopy(value)


class SuiteDataError(HetgymError):
    """A scenario's trace file is missing."""


@dataclass(frozen=True)
class SuiteScenario:
    """One scenario of the suite.

    Attributes:
        name: The scenario's name (``s.get(name)``).
        tier: Its tier (:data:`TIERS`).
        description: One line: cluster, workload, what makes it hard.
        overrides: The ``gym.make`` keyword arguments shared by both interfaces (read-only).
        train_seeds: Workload seeds for training.
        test_seeds: Held-out workload seeds for evaluation.
        trace: The trace file the workload reads, relative to :func:`data_dir`, or ``None``.
    """

    name: str
    tier: str
    description: str
    overrides: Mapping[str, Any]
    train_seeds: tuple[int, ...] = TRAIN_SEEDS
    test_seeds: tuple[int, ...] = TEST_SEEDS
    trace: str | None = None

    def __post_init__(self) -> None:
        if self.tier not in TIERS:
            raise UnknownNameError("suite tier", self.tier, TIERS)
        if set(self.train_seeds) & set(self.test_seeds):
            raise HetgymError(f"scenario {self.name!r}: training and test seeds overlap; keep them disjoint")
        object.__setattr__(self, "overrides", _freeze(self.overrides))

    @property
    def env_kwargs(self) -> Mapping[str, dict[str, Any]]:
        """The ``gym.make`` keyword arguments per interface id (fresh copies)."""
        return {env_id: self.kwargs(env_id) for env_id in INTERFACES}

    def kwargs(self, env_id: str = "HetClusterEvents-v0") -> dict[str, Any]:
        """The ``gym.make(env_id, **kwargs)`` arguments of this scenario (a fresh, mutable copy)."""
        if env_id not in INTERFACES:
            raise UnknownNameError("suite interface", env_id, INTERFACES)
        out = _thaw(self.overrides)
        if self.trace is not None:
            out["workload"]["trace"] = str(data_dir() / self.trace)
        return out

    def check_data(self) -> None:
        """Raise :class:`SuiteDataError` naming the missing file and the fix when the trace is absent."""
        if self.trace is not None and not (data_dir() / self.trace).exists():
            raise SuiteDataError(
                f"scenario {self.name!r} reads {data_dir() / self.trace}, which does not exist; point "
                f"{DATA_ENV} at the shared reference data folder (the one holding {ELASTICFLOW_RAW}) or run from "
                "a directory whose ../shared/data is that folder"
            )

    def make(self, env_id: str = "HetClusterEvents-v0", **extra: Any) -> Any:
        """``gym.make(env_id, **self.kwargs(env_id), **extra)`` (``extra``: e.g. ``flatten=True``)."""
        import gymnasium as gym

        import hetgym  # noqa: F401  (registers the ids)

        self.check_data()
        return gym.make(env_id, **{**self.kwargs(env_id), **extra})


def _drawn(tier: str, name: str, description: str, cluster: str, workload: Mapping[str, Any]) -> SuiteScenario:
    return SuiteScenario(name, tier, description, {"cluster": cluster, "workload": dict(workload)})


def _window(name: str, trace: str, cluster: str, description: str) -> SuiteScenario:
    # The same workload override hetgym.workloads.elasticflow_window_workload builds; the path is filled in by
    # SuiteScenario.kwargs so that the definition does not depend on where the data lives.
    workload = {
        "trace_format": "elasticflow",
        "trace_window": True,
        "num_jobs": 40,
        "trace_member": f"{trace}.csv",
        "deadline": "elasticflow",
    }
    return SuiteScenario(name, "trace", description, {"cluster": cluster, "workload": workload}, trace=ELASTICFLOW_RAW)


#: The default scenario's workload (hetgym.workloads.SCENARIOS["default"]), spelt out so the load tiers
#: state every field they run with.
_DEFAULT_WORKLOAD = {"recipe": "elasticflow", "num_jobs": 120, "arrival_rate_per_h": 12.0, "max_gpus_per_job": 16}

_ALL = (
    SuiteScenario(
        "default",
        "reference",
        "the flagship: 120 ElasticFlow-recipe jobs at 12/h on the 64-GPU, 4-type default cluster",
        {"scenario": "default"},
    ),
    SuiteScenario(
        "tiny", "reference", "12 ElasticFlow-recipe jobs on the 8-GPU tiny cluster (V100, K80)", {"scenario": "tiny"}
    ),
    _drawn(
        "load",
        "load-0.75x",
        "default at 0.75x the arrival rate (9 jobs/h)",
        "default",
        {**_DEFAULT_WORKLOAD, "arrival_rate_per_h": 9.0},
    ),
    _drawn(
        "load",
        "load-1.5x",
        "default at 1.5x the arrival rate (18 jobs/h)",
        "default",
        {**_DEFAULT_WORKLOAD, "arrival_rate_per_h": 18.0},
    ),
    _drawn(
        "load",
        "load-2x",
        "default at 2x the arrival rate (24 jobs/h)",
        "default",
        {**_DEFAULT_WORKLOAD, "arrival_rate_per_h": 24.0},
    ),
    _drawn(
        "deadline",
        "tight-deadlines",
        "default with deadlines 1.5x tighter (ElasticFlow's slack divided by 1.5)",
        "default",
        {**_DEFAULT_WORKLOAD, "tightness": 1.5},
    ),
    _drawn(
        "heterogeneity",
        "strong-het",
        "Gavel's 108-GPU cluster (V100, P100, K80) with Gavel's job mix: one-GPU speeds up to 8.8x apart "
        "(cyclegan, V100 vs K80), recommendation and resnet18 fastest on P100, the others on V100; 120 jobs at "
        "utilisation 0.9, ElasticFlow's deadlines",
        "gavel-108",
        {
            "recipe": "gavel-philly",
            "num_jobs": 120,
            "arrival_rate_per_h": None,
            "target_utilisation": 0.9,
            "max_gpus_per_job": 16,
            "deadline": "elasticflow",
        },
    ),
    _window(
        "trace-cluster09",
        "cluster09",
        "elasticflow-n4g8-het",
        "40-job windows of ElasticFlow's raw trace cluster09 on elasticflow-n4g8-het (16 A100, 8 V100, 8 T4)",
    ),
    _window(
        "trace-cluster05",
        "cluster05",
        "elasticflow-n8g8-het",
        "40-job windows of ElasticFlow's raw trace cluster05 on elasticflow-n8g8-het (32 A100, 16 V100, 16 T4)",
    ),
)

#: Every scenario by name, in leaderboard order.
SCENARIOS: Mapping[str, SuiteScenario] = MappingProxyType({s.name: s for s in _ALL})


def names() -> list[str]:
    """The suite's scenario names, in leaderboard order."""
    return list(SCENARIOS)


def get(name: str) -> SuiteScenario:
    """The scenario ``name`` (an unknown name raises an error naming the nearest)."""
    if name not in SCENARIOS:
        raise UnknownNameError("suite scenario", name, list(SCENARIOS), "List them with python -m hetgym.suite list.")
    return SCENARIOS[name]


def resolve(spec: str) -> list[SuiteScenario]:
    """``"all"``, one name, or comma-separated names, as scenarios."""
    if spec.strip() == "all":
        return list(SCENARIOS.values())
    out = [get(s.strip()) for s in spec.split(",") if s.strip()]
    if not out:
        raise HetgymError(f"--suite {spec!r}: give 'all' or scenario names ({', '.join(SCENARIOS)})")
    return out


__all__ = [
    "DATA_ENV",
    "INTERFACES",
    "SCENARIOS",
    "TEST_SEEDS",
    "TIERS",
    "TRAIN_SEEDS",
    "SuiteDataError",
    "SuiteScenario",
    "data_dir",
    "get",
    "names",
    "resolve",
]
