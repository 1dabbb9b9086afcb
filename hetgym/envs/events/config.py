"""The event-driven environment's configuration: a frozen dataclass resolved from a scenario plus overrides.

``gym.make("HetClusterEvents-v0", **overrides)`` passes plain keyword arguments; an unknown key raises an
error naming the nearest valid one, and the values are checked here, before anything runs:

* ``scenario``: an embedded scenario (:data:`hetgym.workloads.SCENARIOS`): cluster, workload, simulator;
* ``cluster``: another cluster preset;
* ``workload={...}`` / ``sim={...}``: fields merged onto the scenario's workload and simulator configs;
* ``allocator``: the registered guided policy that allocates GPUs between the agent's decisions
  (default ``"elasticflow-guided"``), with ``allocator_knobs={...}``, its constructor's knobs;
* ``events``: the job events the agent is asked at: ``("arrival",)`` (default) or ``("arrival", "late")``,
  which also asks, once per job, about a guaranteed job that the allocator's re-plan projects to miss
  its deadline (keep it, action 0, or drop it, action 1);
* ``action_set``: the action table (:mod:`hetgym.envs.events.actions`): ``"admission"`` (default,
  ``HetClusterEvents-v0``: admission and GPU type) or ``"share"`` (``HetClusterEvents-v1``: also the job's
  priority in the allocator's leftover GPUs and a cap on its GPUs; the allocator must follow them, a
  :class:`~hetgym.sim.guidance.SharingPolicy`);
* ``probe``: whether the observation carries the allocator's admission test of the deciding job under
  each GPU-type choice (default ``True``);
* ``time_scale_s``: the unit of the squashed time features;
* ``max_time_s``: a cap on simulated time (the episode is truncated there).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from hetgym.envs.config import EnvConfigError, _merge, dataclass_to_dict
from hetgym.envs.events.actions import ACTION_SETS
from hetgym.sim.cluster import ClusterSpec, get_cluster
from hetgym.sim.config import SimConfig, check_number
from hetgym.sim.errors import UnknownNameError
from hetgym.sim.guidance import GuidedPolicy, LateReportingPolicy, SharingPolicy
from hetgym.sim.job import JobSpec
from hetgym.sim.physics import Physics, resolve_physics
from hetgym.sim.policy import PolicyProtocol, make_policy, policy_class
from hetgym.workloads.scenario import WorkloadConfig, get_scenario

#: The allocator of the registered ``HetClusterEvents`` ids.
DEFAULT_ALLOCATOR = "elasticflow-guided"
#: The job events the agent can be asked at (``events=``); ``"arrival"`` is always among them.
EVENTS: tuple[str, ...] = ("arrival", "late")


class EventAllocator(PolicyProtocol, GuidedPolicy, Protocol):
    """The allocator of the event-driven environment: a policy (it schedules every epoch) that takes guidance."""


@dataclass(frozen=True)
class EventEnvConfig:
    """Everything that defines a :class:`~hetgym.envs.events.HetClusterEventEnv` (resolved, immutable).

    Attributes:
        scenario: Name of the scenario preset the other fields were resolved from.
        cluster: Cluster preset name.
        workload: The workload recipe drawn at every reset.
        sim: Simulator knobs.
        allocator: A registered policy implementing :class:`~hetgym.sim.guidance.GuidedPolicy`.
        allocator_knobs: Its constructor's keyword arguments.
        events: The job events the agent is asked at (see the module docstring).
        action_set: The action table, one of :data:`~hetgym.envs.events.actions.ACTION_SETS`.
        probe: Whether the observation carries the allocator's admission test per GPU-type choice.
        time_scale_s: Time unit of the squashed time features.
        flatten: Whether observations are one float32 vector (the ``Dict`` flattened by
            ``gymnasium.spaces.flatten``, the layout of ``gymnasium.wrappers.FlattenObservation``) instead of
            the ``Dict``: what an ``MlpPolicy`` reads, kept in the saved agent's env arguments.
        max_time_s: Cap on simulated time, or ``None`` for the scenario's.
        physics: Not an option: the allocator's :class:`~hetgym.sim.physics.Physics` under ``sim``
            (:func:`~hetgym.sim.physics.resolve_physics`), which the simulator runs with, as
            ``Simulator.run`` runs the allocator's.
    """

    scenario: str = "default"
    cluster: str = "default"
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    sim: SimConfig = field(default_factory=SimConfig)
    allocator: str = DEFAULT_ALLOCATOR
    allocator_knobs: Mapping[str, Any] = field(default_factory=dict)
    events: tuple[str, ...] = ("arrival",)
    action_set: str = "admission"
    probe: bool = True
    time_scale_s: float = 3600.0
    flatten: bool = False
    max_time_s: float | None = None
    physics: Physics = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        get_cluster(self.cluster)  # raises for an unknown preset, naming the nearest
        if not isinstance(self.allocator_knobs, Mapping):
            raise EnvConfigError(
                f"allocator_knobs={self.allocator_knobs!r}: give a mapping of the allocator's knobs, e.g. "
                "{'leftover_rule': 'gputime'}"
            )
        object.__setattr__(self, "allocator_knobs", dict(self.allocator_knobs))
        events = (self.events,) if isinstance(self.events, str) else tuple(self.events)
        for event in events:
            if event not in EVENTS:
                raise UnknownNameError("job event", event, EVENTS)
        if "arrival" not in events or len(set(events)) != len(events):
            raise EnvConfigError(f"events={list(events)}: give 'arrival' once, optionally with 'late'")
        object.__setattr__(self, "events", tuple(e for e in EVENTS if e in events))
        allocator = self.make_allocator()  # an unknown policy, knob or a policy that takes no guidance raises here
        object.__setattr__(self, "physics", resolve_physics(self.sim, allocator))
        if "late" in self.events and not isinstance(allocator, LateReportingPolicy):
            raise EnvConfigError(
                f"events={list(self.events)}: the allocator {self.allocator!r} does not report late jobs "
                "(no newly_late()); use events=['arrival'] or a guided policy that does"
            )
        if self.action_set not in ACTION_SETS:
            raise UnknownNameError("action set", self.action_set, ACTION_SETS, "See hetgym.envs.events.actions.")
        if self.action_set == "share" and not isinstance(allocator, SharingPolicy):
            raise EnvConfigError(
                f"action_set='share': the allocator {self.allocator!r} does not follow a directive's priority and "
                "GPU cap (no capped_types()); use action_set='admission' or a guided policy that does, such as "
                f"{DEFAULT_ALLOCATOR!r}"
            )
        for name in ("probe", "flatten"):
            if not isinstance(getattr(self, name), bool):
                raise EnvConfigError(f"{name}={getattr(self, name)!r}: give True or False")
        object.__setattr__(
            self,
            "time_scale_s",
            check_number(
                "time_scale_s", self.time_scale_s, low=0.0, low_open=True, unit="seconds", error=EnvConfigError
            ),
        )

    @classmethod
    def make(cls, scenario: str = "default", **overrides: Any) -> EventEnvConfig:
        """Resolve a scenario preset plus ``gym.make``-style overrides (see the module docstring).

        Raises:
            UnknownNameError: An unknown key (here, in ``workload`` or in ``sim``), scenario, cluster,
                allocator or allocator knob, naming the nearest valid one.
            EnvConfigError: A value out of range, or an allocator that takes no guidance.
        """
        valid = [f.name for f in dataclasses.fields(cls) if f.init]
        for key in overrides:
            if key not in valid:
                raise UnknownNameError(
                    "environment option", key, valid, "See EventEnvConfig for the options of the HetClusterEvents ids."
                )
        sc = get_scenario(scenario)
        cluster = overrides.pop("cluster", None) or sc.cluster
        get_cluster(cluster)
        workload = _merge(sc.workload, overrides.pop("workload", None), WorkloadConfig, "workload")
        sim = _merge(sc.sim, overrides.pop("sim", None), SimConfig, "sim")
        max_time_s = overrides.get("max_time_s")
        if max_time_s is not None:
            checked = check_number(
                "max_time_s", max_time_s, low=0.0, low_open=True, allow_inf=True, unit="seconds", error=EnvConfigError
            )
            sim = dataclasses.replace(sim, max_time_s=float(checked))
        return cls(scenario=sc.name, cluster=cluster, workload=workload, sim=sim, **overrides)

    def to_kwargs(self) -> dict[str, Any]:
        """Plain keyword arguments that :meth:`make` turns back into an equal configuration."""
        out = dataclass_to_dict(self)
        out["workload"] = dataclass_to_dict(self.workload)
        out["sim"] = dataclass_to_dict(self.sim)
        return out

    def cluster_spec(self) -> ClusterSpec:
        """The cluster."""
        return get_cluster(self.cluster)

    def make_allocator(self) -> EventAllocator:
        """A fresh instance of the allocator (checked to take guidance)."""
        cls = policy_class(self.allocator)
        policy = make_policy(self.allocator, **self.allocator_knobs)
        if not isinstance(policy, GuidedPolicy):
            raise EnvConfigError(
                f"allocator={self.allocator!r}: {cls.__name__} takes no per-job guidance (it has no guide() and "
                f"probe()); use a guided policy such as {DEFAULT_ALLOCATOR!r}"
            )
        return policy

    def draw_jobs(self, seed: int) -> tuple[JobSpec, ...]:
        """The workload of one episode, drawn from the recipe with ``seed``."""
        return tuple(self.workload.build(self.cluster, seed=int(seed)).jobs)


__all__ = ["DEFAULT_ALLOCATOR", "EVENTS", "EventAllocator", "EventEnvConfig"]
