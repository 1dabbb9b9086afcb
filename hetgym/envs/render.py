"""Rendering: a compact text table (``ansi``) and a picture of GPU occupancy over time (``rgb_array``).

The picture is drawn with numpy alone (no plotting library) so it stays fast: time runs left to right
from 0 to the current simulated time; each GPU type is a horizontal band with one row of pixels per
GPU (types in the cluster's order, top to bottom, separated by a dark line); a job's GPUs of a type
are a block in its own colour (a golden-ratio hue of its id), stacked in job-id order; white is idle.
"""

from __future__ import annotations

import colorsys
import math
from collections.abc import Mapping, Sequence

import numpy as np

from hetgym.envs.state import DecisionState
from hetgym.sim.job import JobStatus

#: One allocation segment: start time and ``(job_id, type index, num_gpus)`` rows, job-id order.
Segment = tuple[float, tuple[tuple[int, int, int], ...]]

_PALETTE: dict[int, np.ndarray] = {}


def job_colour(job_id: int) -> np.ndarray:
    """A stable, distinct RGB colour for a job id."""
    hit = _PALETTE.get(job_id)
    if hit is None:
        hue = (job_id * 0.618033988749895) % 1.0
        sat = 0.45 + 0.35 * ((job_id * 7) % 3) / 2.0
        r, g, b = colorsys.hsv_to_rgb(hue, sat, 0.92)
        hit = np.array([int(r * 255), int(g * 255), int(b * 255)], dtype=np.uint8)
        _PALETTE[job_id] = hit
    return hit


def render_rgb(
    history: Sequence[Segment],
    ended_at: Mapping[int, float],
    now_s: float,
    capacity: Sequence[int],
    *,
    width: int = 640,
    height: int = 320,
) -> np.ndarray:
    """The occupancy picture as a ``(H, W, 3)`` uint8 array (see the module docstring)."""
    total = int(sum(capacity))
    num_types = len(capacity)
    sep = 2
    row_px = max(1, min(12, (height - sep * (num_types - 1)) // max(total, 1)))
    h = row_px * total + sep * (num_types - 1)
    img = np.full((h, width, 3), 255, dtype=np.uint8)
    tops = []
    y = 0
    for ti, cap in enumerate(capacity):
        tops.append(y)
        y += cap * row_px
        if ti < num_types - 1:
            img[y : y + sep] = 60
            y += sep
    t_end = max(now_s, history[-1][0] if history else 0.0, 1e-9)
    scale = (width - 1) / t_end
    for i, (t0, rows) in enumerate(history):
        t1 = history[i + 1][0] if i + 1 < len(history) else t_end
        if t1 <= t0 and i + 1 < len(history):
            continue
        x0 = int(t0 * scale)
        offsets = [0] * num_types
        for jid, ti, n in rows:
            end = min(t1, ended_at.get(jid, t1))
            x1 = max(math.ceil(end * scale), x0 + 1)
            y0 = tops[ti] + offsets[ti] * row_px
            img[y0 : y0 + n * row_px, x0:x1] = job_colour(jid)
            offsets[ti] += n
    return img


def render_ansi(state: DecisionState, now_s: float, epoch: int, num_pending: int, num_ended: int) -> str:
    """A compact table: time, GPU types (capacity, used, free in the draft), and the window's jobs."""
    types = state.types
    lines = []
    n_active = len(state.jobs) + len(state.outside)
    lines.append(
        f"t={now_s / 3600:.2f} h  epoch {epoch}  active {n_active} (window {len(state.jobs)}/{state.num_slots})  "
        f"pending {num_pending}  ended {num_ended}  actions {state.num_actions}"
    )
    lines.append(f"{'type':<8}{'cap':>5}{'used':>6}{'free':>6}{'outside':>9}")
    for ti, t in enumerate(types):
        cap = int(state.capacity[ti])
        free = int(state.free[ti])
        lines.append(f"{t:<8}{cap:>5}{cap - free:>6}{free:>6}{int(state.outside_held[ti]):>9}")
    if state.jobs:
        head = f"{'slot':>4} {'job':>5} {'model':<12}{'req':>4} {'status':<8}{'left_h':>7}{'slack_h':>8}"
        head += "".join(f"{t:>6}" for t in types)
        lines.append(head)
        for slot, job in enumerate(state.jobs):
            rate = 0.0
            if job.rate_iters_per_s > 0:
                rate = job.rate_iters_per_s
            left = job.remaining_iters / rate / 3600 if rate > 0 else math.nan
            slack = state.slacks_s[slot]
            status = (
                "rejected" if state.rejected[slot] else ("running" if job.status == JobStatus.RUNNING else "waiting")
            )
            row = (
                f"{slot:>4} {job.job_id:>5} {job.job_type[:11]:<12}{job.num_gpus:>4} {status:<8}"
                f"{_fmt(left):>7}{_fmt(slack / 3600 if math.isfinite(slack) else slack):>8}"
            )
            for ti in range(len(types)):
                cur, new = int(state.current[slot, ti]), int(state.draft[slot, ti])
                cell = "-" if cur == new == 0 else (str(new) if cur == new else f"{cur}>{new}")
                row += f"{cell:>6}"
            lines.append(row)
    if state.outside:
        lines.append(f"... {len(state.outside)} more active jobs outside the window")
    return "\n".join(lines) + "\n"


def _fmt(x: float) -> str:
    if math.isnan(x):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.2f}"
