"""Check the embedded calibration tables (hetgym/data/*.csv) against the reference data they came from.

The figure checks re-read the raw sources (Gavel JSON, ElasticFlow CSVs, MLPerf table) with their own code,
independently of scripts/build_throughput_table.py; only the byte-for-byte reproduction test runs the script.
The reference data lives outside the repository (../shared/data); without it these tests are skipped.
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = REPO_ROOT.parent / "shared" / "data"
TABLE_DIR = REPO_ROOT / "hetgym" / "data"
BUILD_SCRIPT = REPO_ROOT / "scripts" / "build_throughput_table.py"

THROUGHPUT_COLUMNS = [
    "job_type",
    "batch_size",
    "gpu_type",
    "num_gpus",
    "placement",
    "iters_per_s",
    "source",
    "iters_per_s_full",
]
GPU_TYPE_COLUMNS = ["gpu_type", "speed_index", "mem_gb", "source", "note"]
KEY_COLUMNS = ["job_type", "batch_size", "gpu_type", "num_gpus", "placement"]
H100_SOURCE = "estimate-mlperf-h100/a100"
# The table stores 6 significant digits, so a stored rate can differ from the source by 5e-6 relative.
RATE_REL_TOL = 1e-5

pytestmark = pytest.mark.skipif(
    not (DATA_DIR / "MANIFEST.md").is_file(),
    reason=f"reference data not found at {DATA_DIR} (expected ../shared/data next to the repository)",
)


@pytest.fixture(scope="module")
def throughputs() -> pd.DataFrame:
    return pd.read_csv(TABLE_DIR / "throughputs.csv")


@pytest.fixture(scope="module")
def gpu_types() -> pd.DataFrame:
    return pd.read_csv(TABLE_DIR / "gpu_types.csv").set_index("gpu_type")


@pytest.fixture(scope="module")
def rate_by_key(throughputs: pd.DataFrame) -> dict[tuple, float]:
    return {
        tuple(key): rate
        for key, rate in zip(
            throughputs[KEY_COLUMNS].itertuples(index=False, name=None),
            throughputs["iters_per_s"],
            strict=True,
        )
    }


def round_sig(value: float, digits: int = 4) -> float:
    return float(f"{value:.{digits}g}")


def assert_rate_close(actual: float, expected: float, what: object, rel: float = RATE_REL_TOL) -> None:
    assert actual == pytest.approx(expected, rel=rel, abs=0.0), f"{what}: table {actual} != source {expected}"


# ---------------------------------------------------------------------------------------------------------
# Table shape
# ---------------------------------------------------------------------------------------------------------
def test_throughput_table_schema(throughputs: pd.DataFrame) -> None:
    assert list(throughputs.columns) == THROUGHPUT_COLUMNS
    assert throughputs["batch_size"].dtype == np.int64
    assert throughputs["num_gpus"].dtype == np.int64
    assert throughputs["iters_per_s"].dtype == np.float64
    assert throughputs["iters_per_s_full"].dtype == np.float64
    for column in ("job_type", "gpu_type", "placement", "source"):
        assert all(isinstance(value, str) for value in throughputs[column]), column
    assert not throughputs.isna().any().any()
    assert (throughputs["iters_per_s"] >= 0.0).all()
    assert (throughputs["batch_size"] >= 1).all()
    assert set(throughputs["num_gpus"]) <= {1, 2, 4, 8, 16, 32, 64}
    assert set(throughputs["placement"]) == {"consolidated", "unconsolidated"}
    assert set(throughputs["gpu_type"]) == {"k80", "p100", "v100", "t4", "a100", "h100"}
    assert set(throughputs["source"]) == {
        "gavel-simulation",
        "elasticflow-a100",
        "elasticflow-t4",
        H100_SOURCE,
    }
    assert not throughputs.duplicated(KEY_COLUMNS).any()


def test_throughput_table_is_sorted(throughputs: pd.DataFrame) -> None:
    order = ["job_type", "batch_size", "gpu_type", "placement", "num_gpus"]
    assert throughputs.equals(throughputs.sort_values(order, kind="stable").reset_index(drop=True))


def test_gpu_type_table_schema(gpu_types: pd.DataFrame) -> None:
    assert list(gpu_types.reset_index().columns) == GPU_TYPE_COLUMNS
    assert list(gpu_types.index) == ["k80", "p100", "v100", "t4", "a100", "h100"]
    assert gpu_types["speed_index"].dtype == np.float64
    assert (gpu_types["speed_index"] > 0.0).all()
    assert gpu_types.loc["v100", "speed_index"] == 1.0
    assert gpu_types["mem_gb"].to_dict() == {
        "k80": 12,
        "p100": 16,
        "v100": 16,
        "t4": 16,
        "a100": 40,
        "h100": 80,
    }
    for value in gpu_types["speed_index"]:
        assert value == round_sig(value), "speed indices are published at 4 significant digits"


# ---------------------------------------------------------------------------------------------------------
# Gavel
# ---------------------------------------------------------------------------------------------------------
GAVEL_NAMES = {
    "ResNet-18": "resnet18",
    "ResNet-50": "resnet50",
    "Transformer": "transformer",
    "LM": "lm",
    "Recommendation": "recommendation",
    "A3C": "a3c",
    "CycleGAN": "cyclegan",
}


def gavel_isolated_entries() -> list[tuple[str, str, int, int, float]]:
    """(worker type, job type, per-GPU batch, GPUs, figure) for every usable isolated Gavel value."""
    with gzip.open(DATA_DIR / "gavel" / "simulation_throughputs.json.gz", "rt") as handle:
        table = json.load(handle)
    entries = []
    for worker_type, keys in table.items():
        for key, value in keys.items():
            figure = value.get("null")
            if not isinstance(figure, (int, float)) or not math.isfinite(figure):
                continue
            key_match = re.fullmatch(r"\('(.+)', (\d+)\)", key)
            assert key_match is not None, key
            job, scale_factor = key_match.groups()
            batch_match = re.fullmatch(r"(.+) \(batch size (\d+)\)", job)
            name, per_gpu_batch = (batch_match[1], int(batch_match[2])) if batch_match else (job, 1)
            entries.append((worker_type, GAVEL_NAMES[name], per_gpu_batch, int(scale_factor), float(figure)))
    return entries


def test_gavel_rows_match_json(throughputs: pd.DataFrame, rate_by_key: dict[tuple, float]) -> None:
    entries = gavel_isolated_entries()
    gavel = throughputs[throughputs["source"] == "gavel-simulation"]
    assert len(gavel) == len(entries) == 492
    for worker_type, job_type, per_gpu_batch, num_gpus, figure in entries:
        gpu_type, _, suffix = worker_type.partition("_")
        placement = "unconsolidated" if suffix == "unconsolidated" else "consolidated"
        key = (job_type, per_gpu_batch * num_gpus, gpu_type, num_gpus, placement)
        assert key in rate_by_key, key
        # Gavel's n-GPU figure is the sum of the n workers' steps/s; the table holds whole-job iterations/s.
        assert_rate_close(rate_by_key[key], figure / num_gpus, key)


def test_gavel_conversion_example(rate_by_key: dict[tuple, float]) -> None:
    """The documented example: ('ResNet-50 (batch size 64)', 4) on v100 -> global batch 256, 4 GPUs."""
    assert_rate_close(rate_by_key[("resnet50", 256, "v100", 4, "consolidated")], 9.451949566394442 / 4, "r50")
    assert rate_by_key[("resnet50", 256, "k80", 2, "consolidated")] == 0.0  # infeasible on K80 (kept)


# ---------------------------------------------------------------------------------------------------------
# ElasticFlow
# ---------------------------------------------------------------------------------------------------------
ELASTICFLOW_FOLDERS = {
    "throughputs_A100": ("a100", "elasticflow-a100"),
    "throughputs_T4": ("t4", "elasticflow-t4"),
}
T4_RENAMES = {"imagenet": "resnet50", "cifar10": "resnet18"}


def elasticflow_cells() -> list[tuple[tuple, float, str]]:
    cells = []
    for folder, (gpu_type, source) in ELASTICFLOW_FOLDERS.items():
        for path in sorted((DATA_DIR / "elasticflow_throughputs" / folder).glob("*.csv")):
            job_type = T4_RENAMES.get(path.stem, path.stem) if gpu_type == "t4" else path.stem
            with path.open(newline="") as handle:
                rows = list(csv.reader(handle))
            gpu_counts = [int(cell) for cell in rows[0][1:]]
            for record in rows[1:]:
                for num_gpus, cell in zip(gpu_counts, record[1:], strict=False):
                    if cell.strip() == "" or cell.strip().lower() == "nan":
                        continue
                    key = (job_type, int(record[0]), gpu_type, num_gpus, "consolidated")
                    cells.append((key, float(cell), source))
    return cells


def test_elasticflow_rows_match_csv(throughputs: pd.DataFrame, rate_by_key: dict[tuple, float]) -> None:
    cells = elasticflow_cells()
    for source in ("elasticflow-a100", "elasticflow-t4"):
        expected = sum(1 for _, _, cell_source in cells if cell_source == source)
        assert (throughputs["source"] == source).sum() == expected, source
    source_by_key = dict(zip(map(tuple, throughputs[KEY_COLUMNS].values.tolist()), throughputs["source"], strict=True))
    for key, figure, source in cells:
        assert source_by_key[key] == source, key
        assert_rate_close(rate_by_key[key], figure, key)


# ---------------------------------------------------------------------------------------------------------
# MLPerf-derived ratios (documented rule, implemented here independently)
# ---------------------------------------------------------------------------------------------------------
def mlperf_ratios(round_name: str, slow: str, fast: str) -> pd.Series:
    """Per benchmark: median accelerator-minutes of `slow` / of `fast` (single-node, SXM-class systems)."""
    table = pd.read_csv(DATA_DIR / "mlperf" / "mlperf_training_time_to_train.csv")
    table = table[(table["round"] == round_name) & (table["number_of_nodes"] == 1)]
    table = table[table["total_accelerators"] > 0]
    table = table[~table["accelerator_model_name"].str.contains("pcie|nvl", case=False)]
    family = table["accelerator_model_name"].str.extract(r"(V100|A100|H100)", flags=re.IGNORECASE)[0]
    table = table.assign(family=family.str.lower(), acc_min=table["olympic_mean_minutes"] * table["total_accelerators"])
    medians = table.groupby(["benchmark", "family"])["acc_min"].median().unstack()
    return (medians[slow] / medians[fast]).dropna()


@pytest.fixture(scope="module")
def h100_ratios() -> dict[str, float]:
    per_benchmark = mlperf_ratios("v3.0", slow="a100", fast="h100")
    geomean = float(np.exp(np.log(per_benchmark).mean()))
    return {
        "bert": round_sig(per_benchmark["bert"]),
        "resnet": round_sig(per_benchmark["resnet"]),
        "geomean": round_sig(geomean),
    }


H100_BENCHMARK_FOR_JOB = {"bert": "bert", "resnet50": "resnet", "resnet50_cifar10": "resnet"}


def test_h100_rows_are_a100_times_documented_ratio(
    throughputs: pd.DataFrame, rate_by_key: dict[tuple, float], h100_ratios: dict[str, float]
) -> None:
    h100 = throughputs[throughputs["gpu_type"] == "h100"]
    a100 = throughputs[throughputs["gpu_type"] == "a100"]
    assert (h100["source"] == H100_SOURCE).all()
    assert "estimate" in H100_SOURCE
    assert len(h100) == len(a100)
    for job_type, batch_size, num_gpus, placement, rate in h100[
        ["job_type", "batch_size", "num_gpus", "placement", "iters_per_s"]
    ].itertuples(index=False, name=None):
        ratio = h100_ratios[H100_BENCHMARK_FOR_JOB.get(job_type, "geomean")]
        a100_rate = rate_by_key[(job_type, batch_size, "a100", num_gpus, placement)]
        # both sides are rounded to 6 significant digits, so allow twice the single-rounding tolerance
        assert_rate_close(rate, a100_rate * ratio, (job_type, batch_size, num_gpus), rel=2 * RATE_REL_TOL)


def test_notice_documents_the_ratios(h100_ratios: dict[str, float], gpu_types: pd.DataFrame) -> None:
    notice = (TABLE_DIR / "NOTICE.md").read_text(encoding="utf-8")
    for ratio in h100_ratios.values():
        assert f"{ratio:g}" in notice
    for speed in gpu_types["speed_index"]:
        assert f"{speed:g}" in notice


def test_speed_index_of_k80_and_p100_from_gavel(gpu_types: pd.DataFrame) -> None:
    """Geometric mean over single-GPU consolidated keys (non-zero on k80, p100, v100) of rate / v100 rate."""
    single_gpu: dict[str, dict[tuple, float]] = {"k80": {}, "p100": {}, "v100": {}}
    for worker_type, job_type, per_gpu_batch, num_gpus, figure in gavel_isolated_entries():
        if worker_type in single_gpu and num_gpus == 1:
            single_gpu[worker_type][(job_type, per_gpu_batch)] = figure
    keys = [key for key in single_gpu["v100"] if all(single_gpu[gpu].get(key, 0.0) > 0.0 for gpu in single_gpu)]
    assert len(keys) == 26
    for gpu in ("k80", "p100"):
        ratios = np.array([single_gpu[gpu][key] / single_gpu["v100"][key] for key in keys])
        assert gpu_types.loc[gpu, "speed_index"] == round_sig(float(np.exp(np.log(ratios).mean()))), gpu


def test_speed_index_of_a100_and_h100_from_mlperf(gpu_types: pd.DataFrame, h100_ratios: dict[str, float]) -> None:
    a100_over_v100 = mlperf_ratios("v0.7", slow="v100", fast="a100")
    a100 = round_sig(float(np.exp(np.log(a100_over_v100).mean())))
    assert gpu_types.loc["a100", "speed_index"] == a100
    assert gpu_types.loc["h100", "speed_index"] == round_sig(a100 * h100_ratios["geomean"])
    assert gpu_types.loc["h100", "source"] == H100_SOURCE


# ---------------------------------------------------------------------------------------------------------
# Reproducibility
# ---------------------------------------------------------------------------------------------------------
def load_build_script(monkeypatch: pytest.MonkeyPatch):
    spec = importlib.util.spec_from_file_location("build_throughput_table", BUILD_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses resolve annotations through sys.modules, so the module must be registered while it loads
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_build_script_reproduces_committed_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build = load_build_script(monkeypatch)
    assert build.main(["--data", str(DATA_DIR), "--out", str(tmp_path), "--quiet"]) == 0
    for name in ("throughputs.csv", "gpu_types.csv"):
        assert (tmp_path / name).read_bytes() == (TABLE_DIR / name).read_bytes(), name


def test_build_script_keeps_the_figures_as_read_with_17_digits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build = load_build_script(monkeypatch)
    assert build.main(["--data", str(DATA_DIR), "--out", str(tmp_path), "--quiet", "--rate-digits", "17"]) == 0
    exact = pd.read_csv(tmp_path / "throughputs.csv")
    committed = pd.read_csv(TABLE_DIR / "throughputs.csv")
    # Same rows; each committed figure is the exact one rounded to 6 significant digits.
    assert len(exact) == len(committed)
    assert (exact["iters_per_s"].map(lambda v: float(f"{v:.6g}")) == committed["iters_per_s"]).all()
    assert (exact["iters_per_s"] != committed["iters_per_s"]).any()


def test_the_full_precision_column_rounds_to_the_table_and_only_the_raw_model_reads_it() -> None:
    from hetgym.sim.throughput import ThroughputModel, load_table

    table = load_table()
    full = table["iters_per_s_full"]
    assert (full.map(lambda v: float(f"{v:.6g}")) == table["iters_per_s"]).all()
    changed = table.index[full != table["iters_per_s"]]
    assert len(changed) > 0
    row = table.loc[changed[0]]
    key = (str(row.job_type), int(row.batch_size), str(row.gpu_type), int(row.num_gpus), str(row.placement))
    assert ThroughputModel.raw().measured_rate(*key) == row.iters_per_s_full
    assert ThroughputModel.default().measured_rate(*key) == row.iters_per_s
    # A table without the column (a user's own) is read as before by either model.
    plain = table.drop(columns=["iters_per_s_full"])
    assert ThroughputModel(plain, full_precision=True).measured_rate(*key) == row.iters_per_s
