"""The ``nodes`` feature group of the window encoder: the free GPUs of every server and each job's servers.

Every other feature describes the cluster per GPU type: how many GPUs of a type are free, not how they
are spread over servers. Policies that place work server by server (HadarE forks one copy of a job onto
each server with idle GPUs, sized by that server's idle GPUs) decide from the spread. The knob
``nodes=True`` of :class:`~hetgym.envs.observations.WindowObservation` adds it (the alias
``observation="window-nodes"`` presets it with ``levels`` and ``cursor``), for a cluster of S servers in
the cluster's server order (``ClusterSpec.servers``), after the other groups' keys:

==================  =======  ========  ============================================================
key                 shape    range     meaning
==================  =======  ========  ============================================================
``server_free``     (S,)     [0, 1]    GPUs free on the server before this decision / its GPUs
``job_server``      (K*S,)   [0, 1]    GPUs the slot's job holds on the server before this decision /
                                       the server's GPUs (slot-major: entry ``k * S + s``)
==================  =======  ========  ============================================================

Both describe the placement *before* the decision: the draft says how many GPUs of each type a job
gets, not on which servers (the placer decides that when the epoch commits), so neither key changes
within an epoch.
"""

from __future__ import annotations

import numpy as np

from hetgym.envs.features import FeatureGroup
from hetgym.envs.state import DecisionState
from hetgym.sim.rates import RateTable


class NodeFeatures(FeatureGroup):
    """Each server's free GPUs and the servers each window job holds (``nodes=True``)."""

    def __init__(self, state: DecisionState) -> None:
        self.num_servers = len(state.cluster.servers)
        self._server_gpus = np.array([srv.num_gpus for srv in state.cluster.servers], dtype=np.float64)

    def keys(self, state: DecisionState) -> dict[str, tuple[int, float]]:
        return {"server_free": (self.num_servers, 0.0), "job_server": (state.num_slots * self.num_servers, 0.0)}

    def begin_epoch(self, state: DecisionState, statics: RateTable) -> None:
        enc, view = self.enc, state.view
        assert view is not None  # the encoder calls the groups while the episode runs
        gpus = self._server_gpus
        enc.view_of("server_free")[:] = np.asarray(view.free_servers, dtype=np.float64) / gpus
        rows = enc.view_of("job_server").reshape(enc.num_slots, self.num_servers)
        for slot, job in enumerate(state.jobs):
            for group in job.groups:
                rows[slot, group.server_id] += group.num_gpus / gpus[group.server_id]


__all__ = ["NodeFeatures"]
