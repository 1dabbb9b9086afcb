"""Whether a codec expresses an expert's allocation exactly, and if not, why (:func:`explain_gap`).

An expert decides whole :class:`~hetgym.sim.Allocation` s; a codec maps one to the actions that express
it (:meth:`ActionCodec.encode <hetgym.envs.codecs.ActionCodec.encode>`) and returns an
:class:`Encoding`: the actions, the allocation they commit, and whether committing it leaves the
simulator in the same state as the target would (same jobs rejected, same GPUs per type, same
execution mode, no job moved by an explicit server placement), with one line per job that differs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from hetgym.envs.state import DecisionState
from hetgym.sim.allocation import Allocation, JobAllocation


class CodecLimits(Protocol):
    """What :func:`explain_gap` reads of a codec (an :class:`~hetgym.envs.codecs.ActionCodec` has it): its count
    levels and whether it can reject. A protocol, so that this module, which the codecs import, names no codec."""

    levels: np.ndarray
    level_set: frozenset[int]
    allow_reject: bool


@dataclass(frozen=True)
class Encoding:
    """An expert's target expressed in a codec's actions.

    Attributes:
        actions: The actions, in order (sequential: ints ending with the commit; one-shot: one array).
        expressed: The allocation those actions commit.
        exact: Whether committing ``expressed`` leaves the simulator exactly as ``target`` would.
        reasons: Why not, one line per job that differs (empty when exact).
    """

    actions: tuple[Any, ...]
    expressed: Allocation
    exact: bool
    reasons: tuple[str, ...]


def _describe(ja: JobAllocation | None) -> str:
    if not ja:
        return "no GPUs"
    text = ", ".join(f"{n} {t}" for t, n in ja.counts)
    if ja.mode != "sync":
        text += f" ({ja.mode})"
    if ja.servers is not None:
        text += f" on servers {dict(ja.servers)}"
    return text


def explain_gap(codec: CodecLimits, state: DecisionState, expressed: Allocation, target: Allocation) -> list[str]:
    """Why committing ``expressed`` would not leave the simulator as ``target`` would (empty if it would).

    Two allocations are equivalent when they reject the same jobs and give every job the same GPU
    counts per type and, when it holds GPUs, the same execution mode, and when neither moves a job
    between servers on its own account: the codecs set counts and leave placement to the simulator, so
    a target's explicit server placement is expressible only when it keeps a job exactly where it is
    (what ``AllocationBuilder.keep`` produces). The simulator keeps a job whose counts and mode are
    unchanged on its servers whether or not they are spelled out, so that case is no difference.
    """
    view = state.view
    if view is None:
        return []
    reasons: list[str] = []
    window = {int(j): slot for slot, j in enumerate(state.ids.tolist()) if j >= 0}
    if target.reject != expressed.reject:
        for jid in sorted(target.reject ^ expressed.reject):
            if jid in target.reject:
                why = _why_not(codec, state, window, jid, target)
                reasons.append(f"job {jid}: the target rejects it but the actions do not ({why})")
            else:
                reasons.append(
                    f"job {jid}: the actions reject it but the target does not (rejected earlier in the draft)"
                )
    t_jobs, e_jobs = target.jobs, expressed.jobs
    active = view.job_index
    for jid in sorted(set(t_jobs) | set(e_jobs)):
        if jid in target.reject or jid in expressed.reject:
            continue
        t_ja = t_jobs.get(jid) or None
        e_ja = e_jobs.get(jid) or None
        if t_ja == e_ja:
            continue
        if t_ja is not None and e_ja is not None and t_ja.counts == e_ja.counts and t_ja.mode == e_ja.mode:
            current = active[jid].allocation if jid in active else None
            if (
                current is not None
                and current.counts == t_ja.counts
                and current.mode == t_ja.mode
                and (t_ja.servers is None or t_ja.servers == current.servers)
            ):
                continue  # an unchanged job stays where it is either way
            reasons.append(
                f"job {jid}: target {_describe(t_ja)}, expressible {_describe(e_ja)} (explicit server placements "
                "are not expressible: the codecs set counts and the simulator places them, keeping only an "
                "unchanged job where it is)"
            )
            continue
        why = _why_not(codec, state, window, jid, target)
        reasons.append(f"job {jid}: target {_describe(t_ja)}, expressible {_describe(e_ja)} ({why})")
    return reasons


def _why_not(codec: CodecLimits, state: DecisionState, window: dict[int, int], jid: int, target: Allocation) -> str:
    if jid not in window:
        return f"the job is outside the {state.num_slots}-slot window"
    slot = window[jid]
    if jid in target.reject:
        if not codec.allow_reject:
            return "the codec was built with allow_reject=False"
        return "the job's slot cannot be rejected now"
    if state.rejected[slot]:
        return "the job was already rejected in this epoch's draft"
    ja = target.jobs.get(jid)
    if ja:
        off = [f"{n} {t}" for t, n in ja.counts if n not in codec.level_set]
        if off:
            return f"count {', '.join(off)} is not on the count levels {codec.levels.tolist()}"
        if ja.mode not in state.mode_index:
            return f"execution mode {ja.mode!r} is not among the codec's modes {list(state.modes)}"
        bad = [t for t, _ in ja.counts if t not in state.type_index or not state.allowed[slot, state.type_index[t]]]
        if bad:
            return f"type(s) {bad} are not allowed for the job"
        if ja.servers is not None:
            return "explicit server placements are not expressible"
    return "the GPUs it needs are held by jobs outside the window, or the per-epoch action cap was reached"


__all__ = ["Encoding", "explain_gap"]
