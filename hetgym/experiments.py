"""Running policies on scenarios: one run, or a comparison of several policies over seeds.

:func:`run_one` simulates one policy on one scenario and seed. :func:`compare` runs every
(policy, seed) pair of a scenario on the same workloads (one workload per seed, shared by all
policies) and returns a :class:`Comparison` holding one row of metrics per run, the per-job tables
and usage timelines, an aggregate table (mean and standard deviation over seeds), and methods to save
results and figures.

The result files of a comparison depend only on its configuration: the wall-clock measurements
(:data:`TIMING_COLUMNS`) are kept apart, in ``Comparison.timings`` and ``timings.csv``, so two runs of
the same configuration write byte-identical ``runs.csv``, ``summary.csv``, ``summary.json`` and
``jobs.csv.gz``. :meth:`Comparison.config_hash` names the configuration (scenario with its overrides,
policies, knobs, seeds, imports): ``hetgym compare`` names its results folder with it.
"""

from __future__ import annotations

import gzip
import hashlib
import inspect
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hetgym.atomic import atomic_write
from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.config import SimConfig
from hetgym.sim.engine import SimulationResult, Simulator
from hetgym.sim.errors import HetgymError, InvalidJobError, UnknownNameError
from hetgym.sim.policy import make_policy, policy_class
from hetgym.sim.throughput import ThroughputModel
from hetgym.sim.usercode import UserCodeError, describe, user_place
from hetgym.workloads.scenario import SCENARIOS, Scenario, get_scenario
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

#: Columns of a run that measure this machine and moment, not the configuration: a comparison keeps
#: them in ``timings`` (``timings.csv``), out of ``runs`` and the summaries.
TIMING_COLUMNS: tuple[str, ...] = ("wall_s", "decision_ms_p50", "decision_ms_p99")


class UnknownKnobError(UnknownNameError):
    """A knob name that a policy does not have (the message names the nearest valid one)."""

    def __init__(self, policy: str, knob: str, valid: Sequence[str]) -> None:
        super().__init__("knob", knob, valid)
        self.policy = policy
        message = str(self.args[0]).replace(f"unknown knob {knob!r}", f"unknown knob {knob!r} for policy {policy!r}", 1)
        self.args = (message,)


def knob_names(name: str) -> list[str]:
    """The knob names of the policy registered as ``name`` (its knob dataclass, else its constructor)."""
    cls = policy_class(name)
    if cls.knobs is not None:
        return list(cls.knobs.names())
    params = inspect.signature(cls.__init__).parameters
    return [k for k, p in params.items() if k != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def check_policy_options(name: str, options: Mapping[str, Any]) -> None:
    """Check a policy's name, knob names and knob values without running anything.

    Raises:
        UnknownNameError: An unknown policy.
        UnknownKnobError: An unknown knob, naming the nearest valid one.
        ValueError: A knob value the policy refuses (the message names policy, knob and value).
    """
    valid = knob_names(name)
    for key in options:
        if key not in valid:
            raise UnknownKnobError(name, key, valid)
    try:
        make_policy(name, **dict(options))
    except HetgymError:
        raise
    except (TypeError, ValueError) as exc:
        shown = ", ".join(f"{k}={v!r}" for k, v in options.items())
        raise HetgymError(f"policy {name!r} refuses the knobs {shown}: {exc}{user_place(exc)}") from exc
    except Exception as exc:  # a custom policy's constructor failing: its file and line
        raise UserCodeError(f"policy {name!r} could not be made", exc) from exc


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
    sim = simulator_for(cluster, workload, config, throughput)
    result = sim.run(make_policy(policy, **dict(policy_kwargs or {})), progress=progress)
    result.extra.update({"scenario": scenario.name, "seed": seed, "policy_kwargs": dict(policy_kwargs or {})})
    return result


def simulator_for(
    cluster: ClusterSpec, workload: Workload, config: SimConfig, throughput: ThroughputModel | None
) -> Simulator:
    """``Simulator(...)``, with a job the cluster can never run located in the workload's file (file and row)."""
    try:
        return Simulator(cluster, workload, config=config, throughput=throughput)
    except InvalidJobError as err:
        where = workload.locate(err.job_id) if err.job_id is not None else ""
        if not where:
            raise
        raise InvalidJobError(f"{where}: {err}", job_id=err.job_id) from None


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
        policy_kwargs: ``{policy: {knob: value}}`` as given.
        timings: One row per (policy, seed) with the wall-clock columns (:data:`TIMING_COLUMNS`).
        imports: Modules or files imported to register custom policies.
        left_out: ``{(policy, seed): problem}`` for runs that finished but were taken out of the results
            (a stall, jobs left unfinished: :meth:`leave_out`).
        seeds_by_policy: The seeds each policy ran when not every policy ran every seed (a policy that
            is not :attr:`~hetgym.sim.policy.Policy.randomised` on a fixed workload: see
            :func:`seeds_that_matter`); empty when every policy ran :attr:`seeds`.
    """

    scenario: Scenario
    policies: list[str]
    seeds: list[int]
    runs: pd.DataFrame
    jobs: pd.DataFrame
    timelines: pd.DataFrame
    errors: dict[tuple[str, int], str] = field(default_factory=dict)
    policy_kwargs: dict[str, dict[str, Any]] = field(default_factory=dict)
    timings: pd.DataFrame = field(default_factory=pd.DataFrame)
    imports: list[str] = field(default_factory=list)
    left_out: dict[tuple[str, int], str] = field(default_factory=dict)
    seeds_by_policy: dict[str, list[int]] = field(default_factory=dict)

    def leave_out(self, problems: Mapping[tuple[str, int], str]) -> Comparison:
        """A copy without the runs in ``problems`` (``{(policy, seed): problem}``), which it lists in
        :attr:`left_out` (``failed_runs.csv`` when saved): the other runs' results stay whole."""
        if not problems:
            return self

        def kept(df: pd.DataFrame) -> pd.DataFrame:
            if df.empty:
                return df
            keys = zip(df["policy"], df["seed"], strict=True)
            drop = pd.Series([key in problems for key in keys], index=df.index)
            return df.loc[~drop].reset_index(drop=True)

        return replace(
            self,
            runs=kept(self.runs),
            jobs=kept(self.jobs),
            timelines=kept(self.timelines),
            timings=kept(self.timings),
            left_out={**self.left_out, **problems},
        )

    def failed_runs(self) -> pd.DataFrame:
        """The runs left out of the results (:attr:`left_out`) and those that failed (:attr:`errors`):
        columns ``policy``, ``seed``, ``outcome`` (``left out`` or ``failed``) and ``problem``."""
        rows = [(p, s, "left out", msg) for (p, s), msg in self.left_out.items()]
        rows += [(p, s, "failed", msg) for (p, s), msg in self.errors.items()]
        order = {p: i for i, p in enumerate(self.policies)}
        rows.sort(key=lambda r: (r[1], order.get(r[0], len(order)), r[0]))
        return pd.DataFrame(rows, columns=["policy", "seed", "outcome", "problem"])

    def aggregate(self, *, timings: bool = False) -> pd.DataFrame:
        """Mean and standard deviation over seeds of each metric, one row per policy.

        Args:
            timings: Include the wall-clock columns (:data:`TIMING_COLUMNS`), which differ between two
                executions of the same configuration.
        """
        if self.runs.empty:
            return pd.DataFrame()
        runs = self.runs
        if timings and not self.timings.empty:
            runs = runs.merge(self.timings, on=["policy", "seed"], how="left")
        numeric = runs.drop(columns=["seed"]).groupby("policy", sort=False)
        mean = numeric.mean(numeric_only=True)
        std = numeric.std(numeric_only=True, ddof=0)
        out = mean.join(std.add_suffix("_std"))
        return out.reindex([p for p in self.policies if p in out.index])

    def overrides(self) -> dict[str, Any]:
        """The scenario's fields that differ from the embedded scenario of the same name, as dotted keys.

        A scenario that is not an embedded one (a trace, a scenario built in code) has none: its
        configuration is in :meth:`config`.
        """
        base = SCENARIOS.get(self.scenario.name)
        if base is None:
            return {}
        out: dict[str, Any] = {}
        if self.scenario.cluster != base.cluster:
            out["cluster"] = self.scenario.cluster
        for section in ("workload", "sim"):
            mine, theirs = asdict_shallow(getattr(self.scenario, section)), asdict_shallow(getattr(base, section))
            for key, value in mine.items():
                if key != "seed" and _canonical(value) != _canonical(theirs.get(key)):
                    out[f"{section}.{key}"] = value
        return out

    def config(self) -> dict[str, Any]:
        """Everything the results depend on: scenario (with overrides), policies, knobs, seeds, imports."""
        workload = asdict(self.scenario.workload)
        trace = self.scenario.workload.trace
        if trace and Path(trace).is_file():
            workload["trace_sha256"] = hashlib.sha256(Path(trace).read_bytes()).hexdigest()
        return _canonical(
            {
                "scenario": {
                    "name": self.scenario.name,
                    "description": self.scenario.description,
                    "cluster": self.scenario.cluster,
                    "workload": workload,
                    "sim": asdict_shallow(self.scenario.sim),
                },
                "overrides": self.overrides(),
                "policies": list(self.policies),
                "policy_options": {p: dict(v) for p, v in self.policy_kwargs.items() if v},
                "seeds": list(self.seeds),
                "imports": list(self.imports),
                # Only when some policy ran fewer seeds, so every other configuration keeps its hash.
                **({"seeds_by_policy": self.seeds_by_policy} if self.seeds_by_policy else {}),
            }
        )

    def config_hash(self) -> str:
        """Eight hex digits of the SHA-256 of :meth:`config` (the same configuration, the same hash)."""
        text = json.dumps(self.config(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:8]

    def describe(self) -> str:
        """A one-line account of the configuration for titles: scenario, overrides and knobs."""
        parts = [f"scenario '{self.scenario.name}'"]
        overrides = self.overrides()
        if overrides:
            parts.append("with " + ", ".join(f"{k.split('.', 1)[-1]}={_short_value(v)}" for k, v in overrides.items()))
        knobs = [f"{p}:{k}={_short_value(v)}" for p, kv in self.policy_kwargs.items() for k, v in kv.items()]
        if knobs:
            parts.append(("and knobs " if overrides else "with knobs ") + ", ".join(knobs))
        return " ".join(parts)

    def save(self, out_dir: str | os.PathLike[str], *, plots: bool = True) -> list[Path]:
        """Write ``runs.csv``, ``summary.csv``, ``jobs.csv.gz``, ``summary.json``, ``timings.csv`` and the figures.

        Every file is written to a temporary name first and renamed, so an interrupted save leaves
        no half-written file (``hetgym compare`` also writes the whole folder under a temporary name).
        All but ``timings.csv`` and the figures are byte-identical for identical configurations.
        """
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written = [
            atomic_write(out / "runs.csv", lambda p: self.runs_table().to_csv(p, index=False)),
            atomic_write(out / "summary.csv", lambda p: self.aggregate().to_csv(p)),
            atomic_write(out / "jobs.csv.gz", lambda p: _write_csv_gz(self.jobs, p)),
            atomic_write(
                out / "summary.json",
                lambda p: p.write_text(json.dumps(self.summary_dict(), indent=2, default=_json_default) + "\n"),
            ),
            atomic_write(out / "timings.csv", lambda p: self.timings.to_csv(p, index=False)),
        ]
        if self.left_out or self.errors:  # the runs whose results are not in the files above, and why
            written.append(atomic_write(out / "failed_runs.csv", lambda p: self.failed_runs().to_csv(p, index=False)))
        if plots:
            from hetgym.plots import plot_comparison

            written += plot_comparison(self, out)
        return written

    def runs_table(self) -> pd.DataFrame:
        """``runs`` with the configuration columns: scenario, cluster, each override and the run's knobs."""
        if self.runs.empty:
            return self.runs
        df = self.runs.copy()
        config = {"scenario": self.scenario.name, "cluster": self.scenario.cluster}
        config.update({k: v for k, v in self.overrides().items() if k != "cluster"})
        position = 2
        for key, value in config.items():
            df.insert(position, key, _cell(value))
            position += 1
        knobs = [
            json.dumps(_canonical(self.policy_kwargs.get(p, {})), sort_keys=True, separators=(",", ":"))
            for p in df["policy"]
        ]
        df.insert(position, "policy_options", knobs)
        return df

    def summary_dict(self) -> dict[str, Any]:
        """Configuration, aggregate metrics and errors as plain data (no wall-clock figures)."""
        agg = self.aggregate()
        return {
            "config": self.config(),
            "config_hash": self.config_hash(),
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
            **({"left_out": {f"{p}@{s}": msg for (p, s), msg in self.left_out.items()}} if self.left_out else {}),
        }


def _write_csv_gz(df: pd.DataFrame, path: Path) -> None:
    """``df`` as gzipped CSV with neither a file name nor a time stamp in the gzip header (byte-stable)."""
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as fh:
        fh.write(df.to_csv(index=False).encode())


def _canonical(value: Any) -> Any:
    """Plain JSON data for hashing and comparing: mappings and sequences recursively, numpy scalars as Python."""
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if hasattr(value, "__dataclass_fields__"):
        return _canonical(asdict(value))
    return str(value)


def _cell(value: Any) -> Any:
    """A configuration value as a table cell (structured values as JSON)."""
    value = _canonical(value)
    return json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else value


def _short_value(value: Any) -> str:
    text = str(_cell(value))
    return text if len(text) <= 40 else "..." + text[-37:]


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
    imports: Sequence[str] = (),
    seeds_by_policy: Mapping[str, Sequence[int]] | None = None,
) -> Comparison:
    """Run every policy on the scenario's workload for every seed.

    Args:
        scenario: A :class:`Scenario` or an embedded scenario's name.
        policies: Registered policy names (checked before anything runs).
        seeds: Workload seeds; every policy sees the same workload for a seed.
        policy_kwargs: ``{policy: {knob: value}}`` (names and values checked before anything runs).
        throughput: Throughput model (default: the embedded table).
        on_run: Called after each run with (policy, seed, result or None on failure), e.g. to
            advance a progress bar.
        fail_fast: Re-raise the first error instead of recording it and going on.
        imports: Modules or ``.py`` files to import first (they register custom policies).
        seeds_by_policy: ``{policy: seeds}`` for policies that run only some of ``seeds`` (e.g. one seed
            of a deterministic policy on a fixed workload: :func:`seeds_that_matter`); the others run all.

    Raises:
        InvalidJobError: A seed's workload has a job the cluster can never run (before any run).
    """
    from hetgym.sweep.runspec import load_imports

    load_imports(imports)
    scenario = get_scenario(scenario)
    if len(set(policies)) != len(policies):
        raise ValueError(f"policies {list(policies)} name a policy twice; name each once")
    for name in policies:
        policy_class(name)  # unknown names fail before any work
    kwargs = {k: dict(v) for k, v in (policy_kwargs or {}).items()}
    for name in kwargs:
        if name not in policies:
            raise ValueError(f"options given for policy {name!r}, which is not among the compared {list(policies)}")
    for name in policies:
        check_policy_options(name, kwargs.get(name, {}))  # knob names and values, before any work
    cluster = scenario.cluster_spec()
    rows: list[dict[str, Any]] = []
    jobs: list[pd.DataFrame] = []
    timelines: list[pd.DataFrame] = []
    timing_rows: list[dict[str, Any]] = []
    errors: dict[tuple[str, int], str] = {}
    runs_of = {name: [s for s in seeds if s in (seeds_by_policy or {}).get(name, seeds)] for name in policies}
    for seed in seeds:
        if not any(seed in runs_of[name] for name in policies):
            continue
        workload = scenario.workload.build(cluster, seed=seed, throughput=throughput)
        # A workload the cluster can never run (a job too large, too much work) fails the comparison
        # here, naming the job, rather than every run one by one.
        simulator_for(cluster, workload, scenario.sim, throughput)
        for name in policies:
            if seed not in runs_of[name]:
                continue
            try:
                result = run_one(
                    scenario, name, seed, policy_kwargs=kwargs.get(name), workload=workload, throughput=throughput
                )
            except Exception as exc:
                if fail_fast:
                    raise
                errors[(name, seed)] = describe(exc)
                if on_run:
                    on_run(name, seed, None)
                continue
            metrics = {k: v for k, v in result.metrics.items() if k not in TIMING_COLUMNS}
            rows.append(
                {"policy": name, "seed": seed, **metrics, "stalled": result.stalled, "num_epochs": result.num_epochs}
            )
            timing_rows.append(
                {
                    "policy": name,
                    "seed": seed,
                    "wall_s": result.wall_s,
                    **{k: result.metrics.get(k, math.nan) for k in TIMING_COLUMNS if k != "wall_s"},
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
        policy_kwargs={p: kwargs[p] for p in policies if kwargs.get(p)},
        timings=pd.DataFrame(timing_rows),
        imports=[str(i) for i in imports],
        seeds_by_policy={p: ss for p, ss in runs_of.items() if ss != list(seeds)},
    )


def fixed_workload(scenario: Scenario) -> bool:
    """Whether every seed gives the scenario the same workload: a canonical trace read whole or in its
    first jobs (a public trace's fill samplers and a trace window are seeded; recipes draw by seed)."""
    wl = scenario.workload
    return wl.trace is not None and wl.trace_format is None and not wl.trace_window


def seeds_that_matter(
    scenario: Scenario, policy: str, seeds: Sequence[int], policy_kwargs: Mapping[str, Any] | None = None
) -> list[int]:
    """The seeds whose runs of ``policy`` can differ: all of them, or only the first when the workload is
    fixed (:func:`fixed_workload`), the policy declares itself not :attr:`~hetgym.sim.policy.Policy.randomised`
    with these knobs, and no random placer is in force (the other seeds would repeat the first run)."""
    if not seeds or not fixed_workload(scenario):
        return list(seeds)
    instance = make_policy(policy, **dict(policy_kwargs or {}))
    placer = scenario.sim.placer or getattr(instance, "placer", "default")
    if getattr(instance, "randomised", True) or placer == "random":
        return list(seeds)
    return [seeds[0]]


def default_policies() -> list[str]:
    """The policies ``hetgym compare`` runs by default: every registered one not marked otherwise.

    Variants of another policy (``fifo-backfill``, the Gavel ``-agnostic`` ones, ...) and baselines
    meant for one paper's study set ``in_default_comparison = False``: name them in ``--policies``.
    """
    from hetgym.sim.policy import list_policies

    return [name for name in list_policies() if getattr(policy_class(name), "in_default_comparison", True)]
