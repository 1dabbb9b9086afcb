"""Rewards relative to a reference policy on the same workload (``reward_baseline="edf"``).

Workloads differ far more between episodes than policies differ on one workload (on ``HetCluster-Tiny-v0``
the ``jct`` return of EDF varies about six times more across seeds than EDF's gap to FIFO), so most of a
return's variance says nothing about the agent's decisions. Following the input-dependent baselines of
Mao et al. ("Variance Reduction for Reinforcement Learning in Input-Driven Environments", ICLR 2019), the
environment runs a reference policy on the episode's own workload at reset (``Simulator.run``, same
simulator settings) and each committing step's reward becomes the agent's reward *minus the reference's
reward over the same simulated interval*. The step that ends the episode subtracts everything the
reference earned from there on, so an episode's undiscounted return is exactly the agent's return minus the
reference's: positive when the agent beats it.

The reference's reward over an interval ``(t0, t1]`` is the same reward function applied to the
:class:`~hetgym.envs.rewards.RewardComponents` of the reference run over that interval, rebuilt from its
per-job table and GPU timeline: job-seconds in the system, busy and idle GPU-seconds (while the reference
still has jobs), completions, rejections, deadlines met (at completion) and lost (at rejection, or when the
deadline passes unfinished).
"""

from __future__ import annotations

import math

import numpy as np

from hetgym.envs.rewards import RewardComponents
from hetgym.sim.engine import SimulationResult
from hetgym.sim.metrics import met_deadline


class ReferenceRun:
    """A finished reference run, queried for its reward components over any simulated interval.

    Args:
        result: The reference policy's :class:`~hetgym.sim.SimulationResult` on the episode's workload.
        total_gpus: The cluster's GPU count (for idle GPU-seconds).
    """

    def __init__(self, result: SimulationResult, total_gpus: int) -> None:
        jobs = result.jobs
        status = jobs["status"].to_numpy()
        finish = jobs["finish_s"].to_numpy(dtype=float)
        self.end_s = float(np.nanmax(finish)) if np.isfinite(finish).any() else 0.0
        self.submit = jobs["submit_s"].to_numpy(dtype=float)
        self.left = np.where(np.isfinite(finish), finish, math.inf)  # unfinished jobs stay to the end
        deadline = jobs["deadline_s"].to_numpy(dtype=float)
        has_deadline = np.isfinite(deadline)
        completed = status == "completed"
        rejected = status == "rejected"
        self.completed_at = np.sort(finish[completed])
        self.rejected_at = np.sort(finish[rejected])
        met = has_deadline & met_deadline(completed, finish, deadline)
        self.met_at = np.sort(finish[met])
        lost = has_deadline & ~met
        # Lost at the rejection if it came first, else when the deadline passed.
        self.lost_at = np.sort(np.where(rejected & (finish < deadline), finish, deadline)[lost])
        self.total_gpus = int(total_gpus)
        timeline = result.timeline
        if len(timeline):
            times = timeline["time_s"].to_numpy(dtype=float)
            used = timeline.drop(columns=["time_s"]).to_numpy(dtype=float).sum(axis=1)
        else:
            times, used = np.zeros(1), np.zeros(1)
        self._times = np.append(times, self.end_s)
        self._used = used
        # Busy GPU-seconds from 0 to each breakpoint of the (step-function) usage.
        self._busy_cum = np.concatenate([[0.0], np.cumsum(used * np.diff(self._times).clip(min=0.0))])

    def _busy_until(self, t: float) -> float:
        t = min(max(t, 0.0), self.end_s)
        i = int(np.searchsorted(self._times, t, side="right")) - 1
        if i < 0:
            return 0.0
        if i >= len(self._used):
            return float(self._busy_cum[-1])
        return float(self._busy_cum[i] + self._used[i] * (t - self._times[i]))

    def components(self, t0_s: float, t1_s: float) -> RewardComponents:
        """The reference's components over ``(t0_s, t1_s]`` (``t1_s`` may be ``inf``: everything after ``t0_s``)."""
        c = RewardComponents()
        end = min(t1_s, self.end_s)
        c.dt_s = max(0.0, end - t0_s)
        overlap = np.minimum(self.left, t1_s) - np.maximum(self.submit, t0_s)
        c.job_s = float(overlap[overlap > 0].sum())
        c.busy_gpu_s = max(0.0, self._busy_until(end) - self._busy_until(t0_s))
        c.idle_gpu_s = max(0.0, self.total_gpus * c.dt_s - c.busy_gpu_s)
        c.met = _count(self.met_at, t0_s, t1_s)
        c.missed = _count(self.lost_at, t0_s, t1_s)
        c.completed = _count(self.completed_at, t0_s, t1_s)
        c.rejected = _count(self.rejected_at, t0_s, t1_s)
        return c


def _count(times: np.ndarray, t0_s: float, t1_s: float) -> int:
    """Events with ``t0_s < time <= t1_s`` in the sorted ``times`` (an event at 0 falls in the first interval)."""
    lo = np.searchsorted(times, t0_s, side="right") if t0_s > 0 else 0
    return int(np.searchsorted(times, t1_s, side="right") - lo)


__all__ = ["ReferenceRun"]
