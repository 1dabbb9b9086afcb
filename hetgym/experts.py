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
  returned with it (for behaviour cloning and DAgger), plus ``info["expert_exact"]`` and
  ``info["expert_reasons"]``. It holds its own policy instance, so it works inside vector-env worker
  processes (``SubprocVecEnv``, ``AsyncVectorEnv``), where only observations and infos cross the pipe.

When a codec cannot express the expert's allocation exactly (a count off the count levels, an
execution mode the codec does not offer, an explicit server placement other than keeping a job where it
is, a job outside the window), the actions express the nearest allocation it can (counts rounded down to
a level, the simulator's default placement, the job's current mode, out-of-window jobs left alone);
``info["expert_exact"]`` is then ``False`` and ``info["expert_reasons"]`` says why, and the environment's
own steps of that epoch report ``info["target_exact"]``/``info["target_reasons"]`` likewise.

The expert only matches its run on the raw simulator when both use the same round length: make the
environment with ``sim={"round_s": policy.round_s}`` for a policy that has one (:func:`expert_env_kwargs`).
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np

from hetgym.envs.codecs import Encoding, SequentialCodec
from hetgym.envs.env import HetClusterEnv
from hetgym.sim.allocation import Allocation
from hetgym.sim.errors import HetgymError
from hetgym.sim.policy import PolicyProtocol, make_policy


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
    """``gym.make`` overrides that give the environment the policy's own round length (if it has one)."""
    pol = _make(policy, policy_kwargs)
    round_s = getattr(pol, "round_s", None)
    return {"sim": {"round_s": float(round_s)}} if round_s else {}


class ExpertTracker:
    """One policy following one environment, decision epoch by decision epoch.

    Args:
        policy: A registered policy name or a policy instance (used as is, not copied).
        **policy_kwargs: The policy's knobs when given by name.

    Attributes:
        policy: The policy.
        target: The policy's allocation for the current epoch.
        encoding: That allocation expressed in the env's codec (with ``exact`` and ``reasons``).
        num_epochs: Epochs decided in the current episode.
        num_inexact: Epochs of the current episode whose allocation the codec could not express exactly.
        reasons: The reasons of the latest inexact epoch.
    """

    def __init__(self, policy: PolicyProtocol | str, **policy_kwargs: Any) -> None:
        self.policy = _make(policy, policy_kwargs)
        self.name = str(getattr(self.policy, "name", type(self.policy).__name__))
        self.target: Allocation | None = None
        self.encoding: Encoding | None = None
        self.num_epochs = 0
        self.num_inexact = 0
        self.reasons: tuple[str, ...] = ()
        self._episode = -1
        self._key: tuple[int, int] | None = None
        self._env_id: int | None = None

    def label(self, env: Any) -> Any:
        """The expert's action for ``env``'s current observation (calls ``schedule`` at new epochs only)."""
        base = _unwrap(env)
        if id(base) != self._env_id:
            self._env_id = id(base)
            self._episode = -1
        if base.view is None:
            return base.noop_action()
        if base.episode_id != self._episode:
            self.policy.reset(base.cluster, rng=np.random.default_rng(base.sim_config.seed))
            self._episode = base.episode_id
            self._key = None
            self.num_epochs = 0
            self.num_inexact = 0
            self.reasons = ()
        key = base.decision_key
        if key != self._key:
            self._key = key
            self.target = self.policy.schedule(base.view)
            self.encoding = base.encode(self.target)
            self.num_epochs += 1
            if not self.encoding.exact:
                self.num_inexact += 1
                self.reasons = self.encoding.reasons
            first = self.encoding.actions[0]
            return first.copy() if isinstance(first, np.ndarray) else first
        assert self.target is not None
        if isinstance(base.codec, SequentialCodec):
            return base.codec.encode_next(base.state, self.target)
        return base.encode_next(self.target)

    @property
    def exact(self) -> bool:
        """Whether the current epoch's allocation is expressed exactly."""
        return self.encoding is None or self.encoding.exact


class ExpertAgent:
    """A scheduling policy with Stable-Baselines3's ``predict``, acting through an env's action codec.

    ``evaluate_policy(ExpertAgent("edf", env), env)`` scores the expert exactly as a learned agent is
    scored. In-process environments (a ``gym.Env``, SB3's ``DummyVecEnv``, Gymnasium's
    ``SyncVectorEnv``, possibly wrapped) are followed directly, one policy instance per sub-env;
    ``predict`` must then be called once per step (as ``evaluate_policy`` does). For environments in
    worker processes, wrap each worker's env in :class:`ExpertLabelWrapper` with the same policy: the
    agent then returns the labels the workers computed.

    Args:
        policy: A registered policy name, or a policy instance (copied for each sub-env).
        env: The environment (or vector env) the agent acts in.
        **policy_kwargs: The policy's knobs when given by name.
    """

    def __init__(self, policy: PolicyProtocol | str, env: Any, **policy_kwargs: Any) -> None:
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
                self.trackers.append(ExpertTracker(pol))
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
    policy's allocation is expressed exactly, ``info["expert_reasons"]`` why not. The latest label is
    also the attribute :attr:`expert_action` (SB3's ``VecEnv.get_attr("expert_action")``).

    Args:
        env: A ``HetClusterEnv`` (possibly wrapped).
        policy: A registered policy name or a policy instance (not copied).
        **policy_kwargs: The policy's knobs when given by name.
    """

    def __init__(
        self, env: gym.Env[dict[str, np.ndarray], Any], policy: PolicyProtocol | str = "edf", **policy_kwargs: Any
    ) -> None:
        super().__init__(env)
        _unwrap(env)
        self.tracker = ExpertTracker(policy, **policy_kwargs)
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


def labelled_env(
    env_id: str = "hetgym:HetCluster-v0",
    policy: str = "edf",
    policy_kwargs: dict[str, Any] | None = None,
    **env_kwargs: Any,
) -> ExpertLabelWrapper:
    """``gym.make(env_id, **env_kwargs)`` wrapped in :class:`ExpertLabelWrapper` (a picklable factory).

    Use it to build vector envs whose workers label their own observations, e.g.
    ``SubprocVecEnv([functools.partial(labelled_env, "hetgym:HetCluster-Tiny-v0", "srtf")] * 4)``.
    """
    return ExpertLabelWrapper(gym.make(env_id, **env_kwargs), policy, **(policy_kwargs or {}))


def _local_envs(env: Any) -> list[Any] | None:
    """The sub-envs of an in-process env or vector env, or ``None`` for worker processes."""
    if isinstance(env, gym.Env):
        return [env]
    base = env
    seen = 0
    while hasattr(base, "venv") and seen < 32:  # SB3 VecEnvWrapper chain
        base = base.venv
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
            return arr.ndim > len(space[key].shape)  # type: ignore[arg-type]
        return arr.ndim > 1
    arr = np.asarray(observation)
    if space is not None and not isinstance(space, gym.spaces.Dict):
        return arr.ndim > len(space.shape or ())
    return arr.ndim > 1


__all__ = ["ExpertAgent", "ExpertLabelWrapper", "ExpertTracker", "expert_env_kwargs", "labelled_env"]
