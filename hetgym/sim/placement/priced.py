"""Hadar's priced node pool, and HadarE's copies onto idle nodes.

Sultana et al., "Hadar: Heterogeneity-Aware Optimization-Based Online Scheduling for Deep Learning
Cluster", IEEE IPDPS 2024, and "Resource Heterogeneity-Aware and Utilization-Enhanced Scheduling for Deep
Learning Clusters" (HadarE), arXiv:2503.10918 (2025).

Every node ``h`` has a price per GPU that grows with the GPUs already committed on it,
``P_h(g) = L (U / L) ** (g / c_h)``; a job's GPUs on a type go to the cheapest nodes, then its current
nodes, then the nodes with most free GPUs (:class:`NodePool`). Since the price is increasing in the
committed fraction ``g / c_h`` whatever ``L < U``, the node order, and so the placement, does not depend on
the price constants: :class:`PricedPlacer` places without them. Hadar's own policy uses the same pool with
its prices to value candidate placements.

Reconstruction (documented in ``docs/heterogeneity-policies.md``): at every decision the allocated jobs
are placed afresh on the whole cluster (as Hadar re-decides from an empty cluster) in decreasing GPU
count (ties by job id) rather than in Hadar's payoff order; a job whose per-type counts are unchanged
keeps its nodes when they are still free, unless the cheapest placement spans fewer nodes (Hadar keeps a
job's current placement as one candidate and moves it when the faster placement pays for the restart).

HadarE (:class:`CopiesPlacer`): a job in ``fork`` mode runs as independent copies, one per node, each of
at most the job's requested GPUs (``W_j``), on its previous nodes first, then the nodes with most free
GPUs; GPUs left over once every node of the type has a copy join the copies fewest-servers first. Jobs in
other modes are placed as :class:`PricedPlacer` does, before the ``fork`` jobs (primary gangs first, then
the copies on the idle nodes).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.placement.base import PlacementRequest, Placer, groups_from_counts, register_placer
from hetgym.sim.placement.basic import take_or_fail
from hetgym.sim.throughput import ServerGroup


class NodePool:
    """GPUs committed per node during one decision, with per-node exponential prices.

    Nodes of one GPU type, capacity and committed count are interchangeable for pricing; they are kept
    in buckets so that the cheapest nodes are found without sorting every node.

    Args:
        cluster: The cluster.
        used: GPUs already committed per node (e.g. zeros at a round boundary).
        price_l: ``L``, the price of a GPU on an empty node.
        price_u: ``U``, the price of the last GPU of a full node.
    """

    def __init__(self, cluster: ClusterSpec, used: Sequence[int], price_l: float, price_u: float) -> None:
        if not 0 < price_l <= price_u:
            raise ValueError(f"prices need 0 < L <= U, got L={price_l}, U={price_u}")
        self.cluster = cluster
        self.types = cluster.gpu_types
        self.type_of = np.array([self.types.index(s.gpu_type) for s in cluster.servers])
        self.cap = np.array([s.num_gpus for s in cluster.servers], dtype=np.int64)
        self.used = np.array(used, dtype=np.int64)
        if np.any(self.used < 0) or np.any(self.used > self.cap):
            raise ValueError("used GPUs per node must be within 0..capacity")
        self.price_l = float(price_l)
        self.price_u = float(price_u)
        self._cum: dict[int, np.ndarray] = {}
        # Python mirrors of `cap`, `used` and the cumulative prices: cost() and free() run once per candidate
        # placement, where numpy scalars cost more than the arithmetic (the values are the same floats).
        self._cap_list: list[int] = self.cap.tolist()
        self._used_list: list[int] = self.used.tolist()
        self._type_list: list[int] = self.type_of.tolist()
        self._cum_list: dict[int, list[float]] = {}
        self.version = 0
        #: Per GPU type, how many times take() changed one of its nodes: cheapest() and the bucket levels only
        #: read the nodes of the types asked for, so their answers stand while those types' versions do.
        self.type_versions = [0] * len(self.types)
        self._cheapest_cache: dict[
            tuple[tuple[int, ...], int, tuple[int, ...]],
            tuple[int, tuple[list[tuple[int, int]], float] | None],
        ]
        self._cheapest_cache = {}
        self._level_cache: dict[tuple[int, ...], tuple[int, list[tuple[int, int, int]]]] = {}
        # (type, capacity, used) -> insertion-ordered node ids
        self._buckets: dict[tuple[int, int, int], dict[int, None]] = {}
        for h in range(len(self.cap)):
            if self.used[h] < self.cap[h]:
                self._bucket(h)[h] = None
        self.free_by_type = np.zeros(len(self.types), dtype=np.int64)
        np.add.at(self.free_by_type, self.type_of, self.cap - self.used)
        self._free_type_list: list[int] = self.free_by_type.tolist()

    def stamp(self, types: Iterable[int]) -> int:
        """The sum of the versions of ``types``: it changes exactly when a node of one of them changes."""
        tv = self.type_versions
        return sum([tv[t] for t in types])

    def _levels(self, types: tuple[int, ...]) -> list[tuple[int, int, int]]:
        """Non-empty buckets of ``types`` as ``(type, capacity, used)``, cheapest first (cached per stamp)."""
        versions = self.stamp(types)
        hit = self._level_cache.get(types)
        if hit is not None and hit[0] == versions:
            return hit[1]
        wanted = set(types)
        ranked = sorted(
            (used / cap, -(cap - used), t, cap, used)
            for (t, cap, used), nodes in self._buckets.items()
            if t in wanted and nodes
        )
        levels = [(t, cap, used) for _, _, t, cap, used in ranked]
        self._level_cache[types] = (versions, levels)
        return levels

    def _bucket(self, h: int) -> dict[int, None]:
        key = (self._type_list[h], self._cap_list[h], self._used_list[h])
        b = self._buckets.get(key)
        if b is None:
            b = self._buckets[key] = {}
        return b

    def cumulative_prices(self, capacity: int) -> np.ndarray:
        """``cum[g]`` = cost of the first ``g`` GPUs of an empty node of ``capacity`` GPUs."""
        cum = self._cum.get(capacity)
        if cum is None:
            g = np.arange(capacity)
            marginal = self.price_l * (self.price_u / self.price_l) ** (g / capacity)
            cum = self._cum[capacity] = np.concatenate([[0.0], np.cumsum(marginal)])
        return cum

    def price(self, node: int) -> float:
        """Marginal price of the next GPU on ``node``."""
        c = int(self.cap[node])
        return self.price_l * (self.price_u / self.price_l) ** (self.used[node] / c)

    def cost(self, node: int, num_gpus: int) -> float:
        """Price of taking ``num_gpus`` more GPUs on ``node``."""
        cap = self._cap_list[node]
        cum = self._cum_list.get(cap)
        if cum is None:
            cum = self._cum_list[cap] = self.cumulative_prices(cap).tolist()
        u = self._used_list[node]
        return cum[u + num_gpus] - cum[u]

    def free(self, node: int) -> int:
        """Uncommitted GPUs on ``node``."""
        return self._cap_list[node] - self._used_list[node]

    def fits(self, groups: Iterable[tuple[int, int]]) -> bool:
        """Whether every ``(node, num_gpus)`` of ``groups`` has that many uncommitted GPUs."""
        cap, used = self._cap_list, self._used_list
        return all(cap[h] - used[h] >= n for h, n in groups)

    def take(self, node: int, num_gpus: int) -> None:
        """Commit ``num_gpus`` GPUs of ``node``."""
        if num_gpus <= 0:
            return
        if num_gpus > self.free(node):
            raise ValueError(f"node {node}: {num_gpus} GPUs requested, {self.free(node)} free")
        del self._bucket(node)[node]
        self.version += 1
        self.type_versions[self._type_list[node]] += 1
        self.used[node] += num_gpus
        self._used_list[node] += num_gpus
        self.free_by_type[self.type_of[node]] -= num_gpus
        self._free_type_list[self._type_list[node]] -= num_gpus
        if self._used_list[node] < self._cap_list[node]:
            self._bucket(node)[node] = None

    def cheapest(
        self, type_ids: Iterable[int], num_gpus: int, preferred: Iterable[int] = ()
    ) -> tuple[list[tuple[int, int]], float] | None:
        """The ``num_gpus`` cheapest free GPUs on nodes of ``type_ids``: ``([(node, n), ...], cost)``.

        Nodes are taken in increasing marginal price, then preferred nodes (the job's current ones),
        then most free, then insertion order; each node gives as many GPUs as it can. ``None`` if
        fewer GPUs are free.
        """
        types = tuple(type_ids)
        pref = list(dict.fromkeys(preferred))
        key = (types, num_gpus, tuple(pref))
        versions = self.stamp(types)
        cached = self._cheapest_cache.get(key)
        if cached is not None and cached[0] == versions:
            hit = cached[1]
            return None if hit is None else (list(hit[0]), hit[1])
        found = self._cheapest(types, num_gpus, pref)
        self._cheapest_cache[key] = (versions, found)
        return None if found is None else (list(found[0]), found[1])

    def walk(
        self, type_ids: Iterable[int], num_gpus: int, preferred: Iterable[int] = ()
    ) -> tuple[list[tuple[int, int]], float] | None:
        """:meth:`cheapest` without its cache, for callers that keep the answers themselves (by :meth:`stamp`)."""
        return self._cheapest(tuple(type_ids), num_gpus, list(dict.fromkeys(preferred)))

    def _cheapest(
        self, types: tuple[int, ...], num_gpus: int, pref: list[int]
    ) -> tuple[list[tuple[int, int]], float] | None:
        free_by_type = self._free_type_list
        if sum([free_by_type[t] for t in types]) < num_gpus:
            return None
        levels = self._levels(types)
        out: list[tuple[int, int]] = []
        cost = 0.0
        need = num_gpus
        for t, cap, used in levels:
            nodes = self._buckets[(t, cap, used)]
            first = [h for h in pref if h in nodes]
            for h in _chain_unique(first, nodes):
                take = min(need, cap - used)
                out.append((h, take))
                cost += self.cost(h, take)
                need -= take
                if need == 0:
                    return out, cost
        raise AssertionError("free GPU count and buckets disagree; this is a bug")


def _chain_unique(first: list[int], rest: Iterable[int]) -> Iterable[int]:
    yield from first
    seen = set(first)
    for h in rest:
        if h not in seen:
            yield h


def _priced(
    cluster: ClusterSpec, free: np.ndarray, requests: Sequence[PlacementRequest]
) -> dict[int, tuple[ServerGroup, ...]]:
    cap = np.array([s.num_gpus for s in cluster.servers], dtype=np.int64)
    pool = NodePool(cluster, (cap - free).tolist(), 1.0, 2.0)
    type_ids = {t: i for i, t in enumerate(cluster.gpu_types)}
    out: dict[int, tuple[ServerGroup, ...]] = {}
    for req in sorted(requests, key=lambda r: (-r.total_gpus, r.job_id)):
        cheapest: dict[int, int] = {}
        preferred = [g.server_id for g in req.previous]
        for gpu_type, n in req.counts:
            found = pool.cheapest([type_ids[gpu_type]], n, preferred)
            if found is None:  # pragma: no cover - capacity was validated
                raise AssertionError(f"priced placement ran out of {gpu_type} GPUs; this is a bug")
            for h, k in found[0]:
                cheapest[h] = cheapest.get(h, 0) + k
        chosen = cheapest
        current = {g.server_id: g.num_gpus for g in req.previous}
        same_counts = _counts_of(req.previous) == dict(req.counts)
        room = all(pool.free(h) >= k for h, k in current.items())
        # Hadar's offer keeps a job's current nodes unless moving it consolidates it (a restart buys speed).
        if same_counts and current != cheapest and room and len(current) <= len(cheapest):
            chosen = current
        for h, k in chosen.items():
            pool.take(h, k)
            free[h] -= k
        out[req.job_id] = groups_from_counts(cluster, chosen)
    return out


def _counts_of(groups: Sequence[ServerGroup]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for g in groups:
        counts[g.gpu_type] = counts.get(g.gpu_type, 0) + g.num_gpus
    return counts


def place_copies(cluster: ClusterSpec, free: np.ndarray, req: PlacementRequest) -> tuple[ServerGroup, ...]:
    """One ``fork`` job as copies of at most its requested GPUs, one per node (``free`` updated in place)."""
    limit = max(1, int(req.spec.num_gpus))
    previous = {g.server_id for g in req.previous}
    by_server: dict[int, int] = {}
    for gpu_type, n in req.counts:
        ids = cluster.servers_by_type[gpu_type]
        left = n
        for s in sorted(ids, key=lambda s: (s not in previous, -int(free[s]), s)):
            if left == 0:
                break
            take = min(left, limit, int(free[s]))
            if take > 0:
                by_server[s] = take
                free[s] -= take
                left -= take
        if left:
            for s, k in take_or_fail(free, ids, left, gpu_type).items():
                by_server[s] = by_server.get(s, 0) + k
    return groups_from_counts(cluster, by_server)


@register_placer()
class PricedPlacer(Placer):
    """Hadar's priced node pool: a job's GPUs on the least-committed nodes, its current nodes preferred."""

    name = "priced"
    replaces_all = True

    def place(
        self, cluster: ClusterSpec, free: np.ndarray, requests: Sequence[PlacementRequest]
    ) -> dict[int, tuple[ServerGroup, ...]]:
        return _priced(cluster, free, requests)


@register_placer()
class CopiesPlacer(Placer):
    """HadarE: ``fork`` jobs as one copy per node; other jobs on Hadar's priced node pool first."""

    name = "copies"
    replaces_all = True

    def place(
        self, cluster: ClusterSpec, free: np.ndarray, requests: Sequence[PlacementRequest]
    ) -> dict[int, tuple[ServerGroup, ...]]:
        out = _priced(cluster, free, [r for r in requests if r.mode != "fork"])
        for req in sorted((r for r in requests if r.mode == "fork"), key=lambda r: (-r.total_gpus, r.job_id)):
            out[req.job_id] = place_copies(cluster, free, req)
        return out
