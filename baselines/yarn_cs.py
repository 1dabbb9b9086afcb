"""YARN's capacity scheduler (YARN-CS): FIFO within queues, strict gang, no preemption, consolidation first.

The baseline Hadar is compared with in its conference version (Sultana et al., "Hadar:
Heterogeneity-Aware Optimization-Based Online Scheduling for Deep Learning Cluster", IPDPS 2024), and
Tiresias' (NSDI 2019) baseline for Hadoop YARN's capacity scheduler on GPU clusters.

Confirmed [C: the IPDPS'24 abstract names YARN-CS; R: the details]: FIFO order within a queue, strict
gang scheduling (a job gets all its requested GPUs at once or none), no preemption, consolidation-first
placement. Heterogeneity-unaware: YARN sees GPUs as one countable resource.

Reconstructed (knobs):

* **Queues** (``queues``): ``"user"`` (default) puts each job in the queue of its ``user`` (jobs without
  one share the ``default`` queue); ``"single"`` puts every job in one queue, which makes YARN-CS the
  strict FIFO of :mod:`baselines.fifo`. Each active queue's guaranteed capacity is an equal share of the
  cluster; queues are offered GPUs in increasing used share (YARN's utilisation-ordered queues), ties by
  the submit time of their head job.
* **Maximum capacity** (``max_queue_share``): the fraction of the cluster one queue may hold (YARN's
  ``maximum-capacity``; 1.0, fully elastic, by default). A queue whose head would pass it waits.
* **Head-of-line blocking** (``strict``): a queue whose head job does not fit starts nothing else
  (YARN's FIFO ordering policy; ``strict=False`` lets later jobs of that queue go ahead).
* **GPU type** (``type_choice``): ``"order"`` (default: the first type in the cluster's order with room,
  heterogeneity-unaware) or ``"fastest"``.
* **Placement**: the simulator's ``default`` placer (best fit on one server, else the fewest servers),
  i.e. consolidation first.

Decisions change only on arrivals and completions (no round ticks), and a running job is never touched.
"""

from __future__ import annotations

from dataclasses import dataclass

from baselines._common import TYPE_CHOICE_DOC, TYPE_CHOICES, TypeChoice, gang_counts, keep_running
from hetgym.sim.allocation import Allocation
from hetgym.sim.knob_policy import KnobPolicy
from hetgym.sim.policy import register_policy
from hetgym.sim.registry import Knobs, knob
from hetgym.sim.view import ClusterView, JobView

QUEUE_MODES = ("user", "single")
DEFAULT_QUEUE = "default"


@dataclass(frozen=True)
class YarnCSKnobs(Knobs):
    """Knobs of :class:`YarnCS`."""

    queues: str = knob("user", choices=QUEUE_MODES, doc="'user' (a queue per job user) or 'single'")
    max_queue_share: float = knob(
        1.0, low=0.0, low_open=True, high=1.0, doc="fraction of the cluster one queue may hold (maximum-capacity)"
    )
    strict: bool = knob(True, doc="a queue whose head job does not fit starts nothing else")
    type_choice: TypeChoice = knob("order", choices=TYPE_CHOICES, doc=TYPE_CHOICE_DOC)


@register_policy()
class YarnCS(KnobPolicy[YarnCSKnobs]):
    """YARN capacity scheduler: FIFO per queue, strict gang, no preemption (Hadar IPDPS'24 baseline)."""

    name = "yarn-cs"
    knobs = YarnCSKnobs
    in_default_comparison = False  # a baseline of the papers' studies: name it in --policies
    uses_ticks = False  # decisions change only on arrivals and completions
    keeps_gpus_busy = False  # a blocked queue head leaves GPUs idle that later jobs could use

    def queue_of(self, job: JobView) -> str:
        """The queue a job is submitted to."""
        if self.knob_values.queues == "single":
            return DEFAULT_QUEUE
        return job.spec.user or DEFAULT_QUEUE

    def schedule(self, view: ClusterView) -> Allocation:
        builder = keep_running(view)
        used_gpus: dict[str, int] = {}
        for job in view.running:
            q = self.queue_of(job)
            used_gpus[q] = used_gpus.get(q, 0) + (job.allocation.total_gpus if job.allocation else 0)
        waiting: dict[str, list[JobView]] = {}
        for job in view.waiting:  # submission order
            waiting.setdefault(self.queue_of(job), []).append(job)
        limit_gpus = self.knob_values.max_queue_share * view.cluster.total_gpus
        while waiting:
            # The least-used queue first (equal guarantees), ties by its head's submission.
            q = min(waiting, key=lambda name: (used_gpus.get(name, 0), waiting[name][0].submit_s, name))
            queue = waiting[q]
            started = False
            for i, job in enumerate(queue):
                counts = None
                if used_gpus.get(q, 0) + job.num_gpus <= limit_gpus + 1e-9:
                    counts = gang_counts(view, job, builder.free, job.num_gpus, self.knob_values.type_choice)
                if counts:
                    builder.assign(job.job_id, counts)
                    used_gpus[q] = used_gpus.get(q, 0) + job.num_gpus
                    del queue[i]
                    started = True
                    break
                if self.knob_values.strict:
                    break
            if not started or not queue:
                del waiting[q]  # a queue that can start nothing more is done for this epoch
        return builder.build()
