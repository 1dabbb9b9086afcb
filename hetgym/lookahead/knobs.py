"""The lookahead teacher's knobs: one frozen dataclass, checked at construction.

Defaults fit a 2-core machine on the ``tiny`` scenario (a decision in well under a second) and keep the
``default`` scenario's decisions to tens of CPU-seconds; ``docs/lookahead.md`` gives measured costs.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from hetgym.sim.errors import ConfigError, UnknownNameError

#: Where futures come from: ``sampled`` (the workload model, conditioned on the present) or ``hindsight``
#: (the true future: an oracle reference, never a policy result).
FUTURES = ("sampled", "hindsight")
#: The paired test over futures: one-sided ``t``, one-sided ``sign`` (binomial), or ``none`` (the margin only).
TESTS = ("t", "sign", "none")
#: Label of the hindsight variant wherever it is reported.
ORACLE_LABEL = "oracle (hindsight)"


@dataclass(frozen=True)
class LookaheadKnobs:
    """How the lookahead teacher scores and picks actions (:mod:`hetgym.lookahead.teacher`).

    Attributes:
        future: ``"sampled"`` (default) or ``"hindsight"`` (the oracle; one future, the true one).
        k_initial: Futures every candidate is scored on first.
        k_step: Futures added per round while the leading candidate is close (see ``close_gain_jobs``).
        k_max: Most futures per decision.
        min_gain_jobs: Smallest mean paired gain over the base action, in deadline jobs met, to deviate.
        test: The paired test across futures (``TESTS``); skipped with one future.
        alpha: Its one-sided level.
        bonferroni: Divide ``alpha`` by the number of candidates compared with the base action.
        close_gain_jobs: Add futures while the leader's mean gain is at least this and not yet significant.
        prune_to: After the first ``k_initial`` futures, keep only the base action and this many leaders
            (by mean gain) for the added futures; ``None`` keeps every candidate.
        horizon_h: Stop a rollout at its first decision this many simulated hours after the root (``None``:
            run to the end).
        horizon_arrivals: Stop a rollout after this many further decisions (``None``: no limit).
        workers: Processes for the rollouts (1: this process, no pickling).
        backend: ``"local"`` (hetgym.sweep's process pool) or ``"ray"``.
    """

    future: str = "sampled"
    k_initial: int = 4
    k_step: int = 3
    k_max: int = 10
    min_gain_jobs: float = 1.0
    test: str = "t"
    alpha: float = 0.05
    bonferroni: bool = False
    close_gain_jobs: float = 0.5
    prune_to: int | None = 2
    horizon_h: float | None = None
    horizon_arrivals: int | None = None
    workers: int = 1
    backend: str = "local"

    def __post_init__(self) -> None:
        if self.future not in FUTURES:
            raise UnknownNameError("future", self.future, FUTURES)
        if self.test not in TESTS:
            raise UnknownNameError("test", self.test, TESTS)
        if self.backend not in ("local", "ray"):
            raise UnknownNameError("backend", self.backend, ("local", "ray"))
        for name in ("k_initial", "k_step", "k_max", "workers"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"LookaheadKnobs.{name}={value!r}: give an integer >= 1")
        if self.k_max < self.k_initial:
            raise ConfigError(f"LookaheadKnobs.k_max={self.k_max} is below k_initial={self.k_initial}; raise k_max")
        if not 0.0 < self.alpha < 1.0:
            raise ConfigError(f"LookaheadKnobs.alpha={self.alpha!r}: give a level in (0, 1), e.g. 0.05")
        for name in ("min_gain_jobs", "close_gain_jobs"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ConfigError(f"LookaheadKnobs.{name}={value!r}: give a finite number of jobs >= 0")
        if self.prune_to is not None and (not isinstance(self.prune_to, int) or self.prune_to < 1):
            raise ConfigError(f"LookaheadKnobs.prune_to={self.prune_to!r}: give an integer >= 1, or None")
        if self.horizon_h is not None and not (math.isfinite(self.horizon_h) and self.horizon_h > 0):
            raise ConfigError(f"LookaheadKnobs.horizon_h={self.horizon_h!r}: give hours > 0, or None")
        if self.horizon_arrivals is not None and (
            not isinstance(self.horizon_arrivals, int) or self.horizon_arrivals < 1
        ):
            raise ConfigError(f"LookaheadKnobs.horizon_arrivals={self.horizon_arrivals!r}: give an integer >= 1")

    @property
    def hindsight(self) -> bool:
        """Whether this is the oracle (true future)."""
        return self.future == "hindsight"

    @property
    def label(self) -> str:
        """How results of these knobs are labelled (the hindsight variant as an oracle, everywhere)."""
        return ORACLE_LABEL if self.hindsight else "lookahead (sampled futures)"

    @classmethod
    def make(cls, **knobs: Any) -> LookaheadKnobs:
        """From keyword arguments; an unknown key names the nearest valid one."""
        valid = [f.name for f in dataclasses.fields(cls)]
        for key in knobs:
            if key not in valid:
                raise UnknownNameError("lookahead knob", key, valid)
        return cls(**knobs)


__all__ = ["FUTURES", "ORACLE_LABEL", "TESTS", "LookaheadKnobs"]
