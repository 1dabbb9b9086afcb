"""``HetClusterEnv``: the Gymnasium environment around the discrete-event simulator."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from hetgym.envs.codecs import CODECS, ActionCodec
from hetgym.envs.config import HetClusterConfig
from hetgym.envs.episode import RESET_OPTIONS, TERMINAL_REASONS, WALL_CLOCK_METRICS, CoreAttribute, EpisodeCore
from hetgym.envs.exactness import Encoding
from hetgym.envs.intervals import add_interval, add_quiet_ticks, charge_unfinished
from hetgym.envs.observations import OBSERVATIONS, ObservationEncoder
from hetgym.envs.observations_layout import Observation, ObservationLayout
from hetgym.envs.quiet import QuietEpochs
from hetgym.envs.reference import ReferenceRun
from hetgym.envs.render import Segment, render_ansi, render_rgb
from hetgym.envs.rewards import RewardComponents
from hetgym.envs.shaping import deadline_slack_potential
from hetgym.envs.state import WINDOW_ORDERS, Commit, DecisionState
from hetgym.sim.allocation import Allocation
from hetgym.sim.engine import SimulationResult, Simulator
from hetgym.sim.errors import HetgymError, UnknownNameError
from hetgym.sim.job import JobSpec
from hetgym.sim.policy import make_policy
from hetgym.sim.rates import RateTable
from hetgym.sim.throughput import ThroughputModel
from hetgym.sim.view import ClusterView


class HetClusterEnv(gym.Env[Observation, Any]):
    """A heterogeneous GPU cluster in which the agent decides, at each decision epoch, which jobs get
    how many GPUs of which type.

    ## Description

    Deep-learning training jobs arrive online at a cluster of servers, each holding GPUs of one type
    (the ``default`` preset: 2x8 A100, 2x8 V100, 4x4 P100 and 4x4 K80; ``tiny``: 2x2 V100 and 2x2
    K80). Each job has a model, a batch size, an amount of work in iterations, a requested GPU count
    and usually a deadline; it runs faster or slower depending on the GPU type (measured throughput
    tables) and slower when spread over servers, and pays a restart penalty whenever its GPUs change.
    The discrete-event simulator (:class:`hetgym.sim.Simulator`) jumps between *decision epochs*
    (arrivals, completions and round ticks every ``round_s`` seconds while jobs are active). At each
    epoch the agent builds a complete allocation for the active jobs; committing it lets simulated time
    run to the next epoch. Every episode draws a fresh workload from the scenario's recipe (the
    ElasticFlow deadline recipe for both registered ids) with a seed taken from the env's
    ``np_random``, so ``reset(seed=s)`` fixes the whole episode.

    Up to K active jobs (``queue_slots``, default 16) fill the *window* that the observation shows and
    actions address, most urgent first (``window_order``: least deadline slack by default); jobs beyond
    K keep their GPUs and appear as aggregates.

    ## Action Space

    Chosen by ``codec`` (K slots, T GPU types, C count levels, M execution modes); the built-in codecs:

    * ``"sequential"`` (default): ``Discrete(K*T*C [+ K] [+ K*M] + 1)``. Action ``(k*T + t)*C + c``
      sets slot k's count on type t to level c; the next K actions (with ``allow_reject``, the default
      under the ``deadline`` reward only) reject slot k's job; the next K*M (when M > 1) set slot k's
      execution mode; the last action commits. Only the commit advances the simulator; edits before it
      change the draft shown in the observation. ``action_masks()`` and ``info["action_mask"]`` give the
      valid actions (sb3-contrib's MaskablePPO reads the former). A masked-out action is ignored
      (``info["invalid_action"]``). At most ``max_actions_per_epoch`` actions per epoch (default
      ``K*(T+2)+1``): the action that reaches the cap also commits.
    * ``"multidiscrete"``: ``MultiDiscrete([C]*K*T [+ [2]*K] [+ [M]*K])``: a count level per slot and
      type, a reject flag per slot, a mode per slot; every step commits, after repairing infeasible
      parts in a documented order (:class:`~hetgym.envs.codecs.OneShotCodec`).
    * ``"jobwise"``: ``Discrete(T*(C-1)*M + 3 [+ 1])``: the window's jobs are presented one at a time, most
      urgent first, and each is decided once: a (type, count level, mode), no GPUs, keep, or reject; ``done``
      commits early. At most K + 1 steps an epoch (:class:`~hetgym.envs.codecs.JobwiseCodec`; one type a job).
    * ``"jobwise-types"`` (an alias of ``jobwise`` with ``codec_knobs={"several_types": True}``): ``jobwise``'s actions,
      but a set action adds one GPU type to the current job and ``keep`` ends its turn, so a job can hold
      several types; at most K*(T+1) + 1 steps an epoch (:class:`~hetgym.envs.codecs.JobwiseKnobs`).
    * ``"score"``: ``MultiDiscrete([T+2 [+1], C-1, P [, M]] * K)``: per slot a type (or none, keep, reject),
      count level, priority; an allocator serves them, each step commits (:class:`~hetgym.envs.codecs.ScoreCodec`).

    Count levels (``count_levels``): ``"pow2"`` (0, 1, 2, 4, ... up to the largest type's capacity,
    default), ``"all"`` (every count), or a list.

    ## Observation Space

    One float32 vector, every feature in ``[0, 1]`` or ``[-1, 1]``, :attr:`layout` naming its slices: a ``Box``
    with ``flatten=True`` (the ``-v2`` ids), else the ``Dict`` of the slices (:mod:`hetgym.envs.observations`).
    Per slot: used, the job's relative speed per type, requested GPUs, remaining time, progress, slack, time to
    deadline, age, waiting, running, rate, GPUs per type before and in the draft, rejection, mode (``jobwise``:
    the slot being decided). Per type: capacity, free under the draft, held outside the window. Clock, queue.

    ## Rewards

    ``reward="deadline"`` (default): +1 when a job meets its deadline, -1 when one is lost;
    ``"jct"``: minus job-hours in the system; ``"makespan"``: minus elapsed hours; ``"utilisation"``:
    minus idle GPU-hours per GPU (hours = ``time_scale_s``). When the run stops with jobs unfinished,
    the last step also charges the least time they still needed (:mod:`hetgym.envs.rewards`).
    Non-committing steps earn 0 (less ``invalid_action_penalty`` for an ignored action).
    ``info["reward_components"]`` always has every component
    (:class:`~hetgym.envs.rewards.RewardComponents`). With ``reward_baseline="edf"`` (any registered
    policy) each committing step earns the agent's reward minus that policy's reward over the same
    simulated interval of the same workload (run at reset; ``info["reference_reward"]``), so a return is
    the agent's minus the reference's (:mod:`hetgym.envs.reference`).

    ## Starting State

    ``reset(seed=...)`` draws the workload with a seed taken from ``np_random``, starts the simulator
    and returns the first decision epoch (the first arrival at time 0, the cluster empty).
    ``options={"workload_seed": n}`` uses the workload that ``scenario.workload.build(cluster, seed=n)``
    gives instead (the env's random stream advances as usual); ``options={"jobs": [JobSpec, ...]}``
    runs a given workload. With ``trace=...`` every episode replays the trace.

    With ``decisions="on-change"`` the agent is asked only at epochs with news (an arrival, a completion,
    a rejection or a deadline passing) or at the next epoch after it called :meth:`request_decision`
    (its own request); other quiet round ticks are committed with the allocation standing.

    ## Episode End

    Terminated when every job has completed or been rejected (``info["stop_reason"] == "done"``), or when
    the simulator's watchdog gives up (``"stalled"``, with ``info["stall_reason"]``): no job made progress
    in simulated work for ``sim.stall_epochs`` epochs with none left to arrive (e.g. an agent that never
    allocates, or one that reconfigures jobs faster than their restart penalty), or the run took more
    epochs than the workload can need.
    Truncated at ``max_time_s`` of simulated time (``"max_time"``) or after ``max_decisions`` decision
    epochs (``"max_decisions"``). Jobs left unfinished are charged on the last step (see Rewards). The
    final ``info`` carries the run's metrics (DSR, JCT statistics, makespan, utilisation, ...;
    :mod:`hetgym.sim.metrics`).

    ## Arguments

    ``gym.make("HetCluster-v1", **overrides)`` (or ``"hetgym:HetCluster-v1"``), overrides being fields of
    :class:`~hetgym.envs.config.HetClusterConfig` (``policy_compat="dancer"``: a policy's own physics, so it
    acts through the env exactly as on the simulator), and ``render_mode`` (``"ansi"`` or ``"rgb_array"``;
    ``render()`` without one warns and returns ``None``). ``throughput=`` gives the simulator, the workload
    recipe and the observation a user's throughput table instead of the embedded one: the path of a CSV or
    parquet file with the columns of ``hetgym/data/throughputs.csv``, a ``pandas.DataFrame`` or a
    :class:`~hetgym.sim.ThroughputModel` (checked at ``make``; a bad column or row is named).
    Component names (``codec``, ``observation``, ``reward``, ``window_order``) are looked up in their
    registries, so a registered plug-in is used by name like a built-in one; an unknown key or name raises
    an error naming the nearest valid one. ``HetCluster-Tiny-v1`` is the same with ``scenario="tiny"``.
    The ``-v1`` ids set ``interface="v1"`` (``codec="jobwise"``, ``decisions="on-change"``,
    ``observation="window-cursor"``, ``queue_slots=32``), ``-v2`` also ``flatten=True``; ``-v0`` the defaults above.

    For experts: :attr:`view` is the epoch's :class:`~hetgym.sim.ClusterView`, :meth:`encode` maps a
    target allocation to actions (:mod:`hetgym.experts` builds on it). For batching: :meth:`transition` is a
    step without the observation, :meth:`step_into` a step that writes it into a row of a caller's array
    (:class:`~hetgym.envs.vector.HetClusterVectorEnv` uses both).

    ## Version History

    * v0: Initial version. Later additions that leave the default MDP unchanged: ``policy_compat``, ``sim.placer``,
      registry components (``codec_knobs``, ``observation_knobs``), the opt-in codecs ``jobwise`` (with
      ``slot_cursor`` in its observation alone) and ``score``, ``decisions="on-change"``, ``shaping`` and
      ``reward_baseline``.
    * v1: The decision interface built for learning (``interface="v1"``): one job at a time (``jobwise``), asked
      only on news (``on-change``), the ``window-cursor`` observation, a 32-slot window. Changed because in v0
      zero-time edits are discounted like any step, so stalling pays, and learners stalled
      (``docs/results/agents.md``). ``policy_compat`` now also sets ``decisions="every-epoch"``. Later
      additions that leave both ids' default MDPs unchanged: the opt-in codec ``jobwise-types``.
    * v2: v1's MDP with the observation flat (``flatten=True``): the encoder's float32 vector, a ``Box`` whose
      slices :attr:`layout` names, not a ``Dict`` of 30-odd arrays. v0 and v1 unchanged, bit for bit.
    * A fix in every id: when the run ends at ``reset`` (every job rejected on arrival, with
      ``oversize_jobs="reject"``), ``reset``'s ``info["reward_components"]`` counts those rejections; they were
      counted nowhere before. No other episode changes.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}  # noqa: RUF012
    #: Pass over quiet round ticks inside a commit's simulator step (``False``: replay them one by one, with
    #: the same results; read when an episode starts). See :mod:`hetgym.envs.intervals`.
    fast_forward: bool = True

    def __init__(
        self,
        render_mode: str | None = None,
        *,
        config: HetClusterConfig | None = None,
        **overrides: Any,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise UnknownNameError("render mode", render_mode, self.metadata["render_modes"])
        if config is not None and overrides:
            raise HetgymError("give either config=HetClusterConfig(...) or keyword overrides, not both")
        if config is None:
            config = HetClusterConfig.make(**overrides)
        self.render_mode = render_mode
        self.config = config
        self.cluster = config.cluster_spec()
        self.throughput: ThroughputModel = config.throughput_model()
        self.sim_config = config.sim
        self.levels = config.levels()
        self.max_actions = config.actions_cap()
        self.total_gpus = int(self.cluster.total_gpus)
        self.state = DecisionState(self.cluster, config.queue_slots, config.modes)
        # Every component comes from its registry by name, so a registered plug-in is used like a built-in.
        settings = config.settings(self.throughput)
        self.codec: ActionCodec = CODECS.get(config.codec)(self.state, settings, config.knobs("codec"))
        self.encoder: ObservationEncoder = OBSERVATIONS.get(config.observation)(
            self.state, settings, config.knobs("observation")
        )
        self.action_space = self.codec.space
        space: gym.spaces.Space[Any] = self.encoder.flat_space if config.flatten else self.encoder.space
        self.observation_space = space  # the flat ids (flatten=True): the encoder's vector; else its Dict
        self.layout: ObservationLayout = self.encoder.flat_layout  # name -> (start, stop, shape) of the vector
        self._window_order = WINDOW_ORDERS.get(config.window_order)
        self._statics = RateTable(self.cluster, self.throughput)
        trace_jobs: tuple[JobSpec, ...] | None = None
        if config.trace is not None:
            trace_jobs = config.draw_jobs(0)
            Simulator(self.cluster, trace_jobs, config=self.sim_config, throughput=self.throughput)
        # The episode (workload, simulator, stop, metrics, reward) and the quiet-epoch rule are members.
        self.core = EpisodeCore(
            self.cluster,
            self.sim_config,
            config.draw_jobs,
            throughput=self.throughput,
            fixed_jobs=trace_jobs,
            reward=config.reward,
            time_scale_s=config.time_scale_s,
        )
        self.quiet = QuietEpochs(
            self.state, on_change=config.decisions == "on-change", draws_history=render_mode == "rgb_array"
        )
        self._reference: ReferenceRun | None = None
        self._potential = 0.0
        self._mask = self.codec.mask(self.state)
        self._target_note: tuple[bool, tuple[str, ...]] | None = None
        self._history: list[Segment] = []
        self._ended_at: dict[int, float] = {}
        self._now_s = 0.0
        self._epoch = 0

    # ----------------------------------------------------------------------------------------
    # Gymnasium API

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Start an episode: draw the workload from ``np_random`` and advance to the first epoch.

        Args:
            seed: Seeds ``np_random`` (and so the workload) as in every Gymnasium env.
            options: ``{"workload_seed": int}`` or ``{"jobs": [JobSpec, ...]}`` (see the class docstring).
        """
        super().reset(seed=seed)
        comps = RewardComponents()
        self._start_episode(options, comps)
        info = self._info(comps, committed=False, invalid=False)
        info["workload_seed"] = self.core.workload_seed
        return self._observe(), info

    def step(self, action: Any) -> tuple[Observation, SupportsFloat, bool, bool, dict[str, Any]]:
        """Apply one action (see the class docstring); commits advance the simulator."""
        reward, terminated, truncated, info = self.transition(action)
        return self._observe(), reward, terminated, truncated, info

    def _observe(self) -> Observation:
        """The current observation: the flat vector (``flatten=True``) or the ``Dict`` of its slices."""
        return self.encoder.observe_flat(self.state) if self.config.flatten else self.encoder.observe(self.state)

    def step_into(self, action: Any, out: np.ndarray) -> tuple[float, bool, bool, dict[str, Any]]:
        """:meth:`step`, with the observation written into ``out`` instead of returned.

        ``out`` is a float32 array of the encoder's flat size, the keys at the places
        ``self.encoder.layout`` gives (a row of a batch: :class:`~hetgym.envs.vector.HetClusterVectorEnv`
        fills its ``(N, size)`` array this way, with no per-key arrays). Needs an encoder with a layout
        (every built-in one).
        """
        if self.encoder.layout is None:
            raise HetgymError(f"observation {self.config.observation!r} has no flat layout; use step()")
        reward, terminated, truncated, info = self.transition(action)
        self.encoder.observe_into(self.state, out)
        return reward, terminated, truncated, info

    def transition(self, action: Any) -> tuple[float, bool, bool, dict[str, Any]]:
        """Everything :meth:`step` does but the observation: ``(reward, terminated, truncated, info)``.

        For batching: the observation of the new state is then ``self.encoder.observe(self.state)`` (or
        ``observe_into``; :class:`~hetgym.envs.vector.HetClusterVectorEnv` encodes all its sub-envs' at once).
        """
        core = self.core
        if not core.started:
            raise HetgymError("call reset() before step()")
        if core.done:
            raise HetgymError("the episode has ended (terminated or truncated); call reset() to start a new one")
        note = self._target_note
        outcome = self.codec.apply(self.state, action, self._mask)
        comps = RewardComponents(invalid=int(outcome.invalid))
        reference_reward = 0.0
        if outcome.commit:
            t0 = self._now_s
            view = self._commit(comps, self.state.view, self.state.commit())
            quiet = self.quiet
            if quiet.requested:
                quiet.requested = False  # the agent asked to see the next epoch (request_decision)
            else:
                while view is not None and quiet.is_quiet(view):
                    # The allocation stands: nothing changed since the agent decided. Such an epoch is never
                    # shown, so its window, observation and mask are not built.
                    view = self._commit(comps, view, quiet.standing_commit(view, self._statics, self._window_order))
            self._load(view)
            self._present()
            if self._reference is not None:
                ref = self._reference.components(t0, math.inf if core.done else self._now_s)
                reference_reward = core.reward(ref)
        reward = core.reward(comps) - reference_reward
        shaping = 0.0
        if self.config.shaping is not None and outcome.commit:
            phi = deadline_slack_potential(self.state.view, self._statics)  # 0 once the episode has ended
            discount = self.config.shaping_gamma ** (comps.dt_s / self.config.time_scale_s)
            shaping = discount * phi - self._potential
            self._potential = phi
            reward += shaping
        if outcome.invalid:
            reward -= self.config.invalid_action_penalty
        info = self._info(comps, committed=outcome.commit, invalid=outcome.invalid, note=note)
        if self._reference is not None:
            info["reference_reward"] = reference_reward
        if self.config.shaping is not None:
            info["shaping"] = shaping
        self.codec.step_info(outcome, info)
        return float(reward), core.terminated, core.truncated, info

    def render(self) -> str | np.ndarray | None:
        """The ``ansi`` table or the ``rgb_array`` picture (see :mod:`hetgym.envs.render`).

        With no ``render_mode`` it warns, as Gymnasium's own environments do, and returns ``None``.
        """
        if self.render_mode is None:
            env_id = self.spec.id if self.spec is not None else "HetCluster-v1"
            gym.logger.warn(
                "You are calling render method without specifying any render mode. "
                "You can specify the render_mode at initialization, "
                f'e.g. gym.make("{env_id}", render_mode="ansi")'
            )
            return None
        if self.render_mode == "ansi":
            if not self.core.started:
                return "(reset the environment to start an episode)\n"
            view = self.state.view
            pending = view.num_pending if view is not None else 0
            ended = view.num_ended if view is not None else len(self._ended_at)
            return render_ansi(self.state, self._now_s, self._epoch, pending, ended)
        return render_rgb(self._history, self._ended_at, self._now_s, self.state.capacity.tolist())

    def close(self) -> None:
        """Nothing to release (the simulator holds no external resources)."""

    def action_masks(self) -> np.ndarray:
        """Valid actions now (bool; for a ``MultiDiscrete`` codec the per-dimension masks concatenated)."""
        return self._mask.copy()

    # ----------------------------------------------------------------------------------------
    # What experts and tools need

    @property
    def view(self) -> ClusterView | None:
        """The current decision epoch's snapshot (``None`` before reset and after the episode ended)."""
        return self.state.view

    @property
    def decision_key(self) -> tuple[int, int]:
        """``(episode_id, epoch)`` of the current decision; changes exactly when a new one starts."""
        return self.core.episode_id, self._epoch

    # The episode's own attributes, shown under the env's names (read-only here).
    sim: CoreAttribute[Simulator | None] = CoreAttribute("The current episode's simulator (``None`` before reset).")
    jobs: CoreAttribute[tuple[JobSpec, ...]] = CoreAttribute("The current episode's workload.")
    workload_seed: CoreAttribute[int | None] = CoreAttribute(
        "The seed the current episode's workload was drawn with (``None``: given jobs or a trace)."
    )
    episode_id: CoreAttribute[int] = CoreAttribute("How many episodes have started.")

    def encode(self, target: Allocation) -> Encoding:
        """Express ``target`` (an allocation for the current epoch) in the codec's actions.

        Also notes whether the expression is exact: the steps of this epoch then report
        ``info["target_exact"]`` and ``info["target_reasons"]``.
        """
        if self.state.view is None:
            raise HetgymError("no decision is pending (reset the environment, or the episode has ended)")
        enc = self.codec.encode(self.state, target)
        self._target_note = (enc.exact, enc.reasons)
        return enc

    def encode_next(self, target: Allocation) -> Any:
        """The next action towards ``target`` from the current draft (what an expert would do now)."""
        if self.state.view is None:
            return self.codec.noop(self.state)
        return self.codec.encode_next(self.state, target)

    def noop_action(self) -> Any:
        """An action that keeps every allocation and commits."""
        return self.codec.noop(self.state)

    def draft_allocation(self) -> Allocation:
        """The allocation a commit would apply now."""
        return self.state.allocation()

    def result(self) -> SimulationResult:
        """The simulator's result for the current episode (complete once it has ended)."""
        return self.core.current_result()

    # ----------------------------------------------------------------------------------------
    # Internals

    def _start_episode(self, options: dict[str, Any] | None, comps: RewardComponents) -> None:
        """Start the core's episode and load its first epoch; ``comps`` counts what ended if the run ends at once."""
        core = self.core
        view = core.start(options, self.np_random, fast_forward=self.fast_forward, physics=self.config.physics)
        assert core.sim is not None
        self._reference = None
        if self.config.reward_baseline is not None:
            # Its GPU timeline is needed for idle GPU-time, whatever the env records.
            ref_config = dataclasses.replace(self.sim_config, record_timeline=True)
            reference = Simulator(self.cluster, core.jobs, config=ref_config, throughput=self.throughput)
            ref_result = reference.run(make_policy(self.config.reward_baseline))
            self._reference = ReferenceRun(ref_result, self.total_gpus)
        # The simulator's own table (cleared on its reset): the env and a policy_compat expert share it.
        self._statics = core.sim.rate_table
        self.quiet.requested = False
        self._history = []
        self._ended_at = {}
        self._now_s = 0.0
        self._epoch = 0
        if view is None:  # every job was rejected on arrival: the reset's advance is the whole run
            self.core.account(core.report(None), comps)
            self._end_episode()
        self._load(view)
        self._present()
        self._potential = deadline_slack_potential(self.state.view, self._statics) if self.config.shaping else 0.0

    def _load(self, view: ClusterView | None) -> None:
        """Fill the window and the draft of a new epoch (what a commit needs; see :meth:`_present`)."""
        self._target_note = None
        if view is not None:
            self._now_s = view.now_s
            self._epoch = view.epoch
        self.state.load(view, self._statics, self._window_order)

    def _present(self) -> None:
        """The epoch's observation features and mask: skipped for quiet epochs, which the agent never sees."""
        self.encoder.begin_epoch(self.state, self._statics, len(self.core.jobs))
        self._mask = self.codec.mask(self.state)

    def _commit(self, comps: RewardComponents, view: ClusterView | None, commit: Commit) -> ClusterView | None:
        """Apply ``commit`` at ``view``'s epoch (its rows, as arrays: a ``Decision`` for ``Simulator.step``),
        account the interval in ``comps`` from the step's report; the next epoch's view.

        With the quiet ticks after it passed over in the same step, their intervals are accounted too
        (:mod:`hetgym.envs.intervals`).
        """
        state = self.state
        sim = self.core.sim
        assert view is not None and sim is not None
        t0 = view.now_s
        quiet = self.quiet.request(commit, sim)
        report = sim.step(commit.delta, quiet=quiet)
        next_view = report.view
        t1 = next_view.now_s if next_view is not None else sim.now_s
        # What ended and the deadlines met and lost since the previous report (the first one also covers the
        # reset's advance; the last one the jobs left unfinished at the stop): hetgym.sim.deadlines decides them.
        lost = self.core.account(report, comps)
        ended = report.ended
        ended_at = self._ended_at
        for jid, t, _ in ended:
            ended_at[jid] = t
        # Interval accounting: every job active at t0 and not rejected stays until min(end, t1).
        held = commit.held
        if quiet is not None and quiet.times_s:
            add_quiet_ticks(comps, view, t0, held, quiet.times_s, self.total_gpus)
            # The last interval, from the last tick passed over, under the allocation standing there.
            t0 = quiet.times_s[-1]
            standing = self.quiet.standing_jobs(quiet.running, t0, self._statics, self._window_order)
            assert standing is not None  # every mode is configured (QuietEpochs.request)
            held = [(jid, ja.total_gpus) for jid, ja in standing.items()]
        add_interval(comps, view, t0, t1, held, commit.reject, ended_at if ended else None, self.total_gpus)
        self.quiet.changed = bool(ended) or lost
        if self.render_mode == "rgb_array":
            # The allocation history is the picture's content, kept only when it is drawn: it grows with
            # the episode, and everything else an env holds stays bounded by the workload.
            type_index = state.type_index
            rows = sorted((jid, type_index[t], n) for jid, ja in commit.jobs().items() for t, n in ja.counts)
            segment = tuple(rows)
            if not self._history or self._history[-1][1] != segment:
                self._history.append((t0, segment))
        self._now_s = t1
        if next_view is None:
            charge_unfinished(comps, self._end_episode().job_rows)
        return next_view

    def request_decision(self) -> None:
        """Ask the agent at the next epoch even if it brings no news (``decisions="on-change"``).

        For an agent whose decision can change with time alone, e.g. a policy that waits for an
        interval to pass before it recomputes: without the request, the quiet round ticks after this
        epoch's commit would run with the allocation standing and the agent would not be asked until
        the next arrival, completion, rejection or missed deadline. The request covers the next epoch
        only (call it again at that epoch to keep being asked); ``ExpertAgent`` calls it for policies
        whose ``wants_next_epoch()`` says so. No effect under ``decisions="every-epoch"``.
        """
        if self.core.done:
            raise HetgymError("the episode has ended (terminated or truncated); call reset() to start a new one")
        self.quiet.requested = True

    def _end_episode(self) -> SimulationResult:
        """The run stopped: the core records its result and stop reason."""
        return self.core.end()

    def _info(
        self,
        comps: RewardComponents,
        *,
        committed: bool,
        invalid: bool,
        note: tuple[bool, tuple[str, ...]] | None = None,
    ) -> dict[str, Any]:
        info: dict[str, Any] = {
            "action_mask": self._mask.copy(),
            "epoch": self._epoch,
            "now_s": self._now_s,
            "num_actions": self.state.num_actions,
            "committed": committed,
            "invalid_action": invalid,
            "reward_components": comps.as_dict(),
            "window": self.state.ids.copy(),
        }
        if note is not None:
            info["target_exact"] = note[0]
            info["target_reasons"] = list(note[1])
        core = self.core
        if core.done:
            assert core.result is not None
            core.end_info(info, core.final_metrics(core.result.num_epochs))
        return info

    # ----------------------------------------------------------------------------------------
    # Pickling by state: the simulator, the decision state, the codec and the random stream are plain
    # Python and numpy objects (read-only mappings pickle through :mod:`hetgym.sim.pickling`), so a
    # pickle or a deep copy holds the episode as it stands, whatever its length, and continues exactly
    # like the original. Only the registry functions are re-resolved by name, so a registered plug-in
    # pickles as its name.

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_window_order"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._window_order = WINDOW_ORDERS.get(self.config.window_order)


def episode_metrics(info: dict[str, Any]) -> dict[str, float]:
    """The final metrics of an episode from its last ``info`` (raises if the episode has not ended)."""
    if "metrics" not in info:
        raise KeyError("info has no 'metrics': it is only set on the step that ends the episode")
    return dict(info["metrics"])


# The episode's rules live in hetgym.envs.episode; re-exported here, where older imports find them.
__all__ = ["RESET_OPTIONS", "TERMINAL_REASONS", "WALL_CLOCK_METRICS", "HetClusterEnv", "episode_metrics"]
