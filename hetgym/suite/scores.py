"""Scores of the suite's reference rows: experts on the raw simulator, constant rules, bounds, the oracle.

* Experts (:data:`EXPERTS` by default) run on :meth:`Simulator.run <hetgym.sim.Simulator.run>` with the
  scenario's cluster, simulator settings and the jobs of each test seed: the jobs that
  ``reset(options={"workload_seed": seed})`` gives either interface.
* A constant rule ``always-<action>`` plays one action of ``HetClusterEvents-v0`` at every decision
  (:mod:`hetgym.envs.events.actions`: ``always-auto`` is ElasticFlow's own choice, ``always-force`` admits
  every job with the guarantee, ...). When the action is masked out for a job (a GPU type the allocator has
  no level for), the environment takes the same admission on any type, as it does for any agent. The rules
  run with ``probe=False``: the probe only fills observation features, which a constant rule never reads.
* Bounds (:mod:`hetgym.suite.bounds`) per test seed.
* The hindsight one-step lookahead oracle (at each decision every valid action, then a fixed rule to the
  end on the true future; the best) comes from ``hetgym.lookahead.hindsight_oracle`` when that module
  exists; it is an oracle reference, never a result.

Each function returns per-seed values and the CPU seconds they took; :mod:`hetgym.suite.board` turns
them into rows.
"""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from hetgym.suite.bounds import WorkloadBounds, workload_bounds
from hetgym.suite.scenarios import SuiteScenario

#: The experts scored on every scenario: the paper experts (ElasticFlow, Dancer, Hadar, HadarE, A-SRPT and
#: JPS, Liu et al.'s matching market) and the deadline-aware baselines (EDF, EDF with admission) that
#: ``hetgym compare`` runs by default. The default comparison's JCT-only policies (FIFO, SRTF, Tiresias,
#: Gavel's LP policies) ignore deadlines; name them with ``--policies`` to add them.
EXPERTS = ("elasticflow", "dancer", "hadar", "hadare", "asrpt", "jps", "edf", "edf-admission")
#: The event interface the constant rules act in.
RULE_ENV_ID = "HetClusterEvents-v0"
#: Agent name of the oracle row, and the module and function that compute it.
ORACLE_AGENT = "oracle-lookahead-hindsight"
ORACLE_MODULE = "hetgym.lookahead"
ORACLE_FUNCTION = "hindsight_oracle"
#: The action the oracle's rollouts play after its one-step choice (the ``force`` action: see docs/suite.md).
ORACLE_BASE_RULE = "always-force"


def episode_inputs(scenario: SuiteScenario, seed: int) -> tuple[Any, tuple[Any, ...], Any]:
    """``(cluster spec, jobs, simulator config)`` of one test workload (what both interfaces draw)."""
    from hetgym.envs.events.config import EventEnvConfig

    scenario.check_data()
    config = EventEnvConfig.make(**scenario.kwargs(RULE_ENV_ID))
    return config.cluster_spec(), config.draw_jobs(seed), config.sim


def expert_scores(scenario: SuiteScenario, policy: str, seeds: Sequence[int]) -> tuple[list[float], float]:
    """The DSR of ``policy`` on each seed's workload on the raw simulator, and the CPU seconds taken."""
    from hetgym.sim import Simulator, make_policy

    started = time.process_time()
    out = []
    for seed in seeds:
        cluster, jobs, sim = episode_inputs(scenario, seed)
        result = Simulator(cluster, jobs, config=sim).run(make_policy(policy))
        out.append(float(result.metrics["dsr"]))
    return out, time.process_time() - started


def rule_names(scenario: SuiteScenario) -> dict[str, int]:
    """``{"always-<action>": action}`` for every action of the scenario's event interface."""
    from hetgym.envs.events.actions import EventActions
    from hetgym.envs.events.config import EventEnvConfig

    gpu_types = tuple(EventEnvConfig.make(**scenario.kwargs(RULE_ENV_ID)).cluster_spec().gpu_types)
    actions = EventActions(gpu_types)
    return {"always-" + actions.describe(a).replace(" ", "-").replace("_", "-"): a for a in range(actions.n)}


def rule_scores(scenario: SuiteScenario, action: int, seeds: Sequence[int]) -> tuple[list[float], float]:
    """The DSR of the constant rule ``action`` on each seed's workload, and the CPU seconds taken."""
    started = time.process_time()
    env = scenario.make(RULE_ENV_ID, probe=False)
    out = []
    try:
        for seed in seeds:
            env.reset(seed=int(seed), options={"workload_seed": int(seed)})
            while True:
                _, _, terminated, truncated, info = env.step(action)
                if terminated or truncated:
                    out.append(float(info["metrics"]["dsr"]))
                    break
    finally:
        env.close()
    return out, time.process_time() - started


def bound_scores(scenario: SuiteScenario, seeds: Sequence[int], **options: Any) -> tuple[list[WorkloadBounds], float]:
    """The bounds of each seed's workload (``options``: :func:`~hetgym.suite.bounds.workload_bounds`'s)."""
    started = time.process_time()
    out = []
    for seed in seeds:
        cluster, jobs, sim = episode_inputs(scenario, seed)
        out.append(workload_bounds(jobs, cluster, sim, **options))
    return out, time.process_time() - started


def bounds_as_dicts(bounds: Sequence[WorkloadBounds]) -> list[dict[str, Any]]:
    """The bounds as plain dictionaries (for JSON)."""
    return [asdict(b) for b in bounds]


def oracle_function() -> Callable[..., dict[str, Any]] | None:
    """``hetgym.lookahead.hindsight_oracle`` when it can be imported, else ``None``."""
    try:
        module = importlib.import_module(ORACLE_MODULE)
    except ImportError:
        return None
    fn = getattr(module, ORACLE_FUNCTION, None)
    return fn if callable(fn) else None


def oracle_scores(scenario: SuiteScenario, seeds: Sequence[int]) -> tuple[list[float], float] | None:
    """The hindsight lookahead oracle's DSR per seed and its CPU seconds, or ``None`` when not available."""
    fn = oracle_function()
    if fn is None:
        return None
    base_action = rule_names(scenario)[ORACLE_BASE_RULE]
    out = []
    cpu_s = 0.0
    for seed in seeds:
        result = fn(RULE_ENV_ID, scenario.kwargs(RULE_ENV_ID), int(seed), base_action=base_action)
        out.append(float(result["dsr"]))
        cpu_s += float(result.get("cpu_s", math.nan))
    return out, cpu_s


__all__ = [
    "EXPERTS",
    "ORACLE_AGENT",
    "ORACLE_BASE_RULE",
    "RULE_ENV_ID",
    "bound_scores",
    "bounds_as_dicts",
    "episode_inputs",
    "expert_scores",
    "oracle_function",
    "oracle_scores",
    "rule_names",
    "rule_scores",
]
