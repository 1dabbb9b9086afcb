"""Hadar's and HadarE's knobs: every reconstructed constant, written once with its default and meaning.

:class:`HadarKnobs` are the constructor keywords of :class:`baselines.hadar.Hadar`; HadarE's extend them
(:class:`baselines.hadar.hadare.HadarEKnobs`). The module docstring of :mod:`baselines.hadar.policy`
explains the utilities, the prices and the two modes they tune.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hetgym.sim.registry import KnobError, Knobs, knob
from hetgym.sim.view import JobView

UTILITIES: tuple[str, ...] = ("normalized_inverse_jct", "linear", "sigmoid", "avg_jct")
#: A utility given as a function: ``f(job_view, T_s, T_min_s) -> float``, non-increasing in ``T_s``.
UtilityFn = Callable[[JobView, float, float], float]


@dataclass(frozen=True)
class HadarKnobs(Knobs):
    """Knobs of :class:`~baselines.hadar.Hadar`."""

    utility: str | UtilityFn = knob(
        "normalized_inverse_jct",
        doc="``'normalized_inverse_jct'``, ``'linear'``, ``'sigmoid'``, ``'avg_jct'`` (the average-JCT objective: "
        "one linear horizon for all active jobs) or a callable ``f(job, T_s, T_min_s)``",
    )
    mode: str = knob("round", choices=("round", "plan"), doc="``'round'`` (Hadar-Round) or ``'plan'`` (Hadar-OASiS)")
    work_conserving: bool = knob(True, doc="fill free GPUs with jobs whose payoff is not positive")
    task_level_mixing: bool = knob(True, doc="let a job's tasks span GPU types")
    fill_between_rounds: bool = knob(True, doc="start waiting jobs on free GPUs at arrivals and completions")
    price_auto: bool = knob(True, doc="derive ``L`` and ``U`` from the active jobs at every decision")
    price_L: float = knob(1e-3, low=0.0, low_open=True, doc="fixed ``L`` (used when ``price_auto`` is ``False``)")
    price_U: float = knob(1.0, low=0.0, low_open=True, doc="fixed ``U`` (used when ``price_auto`` is ``False``)")
    price_floor_ratio: float = knob(
        1e-3, low=0.0, low_open=True, high=1.0, doc="lower clamp of ``L / U`` (a reconstruction)"
    )
    utility_horizon: float = knob(
        10.0,
        low=1.0,
        low_open=True,
        doc="``T_max / T_min`` of the linear utility, and ``H / max_j T_min_j`` of ``avg_jct``",
    )
    sigmoid_slack: float = knob(
        2.0, low=0.0, low_open=True, doc="``T_soft / T_min`` of the sigmoid utility for jobs without a deadline"
    )
    sigmoid_width: float = knob(0.25, low=0.0, low_open=True, doc="width of the sigmoid relative to ``T_soft``")
    plan_max_rounds: int = knob(5000, low=1, integer=True, doc="longest plan-ahead horizon in rounds")
    replan_tolerance: float = knob(
        0.02,
        low=0.0,
        low_open=True,
        high=1.0,
        high_open=True,
        doc="re-plan an admitted job when its progress drifts from the plan by more than this fraction of its work",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        owner = type(self).__name__
        if not callable(self.utility) and self.utility not in UTILITIES:
            raise KnobError(
                f"{owner}: knob utility={self.utility!r}; use one of {UTILITIES} or a callable f(job, T_s, T_min_s)"
            )
        if self.price_L > self.price_U:
            raise KnobError(f"{owner}: knobs price_L={self.price_L} > price_U={self.price_U}; need price_L <= price_U")
