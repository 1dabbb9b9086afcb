"""Declarative sweep grids: parsing, validation, expansion into runs, and stable run ids.

A sweep is a mapping (usually a YAML file, see ``docs/sweeps.md``)::

    name: load-sweep
    policies: [fifo, srtf, {name: tiresias, grid: {promote_knob: [4, 8]}}]
    scenarios: [tiny]
    loads: [0.5, 0.7, 0.9]          # offered utilisation (workload.target_utilisation)
    seeds: 5                         # 0..4
    workload: {num_jobs: 40}         # fixed overrides of every scenario's workload
    grid: {workload.tightness: [0.8, 1.0], sim.restart_penalty_s: [0, 30]}

:meth:`SweepSpec.expand` turns it into a list of :class:`RunSpec`, one per point of the cross product
(scenarios x clusters x cluster scales x grid axes x loads x seeds x policy variants), after checking
every name, key and value: a bad grid fails before anything runs. Each run's id is a hash of its full
configuration (policy and knobs, cluster, every workload and simulator field, seed), so it does not
depend on the order of the grid or on display labels, and a resumed sweep recognises finished runs.

This module parses and expands; :class:`RunSpec`, the run ids, cluster scaling and imports live in
:mod:`hetgym.sweep.runspec`, and the value checks with :class:`SweepConfigError` in
:mod:`hetgym.sweep.checks` (all re-exported here).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hetgym.limits import check_runs
from hetgym.sim.cluster import get_cluster, list_clusters
from hetgym.sim.config import SimConfig
from hetgym.sim.errors import HetgymError, UnknownNameError
from hetgym.sim.policy import list_policies, make_policy
from hetgym.sim.usercode import UserCodeError, user_place
from hetgym.sweep.checks import (
    SweepConfigError,
    as_axis,
    as_list,
    as_mapping,
    check_field,
    check_keys,
    check_name,
    check_types,
    load_yaml,
    parse_seeds,
    positive_numbers,
    resolve_path,
)
from hetgym.sweep.runspec import RunSpec, canonical, check_imports, load_imports, run_id_of, scaled_cluster
from hetgym.workloads.scenario import Scenario, WorkloadConfig, get_scenario

__all__ = [
    "SPEC_KEYS",
    "PolicyEntry",
    "RunSpec",
    "SweepConfigError",
    "SweepSpec",
    "check_imports",
    "load_imports",
    "parse_seeds",
    "run_id_of",
    "scaled_cluster",
]

#: Keys of a sweep mapping, in the order documented in ``docs/sweeps.md``.
SPEC_KEYS: tuple[str, ...] = (
    "name",
    "description",
    "out",
    "imports",
    "policies",
    "scenarios",
    "clusters",
    "cluster_scales",
    "loads",
    "arrival_rates_per_h",
    "seeds",
    "workload",
    "sim",
    "grid",
)
_POLICY_KEYS = ("name", "label", "options", "grid")
_SCENARIO_KEYS = ("name", "base", "cluster", "workload", "sim", "description")
_WORKLOAD_FIELDS = tuple(f.name for f in dataclasses.fields(WorkloadConfig) if f.init)
#: Workload fields a run's configuration leaves out at these values, so that runs described before the
#: fields existed keep their ids (a resumed sweep does not re-run them).
_OMITTED_AT = {"trace_member": None, "trace_window": False}
#: The simulator's seed is the run's seed; it is not a sweep knob of its own.
_SIM_FIELDS = tuple(f.name for f in dataclasses.fields(SimConfig) if f.init and f.name != "seed")
_LOAD_KEYS = ("target_utilisation", "arrival_rate_per_h")


# --------------------------------------------------------------------------------------------
# Policies and scenarios of a sweep


@dataclass(frozen=True)
class PolicyEntry:
    """A policy of the sweep: fixed knobs (``options``) and knob axes (``grid``)."""

    name: str
    label: str
    options: Mapping[str, Any] = field(default_factory=dict)
    grid: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

    def variants(self) -> list[tuple[str, dict[str, Any]]]:
        """``(label, knobs)`` for each combination of the knob axes (one when there are none)."""
        if not self.grid:
            return [(self.label, dict(self.options))]
        keys = list(self.grid)
        out = []
        for combo in itertools.product(*(self.grid[k] for k in keys)):
            knobs = dict(zip(keys, combo, strict=True))
            suffix = ",".join(f"{k}={_label_value(v)}" for k, v in knobs.items())
            out.append((f"{self.label}[{suffix}]", {**self.options, **knobs}))
        return out


def _label_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(canonical(value))


def _parse_policy(item: Any, where: str) -> PolicyEntry:
    if isinstance(item, str):
        return PolicyEntry(item, item)
    if not isinstance(item, Mapping):
        raise SweepConfigError(f"{where}: give a policy name or a mapping with keys {list(_POLICY_KEYS)}, not {item!r}")
    check_keys(item, _POLICY_KEYS, f"{where} key")
    if "name" not in item:
        raise SweepConfigError(f"{where}: the policy mapping needs a 'name' (a registered policy)")
    options = item.get("options") or {}
    grid = item.get("grid") or {}
    if not isinstance(options, Mapping):
        raise SweepConfigError(f"{where}.options: give a mapping knob: value, not {options!r}")
    if not isinstance(grid, Mapping):
        raise SweepConfigError(f"{where}.grid: give a mapping knob: [values...], not {grid!r}")
    axes = {str(k): as_axis(v, f"{where}.grid.{k}") for k, v in grid.items()}
    both = set(options) & set(axes)
    if both:
        raise SweepConfigError(f"{where}: knob(s) {sorted(both)} are both in options and grid; keep one")
    name = str(item["name"])
    return PolicyEntry(name, str(item.get("label") or name), dict(options), axes)


def _parse_scenario(item: Any, where: str) -> Scenario:
    if isinstance(item, str):
        return get_scenario(item)
    if not isinstance(item, Mapping):
        raise SweepConfigError(f"{where}: give an embedded scenario name or a mapping, not {item!r}")
    check_keys(item, _SCENARIO_KEYS, f"{where} key")
    if "name" not in item:
        raise SweepConfigError(f"{where}: an inline scenario needs a 'name'")
    workload = as_mapping(item.get("workload"), f"{where}.workload")
    sim = as_mapping(item.get("sim"), f"{where}.sim")
    if "base" in item:
        base = get_scenario(str(item["base"]))
        changes: dict[str, Any] = {"name": str(item["name"])}
        if "cluster" in item:
            changes["cluster"] = str(item["cluster"])
        if "description" in item:
            changes["description"] = str(item["description"])
        return base.with_overrides(**changes, workload=workload, sim=sim)
    if "cluster" not in item:
        raise SweepConfigError(f"{where}: an inline scenario needs a 'cluster' (or a 'base' scenario to start from)")
    return Scenario(
        str(item["name"]),
        str(item["cluster"]),
        WorkloadConfig.from_dict(workload),
        SimConfig.from_dict(sim),
        str(item.get("description", "")),
    )


# --------------------------------------------------------------------------------------------
# The sweep


@dataclass(frozen=True)
class SweepSpec:
    """A parsed sweep description (see the module docstring); :meth:`expand` validates and lists its runs.

    Attributes:
        name: Sweep name (default output directory ``results/sweeps/<name>``).
        policies: Policies with their knobs and knob axes.
        scenarios: Base scenarios.
        clusters: Cluster presets replacing each scenario's own (``None``: keep the scenario's).
        cluster_scales: Server-count multipliers of the cluster.
        loads: Offered utilisations (``workload.target_utilisation``), or ``None``.
        arrival_rates_per_h: Arrival rates (``workload.arrival_rate_per_h``), or ``None``.
        seeds: Workload and policy seeds.
        workload: Fixed workload overrides.
        sim: Fixed simulator overrides.
        grid: Axes over workload and simulator fields, ``{"workload.<field>" | "sim.<field>": values}``.
        imports: Modules or ``.py`` files that register custom policies or clusters.
        out: Output directory given in the description (``None``: the default).
        description: Free text.
        unchecked: After :meth:`expand` without running the imports: the policy and cluster names left
            unchecked (nothing registers them unless an import does).
    """

    name: str
    policies: tuple[PolicyEntry, ...]
    scenarios: tuple[Scenario, ...]
    clusters: tuple[str, ...] | None = None
    cluster_scales: tuple[float, ...] = (1,)
    loads: tuple[float, ...] | None = None
    arrival_rates_per_h: tuple[float, ...] | None = None
    seeds: tuple[int, ...] = (0,)
    workload: Mapping[str, Any] = field(default_factory=dict)
    sim: Mapping[str, Any] = field(default_factory=dict)
    grid: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    imports: tuple[str, ...] = ()
    out: str | None = None
    description: str = ""
    source: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    unchecked: list[str] = field(default_factory=list, compare=False, repr=False)

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def from_yaml(cls, path: str | Path) -> SweepSpec:
        """Read a sweep description from a YAML (or JSON) file; relative paths in it are relative to the file."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"sweep config {str(path)!r} does not exist")
        values = load_yaml(path.read_text(), str(path))
        if values is None:
            values = {}
        if not isinstance(values, Mapping):
            raise SweepConfigError(f"sweep config {path}: the top level must be a mapping of keys {list(SPEC_KEYS)}")
        values = dict(values)
        values.setdefault("name", path.stem)
        try:
            return cls.from_dict(values, base_dir=path.parent)
        except SweepConfigError as exc:
            raise SweepConfigError(f"sweep config {path}: {exc}") from None

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], *, base_dir: str | Path = ".") -> SweepSpec:
        """Parse a sweep mapping (keys :data:`SPEC_KEYS`); file paths in it are relative to ``base_dir``."""
        check_keys(values, SPEC_KEYS, "sweep config key")
        base = Path(base_dir)
        try:
            return cls._from_dict(values, base)
        except UnknownNameError as exc:
            raise SweepConfigError(str(exc)) from None

    @classmethod
    def _from_dict(cls, values: Mapping[str, Any], base: Path) -> SweepSpec:
        policies_raw = values.get("policies")
        if not policies_raw:
            raise SweepConfigError("'policies' is missing or empty; list registered policies, e.g. [fifo, srtf]")
        if isinstance(policies_raw, (str, Mapping)):
            policies_raw = [policies_raw]
        policies = tuple(_parse_policy(p, f"policies[{i}]") for i, p in enumerate(as_list(policies_raw, "policies")))
        labels = [p.label for p in policies]
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise SweepConfigError(f"policies: label(s) {dup} appear twice; give each entry a distinct 'label'")
        scenarios_raw = values.get("scenarios", ["default"])
        if isinstance(scenarios_raw, (str, Mapping)):
            scenarios_raw = [scenarios_raw]
        scenarios = tuple(
            _parse_scenario(s, f"scenarios[{i}]") for i, s in enumerate(as_list(scenarios_raw, "scenarios"))
        )
        clusters = values.get("clusters")
        if clusters is not None:
            clusters = tuple(str(c) for c in as_list([clusters] if isinstance(clusters, str) else clusters, "clusters"))
        scales = tuple(positive_numbers(values.get("cluster_scales", [1]), "cluster_scales"))
        loads = values.get("loads")
        rates = values.get("arrival_rates_per_h")
        if loads is not None and rates is not None:
            raise SweepConfigError("give either 'loads' (offered utilisation) or 'arrival_rates_per_h', not both")
        workload = dict(as_mapping(values.get("workload"), "workload"))
        sim = dict(as_mapping(values.get("sim"), "sim"))
        for key in workload:
            check_field(key, _WORKLOAD_FIELDS, "workload key")
        for key in sim:
            check_field(key, _SIM_FIELDS, "sim key", hint="The simulator seed is the run's seed: use 'seeds'.")
        if workload.get("trace"):
            workload["trace"] = resolve_path(workload["trace"], base)
        grid: dict[str, tuple[Any, ...]] = {}
        for key, axis in as_mapping(values.get("grid"), "grid").items():
            section, _, name = str(key).partition(".")
            if section == "workload":
                check_field(name, _WORKLOAD_FIELDS, "workload key", where=f"grid.{key}")
            elif section == "sim":
                check_field(name, _SIM_FIELDS, "sim key", where=f"grid.{key}")
            else:
                raise SweepConfigError(
                    f"grid key {key!r}: write 'workload.<field>' or 'sim.<field>' (policy knob axes go under "
                    "the policy's own 'grid'; loads, seeds, clusters and cluster_scales have their own keys)"
                )
            values_ = as_axis(axis, f"grid.{key}")
            if section == "workload" and name == "trace":
                values_ = tuple(resolve_path(v, base) if v else v for v in values_)
            grid[str(key)] = values_
        if loads is not None and any(f"workload.{k}" in grid for k in _LOAD_KEYS):
            raise SweepConfigError("'loads' and a grid axis over the load both set the load; keep one")
        imports = tuple(
            resolve_path(i, base) if str(i).endswith(".py") else str(i)
            for i in as_list(values.get("imports", []), "imports")
        )
        return cls(
            name=check_name(values.get("name") or "sweep"),
            policies=policies,
            scenarios=scenarios,
            clusters=clusters,
            cluster_scales=scales,
            loads=None if loads is None else tuple(positive_numbers(loads, "loads")),
            arrival_rates_per_h=None if rates is None else tuple(positive_numbers(rates, "arrival_rates_per_h")),
            seeds=tuple(parse_seeds(values.get("seeds", [0]))),
            workload=workload,
            sim=sim,
            grid=grid,
            imports=imports,
            out=None if values.get("out") is None else str(values["out"]),
            description=str(values.get("description", "")),
            source=dict(values),
        )

    # -- expansion ---------------------------------------------------------------------------

    def expand(self, *, run_imports: bool = True) -> list[RunSpec]:
        """Every run of the grid, after validating every name, key and value (nothing runs here).

        Args:
            run_imports: Import the sweep's ``imports`` first (they register custom policies and
                clusters), which runs their code. ``False`` (``hetgym sweep --dry-run``) runs none of it:
                the files and modules are only checked to exist (:func:`check_imports`), and a policy or
                cluster name nothing registers yet is listed in :attr:`unchecked` instead of refused when
                there are imports that could register it.

        Raises:
            SweepConfigError: On an unknown policy, knob, cluster or key, a value of the wrong type or
                out of range, or two grid points with the same configuration.
        """
        try:
            return self._expand(run_imports)
        except (SweepConfigError, UserCodeError):  # the latter names the user's file and line already
            raise
        except (HetgymError, KeyError, ValueError, TypeError) as exc:
            raise SweepConfigError(str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)) from None

    def size(self) -> int:
        """The number of runs :meth:`expand` gives (counted without building them)."""
        variants = sum(math.prod(len(axis) for axis in entry.grid.values()) for entry in self.policies)
        loads = self.loads if self.loads is not None else self.arrival_rates_per_h
        return (
            len(self.scenarios)
            * (len(self.clusters) if self.clusters else 1)
            * len(self.cluster_scales)
            * math.prod(len(axis) for axis in self.grid.values())
            * (len(loads) if loads is not None else 1)
            * len(self.seeds)
            * variants
        )

    def _expand(self, run_imports: bool) -> list[RunSpec]:
        check_runs(
            self.size(),
            "the grid's axes (scenarios x clusters x cluster_scales x grid x loads x seeds x policy variants)",
            "split it into several sweeps",
        )
        self.unchecked.clear()
        if run_imports:
            load_imports(self.imports)
        else:
            check_imports(self.imports)
        # Without running the imports, a name they may register cannot be judged: list it, refuse none.
        lenient = bool(self.imports) and not run_imports
        known_policies = set(list_policies()) if lenient else set()
        variants: list[tuple[PolicyEntry, str, dict[str, Any]]] = []
        for entry in self.policies:
            if lenient and entry.name not in known_policies:
                self.unchecked.append(f"policy {entry.name!r}")
                variants.extend((entry, label, knobs) for label, knobs in entry.variants())
                continue
            for label, knobs in entry.variants():
                try:
                    make_policy(entry.name, **knobs)  # unknown policies, knobs and bad knob values fail here
                except (HetgymError, KeyError, ValueError, TypeError) as exc:
                    msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
                    raise SweepConfigError(f"policy {label!r}: {msg}{user_place(exc)}") from None
                variants.append((entry, label, knobs))
        loads: list[dict[str, Any]] = [{}]
        if self.loads is not None:
            loads = [{"target_utilisation": v} for v in self.loads]
        elif self.arrival_rates_per_h is not None:
            loads = [{"arrival_rate_per_h": v} for v in self.arrival_rates_per_h]
        grid_keys = list(self.grid)
        runs: list[RunSpec] = []
        seen: dict[str, str] = {}
        for scenario in self.scenarios:
            for cluster in self.clusters or (scenario.cluster,):
                for scale in self.cluster_scales:
                    if lenient and cluster not in list_clusters():
                        self.unchecked.append(f"cluster {cluster!r}")
                    else:
                        get_cluster(scaled_cluster(cluster, scale))  # unknown presets fail here
                    for combo in itertools.product(*(self.grid[k] for k in grid_keys)):
                        axes = dict(zip(grid_keys, combo, strict=True))
                        for load in loads:
                            wl_over = {**self.workload, **{k[9:]: v for k, v in axes.items() if k[:9] == "workload."}}
                            wl_over.update(load)
                            sim_over = {**self.sim, **{k[4:]: v for k, v in axes.items() if k[:4] == "sim."}}
                            where = _describe(scenario.name, cluster, scale, axes, load)
                            workload = _workload_fields(scenario, wl_over, where)
                            sim = _sim_fields(scenario, sim_over, where)
                            for seed in self.seeds:
                                for entry, label, knobs in variants:
                                    run = RunSpec(
                                        policy=label,
                                        policy_name=entry.name,
                                        policy_options=knobs,
                                        scenario=scenario.name,
                                        cluster=cluster,
                                        cluster_scale=scale,
                                        workload=workload,
                                        sim=sim,
                                        seed=seed,
                                        imports=self.imports,
                                    )
                                    point = f"{label} seed {seed} ({where})"
                                    if run.run_id in seen:
                                        raise SweepConfigError(
                                            f"two grid points have the same configuration: {seen[run.run_id]} and "
                                            f"{point}; remove the duplicate scenario, cluster or policy entry"
                                        )
                                    seen[run.run_id] = point
                                    runs.append(run)
        return runs

    def to_dict(self) -> dict[str, Any]:
        """The description as given (for the results directory's ``sweep.json``)."""
        return {"name": self.name, **{k: v for k, v in self.source.items() if k != "name"}}


def _describe(scenario: str, cluster: str, scale: float, axes: Mapping[str, Any], load: Mapping[str, Any]) -> str:
    parts = [f"scenario {scenario}", f"cluster {cluster}" + (f"*{scale:g}" if scale != 1 else "")]
    parts += [f"{k}={v}" for k, v in axes.items()]
    parts += [f"workload.{k}={v}" for k, v in load.items()]
    return ", ".join(parts)


def _workload_fields(scenario: Scenario, overrides: Mapping[str, Any], where: str) -> dict[str, Any]:
    over = dict(overrides)
    given = [k for k in _LOAD_KEYS if over.get(k) is not None]
    if len(given) > 1:
        raise SweepConfigError(f"{where}: both {given} set the load; give one of them")
    if given:
        # Setting one way of giving the load clears the scenario's other one, as the command line does.
        over.update({k: None for k in _LOAD_KEYS if k not in over})
        over.setdefault("static", False)
    elif over.get("static"):
        over.update({k: None for k in _LOAD_KEYS if k not in over})
    values = {**scenario.workload.__dict__, **over}
    check_types(WorkloadConfig, values, f"{where}: workload")
    try:
        config = WorkloadConfig.from_dict(values)
    except (HetgymError, ValueError) as exc:
        raise SweepConfigError(f"{where}: {exc}") from None
    if config.trace is not None and not Path(config.trace).is_file():
        raise SweepConfigError(f"{where}: workload trace file {config.trace!r} does not exist")
    out = {k: getattr(config, k) for k in _WORKLOAD_FIELDS}
    return {k: v for k, v in out.items() if k not in _OMITTED_AT or v != _OMITTED_AT[k]}


def _sim_fields(scenario: Scenario, overrides: Mapping[str, Any], where: str) -> dict[str, Any]:
    values = {**scenario.sim.__dict__, **overrides}
    check_types(SimConfig, values, f"{where}: sim")
    try:
        config = SimConfig.from_dict(values)
    except (HetgymError, ValueError) as exc:
        raise SweepConfigError(f"{where}: {exc}") from None
    out = {k: getattr(config, k) for k in _SIM_FIELDS}
    out["restart_penalty_by_type"] = dict(out["restart_penalty_by_type"])
    return out
