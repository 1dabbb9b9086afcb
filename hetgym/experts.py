"""Experts inside the Gym environment: any registered policy as an SB3-style agent, and as a teacher.

A scheduling policy decides whole allocations on a :class:`~hetgym.sim.ClusterView`; the environment's
action codec maps such an allocation to the actions an agent would take
(:meth:`HetClusterEnv.encode <hetgym.envs.HetClusterEnv.encode>`). On top of that map:

* :class:`ExpertTracker` runs one policy in lock-step with one environment: at every new decision
  epoch it calls ``schedule`` once (exactly as :meth:`Simulator.run <hetgym.sim.Simulator.run>` does,
  with the policy reset at each episode from ``np.random.default_rng(sim.seed)``), and it answers the
  next action towards that decision from the current draft.
* :class:`ExpertAgent` has Stable-Baselines3's ``predict(observation, state, episode_start,
  deterministic)``, so ``stable_baselines3.common.evaluation.evaluate_policy`` scores experts and
  learned agents alike.
* :class:`ExpertLabelWrapper` adds ``info["expert_action"]``, the teacher's label for the observation
  returned with it (for behaviour cloning and DAgger), plus ``info["expert_exact"]``,
  ``info["expert_reasons"]`` and ``info["expert_changes"]`` (whether the teacher's allocation at this
  epoch changes anything in force, :func:`allocation_changes`). It holds its own policy instance, so
  it works inside vector-env worker processes (``SubprocVecEnv``, ``AsyncVectorEnv``), where only
  observations and infos cross the pipe.

By default (``sees="window"``) an expert is shown the running jobs and only those waiting jobs the
env's window holds (:func:`window_view`): a job entering that set arrives to it, one leaving it ends.
Shown the whole cluster (``sees="all"``) an expert may give the free GPUs to waiting jobs the agent
cannot reach, and some experts then stall at ``HetCluster-v1``'s 32-slot window
(docs/results/experts_at_defaults.md). The two are the same whenever the window holds every waiting job.

When a codec cannot express the expert's allocation exactly (a count off the count levels, an
execution mode the codec does not offer, an explicit server placement other than keeping a job where it
is, a running job outside the window), the actions express the nearest allocation it can (counts rounded down to
a level, the simulator's default placement, the job's current mode, out-of-window jobs left alone);
``info["expert_exact"]`` is then ``False`` and ``info["expert_reasons"]`` says why, and the environment's
own steps of that epoch report ``info["target_exact"]``/``info["target_reasons"]`` likewise.

The expert matches its run on the raw simulator exactly when the environment runs the policy's own
physics (its round, declared placer and execution modes) and its window can hold every active job: make
it with ``gym.make(env_id, **expert_env_kwargs(policy))``, i.e. ``policy_compat=name``. A tracker warns
once when the env's physics differ from the policy's declaration (:func:`physics_gaps`);
:func:`labelled_env` applies the overrides itself.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Collection
from typing import Any

import gymnasium as gym
import numpy as np

from hetgym.envs.env import HetClusterEnv
from hetgym.envs.exactness import Encoding
from hetgym.sim.allocation import Allocation
from hetgym.sim.config import SimConfig
from hetgym.sim.errors import HetgymError
from hetgym.sim.physics import Physics, resolve_physics
from hetgym.sim.policy import Policy, PolicyProtocol, make_policy
from hetgym.sim.view import ClusterView, EpochJobs

#: A configuration that leaves the round and the placer to the policy (:func:`own_physics`).
_OPEN_CONFIG = SimConfig()
#: What an expert is shown at each epoch (``sees=``): ``"all"`` the simulator's whole view, ``"window"``
#: the running jobs and only those waiting jobs the env's window holds (see :func:`window_view`).
SEES = ("all", "window")


def _make(policy: PolicyProtocol | str, policy_kwargs: dict[str, Any]) -> PolicyProtocol:
    if isinstance(policy, str):
        return make_policy(policy, **policy_kwargs)
    if policy_kwargs:
        raise HetgymError("policy keyword arguments apply only when the policy is given by name")
    return policy


def _unwrap(env: Any) -> HetClusterEnv:
    base = env.unwrapped if hasattr(env, "unwrapped") else env
    if not isinstance(base, HetClusterEnv):
        raise HetgymError(f"experts act in a HetClusterEnv, got {type(base).__name__}")
    return base


def expert_env_kwargs(policy: PolicyProtocol | str, **policy_kwargs: Any) -> dict[str, Any]:
    """``gym.make`` overrides that run the environment with the policy's own physics.

    ``policy_compat`` (see :class:`~hetgym.envs.config.HetClusterConfig`) plus the round, placer and
    execution modes of this very instance (knobs such as ElasticFlow's ``placement`` or a policy's
    ``round_s`` change them). With these the policy acting through the env takes the decisions, and gets
    the results, it gets on :meth:`Simulator.run <hetgym.sim.Simulator.run>`.
    """
    pol = _make(policy, policy_kwargs)
    if not isinstance(pol, Policy):
        return {}  # a protocol object declares no physics: the simulator's defaults apply
    own = own_physics(pol)
    sim: dict[str, Any] = {"placer": own.placer}
    if pol.round_s:  # a policy without a round of its own runs at the configuration's, on both sides
        sim["round_s"] = own.round_s
    return {"policy_compat": pol.name, "sim": sim, "modes": list(own.modes)}


def own_physics(policy: PolicyProtocol) -> Physics:
    """The physics ``policy`` runs with when the configuration leaves the round and the placer to it
    (:func:`~hetgym.sim.physics.resolve_physics`): its round (else the simulator's default), declared placer
    and execution modes."""
    return resolve_physics(_OPEN_CONFIG, policy)


def physics_gaps(policy: PolicyProtocol, env: Any) -> list[str]:
    """How ``env``'s physics differ from what ``policy`` declares (empty when the expert can act exactly).

    Two values compared field by field: the policy's :func:`own_physics` and the env's
    (``env.unwrapped.config.physics``). The placer must be the same; the env's modes must include the
    policy's; the round must be the same when the policy declares one (one that does not runs at the
    configuration's round on the simulator too). Round ticks are not compared: the env always has them,
    and an expert that declares none is not asked at a tick without news (:func:`skips_epoch`).
    """
    base = _unwrap(env)
    if not isinstance(policy, Policy):
        return []
    own, runs = own_physics(policy), base.config.physics
    gaps = []
    if runs.placer != own.placer:
        gaps.append(f"placer {runs.placer!r} (the policy declares {own.placer!r})")
    missing = [m for m in own.modes if m not in runs.modes]
    if missing:
        gaps.append(f"execution modes {list(runs.modes)} lack {missing}")
    if policy.round_s and runs.round_s != own.round_s:
        gaps.append(f"round {runs.round_s} s (the policy's is {own.round_s} s)")
    return gaps


def window_view(
    view: ClusterView, window_ids: Collection[int], shown_before: Collection[int] = ()
) -> tuple[ClusterView, frozenset[int]]:
    """``view`` as an expert with ``sees="window"`` is shown it, and the ids it shows.

    To such an expert the cluster holds the running jobs and the waiting jobs whose ids are in
    ``window_ids`` (the env's window); every other waiting job is hidden. The free GPUs are unchanged
    (hidden jobs hold none). A job that enters this set arrives (``arrived`` names it, so a policy
    that admits or plans jobs at their arrival, such as ElasticFlow or Dancer, takes it in), and a job
    still active that leaves it ends (``completed`` names it, so the policy drops what it kept about
    it): ``shown_before`` is the set returned at the previous epoch of the episode. ``changed`` keeps the
    jobs shown. When the view is restricted, its ``previous_token`` is ``None`` and its snapshot new, so
    a policy that keeps structures across epochs rebuilds them from it. When nothing is hidden and no
    job enters or leaves but by the simulator's own arrivals and completions, ``view`` itself is
    returned.

    Why: an expert shown the whole view may give free GPUs to waiting jobs the window does not hold,
    which the codec cannot express; when those are the jobs it always prefers (e.g. the earliest
    arrivals under a slack-ordered window), the GPUs stay idle epoch after epoch and the episode
    stalls. Shown only the window, it decides among the jobs the agent can act on.
    """
    window = set(window_ids)
    shown = frozenset(window.union(view.running_allocations))
    waiting = {job.job_id for job in view.iter_waiting()}
    hidden = not waiting <= window
    entered = [jid for jid in shown if jid not in shown_before and jid not in view.arrived]
    # Only a job still waiting can leave the shown set: one that ended left the simulator's view too.
    left = sorted(jid for jid in shown_before if jid not in shown and jid in waiting)
    if not hidden and not entered and not left:
        return view, shown
    index = view.job_index
    out = dataclasses.replace(
        view,
        active=EpochJobs.of_views(view.now_s, view.running, tuple(job for job in view.waiting if job.job_id in window)),
        arrived=(*(j for j in view.arrived if j in shown), *sorted(entered, key=lambda j: index[j].submit_s)),
        completed=(*view.completed, *left),
        changed=tuple(j for j in view.changed if j in shown),
        previous_token=None,
    )
    return out, shown


def skips_epoch(policy: PolicyProtocol, view: ClusterView) -> bool:
    """Whether :meth:`Simulator.run <hetgym.sim.Simulator.run>` would not ask ``policy`` at ``view``'s epoch.

    A policy with ``uses_ticks = False`` runs on the simulator without round ticks: it is asked at
    arrivals and completions only (and once a round when every active job waits with none left to
    arrive). The environment always has ticks, so at a tick without such news the expert keeps what is
    in force instead of being asked: asked there, a policy like SRTF may re-rank jobs whose remaining
    times crossed since the last event and act where its run on the simulator does not.
    """
    if getattr(policy, "uses_ticks", True) or not view.is_tick or view.arrived or view.completed:
        return False
    return bool(view.running_allocations) or view.num_pending > 0


def allocation_changes(view: ClusterView, target: Allocation) -> bool:
    """Whether ``target`` changes anything in force at ``view``: a job's GPU counts or mode, or a rejection.

    Server placements are not compared (a target may leave them to the placer).
    """
    if target.reject:
        return True
    current = view.running_allocations
    if len(target.jobs) != len(current):
        return True
    for jid, ja in target.jobs.items():
        now = current.get(jid)
        if now is None or now.counts != ja.counts or now.mode != ja.mode:
            return True
    return False


class ExpertTracker:
    """One policy following one environment, decision epoch by decision epoch.

    Args:
        policy: A registered policy name or a policy instance (used as is, not copied).
        request_epochs: Ask the env for the next epoch whenever the policy's ``wants_next_epoch()`` says its
            decision may change without news (``HetClusterEnv.request_decision``; it matters under
            ``decisions="on-change"``). :class:`ExpertAgent` asks (an expert acting alone); the labelling
            wrapper does not, so demonstrations hold the epochs a learner is asked at.
        sees: ``"window"`` (default): the policy decides on :func:`window_view`, the running jobs and the
            waiting jobs in the env's window, so it never gives GPUs to a waiting job the agent cannot
            reach (identical to ``"all"`` whenever the window holds every waiting job). ``"all"``: on the
            simulator's whole view, as before this option existed.
        **policy_kwargs: The policy's knobs when given by name.

    Attributes:
        policy: The policy.
        target: The policy's allocation for the current epoch.
        encoding: That allocation expressed in the env's codec (with ``exact`` and ``reasons``).
        num_epochs: Epochs decided in the current episode.
        num_inexact: Epochs of the current episode whose allocation the codec could not express exactly.
        reasons: The reasons of the latest inexact epoch.
    """

    def __init__(
        self, policy: PolicyProtocol | str, *, request_epochs: bool = False, sees: str = "window", **policy_kwargs: Any
    ) -> None:
        if sees not in SEES:
            raise HetgymError(
                f"sees={sees!r} is not one of {SEES}: 'all' shows the expert the whole cluster, "
                "'window' only the waiting jobs in the env's window"
            )
        self.policy = _make(policy, policy_kwargs)
        self.request_epochs = request_epochs
        self.sees = sees
        self.name = str(getattr(self.policy, "name", type(self.policy).__name__))
        self.target: Allocation | None = None
        self.encoding: Encoding | None = None
        self.num_epochs = 0
        self.num_inexact = 0
        self.reasons: tuple[str, ...] = ()
        self._episode = -1
        self._key: tuple[int, int] | None = None
        self._env_id: int | None = None
        self._checked = False
        self._shown: frozenset[int] = frozenset()  # with sees="window": the ids shown at the last epoch
        self._changes = False  # whether the current epoch's target changes anything in force

    def label(self, env: Any) -> Any:
        """The expert's action for ``env``'s current observation (calls ``schedule`` at new epochs only)."""
        base = _unwrap(env)
        if id(base) != self._env_id:
            self._env_id = id(base)
            self._episode = -1
        if base.view is None:
            return base.noop_action()
        if base.episode_id != self._episode:
            if not self._checked:
                self._checked = True
                gaps = physics_gaps(self.policy, base)
                if gaps:
                    warnings.warn(
                        f"{self.name} acts in an env whose physics differ from its own ({'; '.join(gaps)}); its "
                        f"decisions may not be expressible exactly. Make the env with "
                        f"gym.make(..., **hetgym.experts.expert_env_kwargs({self.name!r})) or policy_compat="
                        f"{self.name!r}.",
                        stacklevel=4,  # the caller of ExpertAgent.predict or of the wrapper's reset/step
                    )
            self.policy.reset(base.cluster, rng=np.random.default_rng(base.sim_config.seed))
            self._episode = base.episode_id
            self._key = None
            self._changes = False
            self._shown = frozenset()
            self.num_epochs = 0
            self.num_inexact = 0
            self.reasons = ()
        key = base.decision_key
        if key != self._key:
            self._key = key
            view = base.view
            if self.sees == "window":
                view, self._shown = window_view(view, [job.job_id for job in base.state.jobs], self._shown)
            if skips_epoch(self.policy, view):
                self.target = Allocation(dict(view.running_allocations))  # it keeps what is in force
            else:
                self.target = self.policy.schedule(view)
            self._changes = allocation_changes(base.view, self.target)
            wants = getattr(self.policy, "wants_next_epoch", None) if self.request_epochs else None
            if callable(wants) and wants():
                base.request_decision()  # its decision may change at the next tick without news
            self.encoding = base.encode(self.target)
            self.num_epochs += 1
            if not self.encoding.exact:
                self.num_inexact += 1
                self.reasons = self.encoding.reasons
            first = self.encoding.actions[0]
            return first.copy() if isinstance(first, np.ndarray) else first
        assert self.target is not None
        return base.encode_next(self.target)

    @property
    def changes(self) -> bool:
        """Whether the current epoch's allocation changes anything: a job's GPU counts or mode, a rejection."""
        return self._changes

    @property
    def exact(self) -> bool:
        """Whether the current epoch's allocation is expressed exactly."""
        return self.encoding is None or self.encoding.exact


class ExpertAgent:
    """A scheduling policy with Stable-Baselines3's ``predict``, acting through an env's action codec.

    ``evaluate_policy(ExpertAgent("edf", env), env)`` scores the expert exactly as a learned agent is
    scored. In-process environments (a ``gym.Env``, SB3's ``DummyVecEnv``, Gymnasium's
    ``SyncVectorEnv`` or ``gym.make_vec(..., vectorization_mode="sync")``, possibly wrapped) are followed
    directly, one :class:`ExpertTracker` (and policy instance) per sub-env, keyed by the sub-env's
    index. Each tracker calls ``schedule`` once per decision epoch (keyed by the env's
    ``decision_key``) and answers the next action from the env's current draft, so ``predict`` is
    idempotent: calling it twice on the same step gives the same action and leaves the policy's state
    as one call does. For environments in
    worker processes, wrap each worker's env in :class:`ExpertLabelWrapper` with the same policy: the
    agent then returns the labels the workers computed.

    Args:
        policy: A registered policy name, or a policy instance (copied for each sub-env).
        env: The environment (or vector env) the agent acts in.
        sees: What the policy is shown at each epoch (:class:`ExpertTracker`'s ``sees``).
        **policy_kwargs: The policy's knobs when given by name.
    """

    def __init__(self, policy: PolicyProtocol | str, env: Any, *, sees: str = "window", **policy_kwargs: Any) -> None:
        self._policy = policy
        self._policy_kwargs = policy_kwargs
        prototype = _make(policy, dict(policy_kwargs))
        self.name = str(getattr(prototype, "name", type(prototype).__name__))
        self.env = env
        locals_ = _local_envs(env)
        self._remote = locals_ is None
        self.trackers: list[ExpertTracker] = []
        if locals_ is not None:
            for i, sub in enumerate(locals_):
                _unwrap(sub)
                pol = prototype if i == 0 else self._fresh(prototype)
                self.trackers.append(ExpertTracker(pol, request_epochs=True, sees=sees))
            self._envs = locals_
        else:
            names = env.get_attr("expert_policy_name")
            if any(n != self.name for n in names):
                raise HetgymError(f"the workers' ExpertLabelWrapper runs {names}, not {self.name!r}")
            self._envs = []

    def _fresh(self, prototype: PolicyProtocol) -> PolicyProtocol:
        if isinstance(self._policy, str):
            return make_policy(self._policy, **self._policy_kwargs)
        return copy.deepcopy(prototype)

    def predict(
        self,
        observation: Any,
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """The expert's action(s) for the env's current observation(s) (SB3's ``predict`` protocol).

        ``observation`` only decides the output's shape (batched for vector envs); the decision comes
        from the environment's current :class:`~hetgym.sim.ClusterView`. ``state``, ``episode_start``
        and ``deterministic`` are accepted for compatibility (experts are deterministic given their
        seeded random generator, and episodes are detected from the env).
        """
        del episode_start, deterministic
        if self._remote:
            actions = list(self.env.get_attr("expert_action"))
        else:
            actions = [tracker.label(sub) for tracker, sub in zip(self.trackers, self._envs, strict=True)]
        batched = _is_batched(observation, self._space_probe())
        out = np.stack([np.asarray(a) for a in actions])
        if not batched:
            if len(actions) != 1:
                raise HetgymError("an unbatched observation needs an agent bound to a single env")
            return out[0], state
        return out, state

    def _space_probe(self) -> gym.Space[Any] | None:
        if self._envs:
            return _unwrap(self._envs[0]).observation_space
        return None

    @property
    def num_inexact(self) -> int:
        """Inexact epochs in the current episodes of the local sub-envs (0 for remote workers)."""
        return sum(t.num_inexact for t in self.trackers)


class ExpertLabelWrapper(gym.Wrapper[dict[str, np.ndarray], Any, dict[str, np.ndarray], Any]):
    """Adds the teacher's label for each returned observation to ``info`` (works in vector-env workers).

    ``info["expert_action"]`` is the action the policy takes for the observation returned with it
    (on the step that ends an episode, the codec's no-op), ``info["expert_exact"]`` whether the
    policy's allocation is expressed exactly, ``info["expert_reasons"]`` why not,
    ``info["expert_changes"]`` whether that allocation changes anything in force (a state where
    imitation matters more than at the many epochs where the teacher keeps everything). The latest label is
    also the attribute :attr:`expert_action` (SB3's ``VecEnv.get_attr("expert_action")``).

    Args:
        env: A ``HetClusterEnv`` (possibly wrapped).
        policy: A registered policy name or a policy instance (not copied).
        sees: What the policy is shown at each epoch (:class:`ExpertTracker`'s ``sees``).
        **policy_kwargs: The policy's knobs when given by name.
    """

    def __init__(
        self,
        env: gym.Env[dict[str, np.ndarray], Any],
        policy: PolicyProtocol | str = "edf",
        *,
        sees: str = "window",
        **policy_kwargs: Any,
    ) -> None:
        super().__init__(env)
        _unwrap(env)
        self.tracker = ExpertTracker(policy, sees=sees, **policy_kwargs)
        self.expert_policy_name = self.tracker.name
        self.expert_action: Any = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self._label(info)
        return obs, info

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._label(info)
        return obs, reward, terminated, truncated, info

    def _label(self, info: dict[str, Any]) -> None:
        label = self.tracker.label(self.env)
        self.expert_action = label
        info["expert_action"] = np.array(label, copy=True)
        enc = self.tracker.encoding
        live = _unwrap(self.env).view is not None
        info["expert_exact"] = bool(enc.exact) if (enc is not None and live) else True
        info["expert_reasons"] = list(enc.reasons) if (enc is not None and live) else []
        info["expert_changes"] = bool(live and self.tracker.changes)


def labelled_env(
    env_id: str = "hetgym:HetCluster-v1",
    policy: str = "edf",
    policy_kwargs: dict[str, Any] | None = None,
    **env_kwargs: Any,
) -> ExpertLabelWrapper:
    """``gym.make(env_id, **expert_env_kwargs(policy), **env_kwargs)`` wrapped in :class:`ExpertLabelWrapper`.

    A picklable factory; the policy's own physics are applied (``policy_compat``) unless
    ``env_kwargs`` says otherwise (``policy_compat=None`` turns that off).

    Use it to build vector envs whose workers label their own observations, e.g.
    ``SubprocVecEnv([functools.partial(labelled_env, "hetgym:HetCluster-Tiny-v1", "srtf")] * 4)``.
    """
    kwargs = dict(env_kwargs)
    if "policy_compat" not in kwargs:
        compat = expert_env_kwargs(policy, **(policy_kwargs or {}))
        sim = {**compat.pop("sim", {}), **dict(kwargs.pop("sim", None) or {})}
        kwargs = {**compat, **kwargs, "sim": sim}
    elif kwargs["policy_compat"] is None:
        kwargs.pop("policy_compat")
    return ExpertLabelWrapper(gym.make(env_id, **kwargs), policy, **(policy_kwargs or {}))


def _local_envs(env: Any) -> list[Any] | None:
    """The sub-envs of an in-process env or vector env, or ``None`` for worker processes."""
    if isinstance(env, gym.Env):
        return [env]
    base = env
    seen = 0
    while seen < 32:
        if hasattr(base, "venv"):  # SB3 VecEnvWrapper chain
            base = base.venv
        elif isinstance(base, gym.vector.VectorWrapper):  # Gymnasium's vector wrappers
            base = base.env
        else:
            break
        seen += 1
    envs = getattr(base, "envs", None)
    if envs is not None:
        return list(envs)
    if hasattr(env, "get_attr"):
        return None
    raise HetgymError(f"cannot follow an environment of type {type(env).__name__}")


def _is_batched(observation: Any, space: gym.Space[Any] | None) -> bool:
    if isinstance(observation, dict):
        key = next(iter(observation))
        arr = np.asarray(observation[key])
        if space is not None and isinstance(space, gym.spaces.Dict):
            return arr.ndim > len(space[key].shape or ())
        return arr.ndim > 1
    arr = np.asarray(observation)
    if space is not None and not isinstance(space, gym.spaces.Dict):
        return arr.ndim > len(space.shape or ())
    return arr.ndim > 1


__all__ = [
    "ExpertAgent",
    "ExpertLabelWrapper",
    "ExpertTracker",
    "expert_env_kwargs",
    "labelled_env",
    "own_physics",
    "physics_gaps",
]
