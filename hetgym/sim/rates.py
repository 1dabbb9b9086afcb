"""One per-job table of rates per GPU type, shared by the policies, the environment and its agents.

Many decisions start from the same figures of a job: its rate (iterations/s of the whole job on one
server) on each of the cluster's GPU types at its requested count, which types it may use, and its
best type and rate. These never change during a run, so :class:`RateTable` computes them once per job
and keeps them (:class:`JobRates`); jobs that share a job type, batch size, count and allowed types
share one entry. The simulator owns one table per run (``Simulator.rate_table``, cleared by
``Simulator.reset``) and hands it to policies on every view (``ClusterView.rate_table``); the Gym
environment reads the same table. Pure numpy: no gymnasium, no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from hetgym.sim.job import JobSpec

if TYPE_CHECKING:
    from hetgym.sim.cluster import ClusterSpec
    from hetgym.sim.throughput import ThroughputModel


class _HasSpec(Protocol):
    """A job's view (:class:`~hetgym.sim.view.JobView`): its id and spec are what the table reads."""

    @property
    def job_id(self) -> int: ...

    @property
    def spec(self) -> JobSpec: ...

    @property
    def num_gpus(self) -> int: ...


_JobLike = _HasSpec | JobSpec


#: ``RateTable.ranked``: rate by type (shared: do not modify), allowed types in the cluster's order, and
#: allowed types fastest first.
Ranked = tuple[dict[str, float], tuple[str, ...], tuple[str, ...]]


def allowed_types(gpu_types: Sequence[str], spec: JobSpec) -> tuple[str, ...]:
    """The types of ``gpu_types`` (a cluster's, in its order) that the job may use."""
    allowed = spec.gpu_types
    if allowed is None:
        return tuple(gpu_types)
    return tuple(t for t in gpu_types if t in allowed)


class JobRates:
    """One job's rates per GPU type at its requested count (an immutable record; arrays are read-only).

    Attributes:
        types: The cluster's GPU types (the order of every array).
        rates: Rate on each type at the requested count on one server, 0 where the type is not allowed,
            float64 ``(T,)``.
        allowed: Whether the job may use each type, bool ``(T,)``.
        allowed_types: The allowed types, in the cluster's order.
        fits: Whether the cluster has at least the requested count of each type, bool ``(T,)``.
        fit_rates: ``rates`` where the type also has enough GPUs in the cluster, else 0 (float64 ``(T,)``).
        best_rate: The highest rate over the allowed types (0 when none is usable).
        best_index: Index of the first type with ``best_rate`` (-1 when ``best_rate`` is 0).
    """

    __slots__ = (
        "_speed",
        "allowed",
        "allowed_types",
        "best_index",
        "best_rate",
        "fit_rates",
        "fits",
        "rates",
        "types",
    )

    def __init__(self, types: tuple[str, ...], rates: np.ndarray, allowed: np.ndarray, fits: np.ndarray) -> None:
        self.types = types
        self.rates = _frozen(rates)
        self.allowed = _frozen(allowed)
        self.fits = _frozen(fits)
        self.allowed_types = tuple(t for t, ok in zip(types, allowed.tolist(), strict=True) if ok)
        self.fit_rates = _frozen(np.where(fits, rates, 0.0))
        self.best_rate = float(rates.max()) if rates.size else 0.0
        self.best_index = int(np.argmax(rates)) if self.best_rate > 0 else -1
        self._speed: np.ndarray | None = None

    @property
    def best_type(self) -> str | None:
        """The type with the best rate (the first in the cluster's order on ties), or ``None``."""
        return self.types[self.best_index] if self.best_index >= 0 else None

    @property
    def speed(self) -> np.ndarray:
        """``rates / best_rate`` (zeros when no type is usable), float32 ``(T,)``."""
        if self._speed is None:
            best = self.best_rate
            speed = (self.rates / best if best > 0 else np.zeros_like(self.rates)).astype(np.float32)
            self._speed = _frozen(speed)
        return self._speed

    def rate(self, gpu_type: str) -> float:
        """The rate on ``gpu_type`` at the requested count (0 where not allowed)."""
        return float(self.rates[self.types.index(gpu_type)])

    def __repr__(self) -> str:
        rates = ", ".join(f"{t}={r:.4g}" for t, r in zip(self.types, self.rates.tolist(), strict=True))
        return f"JobRates({rates}; best={self.best_type})"


class RateTable:
    """Rates per GPU type of each job, computed once and kept by job id (clear it for a new run).

    Args:
        cluster: The cluster (its GPU types give the order of every array; its capacity gives ``fits``).
        throughput: The throughput model.
    """

    def __init__(self, cluster: ClusterSpec, throughput: ThroughputModel) -> None:
        self.cluster = cluster
        self.types: tuple[str, ...] = cluster.gpu_types
        self.throughput = throughput
        self._capacity = np.array([cluster.capacity[t] for t in self.types], dtype=np.int64)
        self._by_id: dict[int, JobRates] = {}
        self._by_key: dict[tuple[object, ...], JobRates] = {}
        self._at: dict[tuple[object, ...], np.ndarray] = {}
        self._ranked: dict[tuple[object, ...], Ranked] = {}

    def clear(self, throughput: ThroughputModel | None = None) -> None:
        """Forget every job (a new run), optionally with another throughput model."""
        self._by_id.clear()
        self._by_key.clear()
        self._at.clear()
        self._ranked.clear()
        if throughput is not None:
            self.throughput = throughput

    def get(self, job: _JobLike) -> JobRates:
        """The rates of ``job`` at its requested count."""
        hit = self._by_id.get(job.job_id)
        if hit is not None:
            return hit
        spec = _spec(job)
        key = (spec.job_type, spec.batch_size, spec.num_gpus, spec.gpu_types)
        out = self._by_key.get(key)
        if out is None:
            rates = self._rates(spec, spec.num_gpus)
            allowed = np.array([spec.gpu_types is None or t in spec.gpu_types for t in self.types], dtype=bool)
            out = self._by_key[key] = JobRates(self.types, rates, allowed, self._capacity >= spec.num_gpus)
        self._by_id[job.job_id] = out
        return out

    def rates_at(self, job: _JobLike, num_gpus: int) -> np.ndarray:
        """Rate on each type at ``num_gpus`` GPUs on one server, 0 where not allowed (float64 ``(T,)``, read-only)."""
        spec = _spec(job)
        if num_gpus == spec.num_gpus:
            return self.get(job).rates
        key = (spec.job_type, spec.batch_size, num_gpus, spec.gpu_types)
        out = self._at.get(key)
        if out is None:
            out = self._at[key] = _frozen(self._rates(spec, num_gpus))
        return out

    def best_rate(self, job: _JobLike, num_gpus: int | None = None) -> float:
        """The highest rate over the job's allowed types at ``num_gpus`` (default: its request); 0 if none."""
        if num_gpus is None or num_gpus == job.num_gpus:
            return self.get(job).best_rate
        rates = self.rates_at(job, num_gpus)
        return float(rates.max()) if rates.size else 0.0

    def allowed_types(self, job: _JobLike) -> tuple[str, ...]:
        """The cluster's types the job may use, in the cluster's order."""
        return self.get(job).allowed_types

    def ranked(self, job: _JobLike, num_gpus: int) -> Ranked:
        """``(rate by type, allowed types in the cluster's order, allowed types fastest first)`` at
        ``num_gpus`` GPUs on one server (ties keep the cluster's order), computed once per kind of job."""
        spec = _spec(job)
        key = (spec.job_type, spec.batch_size, num_gpus, spec.gpu_types)
        out = self._ranked.get(key)
        if out is None:
            rate = dict(zip(self.types, self.rates_at(job, num_gpus).tolist(), strict=True))
            types = self.allowed_types(job)
            out = self._ranked[key] = (rate, types, tuple(sorted(types, key=lambda t: -rate[t])))
        return out

    def _rates(self, spec: JobSpec, num_gpus: int) -> np.ndarray:
        rate = self.throughput.rate
        allowed = spec.gpu_types
        return np.array(
            [
                rate(spec.job_type, spec.batch_size, t, num_gpus) if allowed is None or t in allowed else 0.0
                for t in self.types
            ],
            dtype=np.float64,
        )

    def __len__(self) -> int:
        return len(self._by_id)


def _spec(job: _JobLike) -> JobSpec:
    return job if isinstance(job, JobSpec) else job.spec


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


__all__ = ["JobRates", "RateTable", "allowed_types"]
