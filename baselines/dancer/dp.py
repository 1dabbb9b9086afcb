"""Dancer's price function and its dual subroutine: the DP that finds a job's cheapest schedule by its deadline.

Pure functions over arrays, usable on their own; the policy that uses them is :class:`baselines.dancer.Dancer`
(see its module docstring for the paper and what is reconstructed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

_INF = math.inf

PRICE_MODES = ("exp", "linear")
PRICE_INCREMENTS = ("marginal", "exact")


# --------------------------------------------------------------------------------------------
# Prices


@dataclass(frozen=True)
class PriceFunction:
    """Per-type GPU price as a function of the GPUs already committed in a slot.

    Attributes:
        L: Price of a GPU-slot on an idle type.
        U: Price of a GPU-slot on a full type.
        mode: ``exp`` (``L (U/L)^(g/C)``) or ``linear`` (``L + (U-L) g / C``).
        increment: ``marginal`` (``n`` GPUs cost ``n P(g)``) or ``exact`` (``sum_{m<n} P(g+m)``).
    """

    L: float
    U: float
    mode: str = "exp"
    increment: str = "marginal"

    def __post_init__(self) -> None:
        if not (self.L > 0 and self.U >= self.L):
            raise ValueError(f"prices need 0 < L <= U, got L={self.L}, U={self.U}")
        if self.mode not in PRICE_MODES:
            raise ValueError(f"price_mode={self.mode!r}; use one of {PRICE_MODES}")
        if self.increment not in PRICE_INCREMENTS:
            raise ValueError(f"price_increment={self.increment!r}; use one of {PRICE_INCREMENTS}")

    def price(self, committed: np.ndarray | float, capacity: int) -> np.ndarray:
        """Price of one GPU-slot with ``committed`` GPUs of a ``capacity``-GPU type already taken."""
        u = np.asarray(committed, dtype=float) / capacity
        if self.mode == "exp":
            return self.L * (self.U / self.L) ** u
        return self.L + (self.U - self.L) * u

    def coefficients(self, n: np.ndarray, capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(a, b, c)`` with cost of ``n`` GPUs at ``g`` committed = ``a phi(g) + b g + c``.

        ``phi(g) = (U/L)^(g/C)`` for ``exp`` (``0`` for ``linear``). The cost is separable this way for every
        mode and increment, so block costs need only block sums of ``phi(g)`` and ``g``.
        """
        n = np.asarray(n, dtype=float)
        zeros = np.zeros_like(n)
        if self.mode == "exp":
            ratio = self.U / self.L
            if self.increment == "marginal" or ratio <= 1.0 + 1e-12:
                return self.L * n, zeros, zeros
            step = ratio ** (1.0 / capacity)
            return self.L * (step**n - 1.0) / (step - 1.0), zeros, zeros
        slope = (self.U - self.L) / capacity
        if self.increment == "marginal":
            return zeros, slope * n, self.L * n
        return zeros, slope * n, self.L * n + slope * n * (n - 1.0) / 2.0

    def phi(self, committed: np.ndarray, capacity: int) -> np.ndarray:
        """The exponential factor ``(U/L)^(g/C)`` (zeros for ``linear``)."""
        if self.mode == "exp":
            return (self.U / self.L) ** (np.asarray(committed, dtype=float) / capacity)
        return np.zeros(np.shape(committed))


def block_costs(
    prices: PriceFunction,
    counts: np.ndarray,
    capacity: np.ndarray,
    type_weight: np.ndarray,
    weight: np.ndarray,
    used: np.ndarray,
) -> np.ndarray:
    """``(O, B)`` cost of running each option in each DP block under the committed GPUs.

    Args:
        prices: The price function.
        counts: ``(O, K)`` GPUs per type of each option.
        capacity: ``(K,)`` GPUs per type.
        type_weight: ``(K,)`` weight of each type's price (``price_scale``).
        weight: ``(B, S)`` fraction of each slot of each block that is usable.
        used: ``(K, B, S)`` GPUs already committed per type, block and slot.
    """
    costs = np.zeros((counts.shape[0], weight.shape[0]))
    wsum = weight.sum(axis=1)
    for k, cap in enumerate(capacity.tolist()):
        n = counts[:, k]
        if not n.any():
            continue
        a, b, c = prices.coefficients(n, cap)
        phi_sum = (weight * prices.phi(used[k], cap)).sum(axis=1)
        g_sum = (weight * used[k]).sum(axis=1)
        block = a[:, None] * phi_sum + b[:, None] * g_sum + c[:, None] * wsum
        costs += np.where(n[:, None] > 0, type_weight[k] * block, 0.0)
    return costs


# --------------------------------------------------------------------------------------------
# The dual subroutine


@dataclass
class DPResult:
    """Outcome of :func:`dual_dp`.

    Attributes:
        feasible: Whether a schedule reaching the work exists.
        cost: Its cost (``inf`` when infeasible).
        choice: ``(T,)`` option per block, ``-1`` for idle.
    """

    feasible: bool
    cost: float
    choice: np.ndarray


def schedule_progress(
    choice: np.ndarray, progress_same: np.ndarray, progress_switch: np.ndarray, initial_option: int = -1
) -> float:
    """Exact work of a block schedule: a block whose option differs from the previous block's pays the switch.

    Args:
        choice: ``(T,)`` option per block (``-1`` idle).
        progress_same: ``(O, T)`` work of an option in a block when it continues the previous block's.
        progress_switch: ``(O, T)`` work when it starts in that block (restart penalty deducted).
        initial_option: The option in force before block 0 (``-1``: none).
    """
    total = 0.0
    prev = initial_option
    for j, o in enumerate(choice.tolist()):
        if o >= 0:
            total += float(progress_same[o, j] if o == prev else progress_switch[o, j])
        prev = o
    return total


def repair_schedule(
    choice: np.ndarray,
    cost: float,
    costs: np.ndarray,
    progress_same: np.ndarray,
    progress_switch: np.ndarray,
    work: float,
    initial_option: int = -1,
    max_steps: int = 8,
) -> tuple[np.ndarray | None, float]:
    """Make a DP schedule exact: while it falls short of ``work``, extend a run into an adjacent idle block.

    The DP rounds work to units, so its schedule can be a little short once every restart penalty is
    counted exactly. Each step adds the idle block next to a run (continuing that run's option) with the
    least cost per unit of exact work gained. Returns ``(choice, cost)``, or ``(None, inf)`` if
    ``max_steps`` extensions do not suffice.
    """
    choice = choice.copy()
    done = schedule_progress(choice, progress_same, progress_switch, initial_option)
    num_blocks = len(choice)
    for _ in range(max_steps + 1):
        if done >= work * (1.0 - 1e-9):
            return choice, cost
        best: tuple[float, int, int, float] | None = None
        for j in range(num_blocks):
            if choice[j] >= 0:
                continue
            for o in {int(choice[j - 1]) if j > 0 else -1, int(choice[j + 1]) if j + 1 < num_blocks else -1}:
                if o < 0 or not np.isfinite(costs[o, j]):
                    continue
                choice[j] = o
                gain = schedule_progress(choice, progress_same, progress_switch, initial_option) - done
                choice[j] = -1
                if gain > 0 and (best is None or costs[o, j] / gain < best[0]):
                    best = (costs[o, j] / gain, j, o, gain)
        if best is None:
            break
        _, j, o, gain = best
        choice[j] = o
        cost += float(costs[o, j])
        done += gain
    return None, _INF


def dual_dp(
    costs: np.ndarray,
    progress_same: np.ndarray,
    progress_switch: np.ndarray,
    work: float,
    *,
    quanta: int = 200,
    initial_option: int = -1,
    switch_aware: bool = False,
) -> DPResult:
    """Cheapest schedule over blocks that completes ``work`` (Dancer's dual subroutine).

    ``F[j][w]`` is the least cost of doing at least ``w`` of ``quanta`` work units by the end of block
    ``j``; each block either idles or runs one option, which adds its (rounded) units and its cost.
    Rounding is to the nearest unit per block (``switch_aware=False``) or cumulative along the blocks of
    each option (``switch_aware=True``: a run of blocks is within a unit of its true work, plus half a
    unit per start), so callers check the schedule exactly with
    :func:`schedule_progress` and retry with more work if it falls short. The recursion is vectorised
    over the work axis and the options; on cost ties idling wins, so work goes to the earliest blocks.

    Args:
        costs: ``(O, T)`` cost of each option in each block (``inf`` where it does not fit).
        progress_same: ``(O, T)`` work of an option in a block when it continues the previous block's.
        progress_switch: ``(O, T)`` work when it starts in that block (after the restart penalty).
        work: Work to complete (the DP's target).
        quanta: Work units ``Q``.
        initial_option: Option in force before block 0 (``-1``: none).
        switch_aware: Keep the option in force in the state (exact switching; ``O`` times more memory).
            Otherwise only the job's start is exact (the first block it runs in uses ``progress_switch``,
            unless it continues ``initial_option`` in block 0) and later blocks use ``progress_same``.
    """
    num_opts, num_blocks = costs.shape
    empty = DPResult(False, _INF, np.full(num_blocks, -1, dtype=np.int64))
    if work <= 0:
        return DPResult(True, 0.0, empty.choice)
    if num_opts == 0 or num_blocks == 0:
        return empty
    q = work / quanta
    if switch_aware:
        # Cumulative rounding: a run of blocks with one option gets the rounded total of the run (within
        # one unit of the truth) rather than a sum of per-block rounding errors. Only safe when switching
        # is costed: a DP that switches for free would pick the blocks that happen to round up.
        cum = np.rint(np.cumsum(progress_same / q, axis=1))
        u_same_f = np.diff(cum, axis=1, prepend=0.0)
        # A start always loses at least one unit: a run's rounding error is below one unit, so chaining
        # short runs can never gain work from rounding.
        lost = np.maximum(np.ceil((progress_same - progress_switch) / q - 1e-9), 1.0)
        u_switch_f = np.maximum(u_same_f - lost, 0.0)
    else:
        u_same_f, u_switch_f = np.rint(progress_same / q), np.rint(progress_switch / q)
    u_same = np.minimum(u_same_f, quanta).astype(np.int64)
    u_switch = np.minimum(u_switch_f, quanta).astype(np.int64)
    w = np.arange(quanta + 1)
    if switch_aware:
        return _dp_switch(costs, u_same, u_switch, quanta, initial_option, w)
    # Work units of an option that *starts* in a block (the job did nothing before: it pays the restart
    # penalty, except for the option already in force in block 0) and of one that continues.
    start_units = u_switch.copy()
    if initial_option >= 0:
        start_units[initial_option, 0] = u_same[initial_option, 0]
    best_cost = np.full(quanta + 1, _INF)
    best_cost[0] = 0.0
    picks = np.zeros((num_blocks, quanta + 1), dtype=np.int32)
    started = np.zeros((num_blocks, quanta + 1), dtype=bool)
    live = np.isfinite(costs)
    for j in range(num_blocks):
        rows = np.flatnonzero(live[:, j] & ((u_same[:, j] > 0) | (start_units[:, j] > 0)))
        if len(rows) == 0:
            continue
        cost_j = costs[rows, j][:, None]
        cont = best_cost[np.maximum(w[None, :] - u_same[rows, j][:, None], 1)] + cost_j
        fresh = np.where(w[None, :] <= start_units[rows, j][:, None], cost_j, _INF)
        cand = np.minimum(cont, fresh)
        arg = cand.argmin(axis=0)
        val = cand[arg, w]
        better = val < best_cost
        picks[j] = np.where(better, rows[arg] + 1, 0)
        started[j] = better & (fresh[arg, w] <= cont[arg, w])
        best_cost = np.where(better, val, best_cost)
    if not np.isfinite(best_cost[quanta]):
        return empty
    choice = np.full(num_blocks, -1, dtype=np.int64)
    left = quanta
    for j in range(num_blocks - 1, -1, -1):
        if left == 0:
            break
        o = int(picks[j, left]) - 1
        if o >= 0:
            choice[j] = o
            left = 0 if started[j, left] else max(1, left - int(u_same[o, j]))
    return DPResult(True, float(best_cost[quanta]), choice)


def _dp_switch(
    costs: np.ndarray, u_same: np.ndarray, u_switch: np.ndarray, quanta: int, initial_option: int, w: np.ndarray
) -> DPResult:
    """The switch-aware DP: state (option in force, work units); state 0 is idle."""
    num_opts, num_blocks = costs.shape
    state = np.full((num_opts + 1, quanta + 1), _INF)
    state[initial_option + 1, 0] = 0.0
    from_same = np.zeros((num_blocks, num_opts, quanta + 1), dtype=bool)
    min_arg = np.zeros((num_blocks, quanta + 1), dtype=np.int64)
    cols = np.arange(quanta + 1)
    rows = np.arange(1, num_opts + 1)[:, None]  # the option states (plain indexing: take_along_axis is slower)
    for j in range(num_blocks):
        arg = state.argmin(axis=0)
        least = state[arg, cols]
        min_arg[j] = arg
        same = state[rows, np.maximum(w[None, :] - u_same[:, j : j + 1], 0)]
        other = least[np.maximum(w[None, :] - u_switch[:, j : j + 1], 0)]
        np.less_equal(same, other, out=from_same[j])
        np.minimum(same, other, out=state[1:])
        state[1:] += costs[:, j : j + 1]
        state[0] = least
    final = int(state[:, quanta].argmin())
    total = float(state[final, quanta])
    if not np.isfinite(total):
        return DPResult(False, _INF, np.full(num_blocks, -1, dtype=np.int64))
    choice = np.full(num_blocks, -1, dtype=np.int64)
    cur, left = final, quanta
    for j in range(num_blocks - 1, -1, -1):
        if cur == 0:  # idle in block j: came from the cheapest state at the same work
            cur = int(min_arg[j, left])
            continue
        o = cur - 1
        choice[j] = o
        if from_same[j, o, left]:
            left = max(0, left - int(u_same[o, j]))
        else:
            left = max(0, left - int(u_switch[o, j]))
            cur = int(min_arg[j, left])
    return DPResult(True, total, choice)
