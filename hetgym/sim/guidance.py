"""Per-job guidance for a policy that takes an outside decision at each job's arrival.

A *guided* policy is an ordinary :class:`~hetgym.sim.policy.Policy` that also accepts, before the
epoch at which a job arrives is scheduled, a :class:`Directive` for that job: whether to admit it (and
on what terms) and which GPU type it may use. A job given no directive is treated exactly as the
policy treats it on its own, so the policy run without directives is the unguided policy, decision for
decision. The event-driven environment (``HetClusterEvents-v0``, :mod:`hetgym.envs.events`) uses this to let
an agent make the per-job choices while the policy allocates GPUs between events.

This module defines only the contract; the guided policies live with the policies they extend (the
environment makes them by name through the policy registry).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from hetgym.sim.errors import ConfigError

if TYPE_CHECKING:
    from hetgym.sim.view import ClusterView

#: How a job is admitted (``Directive.admission``):
#:
#: * ``"auto"``: as the policy would decide on its own (its admission test);
#: * ``"reject"``: rejected at once (it leaves the cluster and counts as a deadline miss);
#: * ``"force"``: admitted with the policy's guarantee, without its admission test;
#: * ``"best_effort"``: admitted without a guarantee (it runs on GPUs the guaranteed jobs leave free).
ADMISSIONS: tuple[str, ...] = ("auto", "reject", "force", "best_effort")


@dataclass(frozen=True)
class Directive:
    """An outside decision about one job, given at its arrival.

    Attributes:
        admission: One of :data:`ADMISSIONS`.
        gpu_type: The only GPU type the job may use (for its whole life), or ``None`` for any type the
            policy chooses.
    """

    admission: str = "auto"
    gpu_type: str | None = None

    def __post_init__(self) -> None:
        if self.admission not in ADMISSIONS:
            raise ConfigError(f"Directive(admission={self.admission!r}): give one of {list(ADMISSIONS)}")

    @property
    def is_default(self) -> bool:
        """Whether the directive leaves the job entirely to the policy."""
        return self.admission == "auto" and self.gpu_type is None


#: The directive that leaves a job to the policy.
AUTO = Directive()


@runtime_checkable
class GuidedPolicy(Protocol):
    """What the event-driven environment needs of a guided policy (besides the policy contract).

    ``guide`` is called for a job after it arrived and before the ``schedule`` call of its arrival
    epoch; ``usable_types`` names the GPU types a directive may restrict the job to; ``probe`` answers,
    without changing the policy's state, whether the policy's own admission test would admit the job at
    ``view`` under each GPU-type restriction (``None``: any type).
    """

    def guide(self, job_id: int, directive: Directive) -> None: ...

    def usable_types(self, view: ClusterView, job_id: int) -> tuple[str, ...]: ...

    def probe(self, view: ClusterView, job_id: int, gpu_types: tuple[str | None, ...]) -> tuple[bool, ...]: ...


__all__ = ["ADMISSIONS", "AUTO", "Directive", "GuidedPolicy"]
