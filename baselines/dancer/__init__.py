"""Dancer (Zhang et al., IEEE TCC 13(2), 2025): deadline-aware primal-dual admission with a DP, by the paper's parts.

* :mod:`baselines.dancer.knobs`: its knobs, every reconstructed constant with its default;
* :mod:`baselines.dancer.policy`: the policy: online admission, the executor (reserved
  configurations and the work-conserving extra) and the re-plan on drift;
* :mod:`baselines.dancer.planning`: the dual subroutine run for one job (prices in force, a job's options,
  the cheapest deadline-feasible schedule on the unreserved GPUs);
* :mod:`baselines.dancer.dp`: the price function and the block DP itself (pure functions over arrays);
* :mod:`baselines.dancer.reservations`: the hard reservations (a job's plan, the slot ledger) and the
  extra's candidate configurations.
"""

from __future__ import annotations

from baselines.dancer.dp import PRICE_INCREMENTS, PRICE_MODES, DPResult, PriceFunction, dual_dp, schedule_progress
from baselines.dancer.knobs import ARRIVAL_ORDERS, PRICE_SCALES, REJECTED_MODES, TIE_BREAKS, DancerKnobs
from baselines.dancer.policy import Dancer

__all__ = [
    "ARRIVAL_ORDERS",
    "PRICE_INCREMENTS",
    "PRICE_MODES",
    "PRICE_SCALES",
    "REJECTED_MODES",
    "TIE_BREAKS",
    "DPResult",
    "Dancer",
    "DancerKnobs",
    "PriceFunction",
    "dual_dp",
    "schedule_progress",
]
