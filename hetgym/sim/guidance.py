"""Per-job guidance for a policy that takes an outside decision at each job's arrival.

A *guided* policy is an ordinary :class:`~hetgym.sim.policy.Policy` that also accepts, before the
epoch at which a job arrives is scheduled, a :class:`Directive` for that job: whether to admit it (and
on what terms), which GPU type it may use and how the policy shares GPUs with it (its priority class for
the GPUs left over once every guaranteed share is served, and a cap on its GPUs). A job given no
directive is treated exactly as the policy treats it on its own, so the policy run without directives is
the unguided policy, decision for decision. The event-driven environment (``HetClusterEvents-v0`` and
``-v1``, :mod:`hetgym.envs.events`) uses this to let an agent make the per-job choices while the policy
allocates GPUs between events.

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

#: The job's class when the policy hands out leftover GPUs (``Directive.priority``): every ``"high"`` job is
#: served before every ``"normal"`` one, and every ``"normal"`` one before every ``"low"`` one; within a class
#: the policy's own order holds. A policy with no leftover step ignores it.
PRIORITIES: tuple[str, ...] = ("high", "normal", "low")

#: The cap on the job's GPUs (``Directive.gpu_cap``):
#:
#: * ``"none"``: the policy's own limits;
#: * ``"requested"``: at most the GPUs the job requested (``JobSpec.num_gpus``), in planning and leftovers;
#: * ``"share"``: no leftover GPUs beyond what its plan gives it now (its minimum satisfactory share, for a
#:   policy that has one); a job the plan gives nothing now may still get its smallest level from them.
GPU_CAPS: tuple[str, ...] = ("none", "requested", "share")


@dataclass(frozen=True)
class Directive:
    """An outside decision about one job, given at its arrival.

    Attributes:
        admission: One of :data:`ADMISSIONS`.
        gpu_type: The only GPU type the job may use (for its whole life), or ``None`` for any type the
            policy chooses.
        priority: One of :data:`PRIORITIES` (default ``"normal"``: the policy's own order).
        gpu_cap: One of :data:`GPU_CAPS` (default ``"none"``: the policy's own limits).
    """

    admission: str = "auto"
    gpu_type: str | None = None
    priority: str = "normal"
    gpu_cap: str = "none"

    def __post_init__(self) -> None:
        if self.admission not in ADMISSIONS:
            raise ConfigError(f"Directive(admission={self.admission!r}): give one of {list(ADMISSIONS)}")
        if self.priority not in PRIORITIES:
            raise ConfigError(f"Directive(priority={self.priority!r}): give one of {list(PRIORITIES)}")
        if self.gpu_cap not in GPU_CAPS:
            raise ConfigError(f"Directive(gpu_cap={self.gpu_cap!r}): give one of {list(GPU_CAPS)}")

    @property
    def is_default(self) -> bool:
        """Whether the directive leaves the job entirely to the policy."""
        return self.admission == "auto" and self.gpu_type is None and self.shares_by_default

    @property
    def shares_by_default(self) -> bool:
        """Whether the policy shares GPUs with the job as it would on its own (default priority, no cap)."""
        return self.priority == "normal" and self.gpu_cap == "none"


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


@runtime_checkable
class SharingPolicy(GuidedPolicy, Protocol):
    """A guided policy that also follows a directive's ``priority`` and ``gpu_cap``.

    ``capped_types`` names the GPU types on which the job keeps at least one level under ``gpu_cap`` (one
    of :data:`GPU_CAPS`): where a directive with that cap may restrict it to.
    """

    def capped_types(self, view: ClusterView, job_id: int, gpu_cap: str) -> tuple[str, ...]: ...


@runtime_checkable
class LateReportingPolicy(GuidedPolicy, Protocol):
    """A guided policy that also names the guaranteed jobs its re-plans leave without a share (late).

    ``newly_late`` gives the jobs found late since its last call, each job once (the event-driven
    environment's ``"late"`` job events).
    """

    def newly_late(self) -> tuple[int, ...]: ...


__all__ = [
    "ADMISSIONS",
    "AUTO",
    "GPU_CAPS",
    "PRIORITIES",
    "Directive",
    "GuidedPolicy",
    "LateReportingPolicy",
    "SharingPolicy",
]
