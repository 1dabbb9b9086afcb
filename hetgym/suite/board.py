"""The suite's leaderboard: one row per (scenario, agent) in a JSON list, and its markdown page.

Row fields (:data:`FIELDS`): ``scenario``, ``tier``, ``agent``, ``kind`` (``expert``, ``rule``, ``bound``
or ``learned``), ``interface`` (``simulator`` for experts on the raw simulator, else the env id), ``dsr``
(mean over ``seeds``; ``null`` when not computed), ``ci_low``/``ci_high`` (95% Student-t interval over the
seeds), ``seeds``, ``per_seed`` (the DSR of each seed, in ``seeds`` order), ``normalised``, ``cpu_s`` (CPU
seconds the row took), ``note`` and ``detail`` (a row's extra figures, e.g. a bound's per-type shares).

``normalised`` is ``(dsr - best expert) / (bound - best expert)``: the share of the headroom above the best
expert (highest mean DSR among the scenario's ``expert`` rows) that the row closes, with ``bound`` the
:data:`NORMALISING_BOUND` row (valid for every policy and execution mode); ``null`` when either is missing
or the bound does not exceed the best expert. A row over other seeds than theirs (an oracle row on a few
workloads) is normalised against the best expert's and the bound's means on *its* seeds, from their
``per_seed``; ``null`` when they do not cover them. Writing a row replaces the row with the same key
(:data:`KEY`) and keeps the others, through an atomic write, so an interrupted run loses nothing written.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hetgym.atomic import atomic_write
from hetgym.sim.errors import HetgymError
from hetgym.stats import t_interval
from hetgym.suite.scenarios import SCENARIOS

FIELDS = (
    "scenario",
    "tier",
    "agent",
    "kind",
    "interface",
    "dsr",
    "ci_low",
    "ci_high",
    "seeds",
    "per_seed",
    "normalised",
    "cpu_s",
    "note",
    "detail",
)
KEY = ("scenario", "agent")
KINDS = ("expert", "rule", "bound", "learned")
#: The bound the normalised score divides by.
NORMALISING_BOUND = "bound-capacity"
#: The leaderboard's files.
DEFAULT_JSON = Path("docs/results/leaderboard.json")


class BoardError(HetgymError):
    """A leaderboard file or row that cannot be used."""


def make_row(
    scenario: str,
    agent: str,
    kind: str,
    interface: str,
    seeds: Sequence[int],
    per_seed: Sequence[float] | None,
    *,
    cpu_s: float | None = None,
    note: str = "",
    detail: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One row (``per_seed=None``: not computed); ``normalised`` is filled by :func:`normalise`."""
    if kind not in KINDS:
        raise BoardError(f"kind={kind!r}: give one of {list(KINDS)}")
    if scenario not in SCENARIOS:
        raise BoardError(f"scenario {scenario!r} is not in the suite ({', '.join(SCENARIOS)})")
    if per_seed is not None and len(per_seed) != len(seeds):
        raise BoardError(f"{agent} on {scenario}: {len(per_seed)} values for {len(seeds)} seeds")
    dsr = low = high = None
    if per_seed is not None:
        ci = t_interval(per_seed)
        dsr = _num(ci.mean)
        low, high = _num(ci.low), _num(ci.high)
    return {
        "scenario": scenario,
        "tier": SCENARIOS[scenario].tier,
        "agent": agent,
        "kind": kind,
        "interface": interface,
        "dsr": dsr,
        "ci_low": low,
        "ci_high": high,
        "seeds": [int(s) for s in seeds],
        "per_seed": None if per_seed is None else [float(v) for v in per_seed],
        "normalised": None,
        "cpu_s": _num(cpu_s),
        "note": note,
        "detail": dict(detail or {}),
    }


def _num(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(float(value)) else float(value)


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a leaderboard file (``[]`` when there is none); anything else is refused."""
    target = Path(path)
    if not target.exists():
        return []
    try:
        data = json.loads(target.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BoardError(f"{target}: not a readable JSON file ({exc}); fix it or give another --board") from exc
    if not isinstance(data, list) or not all(isinstance(r, dict) and all(k in r for k in KEY) for r in data):
        raise BoardError(f"{target}: not a list of leaderboard rows with the fields {list(KEY)}; give another --board")
    return data


def normalise(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with ``normalised`` recomputed per scenario (see the module docstring)."""
    out = [dict(r) for r in rows]
    for scenario in {r["scenario"] for r in out}:
        mine = [r for r in out if r["scenario"] == scenario]
        best = best_expert(mine)
        bound = next((r for r in mine if r["agent"] == NORMALISING_BOUND and r["dsr"] is not None), None)
        for r in mine:
            r["normalised"] = None
            if best is None or bound is None or r["dsr"] is None:
                continue
            best_dsr, bound_dsr = _mean_on(best, r["seeds"]), _mean_on(bound, r["seeds"])
            if best_dsr is None or bound_dsr is None:
                continue
            span = bound_dsr - best_dsr
            if span > 1e-9:
                r["normalised"] = (r["dsr"] - best_dsr) / span
    return out


def _mean_on(row: Mapping[str, Any], seeds: Sequence[int]) -> float | None:
    """``row``'s mean DSR on ``seeds`` (its own ``dsr`` on its own seeds); ``None`` if it lacks one of them."""
    if list(row["seeds"]) == list(seeds):
        return float(row["dsr"])
    per_seed = row.get("per_seed")
    if not per_seed:
        return None
    at = dict(zip(row["seeds"], per_seed, strict=True))
    if not seeds or any(s not in at or at[s] is None for s in seeds):
        return None
    return sum(float(at[s]) for s in seeds) / len(seeds)


def best_expert(rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The expert row with the highest mean DSR (``None`` when there is none)."""
    experts = [r for r in rows if r["kind"] == "expert" and r["dsr"] is not None]
    return max(experts, key=lambda r: (r["dsr"], r["agent"])) if experts else None


def _order(row: Mapping[str, Any]) -> tuple[Any, ...]:
    names = list(SCENARIOS)
    position = names.index(row["scenario"]) if row["scenario"] in names else len(names)
    return (position, KINDS.index(row["kind"]) if row["kind"] in KINDS else 9, row["agent"])


def upsert(path: str | Path, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Write ``rows`` into the leaderboard at ``path`` (same key: replaced), renormalise, return all rows."""
    target = Path(path)
    kept = {tuple(r[k] for k in KEY): r for r in read_rows(target)}
    for row in rows:
        missing = [k for k in FIELDS if k not in row]
        if missing:
            raise BoardError(f"a leaderboard row lacks {missing}; build rows with hetgym.suite.board.make_row")
        kept[tuple(row[k] for k in KEY)] = {k: row[k] for k in FIELDS}
    out = sorted(normalise(list(kept.values())), key=_order)
    atomic_write(target, lambda p: p.write_text(json.dumps(out, indent=1) + "\n"))
    return out


__all__ = [
    "DEFAULT_JSON",
    "FIELDS",
    "KEY",
    "KINDS",
    "NORMALISING_BOUND",
    "BoardError",
    "best_expert",
    "make_row",
    "normalise",
    "read_rows",
    "upsert",
]
