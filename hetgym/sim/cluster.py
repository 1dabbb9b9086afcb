"""Cluster model: GPU types, servers of one type each, and the named cluster presets.

A :class:`ClusterSpec` is immutable and hashable; it describes the inventory only. The mutable
occupancy (free GPUs per server) is :class:`ClusterState`, owned by the simulator and never shown to
policies, which see a frozen :class:`~hetgym.sim.view.ClusterView` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from hetgym.sim.errors import InvalidClusterError, UnknownNameError

#: Nominal intra-server bandwidth in GB/s per GPU type (NVLink for the SXM parts, PCIe otherwise).
DEFAULT_INTRA_BW_GB_PER_S: dict[str, float] = {
    "k80": 16.0,
    "p100": 16.0,
    "t4": 16.0,
    "v100": 150.0,
    "a100": 300.0,
    "h100": 450.0,
}
#: Inter-server (NIC) bandwidth in GB/s: 100 Gb/s Ethernet or InfiniBand.
DEFAULT_NIC_BW_GB_PER_S = 12.5


@dataclass(frozen=True, slots=True)
class Server:
    """One machine holding ``num_gpus`` GPUs of a single type.

    Attributes:
        server_id: Index of the server in its cluster (0-based, dense).
        gpu_type: Lower-case GPU type name, e.g. ``"v100"``.
        num_gpus: GPUs on the server (at least 1).
        intra_bw_gb_per_s: GPU-to-GPU bandwidth inside the server, GB/s.
        nic_bw_gb_per_s: Bandwidth of the server's network interface, GB/s.
    """

    server_id: int
    gpu_type: str
    num_gpus: int
    intra_bw_gb_per_s: float = 16.0
    nic_bw_gb_per_s: float = DEFAULT_NIC_BW_GB_PER_S


@dataclass(frozen=True)
class ClusterSpec:
    """An immutable heterogeneous cluster: servers, each of one GPU type.

    Build one with :meth:`from_inventory` or take a preset with :func:`get_cluster`.

    Attributes:
        name: A label, used in results and file names.
        servers: The servers, with ``server_id`` equal to their position.
    """

    name: str
    servers: tuple[Server, ...]
    _type_order: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.servers:
            raise InvalidClusterError(f"cluster {self.name!r} has no servers; give at least one server")
        for pos, srv in enumerate(self.servers):
            if srv.server_id != pos:
                raise InvalidClusterError(
                    f"cluster {self.name!r}: server at position {pos} has server_id {srv.server_id}; "
                    "server ids must be 0..n-1 in order"
                )
            if srv.num_gpus < 1:
                raise InvalidClusterError(
                    f"cluster {self.name!r}: server {pos} has num_gpus={srv.num_gpus}; it must be >= 1"
                )
            if not srv.gpu_type or srv.gpu_type != srv.gpu_type.lower():
                raise InvalidClusterError(
                    f"cluster {self.name!r}: server {pos} has gpu_type {srv.gpu_type!r}; "
                    "use a non-empty lower-case name such as 'v100'"
                )
        if not self._type_order:
            order = tuple(dict.fromkeys(s.gpu_type for s in self.servers))
            object.__setattr__(self, "_type_order", order)

    @classmethod
    def from_inventory(
        cls,
        name: str,
        inventory: Mapping[str, tuple[int, int]],
        *,
        intra_bw_gb_per_s: Mapping[str, float] | None = None,
        nic_bw_gb_per_s: float = DEFAULT_NIC_BW_GB_PER_S,
    ) -> ClusterSpec:
        """Build a cluster from ``{gpu_type: (num_servers, gpus_per_server)}``.

        The order of ``inventory`` fixes the order of :attr:`gpu_types` (and of the observation's
        per-type features in the environment).
        """
        bw = dict(DEFAULT_INTRA_BW_GB_PER_S)
        if intra_bw_gb_per_s:
            bw.update(intra_bw_gb_per_s)
        servers: list[Server] = []
        for gpu_type, (num_servers, per_server) in inventory.items():
            if num_servers < 1 or per_server < 1:
                raise InvalidClusterError(
                    f"cluster {name!r}: {gpu_type} has {num_servers} servers x {per_server} GPUs; both must be >= 1"
                )
            for _ in range(num_servers):
                servers.append(
                    Server(
                        len(servers),
                        gpu_type.lower(),
                        per_server,
                        bw.get(gpu_type.lower(), 16.0),
                        nic_bw_gb_per_s,
                    )
                )
        return cls(name, tuple(servers))

    @property
    def gpu_types(self) -> tuple[str, ...]:
        """GPU type names in the cluster's canonical order (first appearance)."""
        return self._type_order

    @cached_property
    def type_index(self) -> dict[str, int]:
        """Each GPU type's place in :attr:`gpu_types` (its column in a decision's counts)."""
        return {t: i for i, t in enumerate(self._type_order)}

    @cached_property
    def capacity(self) -> dict[str, int]:
        """Total GPUs per type."""
        cap = dict.fromkeys(self._type_order, 0)
        for srv in self.servers:
            cap[srv.gpu_type] += srv.num_gpus
        return cap

    @cached_property
    def servers_by_type(self) -> dict[str, tuple[int, ...]]:
        """Server ids of each GPU type, in id order."""
        out: dict[str, list[int]] = {t: [] for t in self._type_order}
        for srv in self.servers:
            out[srv.gpu_type].append(srv.server_id)
        return {t: tuple(ids) for t, ids in out.items()}

    @property
    def total_gpus(self) -> int:
        """GPUs in the whole cluster."""
        return sum(self.capacity.values())

    @cached_property
    def max_gpus_per_server(self) -> dict[str, int]:
        """Largest server size per type (a job of at most this many GPUs can be consolidated)."""
        out = dict.fromkeys(self._type_order, 0)
        for srv in self.servers:
            out[srv.gpu_type] = max(out[srv.gpu_type], srv.num_gpus)
        return out

    def check_gpu_type(self, gpu_type: str) -> None:
        """Raise :class:`UnknownNameError` unless ``gpu_type`` is in this cluster."""
        if gpu_type not in self.capacity:
            raise UnknownNameError("GPU type", gpu_type, self._type_order, f"(cluster {self.name!r})")

    def describe(self) -> str:
        """One line per GPU type: servers x GPUs."""
        parts = []
        for t in self._type_order:
            ids = self.servers_by_type[t]
            sizes = sorted({self.servers[i].num_gpus for i in ids})
            size_txt = "/".join(str(s) for s in sizes)
            servers = f"{len(ids)} server" + ("s" if len(ids) != 1 else "")
            gpus = "GPU" if sizes == [1] else "GPUs"
            parts.append(f"{t}: {servers} x {size_txt} {gpus} = {self.capacity[t]}")
        return "; ".join(parts)

    def __hash__(self) -> int:
        return hash((self.name, self.servers))


class ClusterState:
    """Mutable occupancy of a cluster: free GPUs per server (simulator-internal).

    Attributes:
        spec: The cluster.
        free: Free GPUs per server id (``int64`` array; callers may replace it with a modified copy).
        type_of_server: Index into ``spec.gpu_types`` of each server's type.
        capacity_by_type: GPUs per type, in ``spec.gpu_types`` order.
    """

    __slots__ = ("capacity_by_type", "free", "spec", "type_of_server")

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        self.free = np.array([s.num_gpus for s in spec.servers], dtype=np.int64)
        self.type_of_server = np.array([spec.gpu_types.index(s.gpu_type) for s in spec.servers], dtype=np.int64)
        self.capacity_by_type = np.bincount(self.type_of_server, weights=self.free, minlength=len(spec.gpu_types))
        self.capacity_by_type = self.capacity_by_type.astype(np.int64)

    def release(self, server_id: int, num_gpus: int) -> None:
        """Free ``num_gpus`` on a server."""
        self.free[server_id] += num_gpus

    def free_by_type(self) -> np.ndarray:
        """Free GPUs per type, in ``spec.gpu_types`` order."""
        counts = np.bincount(self.type_of_server, weights=self.free, minlength=len(self.spec.gpu_types))
        return counts.astype(np.int64)

    def used_by_type(self) -> np.ndarray:
        """GPUs in use per type, in ``spec.gpu_types`` order."""
        return self.capacity_by_type - self.free_by_type()


# --------------------------------------------------------------------------------------------
# Presets

_PRESETS: dict[str, tuple[Callable[[], ClusterSpec], str]] = {}
#: Presets built so far: a :class:`ClusterSpec` is immutable, so one instance per name serves every
#: call (an environment resolves its cluster name on each reset); :func:`register_cluster` drops the
#: entry of the name it (re)registers.
_BUILT: dict[str, ClusterSpec] = {}


def register_cluster(name: str, factory: Callable[[], ClusterSpec], description: str = "") -> None:
    """Register a named cluster preset (idempotent for the same name)."""
    _PRESETS[name] = (factory, description)
    _BUILT.pop(name, None)


def get_cluster(name: str | ClusterSpec) -> ClusterSpec:
    """Return the preset ``name`` (or ``name`` itself if it already is a :class:`ClusterSpec`)."""
    if isinstance(name, ClusterSpec):
        return name
    spec = _BUILT.get(name)
    if spec is not None:
        return spec
    if name not in _PRESETS:
        raise UnknownNameError("cluster preset", name, _PRESETS, "List them with `hetgym presets`.")
    spec = _BUILT[name] = _PRESETS[name][0]()
    return spec


def list_clusters() -> dict[str, str]:
    """Preset names with their one-line descriptions."""
    return {name: desc for name, (_, desc) in sorted(_PRESETS.items())}


def _inventory_preset(name: str, inventory: dict[str, tuple[int, int]], description: str) -> None:
    register_cluster(name, lambda: ClusterSpec.from_inventory(name, inventory), description)


_inventory_preset(
    "tiny", {"v100": (2, 2), "k80": (2, 2)}, "8 GPUs: 2x2 V100 + 2x2 K80, for tests and quick experiments"
)
_inventory_preset(
    "default",
    {"a100": (2, 8), "v100": (2, 8), "p100": (4, 4), "k80": (4, 4)},
    "64 GPUs of 4 types: 2x8 A100, 2x8 V100, 4x4 P100, 4x4 K80",
)
_inventory_preset(
    "gavel-108",
    {"v100": (9, 4), "p100": (9, 4), "k80": (9, 4)},
    "Gavel's heterogeneous cluster: 36 V100 + 36 P100 + 36 K80 (servers of 4)",
)
_inventory_preset(
    "a100-128",
    {"a100": (16, 8)},
    "128 A100 in 16 servers of 8 (300 GB/s NVLink, 12.5 GB/s NICs): A-SRPT's homogeneous multi-server setting",
)
_inventory_preset(
    "large",
    {"h100": (64, 8), "a100": (64, 8), "v100": (64, 8), "t4": (128, 4)},
    "2,048 GPUs: 512 each of H100, A100, V100 (servers of 8) and T4 (servers of 4)",
)


def _register_inventories() -> None:
    from hetgym.sim.inventories import INVENTORIES

    for name, (description, inventory, _source) in INVENTORIES.items():
        _inventory_preset(name, inventory, description)


_register_inventories()
