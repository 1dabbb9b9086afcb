"""The default placer and the one "fewest servers, largest free first" loop every placer falls back on.

The default rule, applied per (job, GPU type) for the jobs whose resources change:

1. **Sticky.** A job whose count on a type changed first tries its previous servers of that type: if
   they have room for the new count, it stays on (a subset of) them.
2. **Best fit on one server.** Otherwise the smallest server of that type with enough free GPUs.
3. **Fewest servers.** Otherwise servers by free GPUs, largest first (ties by id), until covered;
   the job then pays the multi-server throughput factor.

Because the allocation was validated against per-type capacity, step 3 always succeeds.
Jobs are placed in decreasing GPU count (ties by job id), so large jobs get whole servers first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.placement.base import PlacementRequest, Placer, register_placer
from hetgym.sim.throughput import ServerGroup


def take_fewest_servers(free: np.ndarray | list[int], ids: Iterable[int], num_gpus: int) -> dict[int, int] | None:
    """Cover ``num_gpus`` from servers ``ids`` by free GPUs, largest first (ties by id); take them from ``free``.

    Returns ``{server_id: n}``, or ``None`` (``free`` untouched) when the servers hold fewer free GPUs.
    """
    order = sorted((s for s in ids if free[s] > 0), key=lambda s: (-int(free[s]), s))
    if sum(int(free[s]) for s in order) < num_gpus:
        return None
    out: dict[int, int] = {}
    left = num_gpus
    for s in order:
        if left == 0:
            break
        take = min(left, int(free[s]))
        out[s] = take
        free[s] -= take
        left -= take
    return out


def take_or_fail(free: np.ndarray | list[int], ids: Iterable[int], num_gpus: int, gpu_type: str) -> dict[int, int]:
    """:func:`take_fewest_servers`, raising when capacity (validated before placement) is short."""
    out = take_fewest_servers(free, ids, num_gpus)
    if out is None:
        raise AssertionError(f"placement ran out of {gpu_type} GPUs; capacity was validated, so this is a bug")
    return out


def place_count(
    cluster: ClusterSpec,
    free: np.ndarray | list[int],
    gpu_type: str,
    num_gpus: int,
    previous: Sequence[ServerGroup] = (),
) -> list[ServerGroup]:
    """Choose servers for ``num_gpus`` GPUs of ``gpu_type`` by the default rule; take them from ``free``."""
    ids = cluster.servers_by_type[gpu_type]
    prev = [g for g in previous if g.gpu_type == gpu_type]
    if prev and sum(int(free[g.server_id]) for g in prev) >= num_gpus:
        # Sticky: the previous servers (most-used first) have room for the whole count.
        out: list[ServerGroup] = []
        left = num_gpus
        for g in sorted(prev, key=lambda g: (-g.num_gpus, g.server_id)):
            take = min(left, int(free[g.server_id]))
            if take > 0:
                out.append(ServerGroup(g.server_id, gpu_type, take))
                free[g.server_id] -= take
                left -= take
            if left == 0:
                break
        return sorted(out, key=lambda g: g.server_id)
    best = -1
    best_free = 1 << 30
    for s in ids:
        f = int(free[s])
        if num_gpus <= f < best_free:
            best, best_free = s, f
    if best >= 0:
        free[best] -= num_gpus
        return [ServerGroup(best, gpu_type, num_gpus)]
    taken = take_or_fail(free, ids, num_gpus, gpu_type)
    return [ServerGroup(s, gpu_type, n) for s, n in sorted(taken.items())]


def place_jobs(
    cluster: ClusterSpec,
    free: np.ndarray,
    requests: Mapping[int, Mapping[str, int]],
    previous: Mapping[int, Sequence[ServerGroup]],
) -> dict[int, tuple[ServerGroup, ...]]:
    """Place several jobs' per-type counts by the default rule (``free`` is updated in place).

    Args:
        cluster: The cluster.
        free: Free GPUs per server id (modified).
        requests: ``{job_id: {gpu_type: num_gpus}}``.
        previous: Each job's server groups before this epoch (for stickiness).
    """
    items = [(jid, t, n) for jid, counts in requests.items() for t, n in counts.items() if n > 0]
    items.sort(key=lambda x: (-x[2], x[0], x[1]))
    out: dict[int, list[ServerGroup]] = {jid: [] for jid in requests}
    work = free.tolist()  # a list's items read faster than an array's, one by one
    for jid, t, n in items:
        out[jid].extend(place_count(cluster, work, t, n, previous.get(jid, ())))
    free[:] = work
    return {jid: tuple(sorted(groups, key=lambda g: g.server_id)) for jid, groups in out.items()}


@register_placer()
class DefaultPlacer(Placer):
    """Sticky, then best fit on one server, then fewest servers (the simulator's default)."""

    name = "default"

    def place(
        self, cluster: ClusterSpec, free: np.ndarray, requests: Sequence[PlacementRequest]
    ) -> dict[int, tuple[ServerGroup, ...]]:
        return place_jobs(
            cluster, free, {r.job_id: dict(r.counts) for r in requests}, {r.job_id: r.previous for r in requests}
        )
