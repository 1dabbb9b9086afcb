"""Write the small canonical sample traces in ``traces/`` with the project's own generators.

Usage::

    python scripts/make_sample_traces.py [--out traces]

Every file is drawn by a seeded synthetic recipe (none is a copy of public data), so re-running the
script reproduces them exactly; ``tests/workloads/test_sample_traces.py`` checks that.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hetgym.workloads.scenario import WorkloadConfig
from hetgym.workloads.schema import write_trace

#: file name -> (cluster, workload configuration, seed, one-line description)
SAMPLES: dict[str, tuple[str, WorkloadConfig, int, str]] = {
    "elasticflow-default-100.csv": (
        "default",
        WorkloadConfig(recipe="elasticflow", num_jobs=100, arrival_rate_per_h=3.0, max_gpus_per_job=16),
        0,
        "ElasticFlow recipe: 100 deadline jobs arriving at 3 per hour, sized for the 64-GPU default cluster",
    ),
    "gavel-philly-108-100.csv": (
        "gavel-108",
        WorkloadConfig(recipe="gavel-philly", num_jobs=100, target_utilisation=0.8, deadline="gavel-slo"),
        0,
        "Gavel-Philly recipe: 100 jobs at offered utilisation 0.8 of gavel-108, Gavel SLO deadlines",
    ),
    "elasticflow-tiny-12.parquet": (
        "tiny",
        WorkloadConfig(recipe="elasticflow", num_jobs=12, target_utilisation=0.9, max_gpus_per_job=4),
        0,
        "the `tiny` scenario's 12 jobs, as parquet",
    ),
}


def build(name: str) -> tuple[object, dict[str, object]]:
    """The workload of sample ``name`` and the extra metadata written with it."""
    cluster, config, seed, description = SAMPLES[name]
    workload = config.build(cluster, seed=seed)
    return workload, {"seed": seed, "description": description, "made_by": "scripts/make_sample_traces.py"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "traces")
    args = parser.parse_args()
    for name in SAMPLES:
        workload, meta = build(name)
        path = write_trace(workload, args.out / name, metadata=meta)  # type: ignore[arg-type]
        print(f"wrote {path} ({len(workload)} jobs)")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
