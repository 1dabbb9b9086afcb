"""Placement: how the simulator maps a job's per-type GPU counts onto servers.

A policy decides *how many* GPUs of which type each job gets and in which execution mode
(:class:`~hetgym.sim.allocation.JobAllocation`); a :class:`Placer` decides *which servers* hold them.
Placement is the simulator's strategy, not policy-private code: the engine calls the placer in force
for every job whose resources change, so the same allocation gives the same servers whether a policy
runs on :meth:`Simulator.run <hetgym.sim.Simulator.run>` or an agent commits it through the Gym
environment. A policy *declares* the placer its paper uses (``Policy.placer``); ``SimConfig.placer``
overrides it.

Registered placers (``hetgym policies --knobs`` shows each policy's):

============== ========================================================================================
``default``    sticky, then best fit on one server, then fewest servers (largest free first)
``buddy``      ElasticFlow's buddy allocation: every job re-placed largest first, single servers for
               jobs that fit one, whole servers otherwise (:mod:`~hetgym.sim.placement.buddy`)
``comm-aware`` A-SRPT's communication-aware placement: best fit, else fewest servers counting only
               whole pipeline replicas or tensor-parallel groups (:mod:`~hetgym.sim.placement.comm_aware`)
``random``     servers in a random order (A-SRPT's communication-unaware ablation)
``priced``     Hadar's priced node pool: cheapest nodes first, price rising with the GPUs committed on a
               node (:mod:`~hetgym.sim.placement.priced`)
``copies``     HadarE: ``fork`` jobs as one copy per node (at most the job's requested GPUs each), other
               jobs as ``priced``
============== ========================================================================================

Write your own by subclassing :class:`Placer` and decorating it with :func:`register_placer`
(``docs/writing-a-policy.md`` has a worked example).
"""

from __future__ import annotations

from hetgym.sim.placement.base import (
    PlacementRequest,
    Placer,
    groups_from_counts,
    list_placers,
    make_placer,
    placer_class,
    register_placer,
)
from hetgym.sim.placement.basic import DefaultPlacer, place_count, place_jobs, take_fewest_servers
from hetgym.sim.placement.buddy import BuddyPlacer, buddy_place
from hetgym.sim.placement.comm_aware import (
    CommAwarePlacer,
    RandomPlacer,
    comm_aware_place,
    placement_units,
    random_place,
)
from hetgym.sim.placement.priced import CopiesPlacer, NodePool, PricedPlacer

__all__ = [
    "BuddyPlacer",
    "CommAwarePlacer",
    "CopiesPlacer",
    "DefaultPlacer",
    "NodePool",
    "PlacementRequest",
    "Placer",
    "PricedPlacer",
    "RandomPlacer",
    "buddy_place",
    "comm_aware_place",
    "groups_from_counts",
    "list_placers",
    "make_placer",
    "place_count",
    "place_jobs",
    "placement_units",
    "placer_class",
    "random_place",
    "register_placer",
    "take_fewest_servers",
]
