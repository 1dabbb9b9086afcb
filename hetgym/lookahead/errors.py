"""The lookahead's own error: a workload with no model to sample futures from."""

from __future__ import annotations

from hetgym.sim.errors import HetgymError


class FutureModelError(HetgymError):
    """The environment's workload has no model to sample futures from (a trace)."""


__all__ = ["FutureModelError"]
