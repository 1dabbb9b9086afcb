"""ElasticFlow's buddy placement (Gu et al., "ElasticFlow: An Elastic Serverless Training Platform for
Distributed Deep Learning", ASPLOS 2023): the cluster is re-packed at every decision.

Jobs are placed per type in decreasing count (ties by job id) on an empty cluster. A job of at most one
server's GPUs goes on a single server: its previous server of that type if it still has room, else the
fullest server that fits (best fit). A larger job takes whole free servers, previous ones first. When all
counts are powers of two and all servers of a type have the same power-of-two size, every server's free
count stays a multiple of the count being placed, so this never fragments (the property buddy allocation
gives ElasticFlow); otherwise it falls back to the fewest servers, largest free first.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.placement.base import PlacementRequest, Placer, groups_from_counts, register_placer
from hetgym.sim.placement.basic import take_or_fail
from hetgym.sim.throughput import ServerGroup


def buddy_place(
    cluster: ClusterSpec,
    requests: Mapping[int, Mapping[str, int]],
    previous: Mapping[int, Sequence[ServerGroup]],
    free: np.ndarray | None = None,
) -> dict[int, dict[int, int]]:
    """Buddy placement of per-type counts: ``{job_id: {server_id: n}}`` (see the module docstring).

    ``free`` (free GPUs per server, updated in place) defaults to the whole cluster.
    """
    if free is None:
        free = np.array([s.num_gpus for s in cluster.servers], dtype=np.int64)
    items = [(jid, t, n) for jid, counts in requests.items() for t, n in counts.items() if n > 0]
    items.sort(key=lambda x: (-x[2], x[0], x[1]))
    out: dict[int, dict[int, int]] = {jid: {} for jid in requests}
    for jid, t, n in items:
        ids = cluster.servers_by_type[t]
        prev = [g.server_id for g in previous.get(jid, ()) if g.gpu_type == t]
        chosen: dict[int, int] = {}
        if n <= cluster.max_gpus_per_server[t]:
            cands = [s for s in prev if free[s] >= n] or [s for s in ids if free[s] >= n]
            if cands:
                best = min(cands, key=lambda s: (s not in prev, int(free[s]), s))
                chosen = {best: n}
        else:
            whole = sorted((s for s in ids if free[s] == cluster.servers[s].num_gpus), key=lambda s: (s not in prev, s))
            left = n
            for s in whole:
                if left <= 0:
                    break
                chosen[s] = min(left, int(free[s]))
                left -= chosen[s]
            if left > 0:
                chosen = {}
        if chosen:
            for s, k in chosen.items():
                free[s] -= k
        else:  # fragmented (mixed server sizes): fewest servers, largest free first
            chosen = take_or_fail(free, ids, n, t)
        for s, k in chosen.items():
            out[jid][s] = out[jid].get(s, 0) + k
    return out


@register_placer()
class BuddyPlacer(Placer):
    """ElasticFlow's buddy allocation: the cluster re-packed largest job first at every decision.

    :func:`buddy_place` is a function of the cluster, the free GPUs and each job's counts and previous
    servers only, and a policy that keeps its allocation asks for the same packing round after round: the
    placer keeps its last inputs and answer and gives that answer again (with the same free GPUs left)
    when the inputs repeat, instead of packing the cluster anew.
    """

    name = "buddy"
    replaces_all = True

    def __init__(self) -> None:
        super().__init__()
        self._last: tuple[ClusterSpec, tuple[Any, ...], dict[int, tuple[ServerGroup, ...]], np.ndarray] | None = None

    def copy_state(self) -> BuddyPlacer:
        """An independent copy (for a fork of the simulator): the last answer is never changed, only
        replaced, so the copy shares it (a deep copy would copy the specs its key holds)."""
        return copy.copy(self)

    def place(
        self, cluster: ClusterSpec, free: np.ndarray, requests: Sequence[PlacementRequest]
    ) -> dict[int, tuple[ServerGroup, ...]]:
        key = (free.tobytes(), *((r.job_id, r.counts, r.previous) for r in requests))
        last = self._last
        if last is not None and last[0] is cluster and last[1] == key:
            free[:] = last[3]
            return dict(last[2])
        out = buddy_place(
            cluster, {r.job_id: dict(r.counts) for r in requests}, {r.job_id: r.previous for r in requests}, free
        )
        placed = {jid: groups_from_counts(cluster, by_server) for jid, by_server in out.items()}
        self._last = (cluster, key, placed, free.copy())
        return dict(placed)
