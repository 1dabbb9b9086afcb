"""ElasticFlow's knobs and its variants': every reconstructed constant, written once with its default and meaning.

:class:`ElasticFlowKnobs` are the constructor keywords of :class:`baselines.elasticflow.ElasticFlow`; the
heterogeneity-agnostic variant extends them (:class:`baselines.elasticflow.agnostic.ElasticFlowAgnosticKnobs`),
and so does the guided one (:class:`GuidedElasticFlowKnobs`). The module docstring of
:mod:`baselines.elasticflow.policy` explains what each tunes.
"""

from __future__ import annotations

from dataclasses import dataclass

from baselines._deadline import DeadlinePlanKnobs
from hetgym.sim.registry import KnobError, knob

LEFTOVER_RULES = ("speedup", "gputime")
PLACEMENTS = ("buddy", "default")
REJECTED_MODES = ("drop", "best_effort")


@dataclass(frozen=True)
class ElasticFlowKnobs(DeadlinePlanKnobs):
    """Knobs of :class:`~baselines.elasticflow.ElasticFlow`; it extends the planner's (``memory`` and others)."""

    round_s: float = knob(
        60.0, low=0.0, low_open=True, doc="scheduling slot in seconds (ElasticFlow's ``scheduling_slot``)"
    )
    rejected_jobs: str = knob(
        "drop", choices=REJECTED_MODES, doc="``'drop'`` (declined jobs leave) or ``'best_effort'``"
    )
    leftover_rule: str = knob(
        "speedup",
        choices=LEFTOVER_RULES,
        doc="``'speedup'`` or ``'gputime'`` (see the module docstring of :mod:`baselines.elasticflow.policy`)",
    )
    placement: str = knob("buddy", choices=PLACEMENTS, doc="``'buddy'`` or ``'default'`` (the simulator's placer)")
    overhead_aware: bool = knob(True, doc="deduct one restart penalty from a plan's first interval")


@dataclass(frozen=True)
class GuidedElasticFlowKnobs(ElasticFlowKnobs):
    """Knobs of :class:`~baselines.elasticflow.GuidedElasticFlow`: ElasticFlow's, with ``memory='history'`` only."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.memory != "history":
            raise KnobError(
                f"elasticflow-guided: knob memory={self.memory!r} is not supported; the directives are "
                "kept between epochs, so use memory='history'"
            )
