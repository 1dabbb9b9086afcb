"""``HetClusterEventEnv``: the agent decides once per job event; a guided expert allocates between events."""

from __future__ import annotations

import copy
import math
from collections import deque
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from hetgym.envs.episode import CoreAttribute, EpisodeCore
from hetgym.envs.events.actions import AUTO_ACTION, REJECT_ACTION, EventActions
from hetgym.envs.events.config import EventAllocator, EventEnvConfig
from hetgym.envs.events.observation import EventObservation
from hetgym.envs.observations_layout import Observation, ObservationLayout
from hetgym.envs.rewards import RewardComponents
from hetgym.sim.decision import StepReport, decision_of
from hetgym.sim.engine import SimulationResult, Simulator
from hetgym.sim.errors import HetgymError, UnknownNameError
from hetgym.sim.fastforward import quiet_hook, quiet_request
from hetgym.sim.forking import fork_policy
from hetgym.sim.guidance import LateReportingPolicy, SharingPolicy
from hetgym.sim.job import JobSpec
from hetgym.sim.view import ClusterView


class HetClusterEventEnv(gym.Env[Observation, np.int64]):
    """A heterogeneous GPU cluster in which the agent decides each arriving job's admission and GPU type,
    and a fixed expert allocator (ElasticFlow's machinery by default) runs the cluster between those events.

    ## Description

    The cluster, the workloads and the simulator are those of ``HetCluster-v1`` (see
    :class:`~hetgym.envs.HetClusterEnv`). Here the agent is asked once per *job event*: when a job arrives
    (several jobs arriving at one epoch are asked one after another, in submission order), and, with
    ``events=("arrival", "late")``, once when a job admitted with the guarantee is first projected by the
    allocator's re-plan to miss its deadline (keep it, action 0, or drop it, action 1). Its choice is a
    :class:`~hetgym.sim.guidance.Directive` for that job: admit it as the allocator would, reject it,
    admit it with the allocator's guarantee without its admission test, or admit it best-effort, and
    optionally the one GPU type it may use. Between events the allocator, a registered guided policy
    (``allocator``, default ``"elasticflow-guided"``: ElasticFlow's minimum-satisfactory-share planning,
    leftover scaling and buddy placement), decides every epoch itself, exactly as
    :meth:`Simulator.run <hetgym.sim.Simulator.run>` drives it; the simulator goes straight from one
    event to the next. An episode therefore has one decision per job, and an agent that always takes
    action 0 (the allocator's own choice) *is* ElasticFlow: the same decisions and per-job results as
    ``Simulator.run(make_policy("elasticflow"))`` on the same workload.

    ## Action Space

    ``Discrete(2 * T + 4)`` for ``T`` GPU types (:mod:`hetgym.envs.events.actions`): 0 = the allocator's
    choice, 1 = reject, then ``auto`` on each type, ``force`` on any type and on each type, and
    ``best_effort``. ``action_masks()`` and ``info["action_mask"]`` allow the type-restricted actions only
    on the types the allocator can run the job on; a masked-out action is taken on any type instead
    (``info["invalid_action"]``).

    With ``action_set="share"`` (``HetClusterEvents-v1``), ``Discrete(6 * T + 16)``: the same actions first,
    then sharing options (the job's class in the allocator's leftover GPUs, high or low, or a cap on its
    GPUs, at its requested count or at its plan's share) on ``auto``, ``force`` and ``best_effort`` on any
    type and on ``force`` on each type; a masked-out one falls back to the same admission with default
    sharing or on any type (:meth:`~hetgym.envs.events.actions.EventActions.fallback`).

    ## Observation Space

    A ``Dict`` of float32 ``Box`` es (:mod:`hetgym.envs.events.observation`): the deciding job per GPU
    type (usable, relative speed, run time, deadline slack, the allocator's admission test under that
    restriction), the job itself (requested GPUs, time to deadline, the admission test on any type), the
    cluster per type (capacity, free GPUs, GPUs held by guaranteed and by best-effort jobs) and queue
    aggregates (active, waiting, guaranteed, best-effort and late jobs, committed work, workload arrived,
    clock). ``probe=False`` leaves the admission-test features at 0 (and skips computing them).
    The encoder writes the features as one float32 vector, its slices named by :attr:`layout` (``name ->
    (start, stop, shape)``) in the keys' sorted order, the order ``gymnasium.spaces.flatten`` of the ``Dict``
    and ``gymnasium.wrappers.FlattenObservation`` give; the ``Dict`` is their views. ``flatten=True`` (the
    ``-v2`` ids) gives that vector, for an ``MlpPolicy``.

    ## Rewards

    +1 when a job with a deadline completes by it, -1 when one is lost (rejected, past its deadline while
    still active, or unfinished at the stop), counted over the simulated time a step covers;
    ``info["reward_components"]`` has the counts (``met``, ``missed``, ``rejected``, ``completed``).

    ## Starting State

    ``reset(seed=...)`` draws the workload with a seed taken from ``np_random``, resets the allocator with
    ``np.random.default_rng(sim.seed)`` (as ``Simulator.run`` does) and advances to the first arrival.
    ``options={"workload_seed": n}`` uses ``scenario.workload.build(cluster, seed=n)`` instead;
    ``options={"jobs": [JobSpec, ...]}`` runs a given workload.

    ## Episode End

    Terminated when every job has completed or been rejected (``info["stop_reason"] == "done"``) or the
    simulator's watchdog stops a run that no longer progresses (``"stalled"``); truncated at
    ``max_time_s`` of simulated time (``"max_time"``) or after ``sim={"max_epochs": n}`` decision epochs
    (``"max_decisions"``; the stop rules of :mod:`hetgym.envs.episode`, as in ``HetCluster``). The step
    that ends the episode runs the simulator to the end (after the last arrival nothing is left to decide)
    and its ``info["metrics"]`` holds the run's metrics, with ``num_decisions`` (the agent's) and
    ``decisions_per_job``.

    ## Arguments

    ``gym.make("HetClusterEvents-v0", **overrides)`` (or ``"hetgym:HetClusterEvents-v0"``), overrides being fields of
    :class:`~hetgym.envs.events.EventEnvConfig`: ``scenario``, ``cluster``, ``workload={...}``,
    ``sim={...}``, ``allocator``, ``allocator_knobs={...}``, ``events``, ``action_set``, ``probe``,
    ``time_scale_s``, ``max_time_s``;
    and ``render_mode="ansi"``. ``HetClusterEvents-Tiny-v0`` is the same with ``scenario="tiny"``;
    ``HetClusterEvents-v1`` and ``HetClusterEvents-Tiny-v1`` add ``action_set="share"``;
    ``HetClusterEvents-v2`` and ``HetClusterEvents-Tiny-v2`` add ``flatten=True`` to those. An unknown key
    names the nearest valid one.

    ## Version History

    * v0: Initial version of the event-driven interface (one decision per job arrival, a guided
      ElasticFlow allocating between them). ``HetCluster-v0`` and ``-v1`` keep their interfaces.
    * v1: The action may also say how the allocator shares GPUs with the job (``action_set="share"``): its
      priority class in ElasticFlow's leftover GPUs and a cap on its GPUs, ``Discrete(6 * T + 16)``. The
      first ``2 * T + 4`` actions, the observation and the rewards are v0's; action 0 is still ElasticFlow,
      bit for bit. v0 is unchanged.
    * v2: v1's MDP with the observation flat by default (``flatten=True``): one float32 ``Box``, the vector
      ``flatten=True`` already gave on v0 and v1, now the encoder's own output rather than a ``Dict`` flattened
      again every step, with :attr:`layout` naming its slices. v0 and v1 are unchanged, bit for bit.
    * Both: a run stopped by ``sim={"max_epochs": n}`` reports ``stop_reason="max_decisions"`` (it said
      ``"max_time"``), as ``HetCluster`` does; observations, rewards and flags are unchanged.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise UnknownNameError("render mode", render_mode, self.metadata["render_modes"])
        self.render_mode = render_mode
        self.config = EventEnvConfig.make(**kwargs)
        self.cluster = self.config.cluster_spec()
        self.gpu_types = tuple(self.cluster.gpu_types)
        self.actions = EventActions(self.gpu_types, self.config.action_set)
        self.action_space = gym.spaces.Discrete(self.actions.n)
        self.encoder = EventObservation(self.cluster, self.config.time_scale_s)
        self._dict_space = self.encoder.space
        space: gym.spaces.Space[Any] = self.encoder.flat_space if self.config.flatten else self._dict_space
        self.observation_space = space
        self.allocator: EventAllocator = self.config.make_allocator()
        # The episode (workload, simulator, stop, metrics; the deadline reward) is a member, as in HetClusterEnv.
        self.core = EpisodeCore(
            self.cluster,
            self.config.sim,
            self.config.draw_jobs,
            reward="deadline",
            time_scale_s=self.config.time_scale_s,
            result_name=str(getattr(self.allocator, "name", "env")),
        )
        self.num_decisions = 0
        self._view: ClusterView | None = None
        self._pending: deque[tuple[str, int]] = deque()  # (event, job id), in the order asked
        self._late_events = "late" in self.config.events
        self._event = ""
        self._job_id = -1
        self._mask = np.zeros(self.actions.n, dtype=bool)
        self._mask[AUTO_ACTION] = True
        self._obs = self.encoder.empty()
        self._kinds: dict[int, str] = {}  # the admitted active jobs: guaranteed | best_effort
        self._decided: dict[int, str] = {}  # this epoch's directed jobs and their admission, until scheduled
        self._best_rates: dict[int, float] = {}

    # ----------------------------------------------------------------------------------------
    # Gymnasium API

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        super().reset(seed=seed)
        # The allocator starts its run as Simulator.run starts a policy's: its seed, round, ticks and placer.
        self._view = self.core.start(options, self.np_random, policy=self.allocator, physics=self.config.physics)
        self.num_decisions = 0
        self._kinds = {}
        self._decided = {}
        self._best_rates = {}
        self._pending = deque()
        comps = RewardComponents()
        if self._view is None:
            # The run ended at its first advance (every job rejected on arrival): that advance's report.
            self._account(self.core.report(None), comps)
            self._end_episode()
        else:
            self._pending.extend(("arrival", jid) for jid in self._view.arrived)
            self._run_to_decision(comps)
        return self._observation(), self._info(comps, invalid=False)

    def step(self, action: Any) -> tuple[Observation, SupportsFloat, bool, bool, dict[str, Any]]:
        core = self.core
        if core.done:
            raise HetgymError("the episode has ended (terminated or truncated); call reset() to start a new one")
        if not self.action_space.contains(action) and not self.action_space.contains(np.int64(action)):
            raise HetgymError(
                f"action {action!r} is outside Discrete({self.actions.n}) (see hetgym.envs.events.actions)"
            )
        a = int(action)
        invalid = not bool(self._mask[a])
        directive = self.actions.directive(a)
        assert self._view is not None
        if self._event == "late":
            # Keep (anything but a drop: nothing changes, the allocator goes on as it would) or drop.
            if a == REJECT_ACTION:
                self.allocator.guide(self._job_id, directive)
        else:
            if invalid:
                directive = self.actions.directive(self.actions.fallback(a, self._mask))
            self.allocator.guide(self._job_id, directive)
            self._decided[self._job_id] = directive.admission
        self.num_decisions += 1
        comps = RewardComponents()
        self._run_to_decision(comps)
        reward = core.reward(comps)
        return self._observation(), reward, core.terminated, core.truncated, self._info(comps, invalid=invalid)

    def _observation(self) -> Observation:
        """The observation as the space says: the flat vector (``flatten=True``), or the ``Dict`` of its slices."""
        if self.config.flatten:
            return self._obs
        obs = self.encoder.flat_layout.as_dict(self._obs)
        # The episode's last (all-zero) observation has always listed its keys in the space's sorted order.
        return dict(sorted(obs.items())) if self.core.done else obs

    @property
    def layout(self) -> ObservationLayout:
        """Where each feature lies in the flat observation: ``name -> (start, stop, shape)``."""
        return self.encoder.flat_layout

    def action_masks(self) -> np.ndarray:
        """The valid actions now (sb3-contrib's MaskablePPO reads this)."""
        return self._mask.copy()

    def render(self) -> str | None:
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; make the env with render_mode='ansi'")
            return None
        view = self._view
        if view is None or self.core.done:
            return f"episode over ({self.core.stop_reason}); {self.num_decisions} decisions"
        free = ", ".join(f"{t} {view.free_gpus.get(t, 0)}/{self.cluster.capacity[t]}" for t in self.gpu_types)
        job = view.job(self._job_id)
        slack_h = (job.deadline_s - view.now_s) / 3600.0
        return (
            f"t={view.now_s / 3600.0:.2f} h  job {job.job_id} ({job.job_type}, {job.num_gpus} GPUs, "
            f"deadline in {slack_h:.2f} h)  free: {free}  active {len(view.jobs)}  decisions {self.num_decisions}"
        )

    # ----------------------------------------------------------------------------------------
    # For experts and evaluation

    @property
    def view(self) -> ClusterView | None:
        """The epoch of the pending decision (``None`` once the episode has ended)."""
        return None if self.core.done else self._view

    @property
    def job_id(self) -> int:
        """The job the pending decision is about (-1 once the episode has ended)."""
        return -1 if self.core.done else self._job_id

    # The episode's own attributes, shown under the env's names; a lookahead's fork replaces its jobs still to arrive.
    sim: CoreAttribute[Simulator | None] = CoreAttribute("The current episode's simulator (``None`` before reset).")
    jobs: CoreAttribute[tuple[JobSpec, ...]] = CoreAttribute("The current episode's workload.", writable=True)
    workload_seed: CoreAttribute[int | None] = CoreAttribute(
        "The seed the current episode's workload was drawn with (``None``: given jobs)."
    )
    episode_id: CoreAttribute[int] = CoreAttribute("How many episodes have started.")

    def usable_types(self) -> tuple[str, ...]:
        """The GPU types the allocator can run the deciding job on."""
        if self._view is None or self.core.done:
            return ()
        return tuple(self.allocator.usable_types(self._view, self._job_id))

    #: What a :meth:`fork` shares with the original: set at construction and never changed by an episode.
    _FORK_SHARED = (
        "config", "cluster", "gpu_types", "actions", "action_space", "encoder", "_dict_space",
        "observation_space", "spec", "metadata", "render_mode",
    )  # fmt: skip

    def fork(self) -> HetClusterEventEnv:
        """An independent env at the same decision: stepping one leaves the other as it was.

        Its simulator is forked (:meth:`Simulator.fork <hetgym.sim.engine.Simulator.fork>`: immutable data
        shared, mutable state copied), its allocator copied with its state (``copy_state()``, else a deep copy),
        the pending view rebound to the forked simulator, and the pending events, masks, observation,
        bookkeeping and ``np_random`` copied. The same actions give both the same observations, rewards and
        results, bit for bit (``tests/envs/test_fork.py``).
        """
        state = self.__dict__
        shared = {name: state[name] for name in self._FORK_SHARED if name in state}
        shared_jobs = self.core.jobs  # the workload, shared like the configuration
        memo: dict[int, Any] = {id(value): value for value in (*shared.values(), shared_jobs)}
        special = ("core", "allocator", "_view")
        out = type(self).__new__(type(self))
        out.__dict__.update({name: copy.deepcopy(value, memo) for name, value in state.items() if name not in special})
        out.__dict__.update(shared)
        core = self.core.fork(memo)
        out.core = core
        out.allocator = fork_policy(self.allocator, memo)
        view = self._view
        sim = core.sim
        out._view = sim.rebind_view(view) if sim is not None and view is not None and not core.done else view
        return out

    def result(self) -> SimulationResult:
        """The simulator's result for the current episode (complete once it has ended)."""
        return self.core.current_result()

    # ----------------------------------------------------------------------------------------
    # Internals

    def _run_to_decision(self, comps: RewardComponents) -> None:
        """Schedule and advance the simulator until a job event needs the agent, or the run ends."""
        sim = self.core.sim
        assert sim is not None
        cluster = sim.cluster
        allocator = self.allocator
        quiet_until = quiet_hook(allocator) if sim.fast_forward else None
        reporter: LateReportingPolicy | None = None  # the allocator, when the agent is asked at late events
        if self._late_events:
            assert isinstance(allocator, LateReportingPolicy)  # EventEnvConfig checked it
            reporter = allocator
        view = self._view
        while True:
            if self._pending:
                assert view is not None
                self._view = view
                event, job_id = self._pending.popleft()
                self._present(view, event, job_id, comps)
                return
            assert view is not None
            allocation = allocator.schedule(view)
            if self._decided:
                self._settle(view, allocation.reject)
            late = reporter.newly_late() if reporter is not None else ()
            # Ticks at which the allocator's answer stands are passed over (hetgym.sim.fastforward), unless a
            # late event is to be asked at the next epoch.
            quiet = quiet_request(quiet_until(), view.now_s) if quiet_until is not None and not late else None
            # The allocator's answer as the rows it changes, so that the step reports what it brought.
            decision = decision_of(allocation, cluster, view.active.token, view.active.allocations)
            view = None  # the epoch's snapshot need not outlive the step
            report = sim.step(decision, quiet=quiet)
            view = report.view
            self._account(report, comps)  # the last report also has the jobs left unfinished at a stop
            if view is None:
                self._view = None
                self._end_episode()
                return
            self._pending.extend(("arrival", jid) for jid in view.arrived)
            if late:
                active = view.job_index
                self._pending.extend(("late", jid) for jid in late if jid in active)

    def _settle(self, view: ClusterView, rejected: frozenset[int]) -> None:
        """Record what the epoch's directed arrivals became once the allocator scheduled them."""
        for jid, admission in self._decided.items():
            if jid in rejected:
                continue
            job = view.job(jid)
            guaranteed = admission in ("auto", "force") and job.spec.has_deadline
            self._kinds[jid] = "guaranteed" if guaranteed else "best_effort"
            self._best_rates[jid] = self.encoder.best_rate(view, job)
        self._decided = {}

    def _account(self, report: StepReport, comps: RewardComponents) -> None:
        """Count the jobs that ended and the deadline outcomes ``report`` gives (the core's accounting);
        forget the ended jobs' bookkeeping."""
        self.core.account(report, comps)
        for jid, _, _ in report.ended:
            self._kinds.pop(jid, None)
            self._best_rates.pop(jid, None)

    def _present(self, view: ClusterView, event: str, job_id: int, comps: RewardComponents) -> None:
        """Make ``job_id`` the deciding job of ``event``: its mask and observation."""
        self._job_id = job_id
        self._event = event
        allocator = self.allocator
        usable = tuple(allocator.usable_types(view, job_id))
        late = event == "late"
        if late:
            self._mask = self.actions.late_mask()
        elif self.actions.shares:
            assert isinstance(allocator, SharingPolicy)  # EventEnvConfig checked it
            capped = tuple(allocator.capped_types(view, job_id, "requested"))
            self._mask = self.actions.mask(usable, capped)
        else:
            self._mask = self.actions.mask(usable)
        probe = None
        if self.config.probe and not late:
            choices: tuple[str | None, ...] = (None, *self.gpu_types)
            probe = tuple(allocator.probe(view, job_id, choices))
        self._obs = self.encoder.build_flat(
            view,
            view.job(job_id),
            usable,
            probe,
            kinds=self._kinds,
            best_rates=self._best_rates,
            to_decide=len(self._pending),
            num_jobs=len(self.core.jobs),
            late=late,
        )

    def _end_episode(self) -> None:
        self._job_id = -1
        self._event = ""
        self._mask = np.zeros(self.actions.n, dtype=bool)
        self._mask[AUTO_ACTION] = True
        self._obs = self.encoder.empty()
        self.core.end()

    def _info(self, comps: RewardComponents, *, invalid: bool) -> dict[str, Any]:
        core = self.core
        view = self._view
        if view is not None and not core.done:
            now_s = float(view.now_s)
        else:
            now_s = float(core.sim.now_s) if core.sim is not None else 0.0
        info: dict[str, Any] = {
            "action_mask": self._mask.copy(),
            "event": self._event if not core.done else "end",
            "job_id": self.job_id,
            "now_s": now_s,
            "num_decisions": self.num_decisions,
            "invalid_action": invalid,
            "reward_components": {
                "met": comps.met,
                "missed": comps.missed,
                "rejected": comps.rejected,
                "completed": comps.completed,
            },
        }
        if core.done:
            metrics = core.final_metrics(self.num_decisions)
            n = len(core.jobs)
            metrics["decisions_per_job"] = self.num_decisions / n if n else math.nan
            core.end_info(info, metrics)
        return info


__all__ = ["HetClusterEventEnv"]
