"""Shortest remaining time first, preemptive.

At every decision epoch the active jobs are ranked by remaining time, ``remaining_iters`` divided by
the job's best rate over its allowed GPU types at its requested count, and given their requested gang
greedily in that order (backfilling). Running jobs that keep their rank keep their GPUs; jobs pushed
out are preempted and pay the restart penalty when they resume.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from baselines._common import TYPE_CHOICE_DOC, TYPE_CHOICES, TypeChoice, best_rate, greedy_fill
from hetgym.sim.allocation import Allocation
from hetgym.sim.knob_policy import KnobPolicy
from hetgym.sim.policy import register_policy
from hetgym.sim.registry import Knobs, knob
from hetgym.sim.view import ClusterView, JobView


@dataclass(frozen=True)
class SRTFKnobs(Knobs):
    """Knobs of :class:`SRTF`."""

    type_choice: TypeChoice = knob("fastest", choices=TYPE_CHOICES, doc=TYPE_CHOICE_DOC)


@register_policy()
class SRTF(KnobPolicy[SRTFKnobs]):
    """Preemptive shortest-remaining-time-first with each job's requested GPU count."""

    name = "srtf"
    knobs = SRTFKnobs
    uses_ticks = False  # decisions change only on arrivals and completions
    keeps_gpus_busy = True  # greedy fill with backfilling at every epoch

    @staticmethod
    def remaining_s(view: ClusterView, job: JobView) -> float:
        """The job's remaining time on its best GPU type, ignoring penalties."""
        rate = best_rate(view, job)
        return job.remaining_iters / rate if rate > 0 else math.inf

    def schedule(self, view: ClusterView) -> Allocation:
        ordered = sorted(view.jobs, key=lambda j: (self.remaining_s(view, j), j.submit_s, j.job_id))
        return greedy_fill(view, ordered, type_choice=self.knob_values.type_choice)
