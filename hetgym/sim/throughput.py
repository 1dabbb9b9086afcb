"""Throughput model: iterations per second of a job on ``n`` GPUs of a type, from a measured table.

The table (package data ``hetgym/data/throughputs.csv``, see its ``NOTICE.md``) holds measured rates
at a few GPU counts (1, 2, 4, 8, ... ) for each ``(job_type, global batch size, gpu_type)``, both
*consolidated* (one server) and, for Gavel's figures, *unconsolidated* (spread over servers).
:class:`ThroughputModel` turns those points into a rate for any count, type and placement:

* **Interpolation in n.** Linear between measured counts. Beyond the largest measured count, a power
  law ``rate(n) = rate(n_max) * (n / n_max) ** a`` with the exponent ``a`` fitted on the last two
  points and clamped to ``[0, 1]`` (``default_scaling_exponent`` when only one point exists).
  Below the smallest feasible measured count, linear scaling down, unless a measured zero there says
  smaller counts do not fit (then every count below the first feasible one is infeasible).
* **Quirks of the measured data** (documented in ``NOTICE.md``): a rate of 0 means infeasible (out of
  memory) and stays 0; super-linear points are clamped to ``rate(n0) * n / n0`` (``clamp_superlinear``);
  non-monotone points take the running maximum over smaller counts (``monotone``), since a job can
  leave GPUs idle.
* **Batch sizes not in the table** use the nearest measured batch size (in log scale) for that job and
  GPU type, at constant samples per second.
* **GPU types a job type was never measured on** are estimated from a measured type through the
  per-type ``speed_index`` of ``gpu_types.csv``: ``rate_t = rate_ref * speed_t / speed_ref``.
* **Multi-server factor.** A job spread over several servers runs at ``rate * f`` with
  ``f = unconsolidated / consolidated`` measured by Gavel for that job, count and type (clamped to
  at most 1); where not measured, the geometric mean of the measured factors at that count.
* **Mixed GPU types** (:func:`allocation_rate`): ``sync`` (the slowest type bounds every step),
  ``proportional`` (batch split by speed, Liu et al.) and ``fork`` (independent copies per server whose
  progress adds up, less an aggregation overhead, HadarE).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Literal

import numpy as np

from hetgym.sim.errors import UnknownNameError

if TYPE_CHECKING:
    import pandas as pd

ExecutionMode = Literal["sync", "proportional", "fork"]
EXECUTION_MODES: tuple[str, ...] = ("sync", "proportional", "fork")

TABLE_COLUMNS = ("job_type", "batch_size", "gpu_type", "num_gpus", "placement", "iters_per_s", "source")
GPU_TYPE_COLUMNS = ("gpu_type", "speed_index", "mem_gb", "source", "note")
#: Optional column: ``iters_per_s`` with every digit of the figure as read (``iters_per_s`` keeps 6
#: significant digits). Only ``full_precision=True`` models read it (Gavel's compatibility mode).
FULL_PRECISION_COLUMN = "iters_per_s_full"


@dataclass(frozen=True, slots=True)
class _Curve:
    """Processed measured points of one (job_type, batch_size, gpu_type, placement)."""

    ns: tuple[int, ...]  # measured counts, ascending
    rates: tuple[float, ...]  # processed rates (0.0 = infeasible)

    def at(self, n: float, default_exponent: float) -> float:
        ns, rates = self.ns, self.rates
        feasible = [i for i, r in enumerate(rates) if r > 0]
        if not feasible:
            return 0.0
        i_lo = feasible[0]
        n0 = ns[i_lo]
        if n < n0:
            # A measured zero below the first feasible count means smaller counts do not fit (memory);
            # conservatively, nothing below the first feasible measured count does.
            if i_lo > 0:
                return 0.0
            return rates[i_lo] * n / n0
        n_max = ns[-1]
        if n > n_max:
            if len(feasible) >= 2:
                a_n, b_n = ns[feasible[-2]], ns[feasible[-1]]
                a_r, b_r = rates[feasible[-2]], rates[feasible[-1]]
                expo = math.log(b_r / a_r) / math.log(b_n / a_n) if b_r > 0 and a_r > 0 else 0.0
                expo = min(1.0, max(0.0, expo))
            else:
                expo = default_exponent
            return rates[-1] * (n / n_max) ** expo
        j = bisect.bisect_left(ns, n)
        if ns[j] == n:
            return rates[j]
        lo_n, hi_n, lo_r, hi_r = ns[j - 1], ns[j], rates[j - 1], rates[j]
        if lo_r == 0.0:  # between an infeasible and a feasible point: still infeasible below hi
            return 0.0
        return lo_r + (hi_r - lo_r) * (n - lo_n) / (hi_n - lo_n)


def _process(ns: Sequence[int], raw: Sequence[float], clamp_superlinear: bool, monotone: bool) -> _Curve:
    rates = [float(r) for r in raw]
    feasible = [i for i, r in enumerate(rates) if r > 0]
    if feasible and clamp_superlinear:
        i0 = feasible[0]
        per_gpu0 = rates[i0] / ns[i0]
        for i in feasible:
            rates[i] = min(rates[i], per_gpu0 * ns[i])
    if monotone:
        best = 0.0
        for i, r in enumerate(rates):
            if r > 0:
                best = max(best, r)
                rates[i] = best
    return _Curve(tuple(int(n) for n in ns), tuple(rates))


class ThroughputModel:
    """Rates in iterations/s from a measured table; see the module docstring for every rule.

    Args:
        table: A frame with the columns of ``throughputs.csv`` (``None``: the embedded table).
        gpu_types: A frame with the columns of ``gpu_types.csv`` (``None``: the embedded one).
        clamp_superlinear: Clamp measured super-linear scaling (default ``True``).
        monotone: Use the running maximum over smaller counts (default ``True``).
        default_scaling_exponent: Power-law exponent beyond the largest count when a curve has a
            single feasible point.
        full_precision: Read the rates from the table's ``iters_per_s_full`` column where it has a
            figure (every digit as measured) instead of ``iters_per_s`` (6 significant digits). Gavel's
            compatibility mode uses it: Gavel's round accounting (``floor(rate x round) / rate``) turns
            the 7th digit into different priorities and tie-breaks (docs/fidelity.md).

    The model is immutable after construction and safe to share between simulators.
    """

    def __init__(
        self,
        table: pd.DataFrame | None = None,
        gpu_types: pd.DataFrame | None = None,
        *,
        clamp_superlinear: bool = True,
        monotone: bool = True,
        default_scaling_exponent: float = 0.8,
        full_precision: bool = False,
    ) -> None:
        self.clamp_superlinear = clamp_superlinear
        self.monotone = monotone
        self.full_precision = full_precision
        self.default_scaling_exponent = float(default_scaling_exponent)
        if table is None and gpu_types is None:  # the embedded tables, read without pandas
            self._build(_embedded_rows(full_precision), _embedded_speed_index())
            return
        import pandas as pd

        if table is None:
            table = load_table()
        if gpu_types is None:
            gpu_types = load_gpu_types()
        missing = [c for c in TABLE_COLUMNS[:6] if c not in table.columns]
        if missing:
            raise ValueError(f"throughput table lacks column(s) {missing}; expected {list(TABLE_COLUMNS)}")
        if full_precision and FULL_PRECISION_COLUMN in table.columns:
            full = pd.to_numeric(table[FULL_PRECISION_COLUMN], errors="coerce")
            table = table.assign(iters_per_s=full.where(full.notna(), table["iters_per_s"]))
        self.speed_index: dict[str, float] = {
            str(t): float(v) for t, v in zip(gpu_types["gpu_type"], gpu_types["speed_index"], strict=True)
        }
        # (job_type, gpu_type, placement) -> {batch_size: curve}
        self._curves: dict[tuple[str, str, str], dict[int, _Curve]] = {}
        placements = (
            table["placement"] if "placement" in table.columns else pd.Series("consolidated", index=table.index)
        )
        frame = table.assign(placement=placements).sort_values(
            ["job_type", "gpu_type", "placement", "batch_size", "num_gpus"]
        )
        for key, grp in frame.groupby(["job_type", "gpu_type", "placement", "batch_size"], sort=True):
            job, gpu, place, bs = (str(k) for k in key)
            curve = _process(grp["num_gpus"].tolist(), grp["iters_per_s"].tolist(), clamp_superlinear, monotone)
            self._curves.setdefault((job, gpu, place), {})[int(float(bs))] = curve
        self._job_types: dict[str, set[str]] = {}
        self._sources: dict[tuple[str, str], str] = {}
        src_col = table["source"] if "source" in table.columns else pd.Series("user", index=table.index)
        for job, gpu, src in zip(table["job_type"], table["gpu_type"], src_col, strict=True):
            self._job_types.setdefault(str(job), set()).add(str(gpu))
            self._sources.setdefault((str(job), str(gpu)), str(src))
        self._mean_factor = self._mean_consolidation_factors()
        self._memo: dict[tuple[str, int, str, float], float] = {}
        # The table's figures as given (before clamping and running maxima), for trace conversion.
        self._raw: dict[tuple[str, int, str, int, str], float] = {
            (str(j), int(float(b)), str(g), int(n), str(p)): float(r)
            for j, b, g, n, p, r in zip(
                frame["job_type"],
                frame["batch_size"],
                frame["gpu_type"],
                frame["num_gpus"],
                frame["placement"],
                frame["iters_per_s"],
                strict=True,
            )
        }

    def _build(self, rows: list[tuple[str, int, str, int, str, float, str]], speed_index: dict[str, float]) -> None:
        """The model from ``(job_type, batch_size, gpu_type, num_gpus, placement, rate, source)`` rows in the
        table's order: the same curves, figures and sources as the frame path of ``__init__`` (rows sorted
        stably by job type, GPU type, placement, batch size and count, and grouped)."""
        self.speed_index = speed_index
        ordered = sorted(rows, key=lambda r: (r[0], r[2], r[4], r[1], r[3]))
        groups: dict[tuple[str, str, str, int], tuple[list[int], list[float]]] = {}
        for job, bs, gpu, n, place, rate, _src in ordered:
            ns, rates = groups.setdefault((job, gpu, place, bs), ([], []))
            ns.append(n)
            rates.append(rate)
        self._curves = {}
        for (job, gpu, place, bs), (ns, rates) in groups.items():
            curve = _process(ns, rates, self.clamp_superlinear, self.monotone)
            self._curves.setdefault((job, gpu, place), {})[bs] = curve
        self._job_types = {}
        self._sources = {}
        for job, _bs, gpu, _n, _place, _rate, src in rows:
            self._job_types.setdefault(job, set()).add(gpu)
            self._sources.setdefault((job, gpu), src)
        self._mean_factor = self._mean_consolidation_factors()
        self._memo = {}
        self._raw = {(job, bs, gpu, n, place): rate for job, bs, gpu, n, place, rate, _src in ordered}

    # ----------------------------------------------------------------------------------------
    @classmethod
    def default(cls) -> ThroughputModel:
        """The model over the embedded table with default options (built once, shared)."""
        return _default_model()

    @classmethod
    def raw(cls) -> ThroughputModel:
        """The model over the embedded table with the figures as measured (no clamping, no running
        maximum), as Gavel's simulator uses them (built once, shared)."""
        return _raw_model()

    @property
    def job_types(self) -> tuple[str, ...]:
        """Job types with at least one measured figure."""
        return tuple(sorted(self._job_types))

    def measured_gpu_types(self, job_type: str) -> tuple[str, ...]:
        """GPU types on which ``job_type`` has measured (or table-given) figures."""
        self.check_job_type(job_type)
        return tuple(sorted(self._job_types[job_type]))

    def batch_sizes(self, job_type: str, gpu_type: str | None = None) -> tuple[int, ...]:
        """Batch sizes in the table for ``job_type`` (on ``gpu_type`` if given)."""
        self.check_job_type(job_type)
        sizes: set[int] = set()
        for (job, gpu, place), curves in self._curves.items():
            if job == job_type and place == "consolidated" and (gpu_type is None or gpu == gpu_type):
                sizes.update(curves)
        return tuple(sorted(sizes))

    def measured_gpu_counts(self, job_type: str, gpu_type: str, batch_size: int | None = None) -> tuple[int, ...]:
        """GPU counts with a consolidated figure in the table for ``job_type`` on ``gpu_type``.

        Args:
            job_type: Job type.
            gpu_type: GPU type.
            batch_size: Only counts measured at this global batch size (default: any).

        Returns:
            The counts in ascending order, including counts measured as infeasible (rate 0);
            empty when the pair was never measured.
        """
        curves = self._curves.get((job_type, gpu_type, "consolidated"), {})
        counts: set[int] = set()
        for bs, curve in curves.items():
            if batch_size is None or bs == int(batch_size):
                counts.update(curve.ns)
        return tuple(sorted(counts))

    def measured_rate(
        self, job_type: str, batch_size: int, gpu_type: str, num_gpus: int, placement: str = "consolidated"
    ) -> float | None:
        """The table's figure exactly as given (no interpolation, clamping or running maximum).

        Returns ``None`` when the table has no row for this key. Trace converters use it to recover a
        source's own figures (e.g. Gavel's throughput at a scale factor).
        """
        return self._raw.get((job_type, int(batch_size), gpu_type, int(num_gpus), placement))

    def source(self, job_type: str, gpu_type: str) -> str:
        """Where the rate comes from: the table's source, or ``estimate-speed-index``."""
        self.check_job_type(job_type)
        self.check_gpu_type(gpu_type)
        return self._sources.get((job_type, gpu_type), "estimate-speed-index")

    def check_job_type(self, job_type: str) -> None:
        """Raise :class:`UnknownNameError` unless ``job_type`` has figures."""
        if job_type not in self._job_types:
            raise UnknownNameError("job type", job_type, self._job_types, "Job types come from the throughput table.")

    def check_gpu_type(self, gpu_type: str) -> None:
        """Raise :class:`UnknownNameError` unless ``gpu_type`` has a speed index."""
        if gpu_type not in self.speed_index:
            raise UnknownNameError(
                "GPU type",
                gpu_type,
                self.speed_index,
                "Add it to gpu_types.csv with a speed_index to use it.",
            )

    # ----------------------------------------------------------------------------------------
    def rate(self, job_type: str, batch_size: int, gpu_type: str, num_gpus: float) -> float:
        """Iterations/s of the job on ``num_gpus`` GPUs of ``gpu_type`` on one server.

        Returns 0.0 for ``num_gpus <= 0`` and for configurations measured as infeasible.
        """
        if num_gpus <= 0:
            return 0.0
        # Keyed on the exact count: a fractional count (interpolated) must not share an integer's entry.
        n = float(num_gpus)
        key = (job_type, int(batch_size), gpu_type, n)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        value = self._rate(job_type, int(batch_size), gpu_type, n, "consolidated")
        self._memo[key] = value
        return value

    def _rate(self, job_type: str, batch_size: int, gpu_type: str, n: float, placement: str) -> float:
        curves = self._curves.get((job_type, gpu_type, placement))
        if curves:
            bs_near = min(curves, key=lambda b: (abs(math.log(b / batch_size)), b))
            return curves[bs_near].at(n, self.default_scaling_exponent) * bs_near / batch_size
        if placement != "consolidated":
            return math.nan
        self.check_job_type(job_type)
        self.check_gpu_type(gpu_type)
        ref = self._reference_type(job_type, batch_size, gpu_type)
        base = self._rate(job_type, batch_size, ref, n, "consolidated")
        return base * self.speed_index[gpu_type] / self.speed_index[ref]

    def _reference_type(self, job_type: str, batch_size: int, gpu_type: str) -> str:
        """The measured type to estimate from: same batch measured first, then closest speed."""
        measured = [
            g
            for g in self._job_types[job_type]
            if g in self.speed_index and (job_type, g, "consolidated") in self._curves
        ]
        if not measured:
            raise UnknownNameError(
                "GPU type", gpu_type, self._job_types[job_type], f"(no usable figures for {job_type!r})"
            )
        target = math.log(self.speed_index[gpu_type])
        return min(
            measured,
            key=lambda g: (
                batch_size not in self._curves[(job_type, g, "consolidated")],
                abs(math.log(self.speed_index[g]) - target),
                g,
            ),
        )

    def consolidation_factor(self, job_type: str, batch_size: int, gpu_type: str, num_gpus: int) -> float:
        """Slow-down factor in (0, 1] for a job of ``num_gpus`` GPUs spread over several servers."""
        if num_gpus <= 1:
            return 1.0
        cons = self._rate(job_type, batch_size, gpu_type, num_gpus, "consolidated")
        uncons = self._rate(job_type, batch_size, gpu_type, num_gpus, "unconsolidated")
        if math.isnan(uncons) or cons <= 0 or uncons <= 0:
            return self._mean_factor_at(num_gpus)
        return min(1.0, uncons / cons)

    def _mean_consolidation_factors(self) -> dict[int, float]:
        logs: dict[int, list[float]] = {}
        for (job, gpu, place), curves in self._curves.items():
            if place != "unconsolidated":
                continue
            cons_curves = self._curves.get((job, gpu, "consolidated"), {})
            for bs, curve in curves.items():
                cons = cons_curves.get(bs)
                if cons is None:
                    continue
                for n, r in zip(curve.ns, curve.rates, strict=True):
                    if n > 1 and r > 0 and n in cons.ns:
                        c = cons.rates[cons.ns.index(n)]
                        if c > 0:
                            logs.setdefault(n, []).append(math.log(min(1.0, r / c)))
        return {n: math.exp(float(np.mean(v))) for n, v in sorted(logs.items())}

    def _mean_factor_at(self, num_gpus: int) -> float:
        if not self._mean_factor:
            return 1.0
        ns = sorted(self._mean_factor)
        best = min(ns, key=lambda n: (abs(math.log(n / num_gpus)), n))
        return self._mean_factor[best]

    def best_gpu_type(self, job_type: str, batch_size: int, num_gpus: int, gpu_types: Sequence[str]) -> str:
        """The type among ``gpu_types`` with the highest rate at ``num_gpus`` (first on ties)."""
        return max(gpu_types, key=lambda t: self.rate(job_type, batch_size, t, num_gpus))


@dataclass(frozen=True, slots=True)
class ServerGroup:
    """GPUs of one job on one server: the unit of placement and of a ``fork`` copy."""

    server_id: int
    gpu_type: str
    num_gpus: int


def allocation_rate(
    model: ThroughputModel,
    job_type: str,
    batch_size: int,
    groups: Sequence[ServerGroup],
    mode: ExecutionMode = "sync",
    *,
    aggregation_s: float = 0.0,
    round_s: float = 360.0,
    fork_efficiency: float = 1.0,
    multi_server_factor: bool = True,
) -> float:
    """Iterations/s of a job placed on ``groups`` (server groups, possibly of several GPU types).

    Args:
        model: The throughput model.
        job_type: Job type.
        batch_size: Global batch size.
        groups: The job's GPUs, one entry per server.
        mode: ``sync``: every step waits for the slowest type, ``rate = min_t rate(t, N)`` with N the
            total count. ``proportional``: the batch is split in proportion to speed so no worker waits,
            ``rate = sum_t (n_t / N) * rate(t, N)``. Both are multiplied by the multi-server factor of
            the slowest type when more than one server is used. ``fork``: each server group is an
            independent copy (HadarE); progress adds up,
            ``rate = fork_efficiency * sum_g rate(t_g, n_g) * (1 - aggregation_s / round_s)`` with the
            aggregation overhead charged only when there are two or more copies.
        aggregation_s: Parameter-aggregation time per round for ``fork`` (e.g. model bytes / NIC bandwidth).
        round_s: Round length used to amortise ``aggregation_s``.
        fork_efficiency: Statistical efficiency of averaging copies, in (0, 1].
        multi_server_factor: Apply the measured multi-server factor to ``sync`` and ``proportional``
            jobs on several servers (``False``: the rate as if on one server, for the bandwidth model
            of :mod:`hetgym.sim.comm`, which charges the cut traffic instead).
    """
    if not groups:
        return 0.0
    if mode == "fork":
        total = sum(model.rate(job_type, batch_size, g.gpu_type, g.num_gpus) for g in groups)
        if len(groups) > 1:
            total *= fork_efficiency * max(0.0, 1.0 - aggregation_s / round_s)
        return total
    per_type: dict[str, int] = {}
    for g in groups:
        per_type[g.gpu_type] = per_type.get(g.gpu_type, 0) + g.num_gpus
    total_gpus = sum(per_type.values())
    rates = {t: model.rate(job_type, batch_size, t, total_gpus) for t in per_type}
    slowest = min(rates, key=lambda t: (rates[t], t))
    if mode == "sync" or len(per_type) == 1:
        value = rates[slowest]
    elif mode == "proportional":
        value = sum(per_type[t] / total_gpus * rates[t] for t in per_type)
    else:
        raise ValueError(f"unknown execution mode {mode!r}; use one of {EXECUTION_MODES}")
    if multi_server_factor and len(groups) > 1:
        value *= model.consolidation_factor(job_type, batch_size, slowest, total_gpus)
    return value


# --------------------------------------------------------------------------------------------
# Embedded data


def _read_package_csv(name: str) -> pd.DataFrame:
    import pandas as pd

    ref = resources.files("hetgym.data").joinpath(name)
    with resources.as_file(ref) as path:
        # Python's own float parser for the full-precision column: exact to the last digit.
        return pd.read_csv(path, converters={FULL_PRECISION_COLUMN: float})


def _embedded_csv(name: str) -> list[dict[str, str]]:
    """The rows of an embedded CSV file, as text (no pandas)."""
    import csv
    import io

    text = resources.files("hetgym.data").joinpath(name).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text, newline="")))


def _embedded_rows(full_precision: bool) -> list[tuple[str, int, str, int, str, float, str]]:
    """The embedded throughput table's rows for :meth:`ThroughputModel._build`, parsed as ``load_table`` does
    (``tests/sim/test_throughput.py`` checks that both give the same model)."""
    rows = []
    for r in _embedded_csv("throughputs.csv"):
        rate = float(r["iters_per_s"])
        if full_precision and r.get(FULL_PRECISION_COLUMN):
            full = float(r[FULL_PRECISION_COLUMN])
            rate = rate if math.isnan(full) else full
        rows.append(
            (
                r["job_type"],
                int(float(r["batch_size"])),
                r["gpu_type"],
                int(r["num_gpus"]),
                r.get("placement") or "consolidated",
                rate,
                r.get("source") or "nan",
            )
        )
    return rows


def _embedded_speed_index() -> dict[str, float]:
    """The embedded GPU types' speed indices (no pandas)."""
    return {r["gpu_type"]: float(r["speed_index"]) for r in _embedded_csv("gpu_types.csv")}


@cache
def load_table() -> pd.DataFrame:
    """The embedded throughput table (see ``hetgym/data/NOTICE.md``)."""
    return _read_package_csv("throughputs.csv")


@cache
def load_gpu_types() -> pd.DataFrame:
    """The embedded GPU type table with speed indices (see ``hetgym/data/NOTICE.md``)."""
    return _read_package_csv("gpu_types.csv")


@cache
def _default_model() -> ThroughputModel:
    return ThroughputModel()


@cache
def _raw_model() -> ThroughputModel:
    return ThroughputModel(clamp_superlinear=False, monotone=False, full_precision=True)


def table_from_records(
    records: Mapping[tuple[str, int, str, int], float], placement: str = "consolidated"
) -> pd.DataFrame:
    """Build a table frame from ``{(job_type, batch_size, gpu_type, num_gpus): iters_per_s}``.

    Handy for tests and for users calibrating their own cluster.
    """
    import pandas as pd

    rows = [
        {
            "job_type": j,
            "batch_size": b,
            "gpu_type": g,
            "num_gpus": n,
            "placement": placement,
            "iters_per_s": r,
            "source": "user",
        }
        for (j, b, g, n), r in records.items()
    ]
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
