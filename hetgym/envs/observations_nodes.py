"""The ``window-nodes`` observation: ``window-cursor`` plus the free GPUs of every server and each job's servers.

Every other encoder describes the cluster per GPU type: how many GPUs of a type are free, not how they
are spread over servers. Policies that place work server by server (HadarE forks one copy of a job onto
each server with idle GPUs, sized by that server's idle GPUs) decide from the spread. This encoder adds
it, for a cluster of S servers in the cluster's server order (``ClusterSpec.servers``):

==================  =======  ========  ============================================================
key                 shape    range     meaning
==================  =======  ========  ============================================================
``server_free``     (S,)     [0, 1]    GPUs free on the server before this decision / its GPUs
``job_server``      (K*S,)   [0, 1]    GPUs the slot's job holds on the server before this decision /
                                       the server's GPUs (slot-major: entry ``k * S + s``)
==================  =======  ========  ============================================================

Both describe the placement *before* the decision: the draft says how many GPUs of each type a job
gets, not on which servers (the placer decides that when the epoch commits), so neither key changes
within an epoch. The rest is :class:`~hetgym.envs.observations_cursor.WindowCursorObservation`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hetgym.envs.observations import register_observation
from hetgym.envs.observations_cursor import WindowCursorObservation
from hetgym.envs.state import DecisionState
from hetgym.sim.rates import RateTable
from hetgym.sim.registry import Knobs

if TYPE_CHECKING:
    from hetgym.envs.config import EnvSettings


@register_observation()
class WindowNodesObservation(WindowCursorObservation):
    """``window-cursor`` plus each server's free GPUs and the servers each window job holds."""

    name = "window-nodes"

    def __init__(self, state: DecisionState, settings: EnvSettings, knobs: Knobs | None = None) -> None:
        super().__init__(state, settings, knobs)
        self.num_servers = len(state.cluster.servers)
        self._server_gpus = np.array([srv.num_gpus for srv in state.cluster.servers], dtype=np.float64)

    def _extra_keys(self, state: DecisionState) -> dict[str, tuple[int, float]]:
        num_servers = len(state.cluster.servers)
        return {
            **super()._extra_keys(state),
            "server_free": (num_servers, 0.0),
            "job_server": (state.num_slots * num_servers, 0.0),
        }

    def begin_epoch(self, state: DecisionState, statics: RateTable, num_jobs: int) -> None:
        super().begin_epoch(state, statics, num_jobs)
        view = state.view
        if view is None:
            return
        gpus = self._server_gpus
        self._view["server_free"][:] = np.asarray(view.free_servers, dtype=np.float64) / gpus
        rows = self._view["job_server"].reshape(self.num_slots, self.num_servers)
        for slot, job in enumerate(state.jobs):
            for group in job.groups:
                rows[slot, group.server_id] += group.num_gpus / gpus[group.server_id]


__all__ = ["WindowNodesObservation"]
