"""Digests of the per-job tables of a fixed set of simulator runs, to prove speed work changes no result.

Each case runs one registered policy on one scenario and seed (optionally with more jobs) and hashes
the run's per-job table byte for byte (every column of ``SimulationResult.jobs``: ids, starts,
finishes, attained service, reconfigurations, remaining work...), together with the GPU-usage
timeline and the epoch and event counts. The committed digests live in ``tests/data/sim_digests.json``;
``tests/sim/test_digests.py`` recomputes them. A change that alters any figure of any job, by even
one bit, fails there.

Regenerate the file only for a deliberate change of behaviour (never for a speed change)::

    python tests/sim_digests.py --write
"""

from __future__ import annotations

import hashlib
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from helpers import write_digests_cli

DIGESTS_PATH = Path(__file__).resolve().parent / "data" / "sim_digests.json"

# Policies cheap enough to run on a few hundred jobs in the default (fast) test run.
CHEAP_POLICIES: tuple[str, ...] = (
    "edf",
    "edf-admission",
    "fifo",
    "fifo-backfill",
    "fifo-fastest",
    "jps",
    "srtf",
    "tiresias",
)


# Those also run on 300 jobs by default (well under a second each).
FAST_300: tuple[str, ...] = ("edf", "edf-admission", "fifo", "fifo-backfill", "fifo-fastest", "srtf")


#: Gavel-generated traces of tests/data/gavel replayed under ``compat="gavel"`` (the last two are slow).
GAVEL_TRACES: tuple[str, ...] = ("t0-150", "poisson-200-900s", "poisson-400-250s", "poisson-3000-200s")
GAVEL_DATA = Path(__file__).resolve().parent / "data" / "gavel"


@dataclass(frozen=True)
class Case:
    """One run: ``policy`` on ``scenario`` with ``seed``, ``num_jobs`` overriding the scenario's count;
    or, with ``gavel_trace``, the Gavel trace of that name on ``gavel-108`` under ``compat="gavel"``
    (``scenario`` is then ``"gavel-compat"``)."""

    policy: str
    scenario: str
    seed: int
    num_jobs: int | None = None
    slow: bool = False
    gavel_trace: str | None = None

    @property
    def key(self) -> str:
        if self.gavel_trace is not None:
            return f"{self.policy}@{self.scenario}:{self.gavel_trace}#s{self.seed}"
        jobs = "" if self.num_jobs is None else f"/{self.num_jobs}"
        return f"{self.policy}@{self.scenario}{jobs}#s{self.seed}"


def cases() -> list[Case]:
    """The fixed set: every registered policy on ``tiny`` and on ``default`` (120 and 300 jobs), two
    seeds; FIFO, Tiresias and EDF at 3,000 jobs; Gavel's policies under ``compat="gavel"`` on three
    Gavel traces, and its FIFO and max-min fairness on the 3,000-job one. The expensive runs are slow."""
    from hetgym.sim import list_policies

    out: list[Case] = []
    for policy in sorted(list_policies()):
        cheap = policy in CHEAP_POLICIES
        for seed in (0, 1):
            out.append(Case(policy, "tiny", seed))
            out.append(Case(policy, "default", seed, slow=not cheap))
            out.append(Case(policy, "default", seed, num_jobs=300, slow=policy not in FAST_300 or seed == 1))
    for policy in ("fifo", "tiresias", "edf"):
        out.append(Case(policy, "default", 0, num_jobs=3000, slow=True))
        out.append(Case(policy, "gavel", 0, num_jobs=3000, slow=True))
    # Gavel's policies as Gavel's simulator runs them (compat mode), on its own generated traces.
    for policy in sorted(p for p in list_policies() if p.startswith("gavel-")):
        for trace in GAVEL_TRACES[:3]:
            out.append(Case(policy, "gavel-compat", 0, gavel_trace=trace, slow=trace == GAVEL_TRACES[2]))
    for policy in ("gavel-fifo", "gavel-mmf"):
        out.append(Case(policy, "gavel-compat", 0, gavel_trace=GAVEL_TRACES[3], slow=True))
    return out


#: The headline metrics kept beside each digest, so that a changed digest says how far the results moved.
METRICS: tuple[str, ...] = ("dsr", "jct_mean_s", "makespan_s", "utilisation")


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _column_kind(col: pd.Series) -> str:
    """The column's kind, not the library's spelling of its dtype: ``f8``, ``i8``, ``b1``, ... or ``text``
    (pandas 3 names string columns ``str`` where pandas 2 said ``object``: the same values)."""
    kind = col.dtype.kind
    if kind in "biuf":
        return f"{kind}{col.dtype.itemsize}"
    return "text"


def _text(value: object) -> str:
    missing = value is None or (isinstance(value, float) and value != value)
    return "\x00" if missing else str(value)


def frame_bytes(frame: pd.DataFrame) -> bytes:
    """The table's exact values: each column's name, kind and values (numbers as their binary form)."""
    parts: list[bytes] = []
    for name in frame.columns:
        col = frame[name]
        kind = _column_kind(col)
        parts.append(f"{name}:{kind}\n".encode())
        if kind != "text":
            parts.append(np.ascontiguousarray(col.to_numpy()).tobytes())
        else:
            parts.append("\x1f".join(_text(v) for v in col.tolist()).encode())
        parts.append(b"\x1e")
    return b"".join(parts)


def digest(case: Case) -> dict[str, object]:
    """Run ``case`` and return its digests and counts."""
    from hetgym.experiments import run_one
    from hetgym.sim import SimConfig, Simulator, make_policy
    from hetgym.workloads.scenario import get_scenario
    from hetgym.workloads.traces.pipeline import load_trace

    if case.gavel_trace is not None:
        jobs = load_trace(GAVEL_DATA / f"{case.gavel_trace}.trace", "gavel")
        sim = Simulator("gavel-108", jobs, config=SimConfig(compat="gavel", seed=case.seed))
        result = sim.run(make_policy(case.policy))
    else:
        scenario = get_scenario(case.scenario)
        if case.num_jobs is not None:
            scenario = scenario.with_overrides(workload={"num_jobs": case.num_jobs})
        result = run_one(scenario, case.policy, case.seed)
    return {
        "jobs_sha256": hashlib.sha256(frame_bytes(result.jobs)).hexdigest(),
        "timeline_sha256": hashlib.sha256(frame_bytes(result.timeline)).hexdigest(),
        "num_jobs": len(result.jobs),
        "num_epochs": result.num_epochs,
        "num_events": result.num_events,
        "stalled": result.stalled,
        # NaN (e.g. DSR without deadlines) as null: JSON has no NaN, and NaN != NaN.
        "metrics": {name: _number(result.metrics[name]) for name in METRICS},
    }


def main() -> int:
    return write_digests_cli(__doc__, DIGESTS_PATH, cases(), digest, lambda d: d["jobs_sha256"][:16])


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    raise SystemExit(main())
