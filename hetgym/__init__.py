"""hetgym: a heterogeneous GPU cluster simulator and Gymnasium environment.

The pure discrete-event simulator lives in :mod:`hetgym.sim` (numpy only), workloads and trace
readers in :mod:`hetgym.workloads`, and the ``HetCluster-v0`` environment in :mod:`hetgym.envs`.
Expert and classic scheduling policies live in the sibling package :mod:`baselines` and are made
by name with :func:`hetgym.make_policy`.
"""

from __future__ import annotations

import contextlib

from hetgym.envs.registration import register_envs as _register_envs
from hetgym.sim import (
    Allocation,
    ClusterSpec,
    ClusterView,
    InvalidAllocationError,
    JobAllocation,
    JobSpec,
    JobView,
    Policy,
    SimConfig,
    SimulationResult,
    Simulator,
    ThroughputModel,
    get_cluster,
    list_policies,
    make_policy,
)

__version__ = "0.1.0"

# Register the Gym ids (a light import: the environment module loads when an env is made). The
# simulator and the baselines keep working when gymnasium is not installed.
with contextlib.suppress(ImportError):
    _register_envs()

__all__ = [
    "Allocation",
    "ClusterSpec",
    "ClusterView",
    "InvalidAllocationError",
    "JobAllocation",
    "JobSpec",
    "JobView",
    "Policy",
    "SimConfig",
    "SimulationResult",
    "Simulator",
    "ThroughputModel",
    "__version__",
    "get_cluster",
    "list_policies",
    "make_policy",
]
