"""Potential-based shaping of the deadline objective (``shaping="deadline-slack"``).

Ng, Harada and Russell ("Policy invariance under reward transformations", ICML 1999): adding
``F = gamma * Phi(s') - Phi(s)`` to every reward leaves the optimal policies unchanged for any potential
``Phi`` of the state, when ``gamma`` is the learner's discount. Under the ``deadline`` reward a job's +1 or -1
arrives only when it completes or its deadline passes, often hours after the decisions that decided it; a
potential that anticipates it moves the signal to those decisions.

The potential here: over the active jobs that have a deadline,

    Phi(s) = sum_j (+1 if slack_j >= 0 else -1),    slack_j = deadline_j - now - remaining_j / best_rate_j,

``best_rate_j`` being the job's fastest rate on an allowed type with its requested count, alone (so a job
with negative slack cannot meet its deadline whatever the scheduler does, and one with non-negative slack
still can). ``Phi`` is 0 in the terminal state. A step's shaping term uses the discount of its simulated
interval, ``shaping_gamma ** (dt / time_scale_s)`` (zero-time steps: 1): set ``shaping_gamma`` to the
learner's discount per ``time_scale_s`` (time-discounted PPO, :mod:`agents.smdp`), or leave it at 1 for an
undiscounted objective; then an episode's shaping terms sum to ``-Phi(s_0)``, whatever the agent does.
"""

from __future__ import annotations

from hetgym.envs.state import slack_s
from hetgym.sim.rates import RateTable
from hetgym.sim.view import ClusterView

SHAPINGS: tuple[str, ...] = ("deadline-slack",)


def deadline_slack_potential(view: ClusterView | None, statics: RateTable) -> float:
    """``Phi``: +1 per active deadline job that can still meet its deadline, -1 per one that cannot."""
    if view is None:
        return 0.0
    now = view.now_s
    total = 0.0
    for job in view.jobs:
        if job.spec.has_deadline:
            total += 1.0 if slack_s(job, statics.get(job).best_rate, now) >= 0.0 else -1.0
    return total


__all__ = ["SHAPINGS", "deadline_slack_potential"]
