"""Dancer's knobs: every reconstructed constant of the policy, written once with its default and meaning.

The policy (:class:`baselines.dancer.Dancer`) takes these fields as its constructor keywords and lists them
in its docstring; the module docstring of :mod:`baselines.dancer.policy` explains what each part does.
"""

from __future__ import annotations

from dataclasses import dataclass

from baselines._deadline import DeadlinePlanKnobs
from baselines.dancer.dp import PRICE_INCREMENTS, PRICE_MODES
from hetgym.sim.registry import KnobError, knob

REJECTED_MODES = ("drop", "best_effort")
ARRIVAL_ORDERS = ("edf", "fifo")
TIE_BREAKS = ("early", "late")
PRICE_SCALES = ("uniform", "speed")


@dataclass(frozen=True)
class DancerKnobs(DeadlinePlanKnobs):
    """Knobs of :class:`~baselines.dancer.Dancer`; it extends the planner's (``memory`` and others)."""

    round_s: float = knob(60.0, low=0.0, low_open=True, doc="slot length in seconds (ElasticFlow's scheduling slot)")
    price_mode: str = knob("exp", choices=PRICE_MODES, doc="``'exp'`` or ``'linear'``")
    price_increment: str = knob(
        "marginal",
        choices=PRICE_INCREMENTS,
        doc="``'marginal'`` (``n P(g)``, since jobs here are not small next to a type's capacity and the exact "
        "integral would price a 16-GPU job on a 16-GPU type near ``U`` on an empty cluster) or ``'exact'``",
    )
    price_L: float | None = knob(
        None, low=0.0, low_open=True, optional=True, doc="fixed ``L`` (overrides the calibration)"
    )
    price_U: float | None = knob(
        None, low=0.0, low_open=True, optional=True, doc="fixed ``U`` (overrides the calibration)"
    )
    price_auto: bool = knob(True, doc="calibrate ``L`` and ``U`` on the jobs seen so far")
    dp_quanta: int = knob(200, low=1, integer=True, doc="work units of the DP")
    dp_max_blocks: int = knob(
        128, low=1, integer=True, doc="most blocks of the DP's horizon; longer windows use blocks of several slots"
    )
    allow_type_mix_in_slot: bool = knob(False, doc="allow two GPU types in one slot (synchronous)")
    work_conserving_extra: bool = knob(True, doc="give unreserved GPUs to admitted jobs")
    rejected_jobs: str = knob("drop", choices=REJECTED_MODES, doc="``'drop'`` or ``'best_effort'``")
    switch_cost_in_dp: bool = knob(
        True,
        doc="keep the configuration in the DP state so every change pays the restart penalty inside the DP. The "
        "plain reconstruction of the DP leaves the switch cost out (``False``), but with a 30 s restart penalty on "
        "60 s slots a DP that switches for free returns schedules that miss once the penalties are charged, and "
        "the exact check then rejects feasible jobs (see ``docs/results/dancer.md``). ``False`` checks the "
        "penalties after backtracking instead",
    )
    arrival_order: str = knob(
        "edf", choices=ARRIVAL_ORDERS, doc="admission order of jobs arriving together: ``'edf'`` or ``'fifo'``"
    )
    deadline_margin_s: float = knob(0.0, low=0.0, doc="plan to finish this many seconds before the deadline")
    extra_lookahead_s: float = knob(
        60.0,
        low=0.0,
        doc="horizon beyond the current slot over which a work-conserving change must pay back its restart penalty",
    )
    max_replans_per_epoch: int = knob(64, low=0, integer=True, doc="most DP re-plans of lagging jobs per slot boundary")
    tie_break: str = knob(
        "early",
        choices=TIE_BREAKS,
        doc="among (near) equally priced blocks, reserve the ``'early'`` ones or the ``'late'`` ones "
        "(ElasticFlow-like: reserve late, run early on the work-conserving extra)",
    )
    price_scale: str = knob(
        "uniform",
        choices=PRICE_SCALES,
        doc="``'uniform'`` (one price function for every type) or ``'speed'`` (each type's price scaled by its "
        "speed index relative to the fastest, so a GPU-slot is priced by its compute)",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        owner = type(self).__name__
        if not self.price_auto and (self.price_L is None or self.price_U is None):
            raise KnobError(f"{owner}: knob price_auto=False needs both price_L and price_U")
        if self.price_L is not None and self.price_U is not None and self.price_U < self.price_L:
            raise KnobError(f"{owner}: knobs price_U={self.price_U} < price_L={self.price_L}; need L <= U")
