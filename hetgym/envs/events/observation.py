"""The event-driven environment's observation: the deciding job and the cluster, one float32 vector of named slices.

Every feature lies in ``[0, 1]`` or ``[-1, 1]``; times are squashed with ``x / (1 + |x|)`` of ``x`` in
units of ``time_scale_s``, counts of jobs with ``n / (n + 16)``. ``T`` is the number of GPU types (cluster
order). Wrap with ``gymnasium.wrappers.FlattenObservation`` for an ``MlpPolicy``.

========================  =======  ==============================================================
key                       shape    entries
========================  =======  ==============================================================
``job_usable``            ``T``    the allocator can run the deciding job on the type (0/1)
``job_speed``             ``T``    its rate at its requested count relative to its best type's
``job_run_time``          ``T``    run time of its remaining work there (squashed; 1 when unusable)
``job_slack``             ``T``    time to deadline minus that run time (signed; -1 when unusable)
``job_admissible``        ``T``    the allocator's admission test restricted to the type (0/1; 0
                                   without ``probe``)
``job``                   ``6``    requested GPUs over the largest type's capacity; time to
                                   deadline (squashed); has a deadline (0/1); the admission test on
                                   any type (0/1); other events of this epoch still to decide
                                   (squashed count); the event is a late job's, not an arrival (0/1)
``cluster_capacity``      ``T``    capacity over the largest type's
``cluster_free``          ``T``    free GPUs over the capacity
``cluster_guaranteed``    ``T``    GPUs held by guaranteed jobs over the capacity
``cluster_best_effort``   ``T``    GPUs held by best-effort jobs over the capacity
``queue``                 ``8``    active, waiting, guaranteed and best-effort jobs (squashed
                                   counts); guaranteed jobs past their deadline (squashed count);
                                   committed work, the guaranteed jobs' remaining GPU-time at their
                                   requested count on their best type over the cluster's GPUs
                                   (squashed); share of the workload arrived; the clock (squashed)
========================  =======  ==============================================================

Flat first: :class:`EventObservation` writes one float32 vector whose
:class:`~hetgym.envs.observations_layout.ObservationLayout` (``env.unwrapped.layout``) names the keys above,
laid out in their sorted order (``cluster_best_effort``, ``cluster_capacity``, ``cluster_free``,
``cluster_guaranteed``, ``job``, ``job_admissible``, ``job_run_time``, ``job_slack``, ``job_speed``,
``job_usable``, ``queue``): the order of ``gymnasium.spaces.flatten`` of the ``Dict``, so the vector is the one
``flatten=True`` and ``gymnasium.wrappers.FlattenObservation`` give. The ``Dict`` form (the ``-v0`` and ``-v1``
ids) is the slices of that vector in the table's order; every entry is a 1-D ``Box`` (Stable-Baselines3's
checker warns on other shapes).

*Guaranteed* jobs are those the agent's decision (or the allocator's test under ``auto``) admitted with
the guarantee; *best-effort* those admitted without it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from hetgym.envs.observations_layout import ObservationLayout
from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.view import ClusterView, JobView

#: The per-type keys of the deciding job (``[-1, 1]``), then of the cluster (``[0, 1]``), in order.
JOB_TYPE_KEYS = ("job_usable", "job_speed", "job_run_time", "job_slack", "job_admissible")
CLUSTER_KEYS = ("cluster_capacity", "cluster_free", "cluster_guaranteed", "cluster_best_effort")
JOB_ROWS = len(JOB_TYPE_KEYS)
CLUSTER_ROWS = len(CLUSTER_KEYS)
JOB_FEATURES = 6
QUEUE_FEATURES = 8
_COUNT_SCALE = 16.0


def squash(x: float) -> float:
    """``x / (1 + |x|)``: a signed value in ``(-1, 1)``."""
    return x / (1.0 + abs(x))


def count_feature(n: float) -> float:
    """A job count squashed to ``[0, 1)``."""
    return n / (n + _COUNT_SCALE)


def observation_layout(num_types: int) -> ObservationLayout:
    """The flat layout of a cluster with ``num_types`` GPU types: the keys in sorted order (the vector
    ``gymnasium.spaces.flatten`` gives), the ``Dict`` form in the order of the module's table."""
    t = num_types
    features: dict[str, tuple[tuple[int, ...], Any, Any]] = {key: ((t,), -1.0, 1.0) for key in JOB_TYPE_KEYS}
    features["job"] = ((JOB_FEATURES,), 0.0, 1.0)
    features.update({key: ((t,), 0.0, 1.0) for key in CLUSTER_KEYS})
    features["queue"] = ((QUEUE_FEATURES,), 0.0, 1.0)
    return ObservationLayout({key: features[key] for key in sorted(features)}, dict_order=list(features))


def observation_space(num_types: int) -> spaces.Dict:
    """The ``Dict`` observation space of a cluster with ``num_types`` GPU types."""
    return observation_layout(num_types).dict_space


def empty_observation(num_types: int) -> dict[str, np.ndarray]:
    """The all-zero ``Dict`` observation (returned with the step that ends an episode)."""
    layout = observation_layout(num_types)
    return layout.as_dict(layout.zeros())


class EventObservation:
    """Builds the observation of one job event (see the module docstring).

    Args:
        cluster: The cluster.
        time_scale_s: The unit of the squashed times.
    """

    def __init__(self, cluster: ClusterSpec, time_scale_s: float) -> None:
        self.cluster = cluster
        self.types = tuple(cluster.gpu_types)
        self.capacity = np.array([cluster.capacity[t] for t in self.types], dtype=float)
        self.max_capacity = float(self.capacity.max())
        self.total_gpus = float(self.capacity.sum())
        self.scale_s = float(time_scale_s)
        self.flat_layout = observation_layout(len(self.types))
        self.space = self.flat_layout.dict_space
        self.flat_space = self.flat_layout.box
        slices = self.flat_layout.slices
        # Where build_flat writes each row of its per-type tables and the job and queue vectors.
        self._job_type_slices = [slices[key] for key in JOB_TYPE_KEYS]
        self._cluster_slices = [slices[key] for key in CLUSTER_KEYS]
        self._job_slice = slices["job"]
        self._queue_slice = slices["queue"]

    def best_rate(self, view: ClusterView, job: JobView) -> float:
        """The job's best rate at its requested count (capped by each type's capacity), 0 when none."""
        rates = self._rates(view, job)
        return max(rates.values(), default=0.0)

    def _rates(self, view: ClusterView, job: JobView) -> dict[str, float]:
        out = {}
        for t in view.allowed_types(job):
            n = min(job.num_gpus, self.cluster.capacity[t])
            out[t] = max(view.rate(job, t, n), 0.0)
        return out

    def empty(self) -> np.ndarray:
        """The all-zero flat observation (returned with the step that ends an episode)."""
        return self.flat_layout.zeros()

    def build(self, *args: Any, **kwargs: Any) -> dict[str, np.ndarray]:
        """The ``Dict`` form of :meth:`build_flat` (the same arguments): views into the new vector."""
        return self.flat_layout.as_dict(self.build_flat(*args, **kwargs))

    def build_flat(
        self,
        view: ClusterView,
        job: JobView,
        usable: tuple[str, ...],
        probe: tuple[bool, ...] | None,
        *,
        kinds: Mapping[int, str],
        best_rates: Mapping[int, float],
        to_decide: int,
        num_jobs: int,
        late: bool = False,
    ) -> np.ndarray:
        """The observation of ``job``'s event at ``view``, a new flat float32 vector (:attr:`flat_layout`).

        Args:
            view: The epoch's view.
            job: The deciding job.
            usable: The types the allocator has levels on for it.
            probe: The admission test on any type then on each type in order, or ``None``.
            kinds: ``"guaranteed"`` or ``"best_effort"`` for every active job admitted so far.
            best_rates: Each admitted job's best rate at its requested count.
            to_decide: Other events of this epoch still to decide.
            num_jobs: Jobs in the workload.
            late: The event is a late job's (else an arrival).
        """
        t_n = len(self.types)
        now = view.now_s
        scale = self.scale_s
        rates = self._rates(view, job)
        best = max(rates.values(), default=0.0)
        to_deadline = job.deadline_s - now
        finite = math.isfinite(to_deadline)
        jt = np.zeros((JOB_ROWS, t_n), dtype=np.float32)
        for k, t in enumerate(self.types):
            rate = rates.get(t, 0.0)
            if t not in usable or rate <= 0:
                jt[2, k] = 1.0
                jt[3, k] = -1.0
                continue
            run_s = job.remaining_iters / rate
            jt[0, k] = 1.0
            jt[1, k] = rate / best if best > 0 else 0.0
            jt[2, k] = squash(run_s / scale)
            jt[3, k] = squash((to_deadline - run_s) / scale) if finite else 1.0
            if probe is not None:
                jt[4, k] = float(probe[1 + k])
        jv = np.array(
            [
                job.num_gpus / self.max_capacity,
                max(squash(to_deadline / scale), 0.0) if finite else 1.0,
                float(job.spec.has_deadline),
                float(probe[0]) if probe is not None else 0.0,
                count_feature(to_decide),
                float(late),
            ],
            dtype=np.float32,
        )
        cl = np.zeros((CLUSTER_ROWS, t_n), dtype=np.float32)
        cl[0] = self.capacity / self.max_capacity
        cl[1] = [view.free_gpus.get(t, 0) for t in self.types]
        index = {t: k for k, t in enumerate(self.types)}
        for jid, ja in view.running_allocations.items():
            row = 2 if kinds.get(jid) == "guaranteed" else 3 if kinds.get(jid) == "best_effort" else -1
            if row > 0:
                for t, n in ja.counts:
                    cl[row, index[t]] += n
        cl[1:] /= self.capacity
        guaranteed = best_effort = past_deadline = 0
        work_gpu_s = 0.0
        for other in view.jobs:
            kind = kinds.get(other.job_id)
            if kind == "guaranteed":
                guaranteed += 1
                if other.deadline_s < now:
                    past_deadline += 1
                rate = best_rates.get(other.job_id, 0.0)
                if rate > 0:
                    work_gpu_s += other.remaining_iters / rate * other.num_gpus
            elif kind == "best_effort":
                best_effort += 1
        waiting = len(view.jobs) - len(view.running_allocations)
        arrived = num_jobs - view.num_pending
        queue = np.array(
            [
                count_feature(len(view.jobs)),
                count_feature(waiting),
                count_feature(guaranteed),
                count_feature(best_effort),
                count_feature(past_deadline),
                squash(work_gpu_s / (self.total_gpus * scale)),
                arrived / num_jobs if num_jobs else 0.0,
                squash(now / scale),
            ],
            dtype=np.float32,
        )
        cl = np.clip(cl, 0.0, 1.0)
        out = np.empty(self.flat_layout.size, dtype=np.float32)
        for values, sl in zip(jt, self._job_type_slices, strict=True):
            out[sl] = values
        out[self._job_slice] = jv
        for values, sl in zip(cl, self._cluster_slices, strict=True):
            out[sl] = values
        out[self._queue_slice] = queue
        return out


__all__ = [
    "EventObservation",
    "count_feature",
    "empty_observation",
    "observation_layout",
    "observation_space",
    "squash",
]
