"""One run of a sweep: :class:`RunSpec`, its stable id, and the per-process setup a worker repeats.

A :class:`RunSpec` is plain, picklable data: everything a worker needs to simulate one grid point.
Its id (:func:`run_id_of`) hashes the canonical JSON of its full configuration, so equal
configurations share an id whatever the order or labels of the grid. :func:`scaled_cluster` and
:func:`load_imports` run in the driver and again in every worker process (registrations are
per-process).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import json
import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hetgym.limits import MAX_CLUSTER_SERVERS
from hetgym.sim.cluster import ClusterSpec, Server, get_cluster, register_cluster
from hetgym.sim.config import SimConfig
from hetgym.sim.errors import UnknownNameError
from hetgym.sim.usercode import UserCodeError
from hetgym.sweep.checks import SweepConfigError
from hetgym.workloads.scenario import Scenario, WorkloadConfig


@dataclass(frozen=True)
class RunSpec:
    """One point of a sweep grid: everything a worker needs to simulate it (plain, picklable data).

    Attributes:
        policy: Display label (the policy name, or its entry's ``label``, plus the knob-axis values).
        policy_name: Registered policy name.
        policy_options: Knobs passed to the policy's constructor.
        scenario: Name of the scenario the run derives from.
        cluster: Cluster preset name (before scaling).
        cluster_scale: Factor applied to the number of servers of each GPU type (1 = the preset).
        workload: Every field of the run's :class:`WorkloadConfig`.
        sim: Every field of the run's :class:`SimConfig` except ``seed`` (the run's ``seed`` is used).
        seed: Workload and policy seed.
        imports: Modules or ``.py`` files to import first (they register custom policies or clusters).
    """

    policy: str
    policy_name: str
    policy_options: Mapping[str, Any]
    scenario: str
    cluster: str
    cluster_scale: float
    workload: Mapping[str, Any]
    sim: Mapping[str, Any]
    seed: int
    imports: tuple[str, ...] = ()
    run_id: str = field(init=False, default="")

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_id", run_id_of(self.config()))

    def config(self) -> dict[str, Any]:
        """The full configuration that determines the run's result (what the run id hashes)."""
        return {
            "policy": self.policy_name,
            "policy_options": dict(self.policy_options),
            "cluster": self.cluster,
            "cluster_scale": self.cluster_scale,
            "workload": dict(self.workload),
            "sim": dict(self.sim),
            "seed": self.seed,
        }

    def cluster_name(self) -> str:
        """The preset to simulate on (a scaled copy of ``cluster`` is registered when ``cluster_scale`` != 1)."""
        return scaled_cluster(self.cluster, self.cluster_scale)

    def scenario_obj(self) -> Scenario:
        """The run's :class:`Scenario` (cluster, workload and simulator configuration)."""
        return Scenario(
            self.scenario,
            self.cluster_name(),
            WorkloadConfig.from_dict(self.workload),
            SimConfig.from_dict(self.sim),
        )

    def flat(self) -> dict[str, Any]:
        """The configuration as flat columns of the results table (non-scalar values as JSON text)."""
        row: dict[str, Any] = {
            "run_id": self.run_id,
            "policy": self.policy,
            "policy_name": self.policy_name,
            "scenario": self.scenario,
            "cluster": self.cluster,
            "cluster_scale": self.cluster_scale,
            "num_gpus": get_cluster(self.cluster_name()).total_gpus,
            "seed": self.seed,
        }
        row.update({f"workload.{k}": _scalar(v) for k, v in self.workload.items()})
        row.update({f"sim.{k}": _scalar(v) for k, v in self.sim.items()})
        row.update({f"policy.{k}": _scalar(v) for k, v in self.policy_options.items()})
        return row


def _scalar(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return json.dumps(canonical(value), sort_keys=True)


def canonical(value: Any) -> Any:
    """A JSON-able form in which equal configurations are equal (1 and 1.0 alike, mappings as dicts)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        f = float(value)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return int(f) if f.is_integer() else f
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return str(value)


def run_id_of(config: Mapping[str, Any]) -> str:
    """A stable 16-hex-digit id: the SHA-256 of the canonical JSON of ``config``."""
    text = json.dumps(canonical(config), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------
# Cluster scaling and imports (run in the driver and in every worker)


def scaled_cluster(name: str, scale: float) -> str:
    """The preset ``name`` with each GPU type's server count multiplied by ``scale`` (at least one server).

    A scale of 1 returns ``name``; otherwise a preset ``"<name>*<scale>"`` is registered in this process
    (idempotently) and its name returned.
    """
    if scale == 1:
        return name
    if not (isinstance(scale, (int, float)) and not isinstance(scale, bool) and scale > 0 and math.isfinite(scale)):
        raise SweepConfigError(f"cluster scale {scale!r} is not a positive number")
    scaled = f"{name}*{scale:g}"
    try:
        get_cluster(scaled)
        return scaled
    except UnknownNameError:
        pass
    base = get_cluster(name)
    wanted = sum(
        max(1, round(sum(1 for s in base.servers if s.gpu_type == gpu_type) * scale)) for gpu_type in base.gpu_types
    )
    if wanted > MAX_CLUSTER_SERVERS:
        raise SweepConfigError(
            f"cluster_scales: {scale:g} gives cluster {name} {wanted:,} servers, more than {MAX_CLUSTER_SERVERS:,} "
            f"(the servers are built one by one and visited at every placement); give a smaller scale, at most "
            f"{MAX_CLUSTER_SERVERS / len(base.servers):g} for {name}"
        )
    servers: list[Server] = []
    for gpu_type in base.gpu_types:
        of_type = [s for s in base.servers if s.gpu_type == gpu_type]
        count = max(1, round(len(of_type) * scale))
        for i in range(count):
            template = of_type[i % len(of_type)]
            servers.append(dataclasses.replace(template, server_id=len(servers)))
    spec = ClusterSpec(scaled, tuple(servers))
    register_cluster(scaled, lambda: spec, f"{name} with server counts x{scale:g}")
    return scaled


_IMPORTED: set[str] = set()


def load_imports(imports: Iterable[str]) -> None:
    """Import each module name or ``.py`` file once per process (custom policies register on import)."""
    for item in imports:
        if item in _IMPORTED:
            continue
        if item.endswith(".py"):
            path = Path(item)
            if not path.is_file():
                raise SweepConfigError(f"imports: file {item!r} does not exist")
            mod_name = f"hetgym_sweep_import_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]}"
            spec = importlib.util.spec_from_file_location(mod_name, path)
            if spec is None or spec.loader is None:
                raise SweepConfigError(f"imports: cannot load {item!r} as a Python module")
            module = importlib.util.module_from_spec(spec)
            sys.modules[mod_name] = module
            try:
                spec.loader.exec_module(module)
            except (Exception, SystemExit) as exc:  # the file's own error: named by file and line
                del sys.modules[mod_name]
                raise UserCodeError(f"imports: {item} failed", exc) from exc
            except BaseException:
                del sys.modules[mod_name]
                raise
        else:
            try:
                importlib.import_module(item)
            except ModuleNotFoundError as exc:
                if exc.name is None or not (item == exc.name or item.startswith(exc.name + ".")):
                    # a module the user's module imports is missing: name the line that imports it
                    raise UserCodeError(f"imports: {item} failed", exc) from exc
                raise SweepConfigError(
                    f"imports: module {item!r} cannot be imported ({exc}); give an importable module or a .py file"
                ) from exc
            except (Exception, SystemExit) as exc:
                raise UserCodeError(f"imports: {item} failed", exc) from exc
        _IMPORTED.add(item)


def check_imports(imports: Iterable[str]) -> None:
    """Check that each ``.py`` file exists and each module's top-level package can be found, running none.

    What ``hetgym sweep --dry-run`` does instead of :func:`load_imports`: finding a top-level package reads
    no code of it (a dotted module's parent packages would be imported to find it, so only the first part
    is looked up).
    """
    for item in imports:
        if item.endswith(".py"):
            if not Path(item).is_file():
                raise SweepConfigError(f"imports: file {item!r} does not exist")
            continue
        top = item.split(".")[0]
        try:
            found = top in sys.modules or importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise SweepConfigError(f"imports: module {item!r} cannot be found; give an importable module or a .py file")
