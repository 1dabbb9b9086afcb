"""Workloads: the canonical job schema, readers and writers, synthetic generators, deadline models
and named scenarios. Everything here produces :class:`~hetgym.sim.job.JobSpec` for the simulator.
"""

from __future__ import annotations

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
