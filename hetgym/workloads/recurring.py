"""Recurring mixed-parallel training jobs: the workload of prediction-assisted schedulers (A-SRPT).

Luo et al. (INFOCOM 2025) observe that most distributed training jobs with mixed parallelism recur:
the same user submits the same model with the same configuration again and again, and the run length
of a recurrence is close to that of earlier ones. This generator draws such a workload (a reconstruction
[I] of the setting the abstract describes; user guide: ``docs/communication-policies.md``):

* **Templates** ``(user, model, configuration)``. A template fixes the job type and global batch size
  (measured on A100 in the throughput table), the GPU count ``g`` in {1, 2, 4, 8, 16, 32} (probabilities
  0.25/0.15/0.20/0.20/0.12/0.08), the parallelism ``(dp, pp, tp)`` with ``dp * pp * tp = g``
  (transformer models: DP-only, DPxPP or DPxPPxTP with probabilities 0.3/0.3/0.4; other models: DP-only
  or DPxPP with 0.7/0.3; ``tp`` in {2, 4, 8}, ``pp`` in {2, 4}), the dataset, learning rate and optimizer,
  and a hidden number of epochs (log-uniform in the dataset's range). Its mean iterations are
  ``epochs * dataset_samples / batch_size``; its spread ``sigma`` is drawn from U(0.2, 0.5).
* **Jobs.** With probability ``recurring_fraction`` a job recurs: its template is drawn from a fixed pool of
  ``num_templates`` with Zipf popularity (weight ``1 / rank ** zipf_s``). Otherwise it is a one-off (a
  fresh template seen once). Its iterations are ``mean * exp(sigma * z)``, ``z ~ N(0, 1)`` (the template
  mean is the median). ``model_bytes`` is the nominal fp32 size of its model
  (:data:`hetgym.sim.comm.NOMINAL_MODEL_BYTES`).
* **Arrivals and load** as in :mod:`hetgym.workloads.generators`: Poisson arrivals at a rate given by a
  :class:`~hetgym.workloads.generators.Load` (arrival rate, or target utilisation of ``cluster``).

The visible predictor features are the job's fields (type, batch, GPUs, parallelism, model bytes, user,
``template_id``) and ``features`` ``dataset``, ``dataset_samples``, ``lr``, ``optimizer``; the epochs
stay hidden, like the length of a run that stops early. Every random choice has its own stream.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hetgym.limits import max_drawn_jobs
from hetgym.sim import portable
from hetgym.sim.cluster import ClusterSpec, get_cluster
from hetgym.sim.comm import NOMINAL_MODEL_BYTES
from hetgym.sim.config import SimConfig, check_number
from hetgym.sim.job import JobSpec
from hetgym.sim.throughput import ThroughputModel
from hetgym.workloads.deadlines import DeadlineModel, NoDeadline
from hetgym.workloads.generators import (
    DEADLINE_DEFAULTS,
    RECIPES,
    Load,
    _arrivals,
    _streams,
    check_num_jobs,
    mean_rate,
)
from hetgym.workloads.scenario import SCENARIOS, Scenario, WorkloadConfig
from hetgym.workloads.schema import Workload


@dataclass(frozen=True)
class Dataset:
    """A training data set: its size and the range of epochs templates train on it."""

    name: str
    samples: int
    epochs_lo: float
    epochs_hi: float


@dataclass(frozen=True)
class ModelFamily:
    """A job type of the throughput table usable in recurring templates."""

    job_type: str
    batch_sizes: tuple[int, ...]
    datasets: tuple[str, ...]
    transformer: bool  # tensor parallelism allowed
    max_gpus: int = 32
    lr_range: tuple[float, float] = (1e-3, 1e-1)
    optimizers: tuple[str, ...] = ("sgd", "lars")


DATASETS: dict[str, Dataset] = {
    d.name: d
    for d in (
        Dataset("imagenet", 1_281_167, 1.0, 40.0),
        Dataset("imagenet-100", 126_689, 5.0, 60.0),
        Dataset("cifar10", 50_000, 20.0, 200.0),
        Dataset("librispeech-100", 28_539, 5.0, 50.0),
        Dataset("squad", 88_641, 1.0, 4.0),
        Dataset("wikipedia-shard", 1_000_000, 1.0, 10.0),
        Dataset("openwebtext-shard", 2_000_000, 0.5, 5.0),
        Dataset("wikitext-103", 114_000, 2.0, 30.0),
    )
}

#: Models measured on A100 (ElasticFlow's table), the parallelism they allow and their data sets.
RECURRING_MODELS: tuple[ModelFamily, ...] = (
    ModelFamily("gpt2", (128, 256), ("openwebtext-shard", "wikitext-103"), True, 32, (1e-5, 1e-3), ("adamw", "adam")),
    ModelFamily("bert", (64, 128), ("squad", "wikipedia-shard"), True, 32, (1e-5, 1e-3), ("adamw", "lamb")),
    ModelFamily("resnet50", (64, 128, 256), ("imagenet", "imagenet-100"), False),
    ModelFamily("vgg16", (64, 128, 256), ("imagenet", "imagenet-100"), False),
    ModelFamily("inception3", (64, 128), ("imagenet", "imagenet-100"), False),
    ModelFamily("deepspeech2", (32, 64), ("librispeech-100",), False, 32, (1e-4, 1e-2), ("adam", "sgd")),
    # Measured as infeasible (rate 0) on 16 GPUs or more.
    ModelFamily("resnet50_cifar10", (64, 128, 256), ("cifar10",), False, 8),
)

GPU_COUNTS: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
GPU_COUNT_PROBS: tuple[float, ...] = (0.25, 0.15, 0.20, 0.20, 0.12, 0.08)


@dataclass(frozen=True)
class Template:
    """A recurring job template (user, model, configuration) and its hidden run-length law."""

    template_id: str
    user: str
    job_type: str
    batch_size: int
    parallelism: tuple[int, int, int]
    dataset: str
    lr: float
    optimizer: str
    mean_iters: float
    sigma: float

    @property
    def num_gpus(self) -> int:
        """GPUs of a job of this template."""
        dp, pp, tp = self.parallelism
        return dp * pp * tp


def _divisors_in(values: Sequence[int], n: int) -> list[int]:
    return [v for v in values if n % v == 0]


def _parallelism(rng: np.random.Generator, family: ModelFamily, g: int) -> tuple[int, int, int]:
    if g == 1:
        return (1, 1, 1)
    kinds, probs = (
        (("dp", "dpxpp", "dpxppxtp"), (0.3, 0.3, 0.4)) if family.transformer else (("dp", "dpxpp"), (0.7, 0.3))
    )
    kind = kinds[int(rng.choice(len(kinds), p=probs))]
    if kind == "dpxppxtp":
        tp = int(rng.choice(_divisors_in((2, 4, 8), g)))
        pp_options = _divisors_in((1, 2, 4), g // tp)
        pp = int(rng.choice(pp_options))
        return (g // (tp * pp), pp, tp)
    if kind == "dpxpp":
        pp = int(rng.choice(_divisors_in((2, 4), g)))
        return (g // pp, pp, 1)
    return (g, 1, 1)


def draw_template(
    rng: np.random.Generator,
    template_id: str,
    user: str,
    families: Sequence[ModelFamily] = RECURRING_MODELS,
    max_gpus_per_job: int | None = None,
    sigma_range: tuple[float, float] = (0.2, 0.5),
) -> Template:
    """Draw one template (see the module docstring for the distribution)."""
    family = families[int(rng.integers(0, len(families)))]
    cap = min(family.max_gpus, max_gpus_per_job or family.max_gpus)
    counts = [c for c in GPU_COUNTS if c <= cap]
    probs = np.array([p for c, p in zip(GPU_COUNTS, GPU_COUNT_PROBS, strict=True) if c <= cap])
    g = int(counts[int(rng.choice(len(counts), p=probs / probs.sum()))])
    parallelism = _parallelism(rng, family, g)
    batch = int(family.batch_sizes[int(rng.integers(0, len(family.batch_sizes)))])
    dataset = DATASETS[family.datasets[int(rng.integers(0, len(family.datasets)))]]
    epochs = math.exp(rng.uniform(math.log(dataset.epochs_lo), math.log(dataset.epochs_hi)))
    lr = math.exp(rng.uniform(math.log(family.lr_range[0]), math.log(family.lr_range[1])))
    optimizer = family.optimizers[int(rng.integers(0, len(family.optimizers)))]
    sigma = float(rng.uniform(*sigma_range))
    mean_iters = max(1.0, epochs * dataset.samples / batch)
    return Template(
        template_id, user, family.job_type, batch, parallelism, dataset.name, lr, optimizer, mean_iters, sigma
    )


def recurring(
    num_jobs: int,
    *,
    seed: int = 0,
    cluster: ClusterSpec | str = "a100-128",
    load: Load | None = None,
    deadline: DeadlineModel | None = None,
    max_gpus_per_job: int | None = None,
    throughput: ThroughputModel | None = None,
    num_templates: int = 40,
    num_users: int = 12,
    recurring_fraction: float = 0.6,
    zipf_s: float = 1.0,
    sigma_range: tuple[float, float] = (0.2, 0.5),
    reference_gpu: str = "a100",
) -> Workload:
    """Recurring mixed-parallel jobs (see the module docstring for the recipe).

    Args:
        num_jobs: Jobs to draw.
        seed: Seed of every random stream.
        cluster: Cluster the load is expressed on (default ``a100-128``: 16 servers of 8 A100).
        load: Offered load (default: target utilisation 0.7).
        deadline: Deadline model (default: none; A-SRPT minimises JCT).
        max_gpus_per_job: Cap on a template's GPU count.
        throughput: Throughput model (default: the embedded table).
        num_templates: Size of the pool of recurring templates.
        num_users: Users owning the templates (template ``i`` belongs to a uniformly drawn user).
        recurring_fraction: Probability that a job recurs (otherwise it is a one-off).
        zipf_s: Popularity exponent of the templates (0 = uniform).
        sigma_range: Range of the per-template log-normal spread of iterations.
        reference_gpu: GPU type of ``duration_s`` (the job's run time alone on that type).

    Returns:
        A :class:`~hetgym.workloads.schema.Workload`; its metadata holds the generator's parameters and
        the template of every job is its ``template_id``.
    """
    num_jobs = check_num_jobs(num_jobs)
    for name, value in (("num_templates", num_templates), ("num_users", num_users)):
        check_number(name, value, low=1, high=max_drawn_jobs(), integer=True, fix="at most the bound on jobs")
    if not 0.0 <= recurring_fraction <= 1.0:
        raise ValueError(f"recurring_fraction={recurring_fraction}; it must be in [0, 1]")
    if zipf_s < 0:
        raise ValueError(f"zipf_s={zipf_s}; it must be >= 0")
    lo, hi = sigma_range
    if not 0 <= lo <= hi:
        raise ValueError(f"sigma_range={sigma_range}; give (low, high) with 0 <= low <= high")
    if max_gpus_per_job is not None and max_gpus_per_job < 1:
        raise ValueError(f"max_gpus_per_job={max_gpus_per_job}; it must be >= 1")
    cluster = get_cluster(cluster)
    throughput = throughput or ThroughputModel.default()
    throughput.check_gpu_type(reference_gpu)
    load = load or Load(target_utilisation=0.7)
    ddl: DeadlineModel = deadline or NoDeadline()
    rng_tpl, rng_pick, rng_once, rng_iters, rng_arr, rng_ddl = _streams(seed, 6)
    users = [f"u{u:02d}" for u in range(num_users)]
    pool = [
        draw_template(
            rng_tpl,
            f"t{i:03d}",
            users[int(rng_tpl.integers(0, num_users))],
            max_gpus_per_job=max_gpus_per_job,
            sigma_range=sigma_range,
        )
        for i in range(num_templates)
    ]
    weights = 1.0 / portable.power(np.arange(1, num_templates + 1), zipf_s)
    weights /= weights.sum()
    recurs = rng_pick.uniform(0, 1, size=num_jobs) < recurring_fraction
    picks = rng_pick.choice(num_templates, size=num_jobs, p=weights)
    templates: list[Template] = []
    num_one_off = 0
    for i in range(num_jobs):
        if recurs[i]:
            templates.append(pool[int(picks[i])])
        else:
            user = users[int(rng_once.integers(0, num_users))]
            templates.append(
                draw_template(
                    rng_once, f"o{num_one_off:04d}", user, max_gpus_per_job=max_gpus_per_job, sigma_range=sigma_range
                )
            )
            num_one_off += 1
    z = rng_iters.standard_normal(num_jobs)
    iters = np.array([max(1.0, t.mean_iters * math.exp(t.sigma * z[i])) for i, t in enumerate(templates)])
    gpus = np.array([t.num_gpus for t in templates])
    gpu_s = np.array(
        [
            t.num_gpus * it / max(mean_rate(throughput, cluster, t.job_type, t.batch_size, t.num_gpus), 1e-12)
            for t, it in zip(templates, iters, strict=True)
        ]
    )
    submit, rate_per_h = _arrivals(rng_arr, load, gpu_s, cluster)
    duration_s = np.array(
        [
            it / max(throughput.rate(t.job_type, t.batch_size, reference_gpu, t.num_gpus), 1e-12)
            for t, it in zip(templates, iters, strict=True)
        ]
    )
    deadlines = ddl(rng_ddl, submit, duration_s)
    jobs = [
        JobSpec(
            job_id=i,
            submit_s=float(submit[i]),
            job_type=t.job_type,
            batch_size=t.batch_size,
            total_iters=float(iters[i]),
            num_gpus=int(gpus[i]),
            deadline_s=float(deadlines[i]),
            user=t.user,
            parallelism=t.parallelism,
            model_bytes=float(NOMINAL_MODEL_BYTES[t.job_type]),
            duration_s=float(duration_s[i]),
            template_id=t.template_id,
            features={
                "dataset": t.dataset,
                "dataset_samples": DATASETS[t.dataset].samples,
                "lr": float(f"{t.lr:.6g}"),
                "optimizer": t.optimizer,
            },
        )
        for i, t in enumerate(templates)
    ]
    params: dict[str, Any] = {
        "num_jobs": num_jobs,
        "seed": seed,
        "load": load.__dict__,
        "max_gpus_per_job": max_gpus_per_job,
        "num_templates": num_templates,
        "num_users": num_users,
        "recurring_fraction": recurring_fraction,
        "zipf_s": zipf_s,
        "sigma_range": list(sigma_range),
        "reference_gpu": reference_gpu,
    }
    meta = {
        "generator": "recurring",
        "params": params,
        "cluster": cluster.name,
        "arrival_rate_per_h": rate_per_h,
        "offered_gpu_s": float(gpu_s.sum()),
        "deadline_model": ddl.name,
        "num_one_off": num_one_off,
    }
    return Workload(tuple(jobs), meta)


# Register the recipe and a scenario, so `WorkloadConfig(recipe="recurring")` and
# `get_scenario("recurring")` work like the built-in ones.
RECIPES["recurring"] = recurring
DEADLINE_DEFAULTS["recurring"] = NoDeadline
SCENARIOS.setdefault(
    "recurring",
    Scenario(
        "recurring",
        "a100-128",
        WorkloadConfig(recipe="recurring", num_jobs=300, target_utilisation=0.7),
        sim=SimConfig(comm="bandwidth"),
        description=(
            "Recurring mixed-parallel jobs (A-SRPT's setting) at utilisation 0.7 on 16x8 A100, "
            "with the bandwidth communication model"
        ),
    ),
)

__all__ = ["DATASETS", "RECURRING_MODELS", "Dataset", "ModelFamily", "Template", "draw_template", "recurring"]
