"""Rewards: functions of the components the environment measures over each simulated interval.

When an action commits, the simulator runs from the decision epoch at ``t0`` to the next one at
``t1`` (or to the end); :class:`RewardComponents` measures that interval exactly, using the
simulator's record of when each job ended. Steps that do not commit (sequential edits of the draft)
cover no simulated time and have all components 0. Every component is reported in
``info["reward_components"]`` whatever reward is selected.

Rewards (``reward=...``; their sums over an episode are given for a run that ends with every job done):

* ``deadline`` (default): ``+1`` for each job completed by its deadline, ``-1`` for each deadline job
  the moment it is lost (rejected, or its deadline passes unfinished, or at the end for jobs left
  unfinished); sum = met - missed = ``(2 x DSR - 1) x jobs with deadlines``.
* ``jct``: ``-(job-seconds in the system) / time_scale_s``, counting every arrived, unfinished job
  over the interval; sum = -(sum of JCTs) / time_scale_s.
* ``makespan``: ``-(t1 - t0) / time_scale_s``; sum = -(time of the last completion) / time_scale_s.
* ``utilisation``: ``-(idle GPU-seconds) / (cluster GPUs x time_scale_s)``; sum =
  -(1 - utilisation) x makespan / time_scale_s, so both idle GPUs and a long schedule cost.

When the run stops with jobs unfinished (stalled, or a cap), the last step also charges what they
still needed at the least: each one's remaining iterations at its best rate with its requested count,
alone on the cluster (``unfinished_s``, summed; ``unfinished_max_s``, the longest;
``unfinished_gpu_s``, times its GPUs). ``jct`` adds ``unfinished_s``, ``makespan`` adds
``unfinished_max_s``, ``utilisation`` adds the least idle time that finishing them implies,
``max(0, GPUs x unfinished_max_s - unfinished_gpu_s)``. Without it, ending the run early (an agent that
never allocates makes the simulator give up) would look cheap.

Rewards are chosen by name from the registry :data:`REWARDS`; add one with :func:`register_reward`. A
reward is a plain function of the step's components, the time scale and the cluster's GPU count; it has
no knobs of its own (register a variant under its own name).
"""

from __future__ import annotations

from collections.abc import Callable

from hetgym.sim.registry import Registry


class RewardComponents:
    """What happened over one step's simulated interval.

    Attributes:
        dt_s: Simulated seconds covered.
        job_s: Job-seconds in the system (arrived, not ended), summed over jobs.
        busy_gpu_s: GPU-seconds allocated to jobs (restart penalties included).
        idle_gpu_s: Cluster GPU-seconds not allocated.
        met: Deadline jobs completed by their deadline.
        missed: Deadline jobs lost in this interval (rejected, deadline passed, or left unfinished).
        completed: Jobs completed.
        rejected: Jobs rejected.
        invalid: 1 if the action was masked out (sequential) or repaired (one-shot), else 0.
        unfinished_s: At the stop, the least time the unfinished jobs still needed, summed.
        unfinished_max_s: The longest of those times.
        unfinished_gpu_s: Those times multiplied by each job's requested GPUs, summed.
    """

    __slots__ = (
        "busy_gpu_s",
        "completed",
        "dt_s",
        "idle_gpu_s",
        "invalid",
        "job_s",
        "met",
        "missed",
        "rejected",
        "unfinished_gpu_s",
        "unfinished_max_s",
        "unfinished_s",
    )

    def __init__(self, invalid: int = 0) -> None:
        self.dt_s = 0.0
        self.job_s = 0.0
        self.busy_gpu_s = 0.0
        self.idle_gpu_s = 0.0
        self.met = 0
        self.missed = 0
        self.completed = 0
        self.rejected = 0
        self.invalid = invalid
        self.unfinished_s = 0.0
        self.unfinished_max_s = 0.0
        self.unfinished_gpu_s = 0.0

    def as_dict(self) -> dict[str, float]:
        """A fresh plain dict (for ``info``)."""
        return {
            "dt_s": float(self.dt_s),
            "job_s": float(self.job_s),
            "busy_gpu_s": float(self.busy_gpu_s),
            "idle_gpu_s": float(self.idle_gpu_s),
            "met": float(self.met),
            "missed": float(self.missed),
            "completed": float(self.completed),
            "rejected": float(self.rejected),
            "invalid": float(self.invalid),
            "unfinished_s": float(self.unfinished_s),
            "unfinished_max_s": float(self.unfinished_max_s),
            "unfinished_gpu_s": float(self.unfinished_gpu_s),
        }


#: ``reward(components, time_scale_s, total_gpus) -> float``.
RewardFn = Callable[[RewardComponents, float, int], float]

#: Every registered reward function, by ``reward=`` name (see :mod:`hetgym.sim.registry`).
REWARDS: Registry[RewardFn] = Registry(
    "reward", "Register one with @hetgym.envs.register_reward(name); list them with hetgym.envs.REWARDS.describe()."
)


def register_reward(name: str) -> Callable[[RewardFn], RewardFn]:
    """Function decorator: register ``reward(components, time_scale_s, total_gpus) -> float`` as ``reward=name``.

    The function sees every :class:`RewardComponents` field of the step (all 0 on steps that do not
    commit, except ``invalid``); the environment subtracts ``invalid_action_penalty`` itself. Rejections
    stay allowed only under ``deadline`` (see ``allow_reject`` in :class:`~hetgym.envs.config.HetClusterConfig`).
    """
    return REWARDS.decorator(name)


@register_reward("deadline")
def deadline_reward(c: RewardComponents, time_scale_s: float, total_gpus: int) -> float:
    """+1 per deadline met, -1 per deadline lost."""
    return float(c.met - c.missed)


@register_reward("jct")
def jct_reward(c: RewardComponents, time_scale_s: float, total_gpus: int) -> float:
    """Minus the job-time spent in the system (and still needed at the stop), in ``time_scale_s`` units."""
    return -(c.job_s + c.unfinished_s) / time_scale_s


@register_reward("makespan")
def makespan_reward(c: RewardComponents, time_scale_s: float, total_gpus: int) -> float:
    """Minus the simulated time elapsed (and still needed at the stop), in ``time_scale_s`` units."""
    return -(c.dt_s + c.unfinished_max_s) / time_scale_s


@register_reward("utilisation")
def utilisation_reward(c: RewardComponents, time_scale_s: float, total_gpus: int) -> float:
    """Minus the idle GPU-time per cluster GPU (and the least still implied at the stop), in ``time_scale_s``."""
    left_idle = max(0.0, total_gpus * c.unfinished_max_s - c.unfinished_gpu_s)
    return -(c.idle_gpu_s + left_idle) / (total_gpus * time_scale_s)
