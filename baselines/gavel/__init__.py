"""Gavel (Narayanan et al., OSDI 2020): heterogeneity-aware LP policies over a round mechanism, laid out as its code.

* :mod:`baselines.gavel.policies`: the policies (max-min fairness, finish-time fairness, minimum total
  duration, their heterogeneity-agnostic forms, and ``fifo``) and their knobs, as Gavel's ``policies/``;
* :mod:`baselines.gavel.rounds`: the round mechanism they share (priorities from the allocation and the
  rounds received, ``scheduler/scheduler.py``) and its knobs, which each policy's extend;
* :mod:`baselines.gavel.lp`: the linear programs;
* :mod:`baselines.gavel.centre`: finish-time fairness's analytic centre.
"""

from __future__ import annotations

from baselines.gavel.lp import (
    LPError,
    finish_time_rho,
    isolated_allocation,
    proportional_rates,
    solve_finish_time_fairness,
    solve_max_min_fairness,
    solve_min_total_duration,
)
from baselines.gavel.policies import (
    OBJECTIVES,
    GavelFifo,
    GavelFifoKnobs,
    GavelFinishTimeFairness,
    GavelFinishTimeFairnessAgnostic,
    GavelKnobs,
    GavelMaxMinFairness,
    GavelMaxMinFairnessAgnostic,
    GavelMinTotalDuration,
    GavelMinTotalDurationAgnostic,
    GavelPolicy,
)
from baselines.gavel.rounds import GAVEL_MIN_RESET_INTERVAL_S, GAVEL_ROUND_S, GavelRoundKnobs, GavelRounds

__all__ = [
    "GAVEL_MIN_RESET_INTERVAL_S",
    "GAVEL_ROUND_S",
    "OBJECTIVES",
    "GavelFifo",
    "GavelFifoKnobs",
    "GavelFinishTimeFairness",
    "GavelFinishTimeFairnessAgnostic",
    "GavelKnobs",
    "GavelMaxMinFairness",
    "GavelMaxMinFairnessAgnostic",
    "GavelMinTotalDuration",
    "GavelMinTotalDurationAgnostic",
    "GavelPolicy",
    "GavelRoundKnobs",
    "GavelRounds",
    "LPError",
    "finish_time_rho",
    "isolated_allocation",
    "proportional_rates",
    "solve_finish_time_fairness",
    "solve_max_min_fairness",
    "solve_min_total_duration",
]
