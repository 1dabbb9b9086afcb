"""The placer contract and its registry.

A :class:`Placer` receives the jobs whose GPUs change at an epoch (:class:`PlacementRequest`: counts
per type, execution mode, the servers held before) and the free GPUs per server, and returns the
server groups of each. Per-type capacity has been validated before it is called, so a placer must
always succeed (every placer falls back to the fewest servers, largest free first).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, TypeVar

import numpy as np

from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.job import JobSpec
from hetgym.sim.registry import Registry
from hetgym.sim.throughput import ExecutionMode, ServerGroup


@dataclass(frozen=True, slots=True)
class PlacementRequest:
    """One job to place.

    Attributes:
        job_id: The job.
        spec: Its static description (parallelism, requested GPUs, ...).
        counts: ``((gpu_type, num_gpus), ...)`` to place, sorted by type name.
        mode: The execution mode it will run in.
        previous: The server groups it held before this epoch (empty if it held none).
    """

    job_id: int
    spec: JobSpec
    counts: tuple[tuple[str, int], ...]
    mode: ExecutionMode
    previous: tuple[ServerGroup, ...] = ()

    @property
    def total_gpus(self) -> int:
        """GPUs over all types."""
        return sum(n for _, n in self.counts)


class Placer(ABC):
    """Base class of placement strategies.

    Attributes:
        name: Registry name.
        replaces_all: When ``True`` the engine passes *every* allocated job (changed or not) with the
            whole cluster free, so the placer may move jobs that kept their counts (ElasticFlow's buddy
            allocation re-packs the cluster); a moved job pays the restart penalty. When ``False``
            (default) jobs whose counts and mode are unchanged keep their servers and only the changed
            ones are placed, into the GPUs left free.
    """

    name: ClassVar[str] = "placer"
    replaces_all: ClassVar[bool] = False

    def __init__(self) -> None:
        self.cluster: ClusterSpec | None = None
        self.rng: np.random.Generator = np.random.default_rng(0)

    def reset(self, cluster: ClusterSpec, *, rng: np.random.Generator) -> None:
        """Prepare for a run on ``cluster`` (``rng``: the placer's own random stream)."""
        self.cluster = cluster
        self.rng = rng

    @abstractmethod
    def place(
        self, cluster: ClusterSpec, free: np.ndarray, requests: Sequence[PlacementRequest]
    ) -> dict[int, tuple[ServerGroup, ...]]:
        """Server groups for every request, taken from ``free`` (free GPUs per server id, updated in place).

        ``requests`` come in job-id order; the placer chooses its own order. The groups of each job are
        returned sorted by server id.
        """

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


#: Every registered placer class (see :mod:`hetgym.sim.registry`).
PLACERS: Registry[type[Placer]] = Registry("placer", "List them with hetgym.sim.placement.list_placers().")
_T = TypeVar("_T", bound=type[Placer])


def register_placer(name: str | None = None) -> Callable[[_T], _T]:
    """Class decorator: register a :class:`Placer` subclass under ``name`` (default ``cls.name``)."""

    def deco(cls: _T) -> _T:
        PLACERS.register(name or cls.name, cls)
        return cls

    return deco


def placer_class(name: str) -> type[Placer]:
    """The class registered as ``name``."""
    return PLACERS.get(name)


def make_placer(name: str) -> Placer:
    """A new instance of the placer registered as ``name``."""
    return placer_class(name)()


def list_placers() -> dict[str, str]:
    """Registered placer names with the first line of their docstring."""
    return PLACERS.describe()


def groups_from_counts(cluster: ClusterSpec, by_server: dict[int, int]) -> tuple[ServerGroup, ...]:
    """``{server_id: n}`` as server groups sorted by server id (empty entries dropped)."""
    servers = cluster.servers
    return tuple(ServerGroup(s, servers[s].gpu_type, n) for s, n in sorted(by_server.items()) if n > 0)
