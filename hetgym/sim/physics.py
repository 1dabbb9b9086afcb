"""A policy's physics: the round, the placer, the execution modes and the round ticks of its runs, as one value.

A policy is designed for a round length, places its GPU counts with its paper's placer, allocates in some
execution modes and may decide at round ticks or only on arrivals and completions. :func:`resolve_physics`
reads those once from the :class:`~hetgym.sim.config.SimConfig` and the policy, and the simulator runs on the
resulting :class:`Physics` (:meth:`Simulator.reset <hetgym.sim.engine.Simulator.reset>`); two runs have the
same physics exactly when their values are equal.

Precedence, field by field:

* ``round_s``: ``SimConfig.round_s`` when set, else the policy's ``round_s`` when set, else
  :data:`DEFAULT_ROUND_S` (Gavel's 360 s);
* ``placer``: ``SimConfig.placer`` when set, else the policy's ``placer`` (a
  :class:`~hetgym.sim.policy.Policy`'s declaration; ``"default"`` for other protocol objects);
* ``modes``: the policy's ``modes`` (``("sync",)`` for protocol objects that are not a ``Policy``);
* ``ticks``: whether round ticks are decision epochs: the caller's choice when given, else the policy's
  ``uses_ticks`` (``True`` when it declares nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

from hetgym.sim.config import MAX_ROUND_S, MIN_ROUND_S, SimConfig
from hetgym.sim.errors import ConfigError
from hetgym.sim.policy import PolicyProtocol, policy_modes, policy_placer
from hetgym.sim.throughput import ExecutionMode

#: The round length when neither the configuration nor the policy sets one (Gavel's).
DEFAULT_ROUND_S = 360.0


@dataclass(frozen=True, slots=True)
class Physics:
    """The physics a run is simulated with (see the module for how a policy's is resolved).

    Attributes:
        round_s: The round length in seconds.
        placer: The placer's registered name (:mod:`hetgym.sim.placement`).
        modes: The execution modes of the policy's allocations (the first for single-type jobs).
        ticks: Whether round ticks are decision epochs.
    """

    round_s: float = DEFAULT_ROUND_S
    placer: str = "default"
    modes: tuple[ExecutionMode, ...] = ("sync",)
    ticks: bool = True

    def __post_init__(self) -> None:
        if not MIN_ROUND_S <= self.round_s <= MAX_ROUND_S:
            raise ConfigError(
                f"the policy's round_s={self.round_s!r} is out of range; give a round in [{MIN_ROUND_S:g}, "
                f"{MAX_ROUND_S:g}] seconds (the policy's round_s knob, or SimConfig.round_s / --round-s)"
            )


def resolve_physics(config: SimConfig, policy: PolicyProtocol | None = None, *, ticks: bool | None = None) -> Physics:
    """The physics of running ``policy`` (any policy object, or ``None`` for none) under ``config``.

    Args:
        config: The simulation's configuration (its ``round_s`` and ``placer`` win when set).
        policy: The policy (its ``round_s``, ``placer``, ``modes`` and ``uses_ticks``), or ``None``.
        ticks: Whether round ticks are decision epochs; ``None`` asks the policy (``uses_ticks``).

    Raises:
        ConfigError: The resolved round is out of range.
    """
    round_s = config.round_s or getattr(policy, "round_s", None) or DEFAULT_ROUND_S
    placer = config.placer or (policy_placer(policy) if policy is not None else "default")
    modes = policy_modes(policy) if policy is not None else ("sync",)
    if ticks is None:
        ticks = bool(getattr(policy, "uses_ticks", True))
    return Physics(float(round_s), placer, modes, ticks)
