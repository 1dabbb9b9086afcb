"""Simulator configuration, and strict construction of config dataclasses from plain mappings."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

import numpy as np

from hetgym.sim.comm import CommModel
from hetgym.sim.errors import ConfigError, UnknownNameError

#: Per-model restart penalties measured by Sia (``get_restart_penalty``), keyed by this project's job
#: types: CIFAR-10 20 s, DeepSpeech2 25 s, YOLOv3 80 s, BERT 120 s, ImageNet 250 s. Opt in with
#: ``SimConfig(restart_penalty_by_type=SIA_RESTART_PENALTY_S)``.
SIA_RESTART_PENALTY_S: Mapping[str, float] = MappingProxyType(
    {"resnet18": 20.0, "deepspeech2": 25.0, "yolov3": 80.0, "bert": 120.0, "resnet50": 250.0}
)

_T = TypeVar("_T")

#: Shortest round length accepted (``SimConfig.round_s``): shorter rounds make a run take
#: ``duration / round_s`` decision epochs, which never ends in practice.
MIN_ROUND_S = 1.0
#: Longest round length accepted (about 116 days).
MAX_ROUND_S = 1e7
#: Longest reconfiguration penalty accepted (``restart_penalty_s`` and its per-type overrides), one week.
MAX_RESTART_PENALTY_S = 7 * 24 * 3600.0
#: Default of ``SimConfig.max_job_run_s``: a job whose fastest possible run on the cluster takes longer
#: (ten years) is rejected when the workload meets the cluster.
DEFAULT_MAX_JOB_RUN_S = 10 * 365 * 24 * 3600.0
#: What ``SimConfig.oversize_jobs`` accepts.
OVERSIZE_CHOICES: tuple[str, ...] = ("error", "reject")
#: What ``SimConfig.compat`` accepts: ``"none"`` (this project's model) or ``"gavel"`` (Gavel's simulator).
COMPAT_CHOICES: tuple[str, ...] = ("none", "gavel")


def check_number(
    setting: str,
    value: Any,
    *,
    low: float,
    high: float = math.inf,
    low_open: bool = False,
    integer: bool = False,
    allow_inf: bool = False,
    unit: str = "",
    fix: str = "",
    error: type[ConfigError] = ConfigError,
) -> Any:
    """Return ``value`` as an ``int`` (``integer``) or ``float``, or raise :class:`ConfigError`.

    The value must be a real number (not a bool, not a string), finite (``+inf`` only when
    ``allow_inf``), integral when ``integer``, and in ``[low, high]`` (``(low, high]`` when
    ``low_open``). The message of the ``error`` raised names ``setting``, the value, the allowed range
    and ``fix``.
    """
    kind = (
        "an integer" if integer else ("a number" if allow_inf else "a finite number") + (f" of {unit}" if unit else "")
    )
    lo = "(" if low_open else "["
    hi = "inf]" if allow_inf and high == math.inf else f"{high:g}]"
    allowed = (
        f"{kind} in {lo}{low:g}, {hi}"
        if high != math.inf or allow_inf
        else (f"{kind} {'>' if low_open else '>='} {low:g}")
    )

    def bad(why: str) -> ConfigError:
        msg = f"{setting}={value!r} {why}; give {allowed}"
        return error(msg + (f" ({fix})" if fix else ""))

    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise bad(f"is a {type(value).__name__}, not a number")
    number = float(value)
    if math.isnan(number):
        raise bad("is not a number")
    if math.isinf(number) and not (allow_inf and number > 0):
        raise bad("is not finite")
    if integer and not (math.isfinite(number) and number == int(number)):
        raise bad("is not an integer")
    if number < low or (low_open and number == low) or number > high:
        raise bad("is out of range")
    return int(number) if integer else number


def config_from_dict(cls: type[_T], values: Mapping[str, Any], *, what: str | None = None) -> _T:
    """Build the dataclass ``cls`` from ``values``, rejecting unknown keys with the nearest valid one."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"config_from_dict builds dataclasses, not {cls.__name__}")
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    for key in values:
        if key not in names:
            raise UnknownNameError(f"{what or cls.__name__} key", key, names)
    return cls(**values)


@dataclass(frozen=True)
class SimConfig:
    """Knobs of the simulation model (not of any policy).

    Attributes:
        round_s: Round length between periodic decision epochs, in [1, 1e7] s; ``None`` takes the
            policy's own ``round_s`` (Gavel and Hadar 360 s, ElasticFlow and Dancer 60 s), else 360 s.
        restart_penalty_s: Seconds of no progress after any start, resize, migration or resumption,
            in [0, 604800] (one week).
        restart_penalty_by_type: Per-job-type overrides of ``restart_penalty_s``, each in the same range
            (see :data:`SIA_RESTART_PENALTY_S`).
        charge_first_start: Whether the first start also pays the penalty (start-up cost).
        fork_efficiency: Statistical efficiency of averaging ``fork`` copies, in (0, 1].
        fork_aggregation: Charge ``fork`` jobs with two or more copies the parameter-aggregation time
            ``model_bytes / NIC bandwidth`` once per round.
        max_time_s: Stop the simulation at this simulated time (active jobs end ``UNFINISHED``); a
            number > 0, or ``inf`` (the default) for no limit.
        max_epochs: Stop after this many decision epochs (an integer >= 1, or ``None`` for no cap).
        stall_epochs: The watchdog: stop (``stalled``) when, for this many consecutive epochs (an
            integer >= 1), no job makes progress in simulated work and no job is still to arrive (a
            policy that can never run the remaining jobs, or one that reconfigures them faster than
            their restart penalty).
        max_job_run_s: Longest fastest-possible run time of a job, in seconds (default ten years): a
            job that could not finish sooner even on the best GPUs the cluster offers it is rejected
            when the simulator is built.
        oversize_jobs: What to do with a job that can never fit the cluster (more GPUs than its
            allowed types hold): ``"error"`` (default) refuses the workload when the simulator is
            built, naming the job; ``"reject"`` admits the workload and rejects such jobs at arrival
            (``metrics["num_oversize"]`` counts them).
        seed: Seed of the policy's random generator in :meth:`Simulator.run` (an integer >= 0).
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
    max_job_run_s: float = DEFAULT_MAX_JOB_RUN_S
    oversize_jobs: str = "error"
    seed: int = 0
    record_timeline: bool = True
    comm: CommModel | str | Mapping[str, Any] = field(default_factory=CommModel)
    placer: str | None = None
    compat: str = "none"

    def __post_init__(self) -> None:
        if self.placer is not None:
            from hetgym.sim.placement import placer_class

            placer_class(self.placer)  # an unknown name raises, naming the nearest registered placer
        fix = "set it in SimConfig(...), sim={...} or on the command line"
        if self.round_s is not None:
            self._set(
                "round_s",
                check_number(
                    "SimConfig.round_s",
                    self.round_s,
                    low=MIN_ROUND_S,
                    high=MAX_ROUND_S,
                    unit="seconds",
                    fix="or None for the policy's own round",
                ),
            )
        self._set(
            "restart_penalty_s",
            check_number(
                "SimConfig.restart_penalty_s",
                self.restart_penalty_s,
                low=0.0,
                high=MAX_RESTART_PENALTY_S,
                unit="seconds",
                fix=fix,
            ),
        )
        if not isinstance(self.restart_penalty_by_type, Mapping):
            raise ConfigError(
                f"SimConfig.restart_penalty_by_type={self.restart_penalty_by_type!r} is not a mapping; "
                "give {job_type: seconds}, e.g. {'bert': 120}"
            )
        penalties = {
            str(job_type): check_number(
                f"SimConfig.restart_penalty_by_type[{job_type!r}]",
                seconds,
                low=0.0,
                high=MAX_RESTART_PENALTY_S,
                unit="seconds",
                fix=fix,
            )
            for job_type, seconds in self.restart_penalty_by_type.items()
        }
        self._set(
            "fork_efficiency",
            check_number("SimConfig.fork_efficiency", self.fork_efficiency, low=0.0, high=1.0, low_open=True, fix=fix),
        )
        self._set(
            "max_time_s",
            check_number(
                "SimConfig.max_time_s",
                self.max_time_s,
                low=0.0,
                low_open=True,
                allow_inf=True,
                unit="seconds",
                fix="inf for no limit",
            ),
        )
        if self.max_epochs is not None:
            self._set(
                "max_epochs",
                check_number("SimConfig.max_epochs", self.max_epochs, low=1, integer=True, fix="or None for no cap"),
            )
        self._set(
            "stall_epochs", check_number("SimConfig.stall_epochs", self.stall_epochs, low=1, integer=True, fix=fix)
        )
        self._set(
            "max_job_run_s",
            check_number("SimConfig.max_job_run_s", self.max_job_run_s, low=1.0, unit="seconds", fix=fix),
        )
        if self.compat not in COMPAT_CHOICES:
            raise UnknownNameError("compat setting", self.compat, COMPAT_CHOICES)
        if self.compat == "gavel":
            if self.restart_penalty_by_type:
                raise ConfigError(
                    f"SimConfig.restart_penalty_by_type={dict(self.restart_penalty_by_type)!r} with compat='gavel': "
                    "Gavel's simulator charges no restart penalty; drop the per-type penalties or use compat='none'"
                )
            self._set("restart_penalty_s", 0.0)
        if self.oversize_jobs not in OVERSIZE_CHOICES:
            raise UnknownNameError("oversize_jobs setting", self.oversize_jobs, OVERSIZE_CHOICES)
        self._set("seed", check_number("SimConfig.seed", self.seed, low=0, integer=True, fix=fix))
        for flag in ("charge_first_start", "fork_aggregation", "record_timeline"):
            if not isinstance(getattr(self, flag), bool | np.bool_):
                raise ConfigError(f"SimConfig.{flag}={getattr(self, flag)!r} is not a bool; give true or false")
        object.__setattr__(self, "restart_penalty_by_type", MappingProxyType(penalties))
        object.__setattr__(self, "comm", CommModel.coerce(self.comm))

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

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
