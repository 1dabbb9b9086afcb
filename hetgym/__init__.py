"""hetgym: a heterogeneous GPU cluster simulator and Gymnasium environment.

The pure discrete-event simulator lives in :mod:`hetgym.sim` (numpy only), workloads and trace
readers in :mod:`hetgym.workloads`, and the ``HetCluster-v0`` environment in :mod:`hetgym.envs`.
Expert and classic scheduling policies live in the sibling package :mod:`baselines` and are made
by name with :func:`hetgym.make_policy`.

The names below are imported on first access (PEP 562), so that a command or a submodule (``hetgym
gavel``, ``hetgym.workloads.traces``) does not import the whole simulator. The Gym ids are registered
when Gymnasium is imported, before or after ``import hetgym`` (a light hook: Gymnasium itself is not
imported here).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

#: The public names, each imported from :mod:`hetgym.sim` on first access.
_SIM_NAMES: frozenset[str] = frozenset(__all__) - {"__version__"}

#: Subpackages and modules reachable as attributes after ``import hetgym`` alone, as when it imported them.
_SUBMODULES: frozenset[str] = frozenset({"envs", "sim", "workloads"})


def __getattr__(name: str) -> Any:
    if name in _SIM_NAMES:
        value = getattr(importlib.import_module("hetgym.sim"), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"hetgym.{name}")
    raise AttributeError(f"module 'hetgym' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_SIM_NAMES})


def _register_envs() -> None:
    """Register the Gym ids; the simulator and the baselines keep working when gymnasium is not installed."""
    from hetgym.envs.registration import register_envs

    with contextlib.suppress(ImportError):
        register_envs()


class _RegisterWithGymnasium:
    """A meta-path finder that registers the Gym ids once Gymnasium has been imported, then leaves.

    It finds ``gymnasium`` as the other finders would and wraps that loader's ``exec_module`` so that the
    ids are registered right after Gymnasium's own module has run; it answers ``None`` for every other name.
    """

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "gymnasium":
            return None
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(fullname)
        loader: Any = getattr(spec, "loader", None)  # any loader with an exec_module to wrap
        run = getattr(loader, "exec_module", None)
        if spec is None or run is None:
            return spec

        def exec_module(module: Any) -> None:
            run(module)
            _register_envs()

        loader.exec_module = exec_module
        return spec


if "gymnasium" in sys.modules:
    _register_envs()
elif not any(isinstance(f, _RegisterWithGymnasium) for f in sys.meta_path):
    sys.meta_path.insert(0, _RegisterWithGymnasium())
