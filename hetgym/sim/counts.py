"""The former name of a decision given as arrays: :class:`CountsDelta` is :class:`~hetgym.sim.decision.Decision`.

The Gym environment decides in arrays (job rows x GPU types, :mod:`hetgym.envs.state`); those rows are a
:class:`~hetgym.sim.decision.Decision` (its explicit servers left out), applied by
:meth:`Simulator.step <hetgym.sim.engine.Simulator.step>`. The name stays for callers that build one under it.
"""

from __future__ import annotations

from hetgym.sim.decision import Decision

#: A decision as arrays (the same class; see :class:`~hetgym.sim.decision.Decision`).
CountsDelta = Decision

__all__ = ["CountsDelta"]
