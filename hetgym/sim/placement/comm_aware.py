"""A-SRPT's communication-aware placement, and its communication-unaware (random) ablation.

Luo et al., "Prediction-Assisted Online Distributed Deep Learning Workload Scheduling in GPU Clusters"
(A-SRPT, IEEE INFOCOM 2025). For each GPU type: best fit on one server if one has room; otherwise the
fewest servers, counting on each only whole atomic units (a pipeline replica ``pp * tp`` when that does
not need more servers, else a tensor-parallel group ``tp``), so a TP group that fits a server never
straddles two. A job larger than every type's capacity pools the types' servers. When no unit-respecting
placement exists on the free GPUs, the placer falls back to the fewest servers, largest free first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.job import JobSpec
from hetgym.sim.placement.base import PlacementRequest, Placer, groups_from_counts, register_placer
from hetgym.sim.placement.basic import take_or_fail
from hetgym.sim.throughput import ServerGroup


def placement_units(spec: JobSpec, server_gpus: int) -> tuple[int, ...]:
    """Atomic unit sizes to try, largest first: a pipeline replica ``pp * tp``, then a TP group ``tp``.

    A unit larger than a server cannot be kept whole and is skipped; a TP group larger than a server
    leaves single GPUs as the unit.
    """
    _, pp, tp = spec.parallelism or (spec.num_gpus, 1, 1)
    units = [u for u in (pp * tp, tp) if u <= server_gpus]
    if tp > server_gpus:
        units.append(1)
    return tuple(dict.fromkeys(units))


def _fewest_unit_servers(
    free: np.ndarray, ids: Sequence[int], num_gpus: int, unit: int
) -> list[tuple[int, int]] | None:
    usable = {s: (int(free[s]) // unit) * unit for s in ids}
    if sum(usable.values()) < num_gpus:
        return None
    order = sorted((s for s in ids if usable[s] > 0), key=lambda s: (-usable[s], s))
    chosen: list[tuple[int, int]] = []
    left = num_gpus
    for pos, s in enumerate(order):
        if usable[s] >= left:
            # The last piece goes to the best-fitting remaining server, keeping large holes for later jobs.
            rest = [t for t in order[pos:] if usable[t] >= left]
            best = min(rest, key=lambda t: (usable[t], t))
            chosen.append((best, left))
            return chosen
        chosen.append((s, usable[s]))
        left -= usable[s]
    return None


def comm_aware_place(
    spec: JobSpec,
    free: np.ndarray,
    cluster: ClusterSpec,
    gpu_types: Sequence[str],
    num_gpus: int | None = None,
) -> list[ServerGroup] | None:
    """A-SRPT's communication-aware placement on the free GPUs ``free`` (per server id; not modified).

    ``num_gpus`` defaults to the job's requested count. Tries the types in ``gpu_types`` (preference
    order); returns the groups in server-id order (the rank layout), or ``None`` when the job does not
    fit now.
    """
    g = spec.num_gpus if num_gpus is None else int(num_gpus)
    for gpu_type in gpu_types:
        ids = cluster.servers_by_type[gpu_type]
        fits = [s for s in ids if free[s] >= g]
        if fits:
            best = min(fits, key=lambda s: (int(free[s]), s))
            return [ServerGroup(best, gpu_type, g)]
        max_server = cluster.max_gpus_per_server[gpu_type]
        best_plan: list[tuple[int, int]] | None = None
        for unit in placement_units(spec, max_server):
            plan = _fewest_unit_servers(free, ids, g, unit)
            if plan is not None and (best_plan is None or len(plan) < len(best_plan)):
                best_plan = plan
        if best_plan is not None:
            return [ServerGroup(s, gpu_type, n) for s, n in sorted(best_plan)]
    if gpu_types and all(cluster.capacity[t] < g for t in gpu_types):
        # No single type can ever hold the job: pool the types' servers (the job runs in sync mode).
        pooled = [s for t in gpu_types for s in cluster.servers_by_type[t]]
        max_server = max(cluster.max_gpus_per_server[t] for t in gpu_types)
        for unit in placement_units(spec, max_server):
            plan = _fewest_unit_servers(free, pooled, g, unit)
            if plan is not None:
                return [ServerGroup(s, cluster.servers[s].gpu_type, n) for s, n in sorted(plan)]
    return None


def random_place(
    spec: JobSpec,
    free: np.ndarray,
    cluster: ClusterSpec,
    gpu_types: Sequence[str],
    rng: np.random.Generator,
    num_gpus: int | None = None,
) -> list[ServerGroup] | None:
    """A communication-unaware placement: free GPUs taken from servers in a random order (``free`` untouched)."""
    g = spec.num_gpus if num_gpus is None else int(num_gpus)
    for gpu_type in gpu_types:
        ids = [s for s in cluster.servers_by_type[gpu_type] if free[s] > 0]
        if sum(int(free[s]) for s in ids) < g:
            continue
        out: dict[int, int] = {}
        left = g
        for s in rng.permutation(ids).tolist():
            take = min(left, int(free[s]))
            out[s] = take
            left -= take
            if left == 0:
                return [ServerGroup(s, gpu_type, n) for s, n in sorted(out.items())]
    return None


#: A placement rule: ``(spec, free, cluster, types, n)`` to the groups it takes, or ``None`` when it finds none.
_Rule = Callable[[JobSpec, np.ndarray, ClusterSpec, Sequence[str], int], list[ServerGroup] | None]


def _place_by(
    cluster: ClusterSpec, free: np.ndarray, requests: Sequence[PlacementRequest], rule: _Rule
) -> dict[int, tuple[ServerGroup, ...]]:
    """Place each request type by type with ``rule(spec, free, [type], n)``, falling back to fewest servers."""
    out: dict[int, tuple[ServerGroup, ...]] = {}
    for req in sorted(requests, key=lambda r: (-r.total_gpus, r.job_id)):
        by_server: dict[int, int] = {}
        for gpu_type, n in req.counts:
            groups = rule(req.spec, free, cluster, [gpu_type], n)
            if groups is None:
                taken = take_or_fail(free, cluster.servers_by_type[gpu_type], n, gpu_type)
            else:
                taken = {grp.server_id: grp.num_gpus for grp in groups}
                for s, k in taken.items():
                    free[s] -= k
            for s, k in taken.items():
                by_server[s] = by_server.get(s, 0) + k
        out[req.job_id] = groups_from_counts(cluster, by_server)
    return out


@register_placer()
class CommAwarePlacer(Placer):
    """A-SRPT's communication-aware placement: whole TP groups / pipeline replicas on the fewest servers."""

    name = "comm-aware"

    def place(
        self, cluster: ClusterSpec, free: np.ndarray, requests: Sequence[PlacementRequest]
    ) -> dict[int, tuple[ServerGroup, ...]]:
        return _place_by(cluster, free, requests, comm_aware_place)


@register_placer()
class RandomPlacer(Placer):
    """Free GPUs taken from servers in a random order (communication-unaware; the placer's own stream)."""

    name = "random"

    def place(
        self, cluster: ClusterSpec, free: np.ndarray, requests: Sequence[PlacementRequest]
    ) -> dict[int, tuple[ServerGroup, ...]]:
        rng = self.rng

        def rule(
            spec: JobSpec, free_: np.ndarray, cluster_: ClusterSpec, types: Sequence[str], n: int
        ) -> list[ServerGroup] | None:
            return random_place(spec, free_, cluster_, types, rng, n)

        return _place_by(cluster, free, requests, rule)
