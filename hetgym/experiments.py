"""Running policies on scenarios: one run, or a comparison of several policies over seeds.

:func:`run_one` simulates one policy on one scenario and seed. :func:`compare` runs every
(policy, seed) pair of a scenario on the same workloads (one workload per seed, shared by all
policies) and returns a :class:`Comparison` holding one row of metrics per run, the per-job tables
and usage timelines, an aggregate table (mean and standard deviation over seeds), and methods to save
results and figures.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hetgym.atomic import atomic_write
from hetgym.sim.config import SimConfig
from hetgym.sim.engine import SimulationResult, Simulator
from hetgym.sim.policy import make_policy, policy_class
from hetgym.sim.throughput import ThroughputModel
from hetgym.workloads.scenario import Scenario, get_scenario
from hetgym.workloads.schema import Workload

#: Metrics shown in the terminal table and the aggregate, in order: (key, label, scale, format).
HEADLINE_METRICS: tuple[tuple[str, str, float, str], ...] = (
    ("dsr", "DSR", 1.0, "{:.3f}"),
    ("jct_mean_s", "avg JCT (h)", 1 / 3600, "{:.2f}"),
    ("jct_p95_s", "p95 JCT (h)", 1 / 3600, "{:.2f}"),
    ("makespan_s", "makespan (h)", 1 / 3600, "{:.1f}"),
    ("queueing_mean_s", "queue (h)", 1 / 3600, "{:.2f}"),
    ("utilisation", "util", 1.0, "{:.3f}"),
    ("ftf_mean", "FTF", 1.0, "{:.2f}"),
    ("num_reconfigs", "reconfigs", 1.0, "{:.0f}"),
    ("decision_ms_p50", "decide (ms)", 1.0, "{:.2f}"),
)


def run_one(
    scenario: Scenario | str,
    policy: str,
    seed: int = 0,
    *,
    policy_kwargs: Mapping[str, Any] | None = None,
    workload: Workload | None = None,
    throughput: ThroughputModel | None = None,
    progress: bool = False,
) -> SimulationResult:
    """Simulate ``policy`` on ``scenario`` with the workload drawn from ``seed``.

    Args:
        scenario: A :class:`Scenario` or the name of an embedded one.
        policy: Registered policy name.
        seed: Seed of the workload and of the policy's random generator.
        policy_kwargs: Knobs of the policy.
        workload: A workload to use instead of drawing one (it must belong to the scenario's cluster).
        throughput: Throughput model (default: the embedded table).
        progress: Show a progress bar over jobs.
    """
    scenario = get_scenario(scenario)
    cluster = scenario.cluster_spec()
    if workload is None:
        workload = scenario.workload.build(cluster, seed=seed, throughput=throughput)
    config = SimConfig.from_dict({**asdict_shallow(scenario.sim), "seed": seed})
    sim = Simulator(cluster, workload, config=config, throughput=throughput)
    result = sim.run(make_policy(policy, **dict(policy_kwargs or {})), progress=progress)
    result.extra.update({"scenario": scenario.name, "seed": seed, "policy_kwargs": dict(policy_kwargs or {})})
    return result


def asdict_shallow(obj: Any) -> dict[str, Any]:
    """A dataclass's fields as a dict, without recursing into nested values."""
    return {f: getattr(obj, f) for f in obj.__dataclass_fields__ if obj.__dataclass_fields__[f].init}


@dataclass
class Comparison:
    """Results of :func:`compare`.

    Attributes:
        scenario: The scenario compared on.
        policies: Policy names, in the order given.
        seeds: Seeds used.
        runs: One row per (policy, seed) with every scalar metric.
        jobs: Per-job tables of all runs (columns ``policy`` and ``seed`` added).
        timelines: Usage timelines of all runs (columns ``policy`` and ``seed`` added).
        errors: ``{(policy, seed): message}`` for runs that failed.
    """

    scenario: Scenario
    policies: list[str]
    seeds: list[int]
    runs: pd.DataFrame
    jobs: pd.DataFrame
    timelines: pd.DataFrame
    errors: dict[tuple[str, int], str] = field(default_factory=dict)

    def aggregate(self) -> pd.DataFrame:
        """Mean and standard deviation over seeds of each metric, one row per policy."""
        if self.runs.empty:
            return pd.DataFrame()
        numeric = self.runs.drop(columns=["seed"]).groupby("policy", sort=False)
        mean = numeric.mean(numeric_only=True)
        std = numeric.std(numeric_only=True, ddof=0)
        out = mean.join(std.add_suffix("_std"))
        return out.reindex([p for p in self.policies if p in out.index])

    def save(self, out_dir: str | os.PathLike[str], *, plots: bool = True) -> list[Path]:
        """Write ``runs.csv``, ``summary.csv``, ``jobs.csv.gz``, ``summary.json`` and the figures.

        Every file is written to a temporary name first and renamed, so an interrupted save leaves
        no half-written file.
        """
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written = [
            atomic_write(out / "runs.csv", lambda p: self.runs.to_csv(p, index=False)),
            atomic_write(out / "summary.csv", lambda p: self.aggregate().to_csv(p)),
            atomic_write(out / "jobs.csv.gz", lambda p: self.jobs.to_csv(p, index=False, compression="gzip")),
            atomic_write(
                out / "summary.json",
                lambda p: p.write_text(json.dumps(self.summary_dict(), indent=2, default=_json_default)),
            ),
        ]
        if plots:
            from hetgym.plots import plot_comparison

            written += plot_comparison(self, out)
        return written

    def summary_dict(self) -> dict[str, Any]:
        """Scenario, seeds, aggregate metrics and errors as plain data."""
        agg = self.aggregate()
        return {
            "scenario": {
                "name": self.scenario.name,
                "cluster": self.scenario.cluster,
                "workload": asdict(self.scenario.workload),
                "sim": asdict_shallow(self.scenario.sim),
            },
            "policies": self.policies,
            "seeds": self.seeds,
            "metrics": {p: {k: _clean(v) for k, v in row.items()} for p, row in agg.iterrows()},
            "errors": {f"{p}@{s}": msg for (p, s), msg in self.errors.items()},
        }


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _json_default(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, Mapping):
        return dict(v)
    return str(v)


def compare(
    scenario: Scenario | str,
    policies: Sequence[str],
    seeds: Sequence[int] = (0, 1, 2),
    *,
    policy_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
    throughput: ThroughputModel | None = None,
    on_run: Callable[[str, int, SimulationResult | None], None] | None = None,
    fail_fast: bool = False,
) -> Comparison:
    """Run every policy on the scenario's workload for every seed.

    Args:
        scenario: A :class:`Scenario` or an embedded scenario's name.
        policies: Registered policy names (checked before anything runs).
        seeds: Workload seeds; every policy sees the same workload for a seed.
        policy_kwargs: ``{policy: {knob: value}}``.
        throughput: Throughput model (default: the embedded table).
        on_run: Called after each run with (policy, seed, result or None on failure), e.g. to
            advance a progress bar.
        fail_fast: Re-raise the first error instead of recording it and going on.
    """
    scenario = get_scenario(scenario)
    for name in policies:
        policy_class(name)  # unknown names fail before any work
    kwargs = {k: dict(v) for k, v in (policy_kwargs or {}).items()}
    for name in kwargs:
        if name not in policies:
            raise ValueError(f"options given for policy {name!r}, which is not among the compared {list(policies)}")
    cluster = scenario.cluster_spec()
    rows: list[dict[str, Any]] = []
    jobs: list[pd.DataFrame] = []
    timelines: list[pd.DataFrame] = []
    errors: dict[tuple[str, int], str] = {}
    for seed in seeds:
        workload = scenario.workload.build(cluster, seed=seed, throughput=throughput)
        for name in policies:
            try:
                result = run_one(
                    scenario, name, seed, policy_kwargs=kwargs.get(name), workload=workload, throughput=throughput
                )
            except Exception as exc:
                if fail_fast:
                    raise
                errors[(name, seed)] = f"{type(exc).__name__}: {exc}"
                if on_run:
                    on_run(name, seed, None)
                continue
            rows.append(
                {
                    "policy": name,
                    "seed": seed,
                    **result.metrics,
                    "stalled": result.stalled,
                    "num_epochs": result.num_epochs,
                    "wall_s": result.wall_s,
                }
            )
            jobs.append(result.jobs.assign(policy=name, seed=seed))
            timelines.append(result.timeline.assign(policy=name, seed=seed))
            if on_run:
                on_run(name, seed, result)
    return Comparison(
        scenario=scenario,
        policies=list(policies),
        seeds=list(seeds),
        runs=pd.DataFrame(rows),
        jobs=pd.concat(jobs, ignore_index=True) if jobs else pd.DataFrame(),
        timelines=pd.concat(timelines, ignore_index=True) if timelines else pd.DataFrame(),
        errors=errors,
    )


def default_policies() -> list[str]:
    """The policies ``hetgym compare`` runs by default: every registered one not marked otherwise."""
    from hetgym.sim.policy import list_policies

    return [name for name in list_policies() if getattr(policy_class(name), "in_default_comparison", True)]
