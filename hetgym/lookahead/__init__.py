"""A lookahead teacher for the event-driven interface: rollouts from forks over sampled futures.

* :func:`fork_env` (:mod:`~hetgym.lookahead.forking`): the one way every copy is taken;
* :func:`sample_future` / :func:`apply_future` (:mod:`~hetgym.lookahead.futures`): the jobs not yet
  arrived, drawn from the scenario's workload model conditioned on the present;
* :class:`LookaheadTeacher` / :class:`LookaheadAgent` (:mod:`~hetgym.lookahead.teacher`): rollout policy
  improvement over a base policy, with common random numbers, adaptive futures and a significance rule;
* :func:`hindsight_oracle` (:mod:`~hetgym.lookahead.episodes`): the same with the true future, an oracle
  reference labelled ``"oracle (hindsight)"``.

See ``docs/lookahead.md``.
"""

from __future__ import annotations

from hetgym.lookahead.episodes import hindsight_oracle, play_lookahead, play_rule
from hetgym.lookahead.forking import fork_env
from hetgym.lookahead.futures import FutureModelError, apply_future, sample_future, sample_seed
from hetgym.lookahead.knobs import ORACLE_LABEL, LookaheadKnobs
from hetgym.lookahead.rollout import resolve_base
from hetgym.lookahead.teacher import DecisionRecord, LookaheadAgent, LookaheadTeacher

__all__ = [
    "ORACLE_LABEL",
    "DecisionRecord",
    "FutureModelError",
    "LookaheadAgent",
    "LookaheadKnobs",
    "LookaheadTeacher",
    "apply_future",
    "fork_env",
    "hindsight_oracle",
    "play_lookahead",
    "play_rule",
    "resolve_base",
    "sample_future",
    "sample_seed",
]
