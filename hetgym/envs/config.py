"""The environment's configuration: a frozen dataclass resolved from a scenario preset plus overrides.

``gym.make("HetCluster-v0", **overrides)`` passes plain, JSON-friendly keyword arguments; they are
checked strictly (an unknown key names the nearest valid one) and merged onto the scenario preset:

* ``scenario``: an embedded scenario (:data:`hetgym.workloads.SCENARIOS`): cluster, workload recipe
  and simulator knobs; ``default`` and ``tiny`` back the registered ids;
* ``cluster``: another cluster preset (the workload's load is then expressed on that cluster);
* ``workload={...}``: fields of :class:`~hetgym.workloads.WorkloadConfig` merged onto the scenario's;
* ``trace="path.csv"``: replay a canonical trace file every episode instead of drawing a workload;
* ``sim={...}``: fields of :class:`~hetgym.sim.SimConfig` merged onto the scenario's;
* ``throughput=...``: the throughput table the simulator and the workload recipe use instead of the
  embedded one: the path of a CSV or parquet file with the columns of ``hetgym/data/throughputs.csv``,
  a ``pandas.DataFrame`` with those columns, or a :class:`~hetgym.sim.ThroughputModel`;
* the environment's own knobs (window size, codec, reward, ...), the remaining fields of
  :class:`HetClusterConfig`.

The pluggable components (``codec``, ``observation``, ``reward``, ``window_order``) are checked against
their registries (:data:`~hetgym.envs.codecs.CODECS`, :data:`~hetgym.envs.observations.OBSERVATIONS`,
:data:`~hetgym.envs.rewards.REWARDS`, :data:`~hetgym.envs.state.WINDOW_ORDERS`), so a name registered
later is accepted. What the options give the codec and the observation encoder is
:class:`EnvSettings` (environment-wide); a component's own knobs are ``codec_knobs`` /
``observation_knobs``, checked against the frozen :class:`~hetgym.sim.registry.Knobs` dataclass it
registered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from hetgym.envs.settings import EnvSettings
from hetgym.envs.settings_checks import (
    EnvConfigError,
    _check,
    check_queue_slots,
    resolve_throughput,
)
from hetgym.envs.shaping import SHAPINGS
from hetgym.sim.cluster import ClusterSpec, get_cluster
from hetgym.sim.config import SimConfig, config_from_dict
from hetgym.sim.errors import UnknownNameError
from hetgym.sim.job import JobSpec
from hetgym.sim.physics import Physics, resolve_physics
from hetgym.sim.policy import policy_class
from hetgym.sim.registry import Knobs, Registry
from hetgym.sim.throughput import EXECUTION_MODES, ExecutionMode, ThroughputModel
from hetgym.workloads.scenario import WorkloadConfig, get_scenario
from hetgym.workloads.schema import read_trace

LEVEL_PRESETS: tuple[str, ...] = ("pow2", "all")


def _registry(option: str) -> Registry[Any]:
    """The registry that ``option`` names a component of (imported here: it loads gymnasium)."""
    if option == "codec":
        from hetgym.envs.codecs import CODECS

        return CODECS
    if option == "observation":
        from hetgym.envs.observations import OBSERVATIONS

        return OBSERVATIONS
    if option == "reward":
        from hetgym.envs.rewards import REWARDS

        return REWARDS
    from hetgym.envs.state import WINDOW_ORDERS

    return WINDOW_ORDERS


#: Names the configuration used to hard-code, now read from the registries (for older imports).
_LEGACY_NAMES = {
    "CODEC_NAMES": "codec",
    "OBSERVATION_NAMES": "observation",
    "REWARD_NAMES": "reward",
    "WINDOW_ORDERS": "window_order",
}


def __getattr__(name: str) -> Any:
    option = _LEGACY_NAMES.get(name)
    if option is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _registry(option).names()


#: When the agent is asked (``decisions=``).
DECISION_MODES: tuple[str, ...] = ("every-epoch", "on-change")


def _mapping_to_dict(value: Any) -> Any:
    """Plain, JSON-friendly copies of nested mappings and sequences (for kwargs and pickling)."""
    if isinstance(value, Mapping):
        return {str(k): _mapping_to_dict(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_mapping_to_dict(v) for v in value]
    return value


def dataclass_to_dict(obj: Any) -> dict[str, Any]:
    """The init fields of a config dataclass as plain values (mappings become dicts)."""
    return {f.name: _mapping_to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.init}


def count_levels_for(spec: str | Sequence[int], cluster: ClusterSpec) -> tuple[int, ...]:
    """Resolve a ``count_levels`` option to an ascending tuple starting at 0.

    ``"pow2"``: 0 and the powers of two up to the largest per-type capacity; ``"all"``: every count
    from 0 to the largest per-type capacity; or an explicit list of distinct counts including 0.
    """
    max_cap = max(cluster.capacity.values())
    if isinstance(spec, str):
        if spec == "pow2":
            levels = [0]
            n = 1
            while n <= max_cap:
                levels.append(n)
                n *= 2
            return tuple(levels)
        if spec == "all":
            return tuple(range(max_cap + 1))
        raise UnknownNameError(
            "count_levels preset", spec, LEVEL_PRESETS, "Or give a list of GPU counts such as [0, 1, 2, 4]."
        )
    levels = [int(v) for v in spec]
    if any(int(v) != v or v < 0 for v in spec) or len(set(levels)) != len(levels) or 0 not in levels:
        raise EnvConfigError(
            f"count_levels={list(spec)}: give distinct non-negative integer GPU counts including 0, e.g. [0, 1, 2, 4]"
        )
    if len(levels) < 2:
        raise EnvConfigError("count_levels=[0] leaves no way to give a job GPUs; add at least one positive count")
    return tuple(sorted(levels))


@dataclass(frozen=True)
class HetClusterConfig:
    """Everything that defines a :class:`~hetgym.envs.HetClusterEnv` (resolved, immutable).

    Build one with :meth:`make` (a scenario preset plus overrides, as ``gym.make`` does) or
    :meth:`preset`.

    Attributes:
        scenario: Name of the scenario preset the other fields were resolved from.
        cluster: Cluster preset name.
        workload: The workload recipe drawn at every reset (or the trace replayed).
        sim: Simulator knobs (round length, restart penalty, caps, policy seed).
        trace: Path of the trace replayed every episode, or ``None`` to draw from ``workload``.
        queue_slots: K, the number of job slots in the observation window and the action space.
        codec: Action codec, a name in :data:`~hetgym.envs.codecs.CODECS`: ``sequential`` (masked
            ``Discrete``), ``multidiscrete`` (one-shot), ``jobwise`` (one job at a time),
            ``jobwise-types`` (an alias: ``jobwise`` with its knob ``types=True``, several GPU types a
            job), ``score`` (per-slot type,
            count and priority, served by a fixed allocator), or one registered with
            :func:`~hetgym.envs.codecs.register_codec`.
        codec_knobs: The codec's own knobs (a mapping, checked against the frozen knobs dataclass the
            codec registered; resolved to an instance of it, with an alias's preset knobs), or ``None`` for
            the defaults. Of the built-in codecs ``score`` (:class:`~hetgym.envs.codecs.ScoreKnobs`) and
            ``jobwise`` (:class:`~hetgym.envs.codecs.JobwiseKnobs`) have knobs.
        count_levels: GPU counts an action can give a job on one type (``"pow2"``, ``"all"`` or a list).
        modes: Execution modes an action can choose for a job spanning types (the first is the
            default; with one mode there is no mode choice).
        allow_reject: Whether actions can reject (refuse for good) a job. ``None`` (default): only with the
            ``deadline`` reward, where a rejection counts as a lost deadline. Under the time-based rewards
            a rejected job would leave the system at no cost (an agent learns to reject everything), so
            ``True`` with them is refused.
        max_actions_per_epoch: Cap on sequential actions in one decision epoch; the action that reaches
            it also commits. ``None``: ``K * (T + 2) + 1``, enough for any allocation of the window.
        window_order: Which active jobs fill the K slots and in what order, a name in
            :data:`~hetgym.envs.state.WINDOW_ORDERS`: ``slack`` (least deadline slack first), ``deadline``
            (earliest deadline first), ``arrival``, or one registered with
            :func:`~hetgym.envs.state.register_window_order`.
        observation: Observation encoder, a name in :data:`~hetgym.envs.observations.OBSERVATIONS`:
            ``window`` (default), or one registered with
            :func:`~hetgym.envs.observations.register_observation`; the aliases ``window-levels``,
            ``window-cursor`` and ``window-nodes`` are ``window`` with feature groups preset (see
            ``observation_knobs``).
        observation_knobs: The encoder's own knobs, like ``codec_knobs``. ``window``'s
            (:class:`~hetgym.envs.observations.WindowKnobs`) add feature groups: ``levels`` (each window
            job's speed and deadline slack per GPU type and count level), ``cursor`` (the job being decided
            and per-type pressure; needs ``levels``), ``nodes`` (each server's free GPUs and the servers
            each job holds).
        reward: A name in :data:`~hetgym.envs.rewards.REWARDS`: ``deadline``, ``jct``, ``makespan``,
            ``utilisation``, or one registered with :func:`~hetgym.envs.rewards.register_reward`.
        time_scale_s: Time unit of the squashed time features and of the time-based rewards.
        invalid_action_penalty: Subtracted from the reward of a masked-out (ignored) sequential action
            or of a one-shot action that needed repair.
        max_time_s: Truncate the episode at this simulated time (``None``: the scenario's ``sim``).
        max_decisions: Truncate after this many decision epochs (``None``: the scenario's ``sim``).
        policy_compat: A registered policy name: run the environment with that policy's own physics, so
            that the policy acting through the env (:class:`~hetgym.experts.ExpertAgent`) takes exactly
            the decisions, and gets exactly the results, it gets on :meth:`Simulator.run
            <hetgym.sim.Simulator.run>`. Sets, unless given explicitly: ``sim.round_s`` to the policy's
            round, ``sim.placer`` to its declared placer, ``modes`` to its declared execution modes,
            ``count_levels`` to ``"all"``, ``decisions`` to ``"every-epoch"`` (an expert decides at every
            epoch), and ``queue_slots`` to the workload's number of jobs (an expert decides for every
            active job, so the window must be able to hold them all).
        interface: The decision-interface preset whose values fill the options not given explicitly, a
            name in :data:`INTERFACES`: ``"v0"`` (the defaults above) or ``"v1"`` (``codec="jobwise"``,
            ``decisions="on-change"``, ``observation="window-cursor"``, ``queue_slots=32``), which the
            ``-v1`` ids set. Its values count as defaults, not explicit choices: ``policy_compat`` still
            widens the window.
        reward_baseline: A registered policy name, or ``None``: each committing step's reward becomes the
            agent's minus that policy's reward over the same simulated interval of the same workload (run
            at reset), so an episode's return is the agent's minus the reference's
            (:mod:`hetgym.envs.reference`).
        decisions: ``"every-epoch"`` (default): the agent decides at every decision epoch, round ticks
            included; ``"on-change"``: only when something changed (an arrival, a completion, a rejection
            or a deadline passing): a round tick after which nothing changed is committed with the
            allocation standing and the agent is asked at the next epoch that has news (one step then covers
            several simulated intervals, and its reward their sum).
        shaping: ``None`` (default) or ``"deadline-slack"``: potential-based shaping of the deadline objective
            (:mod:`hetgym.envs.shaping`; optimal policies unchanged), added to every step's reward.
        shaping_gamma: The discount per ``time_scale_s`` of simulated time the shaping terms use, in (0, 1];
            set it to the learner's (1: undiscounted).
        flatten: Whether observations are the encoder's flat float32 vector under a ``Box`` (``True``: the
            ``-v2`` ids; its slices are named by ``env.unwrapped.layout``) instead of the ``Dict`` of its slices
            (``False``, default).
        throughput: The throughput table the simulator, the workload recipe and the observation use:
            ``None`` (default) for the embedded one, the path of a CSV or parquet file with the columns
            of ``hetgym/data/throughputs.csv`` (kept as the path), a ``pandas.DataFrame`` with those
            columns or a :class:`~hetgym.sim.ThroughputModel` (both kept as the model). Checked when
            the configuration is made (:func:`~hetgym.envs.settings_checks.throughput_model_from`).
        physics: Not an option: the :class:`~hetgym.sim.physics.Physics` the env's simulator runs with, resolved
            once from ``sim`` (its round and placer, else the simulator's defaults), round ticks as epochs, and
            ``modes`` (:func:`hetgym.experts.physics_gaps` compares a policy's with it).
    """

    scenario: str = "default"
    cluster: str = "default"
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    sim: SimConfig = field(default_factory=SimConfig)
    trace: str | None = None
    queue_slots: int = 16
    codec: str = "sequential"
    codec_knobs: Knobs | Mapping[str, Any] | None = None
    count_levels: str | tuple[int, ...] = "pow2"
    modes: tuple[ExecutionMode, ...] = ("sync",)
    allow_reject: bool | None = None
    max_actions_per_epoch: int | None = None
    window_order: str = "slack"
    observation: str = "window"
    observation_knobs: Knobs | Mapping[str, Any] | None = None
    reward: str = "deadline"
    time_scale_s: float = 3600.0
    invalid_action_penalty: float = 0.0
    max_time_s: float | None = None
    max_decisions: int | None = None
    policy_compat: str | None = None
    interface: str = "v0"
    reward_baseline: str | None = None
    decisions: str = "every-epoch"
    shaping: str | None = None
    shaping_gamma: float = 1.0
    throughput: str | ThroughputModel | None = None
    flatten: bool = False
    physics: Physics = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.throughput, Path):
            object.__setattr__(self, "throughput", str(self.throughput))
        model = resolve_throughput(self.throughput)
        if isinstance(self.throughput, pd.DataFrame):
            object.__setattr__(self, "throughput", model)  # a frame cannot be compared or hashed
        object.__setattr__(self, "_throughput_model", model)
        if isinstance(self.count_levels, list):
            object.__setattr__(self, "count_levels", tuple(self.count_levels))
        if isinstance(self.modes, str):
            object.__setattr__(self, "modes", (self.modes,))
        object.__setattr__(self, "modes", tuple(self.modes))
        object.__setattr__(self, "queue_slots", check_queue_slots(self.queue_slots))
        # Each name is looked up in its registry (an unknown one raises, naming the nearest).
        object.__setattr__(self, "codec_knobs", _resolve_knobs("codec", self.codec, self.codec_knobs))
        _registry("reward").entry(self.reward)
        _registry("window_order").entry(self.window_order)
        object.__setattr__(
            self, "observation_knobs", _resolve_knobs("observation", self.observation, self.observation_knobs)
        )
        if self.allow_reject is None:
            object.__setattr__(self, "allow_reject", self.reward == "deadline")
        elif self.allow_reject and self.reward != "deadline":
            raise EnvConfigError(
                f"allow_reject=True with reward={self.reward!r}: a rejected job would leave the system at no cost "
                "under this reward, so an agent learns to reject every job; use reward='deadline' (a rejection "
                "counts as a lost deadline) or leave allow_reject unset"
            )
        if not self.modes:
            raise EnvConfigError("modes=(): give at least one execution mode, e.g. ('sync',)")
        for mode in self.modes:
            if mode not in EXECUTION_MODES:
                raise UnknownNameError("execution mode", mode, EXECUTION_MODES)
        if len(set(self.modes)) != len(self.modes):
            raise EnvConfigError(f"modes={self.modes}: each mode may appear once")
        if self.max_actions_per_epoch is not None:
            object.__setattr__(
                self,
                "max_actions_per_epoch",
                _check("max_actions_per_epoch", self.max_actions_per_epoch, low=1, integer=True, fix="or None"),
            )
        object.__setattr__(
            self,
            "time_scale_s",
            _check("time_scale_s", self.time_scale_s, low=0.0, low_open=True, unit="seconds"),
        )
        object.__setattr__(
            self, "invalid_action_penalty", _check("invalid_action_penalty", self.invalid_action_penalty, low=0.0)
        )
        if self.max_time_s is not None:
            object.__setattr__(
                self,
                "max_time_s",
                _check(
                    "max_time_s",
                    self.max_time_s,
                    low=0.0,
                    low_open=True,
                    allow_inf=True,
                    unit="seconds",
                    fix="or None for the scenario's",
                ),
            )
        if self.max_decisions is not None:
            object.__setattr__(
                self,
                "max_decisions",
                _check("max_decisions", self.max_decisions, low=1, integer=True, fix="or None for no cap"),
            )
        cluster = get_cluster(self.cluster)  # raises for an unknown preset, naming the nearest
        count_levels_for(self.count_levels, cluster)
        if self.shaping is not None and self.shaping not in SHAPINGS:
            raise UnknownNameError("shaping", self.shaping, SHAPINGS)
        object.__setattr__(
            self,
            "shaping_gamma",
            _check("shaping_gamma", self.shaping_gamma, low=0.0, low_open=True, high=1.0, fix="a discount"),
        )
        if not isinstance(self.flatten, bool):
            raise EnvConfigError(f"flatten={self.flatten!r}: give True (a flat Box observation) or False (the Dict)")
        if self.decisions not in DECISION_MODES:
            raise UnknownNameError("decisions setting", self.decisions, DECISION_MODES)
        for policy in (self.policy_compat, self.reward_baseline):
            if policy is not None:
                policy_class(policy)  # raises for an unknown policy, naming the nearest
        # No policy drives the env's simulator: its round and placer are the configuration's (else the
        # simulator's defaults), round ticks are always epochs, and the modes are those the codec offers.
        object.__setattr__(self, "physics", dataclasses.replace(resolve_physics(self.sim), modes=self.modes))

    # ----------------------------------------------------------------------------------------
    @classmethod
    def make(cls, scenario: str = "default", **overrides: Any) -> HetClusterConfig:
        """Resolve a scenario preset plus ``gym.make``-style overrides (see the module docstring).

        Raises:
            UnknownNameError: An unknown key (here, in ``workload`` or in ``sim``), scenario, cluster,
                codec, observation encoder, reward or window order, naming the nearest valid one.
            EnvConfigError: A value out of range.
        """
        valid = [f.name for f in dataclasses.fields(cls) if f.init]
        for key in overrides:
            if key not in valid:
                raise UnknownNameError("environment option", key, valid, "See HetClusterConfig for each option.")
        sc = get_scenario(scenario)
        interface = overrides.get("interface", "v0")
        if interface not in INTERFACES:
            raise UnknownNameError("interface", interface, list(INTERFACES))
        compat = overrides.get("policy_compat")
        if compat is not None:
            overrides = _compat_defaults(str(compat), overrides)
        cluster = overrides.pop("cluster", None) or sc.cluster
        get_cluster(cluster)
        workload_changes = overrides.pop("workload", None)
        workload = _merge(sc.workload, workload_changes, WorkloadConfig, "workload")
        sim = _merge(sc.sim, overrides.pop("sim", None), SimConfig, "sim")
        trace = overrides.pop("trace", None)
        if trace is not None:
            trace = str(trace)
            if not Path(trace).is_file():
                raise EnvConfigError(
                    f"trace={trace!r}: no such file; give the path of a canonical trace (CSV or parquet)"
                )
            # Read now, against the env's throughput table: a bad row is reported with the file and its row.
            trace_jobs = read_trace(Path(trace), throughput=ThroughputModel.default())
            # A trace is replayed whole unless the caller also sets workload={"num_jobs": n}.
            explicit = isinstance(workload_changes, Mapping) and "num_jobs" in workload_changes
            num_jobs = workload.num_jobs if explicit else len(trace_jobs)
            workload = dataclasses.replace(workload, trace=trace, num_jobs=num_jobs)
        max_time_s = overrides.get("max_time_s")
        max_decisions = overrides.get("max_decisions")
        if max_time_s is not None or max_decisions is not None:
            sim = dataclasses.replace(
                sim,
                max_time_s=float(max_time_s) if max_time_s is not None else sim.max_time_s,
                max_epochs=int(max_decisions) if max_decisions is not None else sim.max_epochs,
            )
        if compat is not None and "queue_slots" not in overrides:
            overrides["queue_slots"] = max(1, int(workload.num_jobs))
        for key, value in INTERFACES[interface].items():
            overrides.setdefault(key, value)
        return cls(scenario=sc.name, cluster=cluster, workload=workload, sim=sim, trace=trace, **overrides)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> HetClusterConfig:
        """The configuration of scenario ``name`` (``default``, ``tiny``, ...) with ``overrides``."""
        return cls.make(scenario=name, **overrides)

    def to_kwargs(self) -> dict[str, Any]:
        """Plain keyword arguments that :meth:`make` turns back into an equal configuration."""
        out = dataclass_to_dict(self)
        out["workload"] = dataclass_to_dict(self.workload)
        out["sim"] = dataclass_to_dict(self.sim)
        if self.trace is None:
            out.pop("trace")
        if self.throughput is None:
            out.pop("throughput")
        for key in ("codec_knobs", "observation_knobs"):
            knobs = getattr(self, key)
            if knobs is None:
                out.pop(key)
            else:
                out[key] = knobs.as_dict()
        return out

    # ----------------------------------------------------------------------------------------
    def cluster_spec(self) -> ClusterSpec:
        """The cluster."""
        return get_cluster(self.cluster)

    def levels(self) -> tuple[int, ...]:
        """The resolved GPU count levels."""
        return count_levels_for(self.count_levels, self.cluster_spec())

    def knobs(self, option: str) -> Knobs | None:
        """The resolved knobs of the ``codec`` or the ``observation`` encoder (``None`` when it has none)."""
        value = getattr(self, f"{option}_knobs")
        assert value is None or isinstance(value, Knobs)  # __post_init__ resolved the mapping
        return value

    def settings(self, throughput: ThroughputModel) -> EnvSettings:
        """The environment-wide settings the codec and the observation encoder are built with."""
        return EnvSettings(
            levels=self.levels(),
            allow_reject=bool(self.allow_reject),
            max_actions=self.actions_cap(),
            time_scale_s=self.time_scale_s,
            throughput=throughput,
            slot_cursor=bool(_registry("codec").get(self.codec).slot_by_slot),
        )

    def actions_cap(self) -> int:
        """The resolved per-epoch cap on sequential actions."""
        if self.max_actions_per_epoch is not None:
            return int(self.max_actions_per_epoch)
        num_types = len(self.cluster_spec().gpu_types)
        return self.queue_slots * (num_types + 2) + 1

    def throughput_model(self) -> ThroughputModel:
        """The throughput model of the ``throughput`` option (the embedded table when it is ``None``)."""
        model: ThroughputModel | None = self.__dict__["_throughput_model"]
        return model if model is not None else ThroughputModel.default()

    def draw_jobs(self, seed: int) -> tuple[JobSpec, ...]:
        """The workload of one episode: drawn from the recipe with ``seed``, or the trace's jobs."""
        model: ThroughputModel | None = self.__dict__["_throughput_model"]
        return tuple(self.workload.build(self.cluster, seed=int(seed), throughput=model).jobs)


def _resolve_knobs(option: str, name: str, given: Any) -> Knobs | None:
    """The knobs of component ``name`` (option ``codec`` or ``observation``) from ``{option}_knobs``."""
    registry = _registry(option)
    entry = registry.entry(name)
    key = f"{option}_knobs"
    cls = entry.knobs
    if cls is None:
        if given:
            raise EnvConfigError(
                f"{key}={_mapping_to_dict(given)!r}: the {registry.kind} {entry.name!r} has no knobs; leave {key} unset"
            )
        return None
    if given is not None and not isinstance(given, cls | Mapping):
        raise EnvConfigError(
            f"{key}={given!r}: give a mapping of the {registry.kind} {entry.name!r}'s knobs "
            f"({', '.join(cls.names())}) or a {cls.__name__}"
        )
    try:
        return registry.knobs_for(name, given)  # an alias adds its preset knobs
    except TypeError as exc:  # a knob without a default was left out
        raise EnvConfigError(f"{key}: the {registry.kind} {entry.name!r} needs its knobs set ({exc})") from None


#: Decision-interface presets (``interface=``): option values that fill what is not given explicitly. ``v1``
#: is the interface built for learning (measured reasons: ``docs/results/agents.md``).
INTERFACES: dict[str, dict[str, Any]] = {
    "v0": {},
    "v1": {"codec": "jobwise", "decisions": "on-change", "observation": "window-cursor", "queue_slots": 32},
}


def _compat_defaults(name: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """``overrides`` completed with the physics that policy ``name`` declares (explicit keys win)."""
    pol = policy_class(name)
    out = dict(overrides)
    sim = out.get("sim")
    if sim is not None and not isinstance(sim, Mapping):
        return out  # a SimConfig given whole is used as it is
    sim = dict(sim or {})
    if pol.round_s and "round_s" not in sim:
        sim["round_s"] = float(pol.round_s)
    sim.setdefault("placer", pol.placer)
    out["sim"] = sim
    out.setdefault("modes", tuple(pol.modes))
    out.setdefault("decisions", "every-epoch")  # an expert decides at every epoch, round ticks included
    out.setdefault("count_levels", "all")
    return out


def _merge(base: Any, changes: Any, cls: type[Any], what: str) -> Any:
    if changes is None:
        return base
    if isinstance(changes, cls):
        return changes
    if not isinstance(changes, Mapping):
        raise EnvConfigError(f"{what}={changes!r}: give a mapping of {cls.__name__} fields, e.g. {what}={{...}}")
    return config_from_dict(cls, {**dataclass_to_dict_shallow(base), **changes}, what=f"{what} config")


def dataclass_to_dict_shallow(obj: Any) -> dict[str, Any]:
    """Init fields of a dataclass, values untouched."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}
