"""The action table of the event-driven environment: one masked ``Discrete`` choice per job event.

Two tables, chosen by the environment's ``action_set`` (:class:`~hetgym.envs.events.EventEnvConfig`).

**``"admission"``** (``HetClusterEvents-v0``): with the cluster's ``T`` GPU types (in cluster order),
``Discrete(2 * T + 4)``:

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

**``"share"``** (``HetClusterEvents-v1``): the same ``2T + 4`` actions first (the allocator shares GPUs with
the job as it would on its own), then the ``S = 4`` sharing options of :data:`SHARE_OPTIONS` (``s`` in
that order: ``high`` priority, ``low`` priority, capped at the requested GPUs, capped at the plan's share;
see :mod:`hetgym.sim.guidance`) on the admissions that admit the job, ``Discrete(6 * T + 16)`` (40 on
four types):

============================  ==============================================================
action                        directive
============================  ==============================================================
``0 .. 3 + 2T``               as ``"admission"``
``4 + 2T + S*i + s``          admission ``i`` of (``auto``, ``force``, ``best_effort``), any type,
                              sharing option ``s``
``16 + 2T + S*t + s``         ``force`` restricted to type ``t``, sharing option ``s``
============================  ==============================================================

Admission by type by sharing in full would be ``3 (T + 1) 9`` actions (135 on four types); the table
keeps the combinations that change one thing at a time from an action of ``"admission"`` (one sharing
option, default on the other axis) and the type choice only under ``force``, the admission that keeps
every job.

At an arrival the mask allows every untyped action whose directive leaves the job a level (all of them,
except a ``requested`` cap when no level of the job fits in its requested GPUs), and a type-restricted one
only when the allocator has a level for the job on that type (under the directive's cap):
:meth:`~hetgym.sim.guidance.GuidedPolicy.usable_types` and
:meth:`~hetgym.sim.guidance.SharingPolicy.capped_types`. A masked-out action is taken as :meth:`EventActions.fallback`
says (same admission, then any type, then default sharing). At a *late* event (a guaranteed job projected
to miss its deadline, with ``events=("arrival", "late")``) only ``0`` (keep it as it is) and ``1`` (drop
it) are allowed.
"""

from __future__ import annotations

import numpy as np

from hetgym.sim.errors import HetgymError, UnknownNameError
from hetgym.sim.guidance import Directive

#: The action that leaves the job to the allocator (what its own expert does at every event).
AUTO_ACTION = 0
#: The action that rejects the job.
REJECT_ACTION = 1
#: The action tables (``action_set=``): admission and type (v0), and with sharing options (v1).
ACTION_SETS: tuple[str, ...] = ("admission", "share")
#: The sharing options of the ``"share"`` table, as ``(priority, gpu_cap)``, each one step from the default.
SHARE_OPTIONS: tuple[tuple[str, str], ...] = (
    ("high", "none"),
    ("low", "none"),
    ("normal", "requested"),
    ("normal", "share"),
)
#: The admissions that take sharing options in the ``"share"`` table (``reject`` leaves nothing to share).
SHARED_ADMISSIONS: tuple[str, ...] = ("auto", "force", "best_effort")


class EventActions:
    """The directives of a cluster's action table (see the module docstring).

    Args:
        gpu_types: The cluster's GPU types, in order.
        action_set: One of :data:`ACTION_SETS` (default ``"admission"``, the table of ``HetClusterEvents-v0``).

    Attributes:
        directives: The directive of each action.
        n: The number of actions.
        shares: Whether the table has sharing options (``action_set="share"``).
    """

    def __init__(self, gpu_types: tuple[str, ...], action_set: str = "admission") -> None:
        if action_set not in ACTION_SETS:
            raise UnknownNameError("action set", action_set, ACTION_SETS)
        self.gpu_types = tuple(gpu_types)
        self.action_set = action_set
        self.shares = action_set == "share"
        t = len(self.gpu_types)
        self.num_types = t
        table = [Directive("auto"), Directive("reject")]
        table += [Directive("auto", g) for g in self.gpu_types]
        table.append(Directive("force"))
        table += [Directive("force", g) for g in self.gpu_types]
        table.append(Directive("best_effort"))
        if self.shares:
            table += [Directive(a, None, p, c) for a in SHARED_ADMISSIONS for p, c in SHARE_OPTIONS]
            table += [Directive("force", g, p, c) for g in self.gpu_types for p, c in SHARE_OPTIONS]
        self.directives: tuple[Directive, ...] = tuple(table)
        self.n = len(table)
        self._index = {d: a for a, d in enumerate(table)}
        self._typed = np.array([d.gpu_type is not None for d in table])
        self._type_of = np.array([self.gpu_types.index(d.gpu_type) if d.gpu_type else -1 for d in table])
        self._capped = np.array([d.gpu_cap == "requested" for d in table])

    def directive(self, action: int) -> Directive:
        """The directive of ``action``."""
        return self.directives[int(action)]

    def index(self, directive: Directive) -> int:
        """The action of ``directive``.

        Raises:
            HetgymError: The table has no action for it (a type not in the cluster, or a combination of
                sharing options this table leaves out).
        """
        a = self._index.get(directive)
        if a is None:
            raise HetgymError(
                f"{directive!r} has no action in the {self.action_set!r} table on types {list(self.gpu_types)}; "
                "sharing options exist only with action_set='share' (HetClusterEvents-v1), one at a time, and "
                "on a named type only under 'force' (see hetgym.envs.events.actions)"
            )
        return a

    def mask(self, usable: tuple[str, ...], capped: tuple[str, ...] | None = None) -> np.ndarray:
        """The valid actions for a job whose allocator levels lie on the types ``usable``.

        Args:
            usable: The types the job has a level on.
            capped: The types it keeps a level on within its requested GPUs (``gpu_cap="requested"``);
                ``None``: the same as ``usable``.
        """
        ok_type = np.array([g in usable for g in self.gpu_types] + [True])
        out = ok_type[self._type_of]
        if self.shares:
            capped = usable if capped is None else capped
            ok_cap = np.array([g in capped for g in self.gpu_types] + [bool(capped)])
            out &= ~self._capped | ok_cap[self._type_of]
        return out

    def late_mask(self) -> np.ndarray:
        """The valid actions at a late event: keep (0) or drop (1)."""
        out = np.zeros(self.n, dtype=bool)
        out[[AUTO_ACTION, REJECT_ACTION]] = True
        return out

    def fallback(self, action: int, mask: np.ndarray) -> int:
        """The action taken for ``action`` when the mask forbids it: the first the mask allows of the same
        directive with default sharing, the same admission and sharing on any type, and the same admission
        on any type with default sharing (an untyped, uncapped action, always allowed at an arrival)."""
        d = self.directive(action)
        for cand in (
            Directive(d.admission, d.gpu_type),
            Directive(d.admission, None, d.priority, d.gpu_cap),
            Directive(d.admission),
        ):
            a = self._index.get(cand)
            if a is not None and mask[a]:
                return a
        return self.index(Directive(d.admission))

    def closest(self, directive: Directive, usable: tuple[str, ...]) -> int:
        """The action of ``directive``, or of the same admission on any type when its type is not usable."""
        if directive.gpu_type is not None and directive.gpu_type not in usable:
            directive = Directive(directive.admission, None, directive.priority, directive.gpu_cap)
        return self.index(directive)

    def describe(self, action: int) -> str:
        """A short text for ``action`` (e.g. ``"force on v100"``, ``"force, high priority"``)."""
        d = self.directive(action)
        text = d.admission + (f" on {d.gpu_type}" if d.gpu_type else "")
        if d.priority != "normal":
            text += f", {d.priority} priority"
        if d.gpu_cap != "none":
            text += f", capped at the {d.gpu_cap} GPUs" if d.gpu_cap == "requested" else ", capped at its share"
        return text


__all__ = ["ACTION_SETS", "AUTO_ACTION", "REJECT_ACTION", "SHARED_ADMISSIONS", "SHARE_OPTIONS", "EventActions"]
