"""The one parser of seed lists, shared by every command and recipe that takes seeds.

``"0-3,7"`` -> ``[0, 1, 2, 3, 7]``; a count ``n`` -> ``0..n-1``; a list of integers passes through, checked.
A range's length is counted before its list is built, so ``0-999999999`` fails at once instead of filling
memory (the bound is :data:`hetgym.limits.MAX_RUNS`, raised with ``HETGYM_MAX_RUNS``). Each caller names
the error type its own input errors use (a sweep's :class:`~hetgym.sweep.checks.SweepConfigError`, a
recipe's ``AgentError``); the messages are the same everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence

from hetgym.limits import RUNS_ENV, max_runs
from hetgym.sim.errors import HetgymError


class SeedsError(HetgymError, ValueError):
    """A seed list that cannot be read (the message says how to write one)."""


def parse_seeds(value: str | int | Sequence[int], *, error: type[ValueError] = SeedsError) -> list[int]:
    """The seeds ``value`` names: ``"0-3,7"``, ``"0,1,2"``, a count ``n`` (0..n-1) or a list of integers.

    Raises ``error`` (a ``ValueError``) naming the fault for: a boolean, a count < 1, a part that is not a
    non-negative integer or a range, a range that runs backwards, no seed at all, a repeated seed, or more
    seeds than :func:`hetgym.limits.max_runs` allows.
    """
    if isinstance(value, bool):
        raise error(f"seeds {value!r}: give a list of integers, a count or a range such as 0-3")
    if isinstance(value, int):
        if value < 1:
            raise error(f"seeds {value}: give a count >= 1, a range such as 0-3 or a list")
        _check_count(value, str(value), error)
        return list(range(value))
    if isinstance(value, str):
        seeds = _parse_text(value, error)
    else:
        if not isinstance(value, Sequence):
            raise error(f"seeds {value!r}: give a string such as 0-3 or 0,1,2, a count or a list of integers")
        _check_count(len(value), "the list", error)
        for s in value:
            if isinstance(s, bool) or not isinstance(s, int):
                raise error(f"seeds {value!r}: {s!r} is not an integer")
        seeds = [int(s) for s in value]
    if not seeds:
        raise error(f"no seeds in {_shown(str(value))}; give e.g. 0-3 or 0,1,2")
    if len(set(seeds)) != len(seeds):
        raise error(f"seeds {_shown(str(value))} repeat a seed; name each once")
    return seeds


def _shown(text: str) -> str:
    """``text`` as a message quotes it: cut to its start when long (a list of a million seeds stays readable)."""
    return repr(text) if len(text) <= 60 else repr(text[:40]) + f" ... ({len(text):,} characters)"


def _parse_text(text: str, error: type[ValueError]) -> list[int]:
    out: list[int] = []
    shown = _shown(text)
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, dash, hi = part.partition("-")
        try:
            first, last = (int(lo), int(hi)) if dash else (int(part), int(part))
        except ValueError:
            raise error(f"seeds {shown}: {part!r} is not a non-negative integer or a range such as 0-3") from None
        if last < first:
            raise error(f"seeds {shown}: the range {part!r} runs backwards; write e.g. 0-3")
        _check_count(len(out) + last - first + 1, shown, error)  # counted before the list is built
        out.extend(range(first, last + 1))
    return out


def _check_count(count: int, given: str, error: type[ValueError]) -> None:
    bound = max_runs()
    if count > bound:
        raise error(
            f"seeds {given} name {count:,} workloads, more than {bound:,} (each is a run to play and keep); "
            f"give fewer, or raise the bound with {RUNS_ENV}={count}"
        )


__all__ = ["SeedsError", "parse_seeds"]
