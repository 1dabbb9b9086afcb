"""Named, seeded samplers that fill what a trace lacks: the model (job type and batch), the iterations
and the deadline. Every output records which sampler filled how many jobs, with its parameters.

* ``table-uniform`` (model): the job type uniformly at random among the throughput table's job types
  measured on the job's reference GPU type (or among ``models`` when given), restricted to those able to
  run the job's GPU count there (a positive rate; single-GPU-only types such as ``a3c`` only for 1-GPU
  jobs); then the global batch uniformly among that type's batch sizes measured at the job's GPU count
  on the reference type (at the largest measured count below it when that count was never measured).
  This mirrors Gavel's and ElasticFlow's generators, which assign models at random.
* ``duration-x-reference-rate`` (iterations): ``total_iters = duration_s x rate(job_type, batch,
  reference GPU, num_gpus)``, so the job runs exactly its recorded time on its reference GPU type.
* deadlines: any model of :mod:`hetgym.workloads.deadlines` (``elasticflow``, ``gavel-slo``,
  ``none``), applied to the job's submission and recorded run time.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from hetgym.sim.throughput import ThroughputModel
from hetgym.workloads.schema import TraceError

MODEL_SAMPLER = "table-uniform"
ITERATIONS_SAMPLER = "duration-x-reference-rate"


@dataclass
class TableModelSampler:
    """The ``table-uniform`` model sampler (see the module docstring).

    Args:
        throughput: The throughput model whose job types and batch sizes are drawn from.
        models: Restrict the draw to these job types (default: every type measured on the reference GPU).
    """

    throughput: ThroughputModel
    models: tuple[str, ...] | None = None
    _cache: dict[tuple[str, int], list[tuple[str, tuple[int, ...]]]] = field(default_factory=dict, repr=False)

    name = MODEL_SAMPLER

    def __post_init__(self) -> None:
        if self.models is not None:
            if not self.models:
                raise ValueError("models is empty; give at least one job type or leave it unset")
            for m in self.models:
                self.throughput.check_job_type(m)

    def candidates(self, reference_gpu: str, num_gpus: int) -> list[tuple[str, tuple[int, ...]]]:
        """``[(job_type, batch sizes)]`` a job of ``num_gpus`` on ``reference_gpu`` may be given."""
        key = (reference_gpu, num_gpus)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        tp = self.throughput
        pool = self.models or tuple(j for j in tp.job_types if reference_gpu in tp.measured_gpu_types(j))
        out: list[tuple[str, tuple[int, ...]]] = []
        for jt in pool:
            on_ref = reference_gpu in tp.measured_gpu_types(jt)
            ref_types = (reference_gpu,) if on_ref else tp.measured_gpu_types(jt)
            counts = sorted({n for g in ref_types for n in tp.measured_gpu_counts(jt, g)})
            if num_gpus > 1 and (not counts or counts[-1] <= 1):
                continue  # single-GPU-only job type
            # Batches measured at the job's count (or the largest measured count below it).
            pos = bisect.bisect_right(counts, num_gpus)
            n_eff = counts[pos - 1] if pos > 0 else counts[0]
            batches = sorted(
                {b for g in ref_types for b in tp.batch_sizes(jt, g) if n_eff in tp.measured_gpu_counts(jt, g, b)}
            )
            feasible = tuple(b for b in batches if tp.rate(jt, b, reference_gpu, num_gpus) > 0)
            if feasible:
                out.append((jt, feasible))
        self._cache[key] = out
        return out

    def draw(
        self,
        rng: np.random.Generator,
        reference_gpus: Sequence[str],
        num_gpus: Sequence[int],
    ) -> tuple[list[str], list[int]]:
        """A job type and global batch for each job.

        Raises:
            TraceError: No job type can run some job's GPU count on its reference GPU type.
        """
        n = len(num_gpus)
        u_type = rng.random(n)
        u_batch = rng.random(n)
        types: list[str] = []
        batches: list[int] = []
        for i in range(n):
            cands = self.candidates(reference_gpus[i], int(num_gpus[i]))
            if not cands:
                pool = list(self.models) if self.models else "the table's job types"
                raise TraceError(
                    f"no job type among {pool} can run {num_gpus[i]} GPUs of {reference_gpus[i]!r}; "
                    "widen --models, cap GPUs with --max-gpus, or pick another --reference-gpu"
                )
            jt, sizes = cands[int(u_type[i] * len(cands))]
            types.append(jt)
            batches.append(int(sizes[int(u_batch[i] * len(sizes))]))
        return types, batches
