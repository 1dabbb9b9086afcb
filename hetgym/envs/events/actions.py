"""The action table of the event-driven environment: one masked ``Discrete`` choice per job event.

With the cluster's ``T`` GPU types (in cluster order), ``Discrete(2 * T + 4)``:

============================  ==============================================================
action                        directive (:class:`~hetgym.sim.guidance.Directive`)
============================  ==============================================================
``0``                         ``auto``, any type: the allocator's own decision (the expert's)
``1``                         ``reject``
``2 .. 1 + T``                ``auto`` restricted to type ``t = a - 2``
``2 + T``                     ``force`` (admit with the guarantee, no admission test), any type
``3 + T .. 2 + 2T``           ``force`` restricted to type ``t = a - 3 - T``
``3 + 2T``                    ``best_effort`` (admit without a guarantee), any type
============================  ==============================================================

At an arrival the mask allows ``0``, ``1``, ``2 + T`` and ``3 + 2T`` always, and a type-restricted action
only when the allocator has a level for the job on that type
(:meth:`~hetgym.sim.guidance.GuidedPolicy.usable_types`). At a *late* event (a guaranteed job projected
to miss its deadline, with ``events=("arrival", "late")``) only ``0`` (keep it as it is) and ``1`` (drop
it) are allowed.
"""

from __future__ import annotations

import numpy as np

from hetgym.sim.guidance import Directive

#: The action that leaves the job to the allocator (what its own expert does at every event).
AUTO_ACTION = 0
#: The action that rejects the job.
REJECT_ACTION = 1


class EventActions:
    """The directives of a cluster's action table (see the module docstring).

    Args:
        gpu_types: The cluster's GPU types, in order.

    Attributes:
        directives: The directive of each action.
        n: The number of actions.
    """

    def __init__(self, gpu_types: tuple[str, ...]) -> None:
        self.gpu_types = tuple(gpu_types)
        t = len(self.gpu_types)
        self.num_types = t
        table = [Directive("auto"), Directive("reject")]
        table += [Directive("auto", g) for g in self.gpu_types]
        table.append(Directive("force"))
        table += [Directive("force", g) for g in self.gpu_types]
        table.append(Directive("best_effort"))
        self.directives: tuple[Directive, ...] = tuple(table)
        self.n = len(table)
        self._index = {d: a for a, d in enumerate(table)}
        self._typed = np.array([d.gpu_type is not None for d in table])
        self._type_of = np.array([self.gpu_types.index(d.gpu_type) if d.gpu_type else -1 for d in table])

    def directive(self, action: int) -> Directive:
        """The directive of ``action``."""
        return self.directives[int(action)]

    def index(self, directive: Directive) -> int:
        """The action of ``directive`` (every directive over the cluster's types has one)."""
        return self._index[directive]

    def mask(self, usable: tuple[str, ...]) -> np.ndarray:
        """The valid actions for a job whose allocator levels lie on the types ``usable``."""
        ok_type = np.array([g in usable for g in self.gpu_types] + [False])
        return ~self._typed | ok_type[self._type_of]

    def late_mask(self) -> np.ndarray:
        """The valid actions at a late event: keep (0) or drop (1)."""
        out = np.zeros(self.n, dtype=bool)
        out[[AUTO_ACTION, REJECT_ACTION]] = True
        return out

    def closest(self, directive: Directive, usable: tuple[str, ...]) -> int:
        """The action of ``directive``, or of the same admission on any type when its type is not usable."""
        if directive.gpu_type is not None and directive.gpu_type not in usable:
            directive = Directive(directive.admission)
        return self.index(directive)

    def describe(self, action: int) -> str:
        """A short text for ``action`` (e.g. ``"force on V100"``)."""
        d = self.directive(action)
        return d.admission + (f" on {d.gpu_type}" if d.gpu_type else "")


__all__ = ["AUTO_ACTION", "REJECT_ACTION", "EventActions"]
