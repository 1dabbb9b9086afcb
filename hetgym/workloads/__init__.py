"""Workloads: the canonical job schema, readers and writers, synthetic generators, deadline models
and named scenarios. Everything here produces :class:`~hetgym.sim.job.JobSpec` for the simulator.

The names below are imported on first access (PEP 562), so that importing one submodule, as the
``hetgym`` command does for the scenario names, does not import the others.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hetgym.workloads.deadlines import (
        DeadlineModel,
        ElasticFlowDeadline,
        GavelSLODeadline,
        NoDeadline,
        make_deadline_model,
    )
    from hetgym.workloads.generators import Load, elasticflow, gavel_philly
    from hetgym.workloads.recurring import recurring
    from hetgym.workloads.scenario import SCENARIOS, Scenario, WorkloadConfig, get_scenario
    from hetgym.workloads.schema import (
        REQUIRED_COLUMNS,
        SCHEMA_VERSION,
        TraceError,
        Workload,
        frame_to_jobs,
        jobs_to_frame,
        read_trace,
        write_trace,
    )
    from hetgym.workloads.windows import elasticflow_window_workload

#: The module that defines each public name.
_MODULES: dict[str, str] = {
    "DeadlineModel": "deadlines",
    "ElasticFlowDeadline": "deadlines",
    "GavelSLODeadline": "deadlines",
    "NoDeadline": "deadlines",
    "make_deadline_model": "deadlines",
    "Load": "generators",
    "elasticflow": "generators",
    "gavel_philly": "generators",
    "recurring": "recurring",
    "SCENARIOS": "scenario",
    "Scenario": "scenario",
    "WorkloadConfig": "scenario",
    "get_scenario": "scenario",
    "REQUIRED_COLUMNS": "schema",
    "SCHEMA_VERSION": "schema",
    "TraceError": "schema",
    "Workload": "schema",
    "frame_to_jobs": "schema",
    "jobs_to_frame": "schema",
    "read_trace": "schema",
    "write_trace": "schema",
    "elasticflow_window_workload": "windows",
}

__all__ = [
    "REQUIRED_COLUMNS",
    "SCENARIOS",
    "SCHEMA_VERSION",
    "DeadlineModel",
    "ElasticFlowDeadline",
    "GavelSLODeadline",
    "Load",
    "NoDeadline",
    "Scenario",
    "TraceError",
    "Workload",
    "WorkloadConfig",
    "elasticflow",
    "elasticflow_window_workload",
    "frame_to_jobs",
    "gavel_philly",
    "get_scenario",
    "jobs_to_frame",
    "make_deadline_model",
    "read_trace",
    "recurring",
    "write_trace",
]


#: Submodules, reachable as attributes as when this package imported them all.
_SUBMODULES = frozenset(
    {"canonical_csv", "columns", "deadlines", "generators", "scenario", "schema", "traces", "windows"}
)


# ``recurring`` names both a submodule and the generator it defines. Importing a submodule binds it as an
# attribute of this package, which would hide the function from ``from hetgym.workloads import recurring``
# whenever the submodule happens to be imported first: the function is bound now, the submodule with it.
from hetgym.workloads.recurring import recurring as recurring  # noqa: E402


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_MODULES})
