"""Deadline models: how a job's absolute deadline is drawn from its arrival and duration.

Each model maps ``(rng, submit_s, duration_s)`` to an absolute deadline. ``duration_s`` is the job's
reference run time (its requested GPU count on the recipe's reference GPU type). Every model has a
``tightness`` knob: the slack is divided by it, so 2.0 halves every deadline's slack and 0.5 doubles
it, and 1.0 reproduces the recipe.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from hetgym.sim.errors import UnknownNameError


class DeadlineModel(Protocol):
    """Draws absolute deadlines."""

    @property
    def name(self) -> str: ...

    def __call__(self, rng: np.random.Generator, submit_s: np.ndarray, duration_s: np.ndarray) -> np.ndarray: ...


def _check_tightness(tightness: float) -> None:
    if not tightness > 0:
        raise ValueError(f"tightness={tightness}; it must be > 0 (1.0 = the recipe, larger = tighter)")


@dataclass(frozen=True)
class ElasticFlowDeadline:
    """ElasticFlow's ``deadline = submit + U(low, high) x duration`` (default U(0.5, 1.5))."""

    low: float = 0.5
    high: float = 1.5
    tightness: float = 1.0
    name: str = "elasticflow"

    def __post_init__(self) -> None:
        _check_tightness(self.tightness)
        if not 0 < self.low <= self.high:
            raise ValueError(f"ElasticFlowDeadline: need 0 < low <= high, got low={self.low}, high={self.high}")

    def __call__(self, rng: np.random.Generator, submit_s: np.ndarray, duration_s: np.ndarray) -> np.ndarray:
        factor = rng.uniform(self.low, self.high, size=len(submit_s))
        return submit_s + factor * duration_s / self.tightness


@dataclass(frozen=True)
class GavelSLODeadline:
    """Gavel's SLO multipliers: ``deadline = submit + m x duration`` with m drawn from ``multipliers``."""

    multipliers: Sequence[float] = (1.2, 2.0, 10.0)
    tightness: float = 1.0
    name: str = "gavel-slo"

    def __post_init__(self) -> None:
        _check_tightness(self.tightness)
        if not self.multipliers or min(self.multipliers) <= 0:
            raise ValueError(f"GavelSLODeadline: multipliers must be positive, got {self.multipliers}")

    def __call__(self, rng: np.random.Generator, submit_s: np.ndarray, duration_s: np.ndarray) -> np.ndarray:
        m = rng.choice(np.asarray(self.multipliers, dtype=float), size=len(submit_s))
        return submit_s + m * duration_s / self.tightness


@dataclass(frozen=True)
class NoDeadline:
    """No deadlines (``inf``): for JCT and makespan studies."""

    tightness: float = 1.0
    name: str = "none"

    def __call__(self, rng: np.random.Generator, submit_s: np.ndarray, duration_s: np.ndarray) -> np.ndarray:
        return np.full(len(submit_s), math.inf)


_MODELS: dict[str, type[Any]] = {
    "elasticflow": ElasticFlowDeadline,
    "gavel-slo": GavelSLODeadline,
    "none": NoDeadline,
}


def make_deadline_model(name: str, **kwargs: Any) -> DeadlineModel:
    """A deadline model by name: ``elasticflow``, ``gavel-slo`` or ``none``."""
    if name not in _MODELS:
        raise UnknownNameError("deadline model", name, _MODELS)
    model: DeadlineModel = _MODELS[name](**kwargs)
    return model


def deadline_model_names() -> tuple[str, ...]:
    """Names accepted by :func:`make_deadline_model`."""
    return tuple(_MODELS)
