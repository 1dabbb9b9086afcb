"""The pure discrete-event simulator of a heterogeneous GPU cluster (numpy, pandas; no gymnasium/torch).

Build a :class:`ClusterSpec` (or take a preset with :func:`get_cluster`), a list of
:class:`JobSpec`, and run a :class:`Policy`::

    from hetgym.sim import Simulator, get_cluster, make_policy
    result = Simulator(get_cluster("tiny"), jobs).run(make_policy("fifo"))
    print(result.metrics["dsr"], result.jobs.head())
"""

from __future__ import annotations

import hetgym.sim.pickling  # noqa: F401  (lets read-only mappings pickle)
from hetgym.sim.allocation import (
    Allocation,
    AllocationBuilder,
    AllocationDelta,
    JobAllocation,
)
from hetgym.sim.cluster import ClusterSpec, ClusterState, Server, get_cluster, list_clusters, register_cluster
from hetgym.sim.comm import CommModel, placement_rate
from hetgym.sim.config import SIA_RESTART_PENALTY_S, SimConfig, config_from_dict
from hetgym.sim.counts import CountsDelta
from hetgym.sim.deadlines import DeadlineOutcome
from hetgym.sim.decision import Decision, StepReport, check_decision, decision_of, validate_allocation
from hetgym.sim.engine import SimulationResult, Simulator
from hetgym.sim.errors import (
    ConfigError,
    HetgymError,
    InvalidAllocationError,
    InvalidClusterError,
    InvalidJobError,
    UnknownNameError,
)
from hetgym.sim.job import JobSpec, JobStatus
from hetgym.sim.knob_policy import KnobPolicy
from hetgym.sim.physics import Physics, resolve_physics
from hetgym.sim.policy import (
    Policy,
    PolicyProtocol,
    list_policies,
    make_policy,
    policy_class,
    policy_modes,
    policy_placer,
    register_policy,
)
from hetgym.sim.rates import JobRates, RateTable
from hetgym.sim.registry import Knobs, knob
from hetgym.sim.runner import run_policy
from hetgym.sim.throughput import ExecutionMode, ServerGroup, ThroughputModel, allocation_rate
from hetgym.sim.view import ClusterView, JobView

__all__ = [
    "SIA_RESTART_PENALTY_S",
    "Allocation",
    "AllocationBuilder",
    "AllocationDelta",
    "ClusterSpec",
    "ClusterState",
    "ClusterView",
    "CommModel",
    "ConfigError",
    "CountsDelta",
    "DeadlineOutcome",
    "Decision",
    "ExecutionMode",
    "HetgymError",
    "InvalidAllocationError",
    "InvalidClusterError",
    "InvalidJobError",
    "JobAllocation",
    "JobRates",
    "JobSpec",
    "JobStatus",
    "JobView",
    "KnobPolicy",
    "Knobs",
    "Physics",
    "Policy",
    "PolicyProtocol",
    "RateTable",
    "Server",
    "ServerGroup",
    "SimConfig",
    "SimulationResult",
    "Simulator",
    "StepReport",
    "ThroughputModel",
    "UnknownNameError",
    "allocation_rate",
    "check_decision",
    "config_from_dict",
    "decision_of",
    "get_cluster",
    "knob",
    "list_clusters",
    "list_policies",
    "make_policy",
    "placement_rate",
    "policy_class",
    "policy_modes",
    "policy_placer",
    "register_cluster",
    "register_policy",
    "resolve_physics",
    "run_policy",
    "validate_allocation",
]
