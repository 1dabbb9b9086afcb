"""The policy contract and the registry that makes policies by name.

A policy is any object with a ``name``, ``reset(cluster, rng=...)`` and ``schedule(view) ->
Allocation``. Subclass :class:`Policy` and decorate with :func:`register_policy` to make it
available to :func:`make_policy`, the ``hetgym`` command and the environment's experts. The built-in
policies and third-party ones alike register through the ``hetgym.policies`` entry-point group,
loaded on first use of the registry (the built-in entry, ``builtin``, names the package of the expert
and classic policies; this simulator package imports none of them).
"""

from __future__ import annotations

import inspect
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, runtime_checkable

import numpy as np

from hetgym.sim.errors import HetgymError, UnknownNameError
from hetgym.sim.forking import fork_object
from hetgym.sim.layout import require_project_package
from hetgym.sim.registry import Knobs, Registry
from hetgym.sim.usercode import UserCodeError

if TYPE_CHECKING:
    from hetgym.sim.allocation import Allocation
    from hetgym.sim.cluster import ClusterSpec
    from hetgym.sim.throughput import ExecutionMode
    from hetgym.sim.view import ClusterView


@runtime_checkable
class PolicyProtocol(Protocol):
    """What the simulator needs of a policy."""

    name: ClassVar[str]

    def reset(self, cluster: ClusterSpec, *, rng: np.random.Generator) -> None: ...

    def schedule(self, view: ClusterView) -> Allocation: ...


_Copied = TypeVar("_Copied", bound="Policy")


class Policy(ABC):
    """Base class of scheduling policies.

    Attributes:
        name: Registry name (lower case, e.g. ``"fifo"``).
        round_s: The round length this policy is designed for (the simulator uses it unless its
            configuration fixes one); ``None`` for the simulator's default.
        uses_ticks: Whether round ticks can change this policy's decisions. A policy whose decisions
            depend only on arrivals and completions sets it to ``False``; :meth:`Simulator.run` then
            skips the ticks (same schedule, fewer epochs).
        stands_on_ticks: Whether, at a round tick at which nothing arrived or completed, this policy
            keeps every allocation in force and changes no state of its own, whatever time has passed
            (deadlines passing included). Opt-in (``False`` by default): :meth:`Simulator.run` then does
            not ask it at such ticks and passes over them in one step (:mod:`hetgym.sim.fastforward`),
            with the same result. Only round-based runs (``uses_ticks``) have such ticks.
        in_default_comparison: Whether ``hetgym compare`` runs it when no policies are named.
        randomised: Whether the policy's decisions depend on the run's seed (it draws from :attr:`rng`,
            or seeds a stream of its own from ``SimConfig.seed``), with the knobs it was built with.
            ``False`` by default: a policy that draws sets it (in its class, or in ``__init__`` when
            only some knobs draw). ``hetgym compare`` on a fixed workload (a canonical trace) runs a
            policy that is not randomised for one seed only, since its other seeds would repeat that run;
            ``tests/baselines/test_randomised.py`` checks the declaration of every registered policy.
        placer: The placer (:mod:`hetgym.sim.placement`) that maps this policy's GPU counts onto
            servers, the one its paper uses; the simulator and the Gym environment apply it
            (``SimConfig.placer`` overrides it).
        modes: The execution modes this policy's allocations use (the first for single-type jobs);
            the Gym environment offers exactly these as mode actions under ``policy_compat``.
        knobs: The frozen dataclass of the constructor's knobs (:class:`~hetgym.sim.registry.Knobs`),
            validated on construction, or ``None``.
        keeps_gpus_busy: Whether the policy is work-conserving: after each of its decisions, no GPU
            type has as many free GPUs as a job it leaves waiting requests (``num_gpus``) while that
            job is allowed on the type and runs there at a positive rate. ``False`` by default; a
            policy sets it only when its design promises it, and the property tests
            (``tests/sim/test_properties.py``) check it at every decision of every policy that does.
    """

    name: ClassVar[str] = "policy"
    round_s: float | None = None
    placer: str = "default"
    modes: tuple[ExecutionMode, ...] = ("sync",)
    knobs: ClassVar[type[Knobs] | None] = None
    uses_ticks: ClassVar[bool] = True
    stands_on_ticks: ClassVar[bool] = False
    in_default_comparison: ClassVar[bool] = True
    keeps_gpus_busy: bool = False
    randomised: bool = False
    #: Attributes a :meth:`copy_state` shares with the original (immutable for the run).
    fork_shared: ClassVar[tuple[str, ...]] = ("cluster",)
    #: Attributes a :meth:`copy_state` copies one level (containers whose values are immutable, e.g. per-job caches).
    fork_shallow: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self.cluster: ClusterSpec | None = None
        self.rng: np.random.Generator = np.random.default_rng(0)

    def reset(self, cluster: ClusterSpec, *, rng: np.random.Generator) -> None:
        """Forget all state and prepare for a new run on ``cluster``.

        Subclasses that keep state override :meth:`_reset` rather than this method.
        """
        self.cluster = cluster
        self.rng = rng
        self._reset()

    def _reset(self) -> None:  # noqa: B027 - optional hook, empty by default
        """Hook for subclasses: clear per-run state."""

    @abstractmethod
    def schedule(self, view: ClusterView) -> Allocation:
        """Return the complete allocation after this epoch (see :class:`~hetgym.sim.allocation.Allocation`)."""

    def copy_state(self: _Copied) -> _Copied:
        """An independent copy of this policy in its current state (for a rollout from a forked simulator).

        The state-copy protocol of :mod:`hetgym.sim.forking` (``copy_state``, not ``fork``: HadarE's ``fork`` is
        its execution mode).

        Generic (:func:`~hetgym.sim.forking.fork_object`): the attributes named in :attr:`fork_shared` are
        shared, those in :attr:`fork_shallow` copied one level, every other one deep-copied. A policy with
        large immutable state (tables computed once per job) names it there so that a fork is cheap.
        """
        return fork_object(self, self.fork_shared, self.fork_shallow)

    def quiet_until_s(self) -> float:
        """After a decision: until when (exclusive) this policy, given the same allocations in force and nothing
        arrived or completed since, answers a round tick with that same decision and changes no state of its own;
        ``-inf`` when it promises nothing.

        The simulator asks it right after each ``schedule`` call and passes over the ticks before that time
        once the decision has been applied without changing any job (:mod:`hetgym.sim.fastforward`): the
        results are the tick-by-tick run's. Override it only with a time that follows from the policy's own
        state (ElasticFlow: its plans' next change point); the default promises nothing.
        """
        return -math.inf

    def wants_next_epoch(self) -> bool:
        """Whether this policy's decision may change at the next epoch even if nothing arrives, completes
        or misses its deadline (a plan's next slot, a round's rotation, a postponed recompute). The
        simulator calls every policy at every epoch anyway; the Gym environment asked only on news
        (``decisions="on-change"``) reads it through ``ExpertAgent`` to ask the policy at the next epoch.
        By default :attr:`uses_ticks`: a policy that round ticks can change always asks."""
        return bool(self.uses_ticks)

    def params(self) -> dict[str, Any]:
        """The constructor arguments (knobs) and their current values."""
        sig = inspect.signature(type(self).__init__)
        return {k: getattr(self, k) for k in sig.parameters if k != "self" and hasattr(self, k)}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"


def policy_placer(policy: PolicyProtocol) -> str:
    """The placer a policy declares (``"default"`` for protocol objects that are not :class:`Policy`)."""
    return policy.placer if isinstance(policy, Policy) else "default"


def policy_modes(policy: PolicyProtocol) -> tuple[ExecutionMode, ...]:
    """The execution modes a policy declares (``("sync",)`` for protocol objects that are not :class:`Policy`)."""
    return tuple(policy.modes) if isinstance(policy, Policy) else ("sync",)


#: Every registered policy class (see :mod:`hetgym.sim.registry`).
POLICIES: Registry[type[Policy]] = Registry("policy", "List them with `hetgym policies`.")
_P = TypeVar("_P", bound=type[Policy])


def register_policy(name: str | None = None) -> Callable[[_P], _P]:
    """Class decorator: register a :class:`Policy` subclass under ``name`` (default ``cls.name``).

    The class's ``knobs`` attribute (a frozen :class:`~hetgym.sim.registry.Knobs` dataclass), when set,
    is recorded with the entry.
    """

    def deco(cls: _P) -> _P:
        POLICIES.register(name or cls.name, cls, knobs=cls.knobs)
        return cls

    return deco


_LOADED = False


def _load_builtin() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    # The built-in policies register through the same entry-point group as third-party ones (the
    # ``builtin`` entry in pyproject.toml), so this package names no policy package.
    for ep in entry_points(group="hetgym.policies"):
        top_level = ep.value.split(":")[0].split(".")[0]
        if top_level in ("baselines", "agents"):
            # A stray baselines.py in the working directory would otherwise be loaded in its place and
            # leave the registry empty ("unknown policy 'edf'"): name the file instead.
            require_project_package(top_level)
        try:
            ep.load()
        except Exception as exc:
            if top_level in ("baselines", "agents"):
                raise
            raise UserCodeError(f"policy plug-in {ep.name!r} ({ep.value}, entry points hetgym.policies)", exc) from exc
    if not len(POLICIES):
        raise HetgymError(
            "no policy is registered: the 'hetgym.policies' entry points are missing; reinstall the package "
            "(python -m pip install -e .)"
        )


def list_policies() -> dict[str, str]:
    """Registered policy names with the first line of their docstring."""
    _load_builtin()
    return POLICIES.describe()


def policy_class(name: str) -> type[Policy]:
    """The class registered as ``name``."""
    _load_builtin()
    return POLICIES.get(name)


def make_policy(name: str, **kwargs: Any) -> Policy:
    """Make the policy registered as ``name`` with its knobs ``kwargs``.

    An unknown knob raises a ``TypeError`` naming the valid ones.
    """
    cls = policy_class(name)
    sig = inspect.signature(cls.__init__)
    accepts_any = any(p.kind == inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())
    if not accepts_any:
        valid = [k for k in sig.parameters if k != "self"]
        for key in kwargs:
            if key not in valid:
                raise UnknownNameError(f"option of policy {name!r}", key, valid)
    return cls(**kwargs)
