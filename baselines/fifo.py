"""First-in first-out, non-preemptive: the simplest baseline.

Jobs run in arrival order with their requested GPU count and are never preempted. ``strict`` FIFO
blocks behind a head job that does not fit; the backfill variant lets later jobs that fit go ahead.
The GPU type is either the first type with room in the cluster's fixed order (heterogeneity-agnostic,
like Gavel's ``fifo.py``) or the fastest type with room for that job (heterogeneity-aware FIFO).
"""

from __future__ import annotations

from baselines._common import TypeChoice, check_type_choice, greedy_fill, keep_running
from hetgym.sim.allocation import Allocation
from hetgym.sim.policy import Policy, register_policy
from hetgym.sim.view import ClusterView


@register_policy()
class FIFO(Policy):
    """FIFO in arrival order, no preemption (strict, heterogeneity-agnostic by default).

    Args:
        type_choice: ``"order"`` (first type with room, cluster order) or ``"fastest"`` (the free type
            with the highest rate for the job).
        strict: Stop at the first waiting job that does not fit (``True``) or backfill (``False``).
    """

    name = "fifo"
    uses_ticks = False  # decisions change only on arrivals and completions

    def __init__(self, type_choice: TypeChoice = "order", strict: bool = True) -> None:
        super().__init__()
        self.type_choice = check_type_choice(type_choice)
        self.strict = strict

    def schedule(self, view: ClusterView) -> Allocation:
        return greedy_fill(
            view, view.waiting, type_choice=self.type_choice, strict=self.strict, builder=keep_running(view)
        )


@register_policy()
class FIFOBackfill(FIFO):
    """FIFO with backfilling: later jobs that fit may start while the head job waits."""

    name = "fifo-backfill"
    in_default_comparison = False  # a variant: name it in --policies to compare it

    def __init__(self, type_choice: TypeChoice = "order", strict: bool = False) -> None:
        super().__init__(type_choice, strict)


@register_policy()
class FIFOFastest(FIFO):
    """Heterogeneity-aware FIFO: each job takes the fastest GPU type with room (backfilling)."""

    name = "fifo-fastest"
    in_default_comparison = False  # a variant: name it in --policies to compare it

    def __init__(self, type_choice: TypeChoice = "fastest", strict: bool = False) -> None:
        super().__init__(type_choice, strict)
