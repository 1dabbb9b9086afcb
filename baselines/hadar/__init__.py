"""Hadar and HadarE (Sultana et al., IEEE IPDPS 2024; arXiv:2503.10918): primal-dual scheduling with per-node prices.

* :mod:`baselines.hadar.pricing`: the two sides of the primal-dual framework, a job's utility of its JCT
  and the price levels;
* :mod:`baselines.hadar.knobs`: Hadar's knobs, every reconstructed constant with its default;
* :mod:`baselines.hadar.policy`: Hadar-Round (the dual subroutine's offers, the greedy admission by
  payoff, the work-conserving fill) and the runs of Hadar-OASiS's plans;
* :mod:`baselines.hadar.plan_ahead`: Hadar-OASiS, the plan-ahead mode (schedules over future rounds and
  their reservations);
* :mod:`baselines.hadar.hadare`: HadarE, Hadar plus forking copies of unfinished jobs onto idle nodes.
"""

from __future__ import annotations

from baselines.hadar.hadare import GAVEL_MODEL_BYTES, HadarE, HadarEKnobs, with_model_bytes
from baselines.hadar.knobs import UTILITIES, HadarKnobs, UtilityFn
from baselines.hadar.plan_ahead import RoundPlan
from baselines.hadar.policy import HADAR_ROUND_S, Hadar, Offer, groups_to_server_groups

__all__ = [
    "GAVEL_MODEL_BYTES",
    "HADAR_ROUND_S",
    "UTILITIES",
    "Hadar",
    "HadarE",
    "HadarEKnobs",
    "HadarKnobs",
    "Offer",
    "RoundPlan",
    "UtilityFn",
    "groups_to_server_groups",
    "with_model_bytes",
]
