"""Helpers shared by the deadline-aware elastic policies (Dancer, ElasticFlow) and the offline ILP.

* **Count levels.** An elastic job may run on a power-of-two number of GPUs of one type, from its
  ``min_gpus`` (rounded up to a power of two) to the smallest of its ``max_gpus``, the type's capacity
  in the cluster and an optional cap. Powers of two are ElasticFlow's throughput-table keys
  (1, 2, 4, ..., 64) and what buddy placement needs; they also keep the option sets small. A level
  whose rate is no higher than a smaller level's on the same type is dropped (more GPUs, no gain).
* **Planning rates.** The rate of ``n`` GPUs of type ``k`` is the table rate on one server, times the
  multi-server factor when ``n`` exceeds the type's largest server (the job must then span servers).
  The simulator charges exactly that when the placement is not fragmented.
* **Options.** A job's options are count vectors over the cluster's GPU types with a rate each
  (:class:`JobOptions`), so planners treat single-type and mixed-type configurations alike.
* **Buddy placement** lives in the simulator (:mod:`hetgym.sim.placement.buddy`, the ``buddy`` placer).
* **Memory** (the ``memory`` knob of both policies, :data:`MEMORY_MODES`). ``"history"`` keeps the
  admissions and plans made at earlier epochs, as the papers do; ``"observed"`` re-plans every job from
  the view at each call, so the allocation is a function of the view (a teacher that can label any
  state, e.g. for DAgger). Without a record of admissions, :func:`new_arrivals` names the only jobs that
  may still be refused.
* **Slot origin** (the ``slot_origin`` knob of both policies, :data:`SLOT_ORIGINS`, with
  ``memory="observed"`` only). Slots are ``[s * round_s, (s + 1) * round_s)`` in absolute time
  (``"absolute"``, the papers'), so a decision between two slot boundaries depends on where it falls in
  its slot, which an agent observing durations (slack, age) does not see. ``"decision"`` plans as if the
  decision fell on a slot boundary (:func:`at_slot_start`): every absolute time is moved forward to the
  next boundary, so the allocation is the same wherever in its slot the decision falls.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from hetgym.sim import rates
from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.job import JobSpec
from hetgym.sim.registry import KnobError, Knobs, knob
from hetgym.sim.throughput import ThroughputModel
from hetgym.sim.view import ClusterView, shift_time

#: Values of the ``memory`` knob of Dancer and ElasticFlow (see the module docstring).
MEMORY_MODES = ("history", "observed")
#: Values of the ``slot_origin`` knob of Dancer and ElasticFlow (see the module docstring).
SLOT_ORIGINS = ("absolute", "decision")


def power_of_two_levels(min_gpus: int, cap: int) -> list[int]:
    """Powers of two ``n`` with ``min_gpus <= n <= cap`` (empty when none)."""
    out = []
    n = 1
    while n <= cap:
        if n >= min_gpus:
            out.append(n)
        n *= 2
    return out


def planning_rate(
    throughput: ThroughputModel, spec: JobSpec, cluster: ClusterSpec, gpu_type: str, num_gpus: int
) -> float:
    """Iterations/s of ``num_gpus`` GPUs of ``gpu_type``; times the multi-server factor beyond one server."""
    rate = throughput.rate(spec.job_type, spec.batch_size, gpu_type, num_gpus)
    if rate > 0 and num_gpus > cluster.max_gpus_per_server[gpu_type]:
        rate *= throughput.consolidation_factor(spec.job_type, spec.batch_size, gpu_type, num_gpus)
    return rate


def allowed_types(cluster: ClusterSpec, spec: JobSpec) -> tuple[str, ...]:
    """The cluster's GPU types the job may use, in the cluster's order."""
    return rates.allowed_types(cluster.gpu_types, spec)


def type_levels(
    throughput: ThroughputModel,
    spec: JobSpec,
    cluster: ClusterSpec,
    gpu_type: str,
    max_count: int | None = None,
) -> tuple[list[int], list[float]]:
    """Undominated power-of-two counts of one type and their planning rates (ascending counts)."""
    cap = cluster.capacity[gpu_type]
    if spec.max_gpus is not None:
        cap = min(cap, spec.max_gpus)
    if max_count is not None:
        cap = min(cap, max_count)
    counts: list[int] = []
    rates: list[float] = []
    best = 0.0
    for n in power_of_two_levels(spec.min_gpus, cap):
        r = planning_rate(throughput, spec, cluster, gpu_type, n)
        if r > best * (1.0 + 1e-9):
            counts.append(n)
            rates.append(r)
            best = r
    return counts, rates


@dataclass(frozen=True)
class JobOptions:
    """The configurations a job may run in during one slot.

    Attributes:
        counts: ``(O, K)`` GPUs per cluster type (in ``cluster.gpu_types`` order) of each option.
        rates: ``(O,)`` planning rate of each option (iterations/s).
        types: The cluster's GPU types (column order of ``counts``).
    """

    counts: np.ndarray
    rates: np.ndarray
    types: tuple[str, ...]
    _keys: dict[tuple[tuple[str, int], ...], int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        keys = {}
        for o in range(len(self.rates)):
            keys[tuple(sorted(self.as_dict(o).items()))] = o
        object.__setattr__(self, "_keys", keys)

    def __len__(self) -> int:
        return len(self.rates)

    def as_dict(self, option: int) -> dict[str, int]:
        """``{gpu_type: n}`` of an option."""
        return {t: int(n) for t, n in zip(self.types, self.counts[option], strict=True) if n > 0}

    def find(self, counts: Mapping[str, int]) -> int:
        """Index of the option with exactly these counts, or -1."""
        return self._keys.get(tuple(sorted((t, n) for t, n in counts.items() if n > 0)), -1)

    def find_pairs(self, pairs: tuple[tuple[str, int], ...]) -> int:
        """Index of the option with these ``(type, n)`` pairs sorted by type (``JobAllocation.counts``), or -1."""
        return self._keys.get(pairs, -1)

    @property
    def total_gpus(self) -> np.ndarray:
        """``(O,)`` GPUs of each option."""
        return self.counts.sum(axis=1)


def job_options(
    throughput: ThroughputModel,
    spec: JobSpec,
    cluster: ClusterSpec,
    *,
    max_count: int | None = None,
    mix_types: bool = False,
) -> JobOptions:
    """All options of a job: one type per option, plus pairs of types when ``mix_types``.

    A mixed option ``(a: n_a, b: n_b)`` runs synchronously: the slower type at ``n_a + n_b`` GPUs bounds
    every step and the job always spans servers (the simulator's ``sync`` mode). Like a single-type
    option, its ``n_a + n_b`` GPUs stay within the job's ``max_gpus`` and ``max_count``.
    """
    types = cluster.gpu_types
    index = {t: i for i, t in enumerate(types)}
    rows: list[np.ndarray] = []
    rates: list[float] = []
    per_type: dict[str, list[int]] = {}
    for t in allowed_types(cluster, spec):
        counts, rs = type_levels(throughput, spec, cluster, t, max_count)
        per_type[t] = counts
        for n, r in zip(counts, rs, strict=True):
            row = np.zeros(len(types), dtype=np.int64)
            row[index[t]] = n
            rows.append(row)
            rates.append(r)
    if mix_types:
        for a, b in itertools.combinations(list(per_type), 2):
            for na in per_type[a]:
                for nb in per_type[b]:
                    total = na + nb
                    if total > min(spec.max_gpus or total, max_count or total):
                        continue  # the pair together exceeds the job's (or the policy's) cap
                    ra = throughput.rate(spec.job_type, spec.batch_size, a, total)
                    rb = throughput.rate(spec.job_type, spec.batch_size, b, total)
                    slow = a if ra <= rb else b
                    r = min(ra, rb) * throughput.consolidation_factor(spec.job_type, spec.batch_size, slow, total)
                    if r <= 0:
                        continue
                    row = np.zeros(len(types), dtype=np.int64)
                    row[index[a]] = na
                    row[index[b]] = nb
                    rows.append(row)
                    rates.append(r)
    counts_arr = np.array(rows, dtype=np.int64).reshape(len(rows), len(types))
    return JobOptions(counts_arr, np.array(rates, dtype=float), types)


def slot_of(time_s: float, slot_s: float) -> int:
    """Index of the slot containing ``time_s`` (slot ``s`` is ``[s * slot_s, (s + 1) * slot_s)``)."""
    return math.floor(time_s / slot_s + 1e-9)


def at_slot_start(view: ClusterView, slot_s: float) -> ClusterView:
    """``view`` with every absolute time moved forward so that the epoch falls on a slot boundary
    (:func:`~hetgym.sim.view.shift_time`); ``view`` itself when it already does (within ``slot_of``'s
    tolerance)."""
    now = view.now_s
    start = slot_of(now, slot_s) * slot_s
    if now - start <= 1e-9 * slot_s:
        return view
    return shift_time(view, (slot_of(now, slot_s) + 1) * slot_s - now)


def check_slot_origin(owner: str, slot_origin: str, memory: str) -> None:
    """The ``slot_origin`` knob's rule: ``"decision"`` needs ``memory="observed"``."""
    if slot_origin == "decision" and memory != "observed":
        raise KnobError(
            f"{owner}: knob slot_origin='decision' needs memory='observed' (a plan kept between epochs "
            "lives on the absolute slot grid); set memory='observed' or slot_origin='absolute'"
        )


@dataclass(frozen=True)
class DeadlinePlanKnobs(Knobs):
    """The knobs Dancer's and ElasticFlow's extend: what the planner keeps, where slots start, the GPU cap."""

    memory: str = knob(
        "history",
        choices=MEMORY_MODES,
        doc="``'history'`` (admissions and plans persist between epochs, as in the paper) or ``'observed'`` "
        "(re-plan every job from the view at each call; see :mod:`baselines._deadline`)",
    )
    slot_origin: str = knob(
        "absolute",
        choices=SLOT_ORIGINS,
        doc="``'absolute'`` (slots of ``round_s`` from time 0) or ``'decision'`` (with ``memory='observed'``: "
        "plan as if the decision fell on a slot boundary, see :mod:`baselines._deadline`)",
    )
    max_count: int | None = knob(
        None,
        low=1,
        integer=True,
        optional=True,
        doc="cap on any job's GPU count (``None``: its ``max_gpus`` or the type's capacity)",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_slot_origin(type(self).__name__, self.slot_origin, self.memory)


def new_arrivals(view: ClusterView) -> list[int]:
    """Ids of the jobs that arrived at this epoch and never held GPUs (in the view's order).

    Under ``memory="observed"`` these are the only jobs that may be refused. Every other active job went
    through its arrival epoch without being refused (a refused job leaves the system; in DAgger, the
    learner may also have kept it), so it counts as admitted: it is re-planned and at worst runs late.
    ``view.arrived`` is part of the view, so the split needs no history; a job that already holds or
    held GPUs is never new.
    """
    index = view.job_index
    return [
        jid
        for jid in view.arrived
        if jid in index and index[jid].first_start_s is None and index[jid].allocation is None
    ]
