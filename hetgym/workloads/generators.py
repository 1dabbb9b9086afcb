"""Seeded synthetic workload generators following the Gavel-Philly and ElasticFlow recipes.

Both recipes follow the public generator code of the papers (``docs/simulator.md``, "Scenarios", summarises
them):

* **Gavel-Philly** (Gavel's ``scheduler/utils.py``): job type uniform over Gavel's 26 (model, batch)
  templates; Philly scale factor 1/2/4/8 with probabilities 0.7/0.1/0.15/0.05 (single-GPU-only
  templates keep 1); duration ``60 * 10**U(3, 4)`` s with probability 0.2, else ``60 * 10**U(1.5, 3)`` s;
  work = duration x the job's rate on V100 at its scale factor.
* **ElasticFlow** (``trace_generator/generate_trace.py``): duration ``60 * 10**U(2.5, 4)`` s with
  probability 0.2, else ``60 * 10**U(1, 2.5)`` s; ITP scale factor 1/2/4/8/16 with probabilities
  0.83/0.03/0.03/0.10/0.01; model uniform over ElasticFlow's six with a batch size of its A100 table;
  work = duration x the A100 rate; deadline ``submit + U(0.5, 1.5) x duration``.

Durations refer to the recipe's GPU (V100, A100). On a cluster without it they refer to the cluster's
fastest type instead (:func:`reference_gpu`), so that deadlines drawn from them stay reachable; the
workload's metadata records the reference used.

Arrivals are Poisson. The load is given either as an arrival rate (jobs per hour) or as a target
utilisation ``u`` of a cluster: the rate is then ``u x GPUs / mean GPU-seconds per job``, where a job's
GPU-seconds are its GPU count times its run time at the capacity-weighted mean rate over the cluster's
GPU types (computed on the jobs actually drawn). Every random choice has its own stream spawned from
the seed (arrivals, templates, sizes, durations, deadlines), so changing one knob does not reshuffle
the others.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hetgym.limits import JOBS_ENV, max_drawn_jobs
from hetgym.sim import portable
from hetgym.sim.cluster import ClusterSpec, get_cluster
from hetgym.sim.config import check_number
from hetgym.sim.job import JobSpec
from hetgym.sim.throughput import ThroughputModel
from hetgym.workloads.deadlines import DeadlineModel, ElasticFlowDeadline, GavelSLODeadline, NoDeadline
from hetgym.workloads.schema import Workload

#: Gavel's job templates as (job_type, per-GPU batch size, distributed?).
GAVEL_TEMPLATES: tuple[tuple[str, int, bool], ...] = (
    *(("resnet18", b, True) for b in (16, 32, 64, 128, 256)),
    *(("resnet50", b, True) for b in (16, 32, 64, 128)),
    *(("transformer", b, True) for b in (16, 32, 64, 128, 256)),
    *(("lm", b, True) for b in (5, 10, 20, 40, 80)),
    *(("recommendation", b, False) for b in (512, 1024, 2048, 4096, 8192)),
    ("a3c", 4, False),
    ("cyclegan", 1, False),
)
#: Philly scale factors and cumulative probability bounds (Gavel).
PHILLY_SCALE: tuple[tuple[int, float], ...] = ((1, 0.7), (2, 0.8), (4, 0.95), (8, 1.0))
#: ElasticFlow's models (A100 throughput table) and ITP scale factors with cumulative bounds.
ELASTICFLOW_MODELS: tuple[str, ...] = ("resnet50", "vgg16", "bert", "inception3", "deepspeech2", "gpt2")
ITP_SCALE: tuple[tuple[int, float], ...] = ((1, 0.83), (2, 0.86), (4, 0.89), (8, 0.99), (16, 1.0))


@dataclass(frozen=True)
class Load:
    """The offered load: exactly one of an arrival rate or a target utilisation.

    Attributes:
        arrival_rate_per_h: Mean arrivals per hour.
        target_utilisation: Offered GPU-time / cluster GPU-time (e.g. 0.8).
        static: Submit every job at time 0 (a batch, for makespan studies).
    """

    arrival_rate_per_h: float | None = None
    target_utilisation: float | None = None
    static: bool = False

    def __post_init__(self) -> None:
        given = sum(x is not None for x in (self.arrival_rate_per_h, self.target_utilisation))
        if self.static and given:
            raise ValueError("Load: a static batch takes neither arrival_rate_per_h nor target_utilisation")
        if not self.static and given != 1:
            raise ValueError("Load: give exactly one of arrival_rate_per_h or target_utilisation (or static=True)")
        for name in ("arrival_rate_per_h", "target_utilisation"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, check_number(f"Load.{name}", v, low=0.0, low_open=True))


def _check_cap(max_gpus_per_job: int | None) -> int | None:
    """``max_gpus_per_job`` as an int >= 1, or ``None`` (no cap); anything else raises."""
    if max_gpus_per_job is None:
        return None
    return int(check_number("max_gpus_per_job", max_gpus_per_job, low=1, integer=True, fix="or None for no cap"))


def check_num_jobs(num_jobs: Any) -> int:
    """``num_jobs`` as an ``int`` in [1, :func:`~hetgym.limits.max_drawn_jobs`], or a ``ConfigError``."""
    fix = f"every drawn job is held in memory before the run starts; for more, raise the bound with {JOBS_ENV}=N"
    return int(check_number("num_jobs", num_jobs, low=1, high=max_drawn_jobs(), integer=True, fix=fix))


def _streams(seed: int, n: int) -> list[np.random.Generator]:
    # What ``np.random.default_rng(child)`` builds, without its argument dispatch.
    return [np.random.Generator(np.random.PCG64(s)) for s in np.random.SeedSequence(seed).spawn(n)]


#: A scale table's (values, cumulative bounds) as arrays, built once per table.
_SCALE_ARRAYS: dict[tuple[tuple[int, float], ...], tuple[np.ndarray, np.ndarray]] = {}


def _draw_scale(rng: np.random.Generator, table: Sequence[tuple[int, float]], size: int) -> np.ndarray:
    key = tuple(table)
    arrays = _SCALE_ARRAYS.get(key)
    if arrays is None:
        arrays = _SCALE_ARRAYS[key] = (np.array([v for v, _ in key]), np.array([b for _, b in key]))
    values, bounds = arrays
    r = rng.uniform(0, 1, size=size)
    idx = np.searchsorted(bounds, r, side="right")
    return values[np.minimum(idx, len(key) - 1)]


def reference_gpu(cluster: ClusterSpec, throughput: ThroughputModel, preferred: str) -> str:
    """The GPU type a recipe's durations refer to: its own (``preferred``) when the cluster has it,
    else the cluster's fastest type by speed index, so that deadlines drawn from durations stay
    reachable on clusters without the recipe's GPU."""
    if preferred in cluster.capacity:
        return preferred
    return max(cluster.gpu_types, key=lambda t: (throughput.speed_index.get(t, 0.0), t))


def mean_rate(
    throughput: ThroughputModel, cluster: ClusterSpec, job_type: str, batch_size: int, num_gpus: int
) -> float:
    """Capacity-weighted mean rate of a job over the cluster's GPU types (for load calculations)."""
    cap = cluster.capacity
    total = sum(cap.values())
    return sum(cap[t] / total * throughput.rate(job_type, batch_size, t, num_gpus) for t in cap)


class _Rates:
    """A memo of :meth:`ThroughputModel.rate` and :func:`mean_rate` for one (throughput model, cluster)
    pair: a workload repeats few (job type, batch, GPUs) triples, and both objects are immutable, so
    each value is the one the uncached call returns. :func:`_rates_for` shares one between draws."""

    def __init__(self, throughput: ThroughputModel, cluster: ClusterSpec) -> None:
        self.throughput = throughput
        self.cluster = cluster
        self._rate: dict[tuple[str, int, str, int], float] = {}
        self._mean: dict[tuple[str, int, int], float] = {}

    def rate(self, job_type: str, batch_size: int, gpu_type: str, num_gpus: int) -> float:
        key = (job_type, batch_size, gpu_type, num_gpus)
        out = self._rate.get(key)
        if out is None:
            out = self._rate[key] = self.throughput.rate(job_type, batch_size, gpu_type, num_gpus)
        return out

    def mean(self, job_type: str, batch_size: int, num_gpus: int) -> float:
        key = (job_type, batch_size, num_gpus)
        out = self._mean.get(key)
        if out is None:
            out = self._mean[key] = mean_rate(self.throughput, self.cluster, job_type, batch_size, num_gpus)
        return out


#: The memos of :func:`_rates_for`: per throughput model (held weakly), per cluster (by identity, the
#: cluster held with its memo so that its id stays its own); at most :data:`_MEMO_CLUSTERS` clusters each.
_MEMOS: weakref.WeakKeyDictionary[ThroughputModel, dict[int, _Rates]] = weakref.WeakKeyDictionary()
_MEMO_CLUSTERS = 16


def _rates_for(throughput: ThroughputModel, cluster: ClusterSpec) -> _Rates:
    """The shared :class:`_Rates` of ``throughput`` on ``cluster``."""
    by_cluster = _MEMOS.get(throughput)
    if by_cluster is None:
        by_cluster = _MEMOS[throughput] = {}
    rates = by_cluster.get(id(cluster))
    if rates is None:
        if len(by_cluster) >= _MEMO_CLUSTERS:
            by_cluster.clear()
        rates = by_cluster[id(cluster)] = _Rates(throughput, cluster)
    return rates


def _arrivals(
    rng: np.random.Generator,
    load: Load,
    gpu_s: np.ndarray,
    cluster: ClusterSpec,
) -> tuple[np.ndarray, float]:
    n = len(gpu_s)
    if load.static:
        return np.zeros(n), 0.0
    if load.arrival_rate_per_h is not None:
        rate_per_s = load.arrival_rate_per_h / 3600.0
    else:
        assert load.target_utilisation is not None
        # np.mean's value (its sum, then one division), without its dispatch.
        rate_per_s = load.target_utilisation * cluster.total_gpus / (float(gpu_s.sum()) / n)
    gaps = rng.exponential(1.0 / rate_per_s, size=n)
    gaps[0] = 0.0  # the first job arrives at time 0
    return np.cumsum(gaps), rate_per_s * 3600.0


def _finish(
    name: str,
    params: dict[str, Any],
    job_types: list[str],
    batch: np.ndarray,
    gpus: np.ndarray,
    duration_s: np.ndarray,
    iters: np.ndarray,
    streams: list[np.random.Generator],
    load: Load,
    cluster: ClusterSpec,
    rates: _Rates,
    deadline: DeadlineModel,
    max_gpus_per_job: int | None,
) -> Workload:
    rng_arrival, rng_deadline = streams
    # Python scalars (``tolist``) rather than numpy ones: the same IEEE values, cheaper per element.
    batch_l: list[int] = batch.tolist()
    gpus_l: list[int] = gpus.tolist()
    iters_l: list[float] = iters.tolist()
    gpu_s = np.array(
        [
            g * it / max(rates.mean(jt, b, g), 1e-12)
            for jt, b, g, it in zip(job_types, batch_l, gpus_l, iters_l, strict=True)
        ]
    )
    submit, rate_per_h = _arrivals(rng_arrival, load, gpu_s, cluster)
    deadlines = deadline(rng_deadline, submit, duration_s)
    jobs = [
        JobSpec(
            job_id=i,
            submit_s=sub,
            job_type=jt,
            batch_size=b,
            total_iters=it,
            num_gpus=g,
            deadline_s=ddl,
            duration_s=dur,
            max_gpus=max_gpus_per_job if max_gpus_per_job is not None and max_gpus_per_job >= g else None,
        )
        for i, (sub, jt, b, it, g, ddl, dur) in enumerate(
            zip(
                submit.tolist(),
                job_types,
                batch_l,
                iters_l,
                gpus_l,
                np.asarray(deadlines, dtype=np.float64).tolist(),
                duration_s.tolist(),
                strict=True,
            )
        )
    ]
    meta = {
        "generator": name,
        "params": params,
        "cluster": cluster.name,
        "arrival_rate_per_h": rate_per_h,
        "offered_gpu_s": float(gpu_s.sum()),
        "deadline_model": deadline.name,
    }
    return Workload(tuple(jobs), meta)


#: ElasticFlow's batch sizes per model on the A100, per throughput model (immutable once built).
_EF_BATCHES: weakref.WeakKeyDictionary[ThroughputModel, dict[str, tuple[int, ...]]] = weakref.WeakKeyDictionary()


def _elasticflow_batches(throughput: ThroughputModel) -> dict[str, tuple[int, ...]]:
    """``{model: throughput.batch_sizes(model, "a100")}`` over :data:`ELASTICFLOW_MODELS`, built once
    per throughput model (a scan of its whole table per model)."""
    out = _EF_BATCHES.get(throughput)
    if out is None:
        out = _EF_BATCHES[throughput] = {m: throughput.batch_sizes(m, "a100") for m in ELASTICFLOW_MODELS}
    return out


def gavel_philly(
    num_jobs: int,
    *,
    seed: int = 0,
    cluster: ClusterSpec | str = "gavel-108",
    load: Load | None = None,
    deadline: DeadlineModel | None = None,
    max_gpus_per_job: int | None = None,
    throughput: ThroughputModel | None = None,
) -> Workload:
    """Gavel's synthetic Philly-like workload (see the module docstring for the recipe).

    Args:
        num_jobs: Jobs to draw.
        seed: Seed of every random stream.
        cluster: Cluster the load is expressed on (and whose largest type caps nothing: use
            ``max_gpus_per_job`` to cap scale factors).
        load: Offered load (default: target utilisation 0.8).
        deadline: Deadline model (default: none, as in Gavel's JCT experiments).
        max_gpus_per_job: Cap on the scale factor, and the jobs' ``max_gpus``.
        throughput: Throughput model (default: the embedded table).
    """
    num_jobs = check_num_jobs(num_jobs)
    max_gpus_per_job = _check_cap(max_gpus_per_job)
    cluster = get_cluster(cluster)
    throughput = throughput or ThroughputModel.default()
    load = load or Load(target_utilisation=0.8)
    ddl: DeadlineModel = deadline or NoDeadline()
    ref = reference_gpu(cluster, throughput, "v100")
    rng_tpl, rng_scale, rng_dur, rng_long, rng_arr, rng_ddl = _streams(seed, 6)
    tpl_idx = rng_tpl.integers(0, len(GAVEL_TEMPLATES), size=num_jobs)
    scale = _draw_scale(rng_scale, PHILLY_SCALE, num_jobs)
    long_job = rng_long.uniform(0, 1, size=num_jobs) < 0.2
    expo = np.where(long_job, rng_dur.uniform(3, 4, size=num_jobs), rng_dur.uniform(1.5, 3, size=num_jobs))
    duration_s = 60.0 * portable.power(10.0, expo)
    job_types: list[str] = []
    batch_l: list[int] = []
    gpus_l: list[int] = []
    for k, scale_i in zip(tpl_idx.tolist(), scale.tolist(), strict=True):
        jt, per_gpu_bs, distributed = GAVEL_TEMPLATES[k]
        sf = int(scale_i) if distributed else 1
        if max_gpus_per_job is not None:
            sf = min(sf, max_gpus_per_job)
        job_types.append(jt)
        gpus_l.append(sf)
        batch_l.append(per_gpu_bs * sf)
    batch = np.array(batch_l, dtype=np.int64)
    gpus = np.array(gpus_l, dtype=np.int64)
    rates = _rates_for(throughput, cluster)
    iters = np.array(
        [
            dur * rates.rate(jt, b, ref, g)
            for dur, jt, b, g in zip(duration_s.tolist(), job_types, batch_l, gpus_l, strict=True)
        ]
    )
    params = {
        "num_jobs": num_jobs,
        "seed": seed,
        "load": load.__dict__,
        "max_gpus_per_job": max_gpus_per_job,
        "reference_gpu": ref,
    }
    return _finish(
        "gavel-philly",
        params,
        job_types,
        batch,
        gpus,
        duration_s,
        iters,
        [rng_arr, rng_ddl],
        load,
        cluster,
        rates,
        ddl,
        max_gpus_per_job,
    )


def elasticflow(
    num_jobs: int,
    *,
    seed: int = 0,
    cluster: ClusterSpec | str = "default",
    load: Load | None = None,
    deadline: DeadlineModel | None = None,
    max_gpus_per_job: int | None = None,
    throughput: ThroughputModel | None = None,
) -> Workload:
    """ElasticFlow's synthetic deadline workload (see the module docstring for the recipe).

    Args:
        num_jobs: Jobs to draw.
        seed: Seed of every random stream.
        cluster: Cluster the load is expressed on.
        load: Offered load (default: target utilisation 0.8).
        deadline: Deadline model (default: ElasticFlow's U(0.5, 1.5) x duration).
        max_gpus_per_job: Cap on the scale factor; also the jobs' ``max_gpus`` (elastic upper bound).
        throughput: Throughput model (default: the embedded table).
    """
    num_jobs = check_num_jobs(num_jobs)
    max_gpus_per_job = _check_cap(max_gpus_per_job)
    cluster = get_cluster(cluster)
    throughput = throughput or ThroughputModel.default()
    load = load or Load(target_utilisation=0.8)
    ddl: DeadlineModel = deadline or ElasticFlowDeadline()
    ref = reference_gpu(cluster, throughput, "a100")
    rng_model, rng_scale, rng_dur, rng_long, rng_arr, rng_ddl = _streams(seed, 6)
    model_idx = rng_model.integers(0, len(ELASTICFLOW_MODELS), size=num_jobs)
    scale = _draw_scale(rng_scale, ITP_SCALE, num_jobs)
    if max_gpus_per_job is not None:
        scale = np.minimum(scale, max_gpus_per_job)
    long_job = rng_long.uniform(0, 1, size=num_jobs) < 0.2
    expo = np.where(long_job, rng_dur.uniform(2.5, 4, size=num_jobs), rng_dur.uniform(1, 2.5, size=num_jobs))
    duration_s = 60.0 * portable.power(10.0, expo)
    job_types = [ELASTICFLOW_MODELS[k] for k in model_idx.tolist()]
    batches = _elasticflow_batches(throughput)
    # One draw per job from U{0, len - 1} of its model's sizes: one call with an array of bounds takes
    # the same draws, in the same order, as a call per job (numpy's bounded integers draw element by
    # element either way; tests/workloads/test_generators.py holds the equality).
    picks = rng_model.integers(0, np.array([len(batches[jt]) for jt in job_types], dtype=np.int64)).tolist()
    batch_l = [batches[jt][k] for jt, k in zip(job_types, picks, strict=True)]
    batch = np.array(batch_l, dtype=np.int64)
    rates = _rates_for(throughput, cluster)
    iters = np.array(
        [
            dur * rates.rate(jt, b, ref, g)
            for dur, jt, b, g in zip(duration_s.tolist(), job_types, batch_l, scale.tolist(), strict=True)
        ]
    )
    params = {
        "num_jobs": num_jobs,
        "seed": seed,
        "load": load.__dict__,
        "max_gpus_per_job": max_gpus_per_job,
        "reference_gpu": ref,
    }
    return _finish(
        "elasticflow",
        params,
        job_types,
        batch,
        scale.astype(np.int64),
        duration_s,
        iters,
        [rng_arr, rng_ddl],
        load,
        cluster,
        rates,
        ddl,
        max_gpus_per_job,
    )


RECIPES = {"gavel-philly": gavel_philly, "elasticflow": elasticflow}
DEADLINE_DEFAULTS: dict[str, type[Any]] = {
    "gavel-philly": NoDeadline,
    "elasticflow": ElasticFlowDeadline,
}
__all__ = [
    "ELASTICFLOW_MODELS",
    "GAVEL_TEMPLATES",
    "RECIPES",
    "GavelSLODeadline",
    "Load",
    "elasticflow",
    "gavel_philly",
]
