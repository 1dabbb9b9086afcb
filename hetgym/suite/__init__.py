"""The benchmark suite: named scenarios in tiers, held-out test seeds, headroom bounds and a leaderboard.

``import hetgym.suite as s``; ``s.names()`` lists the scenarios, ``s.get(name)`` returns a frozen
:class:`SuiteScenario` (tier, description, ``gym.make`` kwargs per interface, seeds). docs/suite.md
describes the scenarios, the bounds (:mod:`hetgym.suite.bounds`), the scores (:mod:`hetgym.suite.scores`),
the leaderboard (:mod:`hetgym.suite.board`) and how to submit a row; ``python -m hetgym.suite`` runs them.
"""

from __future__ import annotations

from hetgym.suite.scenarios import (
    DATA_ENV,
    INTERFACES,
    SCENARIOS,
    TEST_SEEDS,
    TIERS,
    TRAIN_SEEDS,
    SuiteDataError,
    SuiteScenario,
    data_dir,
    get,
    names,
    resolve,
)

__all__ = [
    "DATA_ENV",
    "INTERFACES",
    "SCENARIOS",
    "TEST_SEEDS",
    "TIERS",
    "TRAIN_SEEDS",
    "SuiteDataError",
    "SuiteScenario",
    "data_dir",
    "get",
    "names",
    "resolve",
]
