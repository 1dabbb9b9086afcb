"""One call from a policy (or its registered name), a cluster and a workload to the simulation's results."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.config import SimConfig
from hetgym.sim.engine import Simulator
from hetgym.sim.job import JobSpec
from hetgym.sim.policy import PolicyProtocol, make_policy
from hetgym.sim.result import SimulationResult
from hetgym.sim.throughput import ThroughputModel


def run_policy(
    policy: PolicyProtocol | str,
    cluster: ClusterSpec | str,
    jobs: Iterable[JobSpec],
    *,
    config: SimConfig | Mapping[str, Any] | None = None,
    throughput: ThroughputModel | None = None,
    **policy_kwargs: Any,
) -> SimulationResult:
    """One-call convenience: make the policy (if named), simulate, return the result."""
    if isinstance(policy, str):
        policy = make_policy(policy, **policy_kwargs)
    if isinstance(config, Mapping):
        config = SimConfig.from_dict(config)
    return Simulator(cluster, jobs, config=config, throughput=throughput).run(policy)
