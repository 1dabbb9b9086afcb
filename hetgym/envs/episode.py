"""The episode core that both decision interfaces compose: one simulated run, from reset options to final metrics.

``HetCluster`` (:class:`~hetgym.envs.env.HetClusterEnv`: the agent edits a window of jobs' allocations) and
``HetClusterEvents`` (:class:`~hetgym.envs.events.HetClusterEventEnv`: the agent answers one question per job
event) are two Markov decision processes over the same episode. What that episode is does not depend on the
interface, so it lives here once, in :class:`EpisodeCore`, which each env holds as a member:

* the reset options (:data:`RESET_OPTIONS`, checked by :func:`~hetgym.envs.reset_options.check_reset_options`)
  and the workload they select: given jobs, a replayed trace, or a draw from the recipe with a seed taken
  from the env's ``np_random`` (always taken, so the random stream advances the same whatever the options);
* the simulator: built per episode, started with a policy's physics where one drives it (as
  :meth:`Simulator.run <hetgym.sim.Simulator.run>` starts a policy's run);
* what a step's simulated time brought: the jobs that ended and the deadlines met or lost, as the
  simulator's :class:`~hetgym.sim.decision.StepReport` gives them (each report covers everything recorded
  since the previous one: the reset's first advance, quiet ticks passed over, the jobs left unfinished at
  the stop), mapped into :class:`~hetgym.envs.rewards.RewardComponents`, and the reward those components
  give (:data:`~hetgym.envs.rewards.REWARDS`, by name);
* the stop: why the run ended (:data:`STOP_REASONS`; :data:`TERMINAL_REASONS` terminate, the caps truncate),
  the run's result, and the final ``info`` (metrics without the wall-clock ones, :data:`WALL_CLOCK_METRICS`).

The core knows neither the observation nor the action space: the envs map its state to theirs. What both
envs show of it under their own names (``env.sim``, ``env.jobs``, ``env.workload_seed``, ``env.episode_id``)
is declared once, as :class:`CoreAttribute` descriptors, rather than as a base class.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar, overload

import numpy as np

from hetgym.envs.reset_options import check_reset_options
from hetgym.envs.rewards import REWARDS, RewardComponents, RewardFn
from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.config import SimConfig
from hetgym.sim.decision import StepReport
from hetgym.sim.engine import SimulationResult, Simulator
from hetgym.sim.errors import HetgymError
from hetgym.sim.job import JobSpec, JobStatus
from hetgym.sim.physics import Physics, resolve_physics
from hetgym.sim.policy import PolicyProtocol
from hetgym.sim.throughput import ThroughputModel
from hetgym.sim.view import ClusterView

#: Metrics that measure wall-clock time; never put in ``info`` (runs must be reproducible).
WALL_CLOCK_METRICS = ("decision_ms_p50", "decision_ms_p99")
#: The keys of ``env.reset(options=...)`` (see :mod:`hetgym.envs.reset_options`).
RESET_OPTIONS = ("workload_seed", "jobs")
#: Why a run stopped: every job ended, the simulator's watchdog gave up, or a cap (time, decision epochs).
STOP_REASONS = ("done", "stalled", "max_time", "max_decisions")
#: Stop reasons that end the episode as terminated (the others, the caps, truncate it).
TERMINAL_REASONS = ("done", "stalled")


class EpisodeCore:
    """One episode of the simulator, as every decision interface of the project sees it.

    Args:
        cluster: The cluster.
        sim_config: The simulator's knobs.
        draw_jobs: The workload recipe: ``draw_jobs(seed)`` gives an episode's jobs.
        throughput: The throughput model (``None``: the simulator's default).
        fixed_jobs: Jobs every episode replays (a trace) unless ``options["jobs"]`` gives others.
        reward: The name of the reward (:data:`~hetgym.envs.rewards.REWARDS`) :meth:`reward` computes.
        time_scale_s: The reward's time unit.
        result_name: The policy name the run's result carries.

    Before the first :meth:`start` the core has no simulator and counts as ended (``done``).
    """

    def __init__(
        self,
        cluster: ClusterSpec,
        sim_config: SimConfig,
        draw_jobs: Callable[[int], tuple[JobSpec, ...]],
        *,
        throughput: ThroughputModel | None = None,
        fixed_jobs: tuple[JobSpec, ...] | None = None,
        reward: str = "deadline",
        time_scale_s: float = 3600.0,
        result_name: str = "env",
    ) -> None:
        self.cluster = cluster
        self.sim_config = sim_config
        self.throughput = throughput
        self.total_gpus = int(cluster.total_gpus)
        self.fixed_jobs = fixed_jobs
        self.reward_name = reward
        self.time_scale_s = float(time_scale_s)
        self.result_name = result_name
        self._draw_jobs = draw_jobs
        self._reward_fn: RewardFn = REWARDS.get(reward)
        self.sim: Simulator | None = None
        self.jobs: tuple[JobSpec, ...] = ()
        self.workload_seed: int | None = None
        self.episode_id = 0
        self.started = False
        self.done = True
        self.stop_reason = ""
        self.result: SimulationResult | None = None

    # ----------------------------------------------------------------------------------------
    # Start

    def start(
        self,
        options: Mapping[str, Any] | None,
        np_random: np.random.Generator,
        *,
        fast_forward: bool = True,
        policy: PolicyProtocol | None = None,
        physics: Physics | None = None,
    ) -> ClusterView | None:
        """Start an episode: check ``options``, choose the workload, build and start the simulator.

        Args:
            options: ``env.reset``'s options (:data:`RESET_OPTIONS`); checked before anything changes.
            np_random: The env's random stream; one seed is drawn from it whatever the options say.
            fast_forward: The simulator's quiet-tick fast-forward (:mod:`hetgym.sim.fastforward`).
            policy: The policy that drives the simulator between the agent's decisions, if any: it is reset
                with the simulator's seed, as ``Simulator.run`` starts a policy's run.
            physics: The run's physics (the env configuration's); ``None``: resolved from the simulator's
                configuration and ``policy`` (:func:`~hetgym.sim.physics.resolve_physics`).

        Returns:
            The first decision epoch's view, or ``None`` when the run ended at once (then :meth:`end` is due).
        """
        checked = check_reset_options(options, RESET_OPTIONS)
        drawn = int(np_random.integers(0, 2**31 - 1))
        if "jobs" in checked:
            jobs = tuple(checked["jobs"])
            seed = None
        elif self.fixed_jobs is not None:
            jobs = self.fixed_jobs
            seed = None
        else:
            seed = int(checked.get("workload_seed", drawn))
            jobs = self._draw_jobs(seed)
        self.jobs = jobs
        self.workload_seed = seed
        sim = Simulator(
            self.cluster, jobs, config=self.sim_config, throughput=self.throughput, fast_forward=fast_forward
        )
        self.sim = sim
        self.episode_id += 1
        self.started = True
        self.done = False
        self.stop_reason = ""
        self.result = None
        if policy is not None:
            policy.reset(self.cluster, rng=np.random.default_rng(self.sim_config.seed))
        return sim.reset(physics=physics if physics is not None else resolve_physics(self.sim_config, policy))

    # ----------------------------------------------------------------------------------------
    # What a step brought

    @staticmethod
    def account(report: StepReport, comps: RewardComponents) -> bool:
        """Count what ``report`` says the simulator decided into ``comps``: jobs ended, deadlines met or lost.

        Returns whether a deadline was lost. A deadline job is lost at its rejection, at the first epoch past
        its deadline, or when left unfinished at the stop, as the simulator's accounting decides it
        (:mod:`hetgym.sim.deadlines`: the metrics' tolerance).
        """
        completed, rejected = JobStatus.COMPLETED, JobStatus.REJECTED
        for _, _, status in report.ended:
            if status == completed:
                comps.completed += 1
            elif status == rejected:
                comps.rejected += 1
        lost = False
        for outcome in report.deadlines:
            if outcome.met:
                comps.met += 1
            else:
                comps.missed += 1
                lost = True
        return lost

    def report(self, view: ClusterView | None) -> StepReport:
        """What the simulator recorded since its previous report, with the current ``view``: for an advance that
        made no report (the reset's first one)."""
        sim = self.sim
        assert sim is not None
        return sim.report(view)

    def reward(self, comps: RewardComponents) -> float:
        """The configured reward of ``comps`` (a step's, or a reference run's over the same interval)."""
        return self._reward_fn(comps, self.time_scale_s, self.total_gpus)

    # ----------------------------------------------------------------------------------------
    # The stop

    def end(self) -> SimulationResult:
        """The run has stopped: record its result and why it stopped (one of :data:`STOP_REASONS`)."""
        sim = self.sim
        assert sim is not None
        self.done = True
        result = sim.result(self.result_name)
        self.result = result
        m = result.metrics
        if m["num_unfinished"] == 0 and m["num_not_arrived"] == 0:
            self.stop_reason = "done"
        elif result.stalled:
            self.stop_reason = "stalled"
        elif sim.now_s >= self.sim_config.max_time_s:
            self.stop_reason = "max_time"
        else:
            self.stop_reason = "max_decisions"
        return result

    @property
    def terminated(self) -> bool:
        """Whether the episode ended as terminated (every job ended, or stalled)."""
        return self.done and self.stop_reason in TERMINAL_REASONS

    @property
    def truncated(self) -> bool:
        """Whether the episode ended as truncated (a cap on time or decision epochs)."""
        return self.done and self.stop_reason not in TERMINAL_REASONS

    def final_metrics(self, num_decisions: float) -> dict[str, float]:
        """The run's metrics without the wall-clock ones, with ``num_decisions`` (the interface's count)."""
        assert self.result is not None
        metrics = {k: float(v) for k, v in self.result.metrics.items() if k not in WALL_CLOCK_METRICS}
        metrics["num_decisions"] = float(num_decisions)
        return metrics

    def end_info(self, info: dict[str, Any], metrics: dict[str, float]) -> None:
        """Add the last step's keys to ``info``: ``stop_reason``, ``stall_reason`` (if stalled), ``metrics``,
        ``workload_seed``."""
        assert self.result is not None
        info["stop_reason"] = self.stop_reason
        if self.result.stalled:
            info["stall_reason"] = self.result.stall_reason
        info["metrics"] = metrics
        info["workload_seed"] = self.workload_seed

    def current_result(self) -> SimulationResult:
        """The simulator's result for the current episode (complete once it has ended)."""
        if self.sim is None:
            raise HetgymError("call reset() first")
        return self.result if self.result is not None else self.sim.result(self.result_name)

    # ----------------------------------------------------------------------------------------
    # Copies: a fork shares the immutable data and copies the rest; a pickle re-resolves the reward by name
    # (a registered plug-in pickles as its name).

    def fork(self, memo: dict[int, Any]) -> EpisodeCore:
        """An independent core at the same point: the simulator forked, the workload and configuration shared."""
        out = copy.copy(self)
        out.sim = self.sim.fork() if self.sim is not None else None
        out.result = copy.deepcopy(self.result, memo)
        return out

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_reward_fn"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reward_fn = REWARDS.get(self.reward_name)


class _HasCore(Protocol):
    core: EpisodeCore


_T = TypeVar("_T")


class CoreAttribute(Generic[_T]):
    """An env's attribute that is its episode core's attribute of the same name (``env.x`` is ``env.core.x``).

    Args:
        doc: The attribute's docstring.
        writable: Whether ``env.x = value`` sets the core's (else it raises ``AttributeError``, as a property
            without a setter does).

    Both envs declare the attributes they show of the core with it (``sim = CoreAttribute(...)``), so the
    forwarding is written once and the env classes keep inheriting from ``gymnasium.Env`` alone.
    """

    def __init__(self, doc: str, *, writable: bool = False) -> None:
        self.__doc__ = doc
        self.writable = writable
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, env: None, owner: type | None = None) -> CoreAttribute[_T]: ...

    @overload
    def __get__(self, env: _HasCore, owner: type | None = None) -> _T: ...

    def __get__(self, env: _HasCore | None, owner: type | None = None) -> _T | CoreAttribute[_T]:
        if env is None:
            return self  # read on the class: the descriptor itself (its docstring for help())
        value: _T = getattr(env.core, self.name)
        return value

    def __set__(self, env: _HasCore, value: _T) -> None:
        if not self.writable:
            raise AttributeError(f"{self.name!r} is read-only: it is the episode's (env.core.{self.name})")
        setattr(env.core, self.name, value)


__all__ = ["RESET_OPTIONS", "STOP_REASONS", "TERMINAL_REASONS", "WALL_CLOCK_METRICS", "CoreAttribute", "EpisodeCore"]
