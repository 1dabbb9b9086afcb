"""JPS (Liu et al., IEEE TPDS 35(6), 2024): sampling-based multi-job placement with matching markets.

* :mod:`baselines.jps.model`: one placement instance (jobs, workers, throughputs, bandwidth), its
  objective and fairness, the feasible-solution categories and the matching markets within one;
* :mod:`baselines.jps.search`: the search over categories (sampling, local search, exhaustive, the
  optimum) for one instance;
* :mod:`baselines.jps.policy`: the online policy that builds an instance at each decision and its knobs.
"""

from __future__ import annotations

from baselines.jps.model import (
    SYNTHETIC_BASE_RHO,
    SYNTHETIC_BW,
    PlacementInstance,
    counts_to_owner,
    equal_category,
    exact_optimum,
    iter_categories,
    jain_index,
    match_auction,
    match_hungarian,
    num_categories,
    rank_category,
    sample_categories,
    score_of,
    synthetic_instance,
    times_of,
    unrank_category,
    valuation_total,
)
from baselines.jps.policy import JPSKnobs, JPSPolicy, matchable_jobs
from baselines.jps.search import (
    MATCHERS,
    VALUATIONS,
    JPSResult,
    exhaustive_search,
    jps,
    local_search,
    optimum,
    solve_category,
)

__all__ = [
    "MATCHERS",
    "SYNTHETIC_BASE_RHO",
    "SYNTHETIC_BW",
    "VALUATIONS",
    "JPSKnobs",
    "JPSPolicy",
    "JPSResult",
    "PlacementInstance",
    "counts_to_owner",
    "equal_category",
    "exact_optimum",
    "exhaustive_search",
    "iter_categories",
    "jain_index",
    "jps",
    "local_search",
    "match_auction",
    "match_hungarian",
    "matchable_jobs",
    "num_categories",
    "optimum",
    "rank_category",
    "sample_categories",
    "score_of",
    "solve_category",
    "synthetic_instance",
    "times_of",
    "unrank_category",
    "valuation_total",
]
