"""Build the embedded throughput calibration tables under ``hetgym/data/``.

Usage::

    python scripts/build_throughput_table.py [--data ../shared/data] [--out hetgym/data]

Reads the read-only reference data (see ``../shared/data/MANIFEST.md``) and writes

* ``throughputs.csv`` -- one row per measured (job type, GLOBAL batch size, GPU type, number of GPUs,
  placement) with the iterations per second of the whole job, plus H100 rows that are ESTIMATES
  (A100 rate x an MLPerf H100/A100 speed ratio);
* ``gpu_types.csv`` -- a relative per-GPU speed index (v100 = 1.0) and nominal memory per GPU type.

The output is deterministic: the same inputs always give byte-identical files, so the committed tables
can be checked by re-running this script. ``hetgym/data/NOTICE.md`` documents every rule used here.
Only the Python standard library is used so the result cannot depend on a dataframe library's version.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import math
import re
import statistics
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"
DEFAULT_OUT_DIR = REPO_ROOT / "hetgym" / "data"

THROUGHPUT_COLUMNS = (
    "job_type",
    "batch_size",
    "gpu_type",
    "num_gpus",
    "placement",
    "iters_per_s",
    "source",
    "iters_per_s_full",
)
GPU_TYPE_COLUMNS = ("gpu_type", "speed_index", "mem_gb", "source", "note")

# ---------------------------------------------------------------------------------------------------------
# Gavel (stanford-futuredata/gavel, scheduler/simulation_throughputs.json)
# ---------------------------------------------------------------------------------------------------------
GAVEL_JSON = Path("gavel") / "simulation_throughputs.json.gz"
GAVEL_SOURCE = "gavel-simulation"
GAVEL_JOB_NAMES = {
    "ResNet-18": "resnet18",
    "ResNet-50": "resnet50",
    "Transformer": "transformer",
    "LM": "lm",
    "Recommendation": "recommendation",
    "A3C": "a3c",
    "CycleGAN": "cyclegan",
}
# Gavel's keys for these two carry no batch size. CycleGAN runs with cyclegan.py's default --batch_size 1;
# A3C (asynchronous RL) has no batch at all, so 1 is a placeholder. NOTICE.md says so.
GAVEL_UNBATCHED_PER_GPU_BATCH = {"A3C": 1, "CycleGAN": 1}
# worker type in the JSON -> (gpu_type, placement)
GAVEL_WORKER_TYPES = {
    "k80": ("k80", "consolidated"),
    "p100": ("p100", "consolidated"),
    "v100": ("v100", "consolidated"),
    "k80_unconsolidated": ("k80", "unconsolidated"),
    "p100_unconsolidated": ("p100", "unconsolidated"),
    "v100_unconsolidated": ("v100", "unconsolidated"),
}
GAVEL_ISOLATED_FIELD = "null"  # the other fields of an entry are co-location (space-sharing) pairs
# Gavel's figure for an n-GPU job is the SUM over its n workers of each worker's steps/s: its profiler
# (scheduler/scripts/profiling/measure_throughput.py, _done_callback) adds the per-worker rates, and its
# simulator (scheduler/scheduler.py, simulate) splits a job's steps evenly across the workers. Each worker of
# a synchronous data-parallel job runs every iteration, so whole-job iterations/s = figure / n.
GAVEL_RATE_IS_SUM_OVER_WORKERS = True
_GAVEL_KEY_RE = re.compile(r"^\('(?P<job>[^']+)', (?P<scale_factor>\d+)\)$")
_GAVEL_JOB_RE = re.compile(r"^(?P<name>.+?) \(batch size (?P<batch>\d+)\)$")

# ---------------------------------------------------------------------------------------------------------
# ElasticFlow (pkusys/ElasticFlow, scheduler/throughputs_A100 and throughputs_T4)
# ---------------------------------------------------------------------------------------------------------
ELASTICFLOW_DIR = Path("elasticflow_throughputs")
# folder -> (gpu_type, source, {file stem: job_type}); stems not listed keep their name
ELASTICFLOW_TABLES = {
    "throughputs_A100": ("a100", "elasticflow-a100", {}),
    # The T4 tables come from Pollux: "imagenet" is ResNet-50 on ImageNet, "cifar10" is ResNet-18 on CIFAR-10.
    "throughputs_T4": ("t4", "elasticflow-t4", {"imagenet": "resnet50", "cifar10": "resnet18"}),
}
ELASTICFLOW_MISSING_CELLS = {"", "nan"}  # unmeasured: empty in the A100 files, "nan" in the T4 files

# ---------------------------------------------------------------------------------------------------------
# MLPerf Training (mlcommons/training_results_v0.7, v3.0, v4.1; parsed time-to-train table)
# ---------------------------------------------------------------------------------------------------------
MLPERF_CSV = Path("mlperf") / "mlperf_training_time_to_train.csv"
H100_SOURCE = "estimate-mlperf-h100/a100"
H100_RATIO_ROUND = "v3.0"  # v4.1 has no like-for-like A100 entry (only multi-node PCIe), see NOTICE.md
A100_V100_RATIO_ROUND = "v0.7"  # the one round with both V100 and A100 systems
# Which MLPerf benchmark stands for a job type; every other job type gets the geometric mean.
MLPERF_BENCHMARK_FOR_JOB = {"bert": "bert", "resnet50": "resnet", "resnet50_cifar10": "resnet"}
# PCIe / NVL parts run at lower power and bandwidth; compare SXM(-class) parts only, like with like.
_MLPERF_EXCLUDED_FORM_FACTOR_RE = re.compile(r"pcie|nvl", re.IGNORECASE)
_MLPERF_FAMILY_RE = re.compile(r"(V100|A100|H100)", re.IGNORECASE)
SIGNIFICANT_DIGITS_RATIO = 4  # speed ratios and indices are published (and applied) at this precision
SIGNIFICANT_DIGITS_RATE = 6  # iterations/s in throughputs.csv

# ---------------------------------------------------------------------------------------------------------
# GPU types: nominal memory per GPU (K80: per die, a K80 board has two)
# ---------------------------------------------------------------------------------------------------------
GPU_MEM_GB = {"k80": 12, "p100": 16, "v100": 16, "t4": 16, "a100": 40, "h100": 80}
GPU_TYPE_ORDER = ("k80", "p100", "v100", "t4", "a100", "h100")
T4_REFERENCE_NUM_GPUS = 1  # the speed index is a per-GPU figure, so compare single-GPU rates


@dataclass(frozen=True)
class ThroughputRow:
    """One row of throughputs.csv; batch_size is the GLOBAL batch (samples per iteration, all GPUs)."""

    job_type: str
    batch_size: int
    gpu_type: str
    num_gpus: int
    placement: str
    iters_per_s: float
    source: str

    @property
    def key(self) -> tuple[str, int, str, int, str]:
        return (self.job_type, self.batch_size, self.gpu_type, self.num_gpus, self.placement)

    @property
    def sort_key(self) -> tuple[str, int, str, str, int]:
        return (self.job_type, self.batch_size, self.gpu_type, self.placement, self.num_gpus)


@dataclass(frozen=True)
class MlperfResult:
    """One MLPerf system result: time-to-train of one system on one benchmark in one round."""

    round: str
    benchmark: str
    accelerator_model_name: str
    number_of_nodes: float | None
    total_accelerators: int
    olympic_mean_minutes: float

    @property
    def accelerator_minutes(self) -> float:
        return self.olympic_mean_minutes * self.total_accelerators


# ---------------------------------------------------------------------------------------------------------
# Number helpers
# ---------------------------------------------------------------------------------------------------------
def round_significant(value: float, digits: int) -> float:
    """Round to ``digits`` significant digits (via the decimal string, so it is exact and portable)."""
    return float(f"{value:.{digits}g}")


def format_float(value: float, digits: int = SIGNIFICANT_DIGITS_RATE) -> str:
    """Shortest repr of the value rounded to ``digits`` significant digits: stable when read and rewritten."""
    return repr(round_significant(value, digits))


def geometric_mean(values: Iterable[float]) -> float:
    logs = [math.log(v) for v in values]
    if not logs:
        raise ValueError("geometric mean of no values")
    return math.exp(math.fsum(logs) / len(logs))


# ---------------------------------------------------------------------------------------------------------
# Gavel
# ---------------------------------------------------------------------------------------------------------
def parse_gavel_key(key: str) -> tuple[str, int, int]:
    """``"('ResNet-50 (batch size 64)', 4)"`` -> ``("resnet50", 64, 4)``: job type, PER-GPU batch, GPUs."""
    match = _GAVEL_KEY_RE.match(key)
    if match is None:
        raise ValueError(f"unexpected Gavel key {key!r}")
    job, scale_factor = match["job"], int(match["scale_factor"])
    batch_match = _GAVEL_JOB_RE.match(job)
    if batch_match is not None:
        name, per_gpu_batch = batch_match["name"], int(batch_match["batch"])
    else:
        name, per_gpu_batch = job, GAVEL_UNBATCHED_PER_GPU_BATCH[job]
    return GAVEL_JOB_NAMES[name], per_gpu_batch, scale_factor


def load_gavel_json(data_dir: Path) -> dict:
    with gzip.open(data_dir / GAVEL_JSON, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def gavel_rows(data_dir: Path) -> tuple[list[ThroughputRow], list[tuple[str, str]]]:
    """Isolated Gavel throughputs as whole-job iterations/s at the GLOBAL batch (per-GPU batch x GPUs).

    Returns the rows and the (worker type, key) entries dropped because their table key already occurred
    (the first occurrence, in file order, is kept).
    """
    table = load_gavel_json(data_dir)
    rows: dict[tuple[str, int, str, int, str], ThroughputRow] = {}
    duplicates: list[tuple[str, str]] = []
    for worker_type, entries in table.items():
        gpu_type, placement = GAVEL_WORKER_TYPES[worker_type]
        for key, entry in entries.items():
            rate = entry.get(GAVEL_ISOLATED_FIELD)
            if not isinstance(rate, (int, float)) or not math.isfinite(rate):
                continue  # no isolated measurement for this key
            job_type, per_gpu_batch, num_gpus = parse_gavel_key(key)
            workers_summed = num_gpus if GAVEL_RATE_IS_SUM_OVER_WORKERS else 1
            row = ThroughputRow(
                job_type=job_type,
                batch_size=per_gpu_batch * num_gpus,  # Gavel scales weakly: each GPU keeps its batch
                gpu_type=gpu_type,
                num_gpus=num_gpus,
                placement=placement,
                iters_per_s=float(rate) / workers_summed,
                source=GAVEL_SOURCE,
            )
            if row.key in rows:
                duplicates.append((worker_type, key))
            else:
                rows[row.key] = row
    return list(rows.values()), duplicates


def gavel_single_gpu_speed_ratios(data_dir: Path) -> tuple[dict[str, float], int]:
    """k80 and p100 speed relative to v100: geometric mean over single-GPU consolidated keys of rate ratios.

    Only keys measured non-zero on all three types are used (a zero is an infeasible configuration).
    Returns ({"k80": ratio, "p100": ratio}, number of keys used).
    """
    table = load_gavel_json(data_dir)
    gpu_types = ("k80", "p100", "v100")
    single_gpu_keys = [key for key in table["v100"] if parse_gavel_key(key)[2] == 1]
    usable = [
        key
        for key in single_gpu_keys
        if all(table[gpu].get(key, {}).get(GAVEL_ISOLATED_FIELD, 0.0) > 0.0 for gpu in gpu_types)
    ]
    ratios = {
        gpu: geometric_mean(
            table[gpu][key][GAVEL_ISOLATED_FIELD] / table["v100"][key][GAVEL_ISOLATED_FIELD] for key in usable
        )
        for gpu in ("k80", "p100")
    }
    return ratios, len(usable)


# ---------------------------------------------------------------------------------------------------------
# ElasticFlow
# ---------------------------------------------------------------------------------------------------------
def read_elasticflow_csv(path: Path) -> list[tuple[int, int, float]]:
    """``global_batch_size,1,2,...,64`` table -> (global batch, num GPUs, iters/s); missing cells skipped."""
    with path.open(newline="", encoding="utf-8") as handle:  # some files use CRLF line ends
        reader = csv.reader(handle)
        header = [cell.strip() for cell in next(reader)]
        if header[0] != "global_batch_size":
            raise ValueError(f"{path}: unexpected header {header}")
        gpu_counts = [int(cell) for cell in header[1:]]
        cells: list[tuple[int, int, float]] = []
        for record in reader:
            if not record:
                continue
            global_batch = int(record[0])
            for num_gpus, cell in zip(gpu_counts, record[1:], strict=False):
                text = cell.strip()
                if text.lower() in ELASTICFLOW_MISSING_CELLS:
                    continue
                cells.append((global_batch, num_gpus, float(text)))
    return cells


def elasticflow_rows(data_dir: Path) -> list[ThroughputRow]:
    rows: list[ThroughputRow] = []
    for folder, (gpu_type, source, renames) in ELASTICFLOW_TABLES.items():
        for path in sorted((data_dir / ELASTICFLOW_DIR / folder).glob("*.csv")):
            job_type = renames.get(path.stem, path.stem)
            for global_batch, num_gpus, rate in read_elasticflow_csv(path):
                rows.append(ThroughputRow(job_type, global_batch, gpu_type, num_gpus, "consolidated", rate, source))
    return rows


def t4_to_a100_speed_ratio(ef_rows: Sequence[ThroughputRow]) -> dict[str, tuple[int, int, float]]:
    """Per job type on both T4 and A100: (T4 batch, A100 batch, T4/A100 samples/s ratio) on one GPU.

    Uses equal global batches where both exist; otherwise the pair of batches closest in log ratio (ties:
    smaller batches), compared in samples/s so the differing batches cancel out.
    """
    by_gpu: dict[str, dict[str, dict[int, float]]] = {"t4": {}, "a100": {}}
    for row in ef_rows:
        if row.num_gpus == T4_REFERENCE_NUM_GPUS and row.iters_per_s > 0.0:
            by_gpu[row.gpu_type].setdefault(row.job_type, {})[row.batch_size] = row.iters_per_s
    result: dict[str, tuple[int, int, float]] = {}
    for job_type in sorted(set(by_gpu["t4"]) & set(by_gpu["a100"])):
        t4_rates, a100_rates = by_gpu["t4"][job_type], by_gpu["a100"][job_type]
        pairs = sorted((abs(math.log(b_t4 / b_a100)), b_t4, b_a100) for b_t4 in t4_rates for b_a100 in a100_rates)
        _, b_t4, b_a100 = pairs[0]
        ratio = (t4_rates[b_t4] * b_t4) / (a100_rates[b_a100] * b_a100)
        result[job_type] = (b_t4, b_a100, ratio)
    return result


# ---------------------------------------------------------------------------------------------------------
# MLPerf
# ---------------------------------------------------------------------------------------------------------
def load_mlperf(data_dir: Path) -> list[MlperfResult]:
    with (data_dir / MLPERF_CSV).open(newline="", encoding="utf-8") as handle:
        return [
            MlperfResult(
                round=record["round"],
                benchmark=record["benchmark"],
                accelerator_model_name=record["accelerator_model_name"],
                number_of_nodes=float(record["number_of_nodes"]) if record["number_of_nodes"] else None,
                total_accelerators=int(record["total_accelerators"]),
                olympic_mean_minutes=float(record["olympic_mean_minutes"]),
            )
            for record in csv.DictReader(handle)
        ]


def accelerator_family(name: str) -> str | None:
    """'NVIDIA H100-SXM5-80GB' -> 'h100'; PCIe/NVL parts and other accelerators -> None."""
    if _MLPERF_EXCLUDED_FORM_FACTOR_RE.search(name):
        return None
    match = _MLPERF_FAMILY_RE.search(name)
    return match.group(1).lower() if match else None


def mlperf_speed_ratios(
    results: Sequence[MlperfResult], round_name: str, slow: str, fast: str
) -> dict[str, tuple[float, float, int, int, float]]:
    """Per benchmark: speed of ``fast`` relative to ``slow`` as a ratio of accelerator-minutes.

    Rule: one round; SXM-class parts only; single-node systems only (multi-node runs pay scale-out
    losses, and rows without a node count cannot be normalised); per benchmark and family the MEDIAN
    accelerator-minutes (olympic-mean minutes x total accelerators) over systems; ratio = slow / fast.
    Returns {benchmark: (median slow, median fast, n slow systems, n fast systems, ratio)}.
    """
    minutes: dict[tuple[str, str], list[float]] = {}
    for result in results:
        family = accelerator_family(result.accelerator_model_name)
        if result.round != round_name or family not in (slow, fast):
            continue
        if result.number_of_nodes != 1.0 or result.total_accelerators <= 0:
            continue
        minutes.setdefault((result.benchmark, family), []).append(result.accelerator_minutes)
    ratios: dict[str, tuple[float, float, int, int, float]] = {}
    for benchmark in sorted({bench for bench, _ in minutes}):
        if (benchmark, slow) in minutes and (benchmark, fast) in minutes:
            slow_minutes = statistics.median(minutes[(benchmark, slow)])
            fast_minutes = statistics.median(minutes[(benchmark, fast)])
            ratios[benchmark] = (
                slow_minutes,
                fast_minutes,
                len(minutes[(benchmark, slow)]),
                len(minutes[(benchmark, fast)]),
                slow_minutes / fast_minutes,
            )
    return ratios


def h100_ratio_table(results: Sequence[MlperfResult]) -> dict[str, float]:
    """Published H100/A100 ratios, rounded: one per matched benchmark plus 'geomean' for everything else."""
    per_benchmark = mlperf_speed_ratios(results, H100_RATIO_ROUND, slow="a100", fast="h100")
    table = {
        benchmark: round_significant(per_benchmark[benchmark][-1], SIGNIFICANT_DIGITS_RATIO)
        for benchmark in sorted(set(MLPERF_BENCHMARK_FOR_JOB.values()))
    }
    table["geomean"] = round_significant(
        geometric_mean(entry[-1] for entry in per_benchmark.values()), SIGNIFICANT_DIGITS_RATIO
    )
    return table


def h100_ratio_for_job(job_type: str, ratio_table: dict[str, float]) -> float:
    return ratio_table[MLPERF_BENCHMARK_FOR_JOB.get(job_type, "geomean")]


def h100_rows(a100_rows: Iterable[ThroughputRow], ratio_table: dict[str, float]) -> list[ThroughputRow]:
    """ESTIMATED H100 rows: the A100 row's rate x the H100/A100 MLPerf ratio for its job type."""
    return [
        ThroughputRow(
            job_type=row.job_type,
            batch_size=row.batch_size,
            gpu_type="h100",
            num_gpus=row.num_gpus,
            placement=row.placement,
            iters_per_s=row.iters_per_s * h100_ratio_for_job(row.job_type, ratio_table),
            source=H100_SOURCE,
        )
        for row in a100_rows
    ]


# ---------------------------------------------------------------------------------------------------------
# Assembly
# ---------------------------------------------------------------------------------------------------------
@dataclass
class BuildResult:
    """Everything one build produces: the two tables' rows and the derived figures NOTICE.md quotes."""

    throughput_rows: list[ThroughputRow]
    gpu_type_rows: list[dict[str, str]]
    figures: dict[str, object]


def build(data_dir: Path) -> BuildResult:
    """Read every source under ``data_dir`` and derive both tables (nothing is written here)."""
    gavel, gavel_duplicates = gavel_rows(data_dir)
    elasticflow = elasticflow_rows(data_dir)
    mlperf = load_mlperf(data_dir)
    ratio_table = h100_ratio_table(mlperf)
    h100 = h100_rows((row for row in elasticflow if row.gpu_type == "a100"), ratio_table)

    rows = sorted([*gavel, *elasticflow, *h100], key=lambda row: row.sort_key)
    keys = [row.key for row in rows]
    if len(set(keys)) != len(keys):
        raise ValueError("duplicate (job_type, batch_size, gpu_type, num_gpus, placement) across sources")

    # --- speed indices (v100 = 1.0) ---
    gavel_ratios, num_gavel_keys = gavel_single_gpu_speed_ratios(data_dir)
    a100_v100 = mlperf_speed_ratios(mlperf, A100_V100_RATIO_ROUND, slow="v100", fast="a100")
    a100_index = round_significant(geometric_mean(entry[-1] for entry in a100_v100.values()), SIGNIFICANT_DIGITS_RATIO)
    t4_pairs = t4_to_a100_speed_ratio(elasticflow)
    t4_over_a100 = geometric_mean(pair[-1] for pair in t4_pairs.values())
    speed_index = {
        "k80": round_significant(gavel_ratios["k80"], SIGNIFICANT_DIGITS_RATIO),
        "p100": round_significant(gavel_ratios["p100"], SIGNIFICANT_DIGITS_RATIO),
        "v100": 1.0,
        "t4": round_significant(t4_over_a100 * a100_index, SIGNIFICANT_DIGITS_RATIO),
        "a100": a100_index,
        "h100": round_significant(a100_index * ratio_table["geomean"], SIGNIFICANT_DIGITS_RATIO),
    }
    # cross-check for a100: ResNet-50 at global batch 64 on one GPU, ElasticFlow A100 vs Gavel V100
    rate = {row.key: row.iters_per_s for row in rows}
    resnet50_a100_over_v100 = (
        rate[("resnet50", 64, "a100", 1, "consolidated")] / rate[("resnet50", 64, "v100", 1, "consolidated")]
    )
    sources = {
        "k80": "gavel-simulation",
        "p100": "gavel-simulation",
        "v100": "reference",
        "t4": "elasticflow-t4/a100",
        "a100": "mlperf-v0.7",
        "h100": H100_SOURCE,
    }
    notes = {
        "k80": f"geomean of k80/v100 single-GPU it/s over {num_gavel_keys} Gavel keys; 12 GB per die",
        "p100": f"geomean of p100/v100 single-GPU it/s over {num_gavel_keys} Gavel keys",
        "v100": "reference type (speed 1.0)",
        "t4": "geomean T4/A100 single-GPU samples/s (ElasticFlow) x a100 index; estimate",
        "a100": "geomean V100/A100 accelerator-minutes over MLPerf v0.7 benchmarks; 40 GB variant",
        "h100": "a100 index x MLPerf v3.0 H100/A100 geomean ratio; estimate; 80 GB nominal",
    }
    gpu_type_rows = [
        {
            "gpu_type": gpu,
            "speed_index": format_float(speed_index[gpu], SIGNIFICANT_DIGITS_RATIO),
            "mem_gb": str(GPU_MEM_GB[gpu]),
            "source": sources[gpu],
            "note": notes[gpu],
        }
        for gpu in GPU_TYPE_ORDER
    ]
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.source] = counts.get(row.source, 0) + 1
    figures: dict[str, object] = {
        "rows_per_source": dict(sorted(counts.items())),
        "gavel_duplicates_dropped": gavel_duplicates,
        "h100_over_a100_per_benchmark_v3.0": mlperf_speed_ratios(mlperf, H100_RATIO_ROUND, "a100", "h100"),
        "h100_over_a100_applied": ratio_table,
        "a100_over_v100_per_benchmark_v0.7": a100_v100,
        "gavel_single_gpu_ratios": gavel_ratios,
        "gavel_single_gpu_keys_used": num_gavel_keys,
        "t4_over_a100_pairs": t4_pairs,
        "t4_over_a100_geomean": t4_over_a100,
        "resnet50_bs64_1gpu_a100_over_v100": resnet50_a100_over_v100,
        "speed_index": speed_index,
    }
    return BuildResult(rows, gpu_type_rows, figures)


def write_tables(result: BuildResult, out_dir: Path, rate_digits: int = SIGNIFICANT_DIGITS_RATE) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "throughputs.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(THROUGHPUT_COLUMNS)
        for row in result.throughput_rows:
            writer.writerow(
                [
                    row.job_type,
                    row.batch_size,
                    row.gpu_type,
                    row.num_gpus,
                    row.placement,
                    format_float(row.iters_per_s, rate_digits),
                    row.source,
                    repr(float(row.iters_per_s)),  # the same figure as read or derived, every digit kept
                ]
            )
    with (out_dir / "gpu_types.csv").open("w", newline="", encoding="utf-8") as handle:
        dict_writer = csv.DictWriter(handle, fieldnames=GPU_TYPE_COLUMNS, lineterminator="\n")
        dict_writer.writeheader()
        dict_writer.writerows(result.gpu_type_rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="reference data (../shared/data)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT_DIR, help="output folder (hetgym/data)")
    parser.add_argument("--quiet", action="store_true", help="do not print the derived figures")
    parser.add_argument(
        "--rate-digits",
        type=int,
        default=SIGNIFICANT_DIGITS_RATE,
        choices=range(1, 18),
        metavar="{1..17}",
        help=f"significant digits of iters_per_s (default {SIGNIFICANT_DIGITS_RATE}; 17 keeps the figures as read)",
    )
    args = parser.parse_args(argv)
    if not (args.data / "MANIFEST.md").is_file():
        parser.error(f"no reference data at {args.data} (expected MANIFEST.md there)")
    result = build(args.data)
    write_tables(result, args.out, args.rate_digits)
    if not args.quiet:
        for name, value in result.figures.items():
            print(f"{name}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
