"""Simulator configuration, and strict construction of config dataclasses from plain mappings."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from hetgym.sim.comm import CommModel
from hetgym.sim.errors import HetgymError, UnknownNameError

#: Per-model restart penalties measured by Sia (``get_restart_penalty``), keyed by this project's job
#: types: CIFAR-10 20 s, DeepSpeech2 25 s, YOLOv3 80 s, BERT 120 s, ImageNet 250 s. Opt in with
#: ``SimConfig(restart_penalty_by_type=SIA_RESTART_PENALTY_S)``.
SIA_RESTART_PENALTY_S: Mapping[str, float] = MappingProxyType(
    {"resnet18": 20.0, "deepspeech2": 25.0, "yolov3": 80.0, "bert": 120.0, "resnet50": 250.0}
)

_T = TypeVar("_T")


def config_from_dict(cls: type[_T], values: Mapping[str, Any], *, what: str | None = None) -> _T:
    """Build the dataclass ``cls`` from ``values``, rejecting unknown keys with the nearest valid one."""
    names = [f.name for f in dataclasses.fields(cls) if f.init]  # type: ignore[arg-type]
    for key in values:
        if key not in names:
            raise UnknownNameError(f"{what or cls.__name__} key", key, names)
    return cls(**values)


@dataclass(frozen=True)
class SimConfig:
    """Knobs of the simulation model (not of any policy).

    Attributes:
        round_s: Round length between periodic decision epochs; ``None`` takes the policy's own
            ``round_s`` (Gavel and Hadar 360 s, ElasticFlow and Dancer 60 s), else 360 s.
        restart_penalty_s: Seconds of no progress after any start, resize, migration or resumption.
        restart_penalty_by_type: Per-job-type overrides of ``restart_penalty_s``
            (see :data:`SIA_RESTART_PENALTY_S`).
        charge_first_start: Whether the first start also pays the penalty (start-up cost).
        fork_efficiency: Statistical efficiency of averaging ``fork`` copies, in (0, 1].
        fork_aggregation: Charge ``fork`` jobs with two or more copies the parameter-aggregation time
            ``model_bytes / NIC bandwidth`` once per round.
        max_time_s: Stop the simulation at this simulated time (active jobs end ``UNFINISHED``).
        max_epochs: Stop after this many decision epochs.
        stall_epochs: Stop when, for this many consecutive epochs, no job makes progress and no job is
            still to arrive (a policy that can never run the remaining jobs).
        seed: Seed of the policy's random generator in :meth:`Simulator.run`.
        record_timeline: Record per-type GPU usage over time (for plots and utilisation curves).
        placer: How allocated GPU counts are mapped onto servers (:mod:`hetgym.sim.placement`);
            ``None`` (default) takes the policy's declared ``placer`` in :meth:`Simulator.run`, else
            ``"default"``.
        comm: Multi-server communication model (:class:`~hetgym.sim.comm.CommModel`, or its kind
            ``"measured"`` / ``"bandwidth"``, or a mapping of its fields). The default ``"measured"``
            applies measured consolidation factors; ``"bandwidth"`` (opt-in) charges jobs that give
            ``model_bytes`` for the bytes their placement sends between servers (see :mod:`hetgym.sim.comm`).
    """

    round_s: float | None = None
    restart_penalty_s: float = 30.0
    restart_penalty_by_type: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    charge_first_start: bool = True
    fork_efficiency: float = 1.0
    fork_aggregation: bool = True
    max_time_s: float = math.inf
    max_epochs: int | None = None
    stall_epochs: int = 100
    seed: int = 0
    record_timeline: bool = True
    comm: CommModel | str | Mapping[str, Any] = field(default_factory=CommModel)
    placer: str | None = None

    def __post_init__(self) -> None:
        if self.placer is not None:
            from hetgym.sim.placement import placer_class

            placer_class(self.placer)  # an unknown name raises, naming the nearest registered placer
        if self.round_s is not None and not self.round_s > 0:
            raise HetgymError(f"SimConfig.round_s is {self.round_s}; give a positive number of seconds or None")
        if not self.restart_penalty_s >= 0:
            raise HetgymError(f"SimConfig.restart_penalty_s is {self.restart_penalty_s}; it must be >= 0")
        if not 0 < self.fork_efficiency <= 1:
            raise HetgymError(f"SimConfig.fork_efficiency is {self.fork_efficiency}; it must be in (0, 1]")
        if self.stall_epochs < 1:
            raise HetgymError(f"SimConfig.stall_epochs is {self.stall_epochs}; it must be >= 1")
        object.__setattr__(self, "restart_penalty_by_type", MappingProxyType(dict(self.restart_penalty_by_type)))
        object.__setattr__(self, "comm", CommModel.coerce(self.comm))

    @property
    def comm_model(self) -> CommModel:
        """The communication model in force (``comm`` as a :class:`~hetgym.sim.comm.CommModel`)."""
        assert isinstance(self.comm, CommModel)
        return self.comm

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> SimConfig:
        """Build from a mapping; unknown keys raise an error naming the nearest valid key."""
        return config_from_dict(cls, values, what="simulator config")

    def restart_penalty_for(self, job_type: str) -> float:
        """The penalty charged to a job of ``job_type``."""
        return float(self.restart_penalty_by_type.get(job_type, self.restart_penalty_s))
