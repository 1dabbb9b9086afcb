"""First-in first-out, non-preemptive: the simplest baseline.

Jobs run in arrival order with their requested GPU count and are never preempted. ``strict`` FIFO
blocks behind a head job that does not fit; the backfill variant lets later jobs that fit go ahead.
The GPU type is either the first type with room in the cluster's fixed order (heterogeneity-agnostic,
like Gavel's ``fifo.py``) or the fastest type with room for that job (heterogeneity-aware FIFO).
"""

from __future__ import annotations

from dataclasses import dataclass

from baselines._common import TYPE_CHOICE_DOC, TYPE_CHOICES, TypeChoice, greedy_fill, keep_running
from hetgym.sim.allocation import Allocation
from hetgym.sim.knob_policy import KnobPolicy
from hetgym.sim.policy import register_policy
from hetgym.sim.registry import Knobs, knob
from hetgym.sim.view import ClusterView


@dataclass(frozen=True)
class FIFOKnobs(Knobs):
    """Knobs of :class:`FIFO`."""

    type_choice: TypeChoice = knob("order", choices=TYPE_CHOICES, doc=TYPE_CHOICE_DOC)
    strict: bool = knob(True, doc="stop at the first waiting job that does not fit (no backfilling)")


@dataclass(frozen=True)
class FIFOBackfillKnobs(FIFOKnobs):
    """Knobs of :class:`FIFOBackfill` (backfilling by default)."""

    strict: bool = knob(False, doc="stop at the first waiting job that does not fit (no backfilling)")


@dataclass(frozen=True)
class FIFOFastestKnobs(FIFOBackfillKnobs):
    """Knobs of :class:`FIFOFastest` (the fastest type with room, backfilling)."""

    type_choice: TypeChoice = knob("fastest", choices=TYPE_CHOICES, doc=TYPE_CHOICE_DOC)


@register_policy()
class FIFO(KnobPolicy[FIFOKnobs]):
    """FIFO in arrival order, no preemption (strict, heterogeneity-agnostic by default)."""

    name = "fifo"
    knobs = FIFOKnobs
    uses_ticks = False  # decisions change only on arrivals and completions

    def _configure(self) -> None:
        # Strict FIFO leaves GPUs idle behind a head job that does not fit; backfilling does not.
        self.keeps_gpus_busy = not self.knob_values.strict

    def schedule(self, view: ClusterView) -> Allocation:
        return greedy_fill(
            view,
            view.iter_waiting(),
            type_choice=self.knob_values.type_choice,
            strict=self.knob_values.strict,
            builder=keep_running(view),
        )


@register_policy()
class FIFOBackfill(FIFO):
    """FIFO with backfilling: later jobs that fit may start while the head job waits."""

    name = "fifo-backfill"
    knobs = FIFOBackfillKnobs
    in_default_comparison = False  # a variant: name it in --policies to compare it


@register_policy()
class FIFOFastest(FIFO):
    """Heterogeneity-aware FIFO: each job takes the fastest GPU type with room (backfilling)."""

    name = "fifo-fastest"
    knobs = FIFOFastestKnobs
    in_default_comparison = False  # a variant: name it in --policies to compare it
