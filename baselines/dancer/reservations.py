"""Dancer's reservations: a job's plan, its per-job state, the slot ledger and the extra's candidates.

Used by :class:`baselines.dancer.Dancer` (see its module docstring for the paper and what is
reconstructed): a :class:`Plan` is a job's reserved schedule, a :class:`SlotLedger` the GPUs reserved
per type and slot (the hard reservations that raise the prices), :func:`plan_remaining` and
:func:`trim_plan` the re-plan's view of a plan against the work left, and :func:`candidate_options` the
configurations the work-conserving extra may grow a job to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from baselines._deadline import JobOptions, slot_of
from hetgym.sim.allocation import JobAllocation
from hetgym.sim.view import JobView

_INF = math.inf


# --------------------------------------------------------------------------------------------
# Plans (reservations)


@dataclass
class Plan:
    """A job's reserved schedule: segments ``[start_s, end_s)`` running one option each."""

    starts: list[float]
    ends: list[float]
    options: list[int]

    def option_at(self, now: float) -> int:
        """The option in force at ``now`` (-1 when none)."""
        for s, e, o in zip(self.starts, self.ends, self.options, strict=True):
            if s <= now + 1e-6 and now < e - 1e-6:
                return o
        return -1

    @classmethod
    def from_blocks(cls, choice: np.ndarray, block_start: np.ndarray, block_end: np.ndarray) -> Plan:
        """The plan of a DP block schedule (``choice``: option per block, -1 idle), adjacent blocks merged."""
        plan = cls([], [], [])
        for j, o in enumerate(choice.tolist()):
            if o < 0:
                continue
            if plan.options and plan.options[-1] == o and abs(plan.ends[-1] - block_start[j]) < 1e-6:
                plan.ends[-1] = float(block_end[j])
            else:
                plan.starts.append(float(block_start[j]))
                plan.ends.append(float(block_end[j]))
                plan.options.append(o)
        return plan

    @property
    def end_s(self) -> float:
        """When the plan's last segment ends."""
        return self.ends[-1] if self.ends else -_INF


@dataclass
class JobState:
    """What Dancer keeps of one job: its options, its plan, and per-option figures precomputed."""

    options: JobOptions
    deadline_s: float
    value: float
    plan: Plan | None = None
    kind: str = "admitted"  # admitted | late | best_effort
    meta: dict[str, float] = field(default_factory=dict)
    rows: list[tuple[int, ...]] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    allocs: dict[int, JobAllocation] = field(default_factory=dict)

    single: list[bool] = field(default_factory=list)
    type_count: list[tuple[int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rows = [tuple(int(n) for n in r) for r in self.options.counts]
        self.rates = [float(r) for r in self.options.rates]
        self.single = [sum(1 for n in r if n > 0) == 1 for r in self.rows]
        self.type_count = [(int(np.argmax(r)), max(r)) for r in self.rows]

    def allocation(self, option: int) -> JobAllocation:
        """The allocation of ``option`` (made once, then reused)."""
        ja = self.allocs.get(option)
        if ja is None:
            ja = self.allocs[option] = JobAllocation(self.options.as_dict(option), mode="sync")
        return ja


class SlotLedger:
    """GPUs reserved per type in every absolute slot: Dancer's hard reservations.

    Column ``c`` of :attr:`grid` is absolute slot ``base + c``; the grid grows on demand and drops
    its past columns now and then (:meth:`advance`).

    Args:
        num_types: GPU types (rows, in the cluster's order).
        slot_s: Slot length in seconds.
        first_slot: Absolute slot of column 0 (no reservation is ever made before it).
    """

    def __init__(self, num_types: int, slot_s: float, first_slot: int = 0) -> None:
        self.slot_s = slot_s
        self.base = first_slot  # absolute slot index of column 0 of grid
        self.grid = np.zeros((num_types, 1024), dtype=np.int64)

    def ensure(self, last_slot: int) -> None:
        """Grow the grid to hold absolute slot ``last_slot``."""
        need = last_slot - self.base + 1
        if need > self.grid.shape[1]:
            grow = max(need, 2 * self.grid.shape[1])
            extra = np.zeros((self.grid.shape[0], grow - self.grid.shape[1]), dtype=np.int64)
            self.grid = np.hstack([self.grid, extra])

    def advance(self, slot: int) -> None:
        """Drop the columns before ``slot`` once there are many of them."""
        drop = slot - self.base
        if drop > 4096:
            self.grid = self.grid[:, drop:].copy()
            self.base = slot

    def column(self, slot: int) -> np.ndarray | None:
        """GPUs reserved per type in absolute slot ``slot`` (``None`` outside the grid)."""
        col = slot - self.base
        if col < 0 or col >= self.grid.shape[1]:
            return None
        return self.grid[:, col]

    def window(self, first_slot: int, last_slot: int) -> np.ndarray:
        """``(K, n)`` reserved GPUs over absolute slots ``first_slot..last_slot`` (a view of the grid)."""
        self.ensure(last_slot)
        return self.grid[:, first_slot - self.base : last_slot + 1 - self.base]

    def book_segment(self, counts: np.ndarray, start_s: float, end_s: float, sign: int) -> None:
        """Add (``sign=1``) or remove (``-1``) ``counts`` in every slot overlapping ``[start_s, end_s)``."""
        slot_s = self.slot_s
        lo = max(slot_of(start_s, slot_s), self.base)
        hi = math.ceil(end_s / slot_s - 1e-9)
        if hi > lo:
            self.ensure(hi - 1)
            self.grid[:, lo - self.base : hi - self.base] += sign * counts[:, None]

    def book(self, st: JobState, sign: int, from_s: float) -> None:
        """Add (``sign=1``) or remove (``-1``) a plan's reservations from time ``from_s`` on."""
        if st.plan is None:
            return
        for s, e, o in zip(st.plan.starts, st.plan.ends, st.plan.options, strict=True):
            if e > from_s + 1e-9:
                self.book_segment(st.options.counts[o], max(s, from_s), e, sign)


def plan_remaining(
    plan: Plan | None,
    job: JobView,
    now_s: float,
    rates: np.ndarray,
    current: int,
    restart_s: float,
    start_penalty_s: float,
) -> float:
    """Work the rest of ``plan`` does from ``now_s`` on, restart penalties included.

    ``rates`` are the job's rates per option (the observed one for the option in force, ``current``);
    continuing the option in force pays only the penalty still left, a first start ``start_penalty_s``,
    any other change (or a resume after an idle gap) ``restart_s``.
    """
    if plan is None:
        return 0.0
    prev, prev_end, total = current, now_s, 0.0
    for s, e, o in zip(plan.starts, plan.ends, plan.options, strict=True):
        if e <= now_s + 1e-9:
            continue
        start = max(s, now_s)
        if start > prev_end + 1e-6:
            prev = -1  # an idle gap in between: resuming pays the penalty
        if o == prev:
            lost = job.penalty_left_s if start <= now_s + 1e-9 else 0.0
        elif prev < 0 and current < 0 and total == 0.0 and job.first_start_s is None:
            lost = start_penalty_s
        else:
            lost = restart_s
        total += rates[o] * max(e - start - lost, 0.0)
        prev, prev_end = o, e
    return total


def trim_plan(ledger: SlotLedger, st: JobState, now_s: float, rates: np.ndarray, surplus: float) -> int:
    """Release the tail slots of ``st``'s plan that do ``surplus`` iterations more than needed.

    Whole segments go first, then the last one is cut back to a slot boundary; the ledger loses those
    reservations. Returns how many cuts were made.
    """
    plan = st.plan
    assert plan is not None
    slot_s = ledger.slot_s
    cuts = 0
    while plan.options and surplus > 0:
        s, e, o = plan.starts[-1], plan.ends[-1], plan.options[-1]
        start = max(s, now_s)
        new_end = math.ceil((e - surplus / rates[o]) / slot_s - 1e-9) * slot_s
        if new_end <= start + 1e-6 and (e - start) * rates[o] <= surplus:
            surplus -= (e - start) * rates[o]
            ledger.book_segment(st.options.counts[o], start, e, -1)
            plan.starts.pop()
            plan.ends.pop()
            plan.options.pop()
            cuts += 1
            continue
        new_end = max(new_end, start)
        if new_end < e - 1e-6:
            ledger.book_segment(st.options.counts[o], new_end, e, -1)
            plan.ends[-1] = new_end
            cuts += 1
        break
    return cuts


def best_extra_option(
    job: JobView,
    st: JobState,
    base: int,
    free: list[int],
    horizon_s: float,
    current: int,
    penalty_s: float,
    single: bool,
) -> int:
    """The option (``base`` or a superset of it fitting in ``free`` more GPUs) with the most progress.

    A change pays the restart penalty ``penalty_s``, so each candidate's progress is its rate times
    ``horizon_s`` less the penalty (the remaining one for the option in force, ``current``). Ties keep
    the option in force; ``single`` keeps a job on one type.
    """
    cands: list[tuple[float, int, int]] = []
    for o in candidate_options(st, base, free, single):
        rate = job.rate_iters_per_s if (o == current and job.rate_iters_per_s > 0) else st.rates[o]
        gain = rate * max(horizon_s - (job.penalty_left_s if o == current else penalty_s), 0.0)
        cands.append((gain, 2 if o == current else (1 if o == base else 0), o))
    if not cands:
        return base
    top = max(g for g, _, _ in cands)
    if top <= 0:
        return base
    return max((c for c in cands if c[0] >= top * (1.0 - 1e-9)), key=lambda c: (c[1], c[0]))[2]


def candidate_options(st: JobState, base: int, free: list[int], single: bool) -> list[int]:
    """Options that contain ``base`` (same single type when ``single``) and fit ``free`` more GPUs."""
    if single and all(st.single):
        if base < 0:
            return [o for o, (k, n) in enumerate(st.type_count) if n <= free[k]]
        kb, nb = st.type_count[base]
        return [o for o, (k, n) in enumerate(st.type_count) if k == kb and nb <= n <= nb + free[kb]]
    rows = st.rows
    if base < 0:
        return [o for o, row in enumerate(rows) if all(n <= f for n, f in zip(row, free, strict=True))]
    base_row = rows[base]
    return [
        o
        for o, row in enumerate(rows)
        if all(b <= n <= b + f for n, b, f in zip(row, base_row, free, strict=True))
        and (not single or all((n > 0) == (b > 0) for n, b in zip(row, base_row, strict=True)))
    ]
