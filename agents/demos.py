"""Demonstrations: an expert's (or a mixed expert/learner) episodes in the environment, as arrays.

Field names follow the ``imitation`` library's ``Trajectory``: ``obs`` holds one more entry than
``acts`` (the observation after the last action), ``acts`` the teacher's label for each observation,
``infos`` per-step information and ``terminal`` whether the episode ended in a terminal state (rather
than being cut short). Observations are the environment's ``Dict`` of arrays, so ``obs[key]`` has shape
``(T + 1, *space[key].shape)``. Beyond imitation's fields, each trajectory keeps ``masks`` (the valid
actions at each observation, which the masked cross-entropy needs), ``rews`` and the episode's final
``metrics``. ``infos`` is columnar (a dict of per-step arrays): ``executed`` (the action actually taken),
``expert_acted`` (whether it was the teacher's), ``expert_exact`` (whether the teacher's decision was
expressible exactly), ``expert_changes`` (whether the teacher's decision at that epoch changes anything in
force; absent from demonstrations saved before it existed) and ``epoch``.

:func:`rollout` runs episodes in an environment wrapped in
:class:`~hetgym.experts.ExpertLabelWrapper`: the teacher labels every state, and the action taken is the
teacher's with probability ``beta`` and the learner's otherwise (``beta=1``: plain demonstrations for
behaviour cloning; ``beta<1``: DAgger's mixture). :meth:`Demonstrations.transitions` flattens episodes
into training pairs, and :meth:`Demonstrations.save` / :meth:`Demonstrations.load` store them as one
compressed ``.npz`` file.

**Storage precision.** Observations are kept as the environment gives them (``float32``) unless
``obs_dtype="float16"`` is asked for (:data:`OBS_DTYPES`), which halves their memory: a ``HetCluster-v1``
state at 32 queue slots is about 21.7 KB in ``float32``. Every ``HetCluster`` observation lies in
[-1, 1], where ``float16`` rounds by at most 2.4e-4 and keeps the sign of values down to 6e-8; training
casts each minibatch back to ``float32`` (:func:`agents.bc.fit`). Values ``float16`` cannot hold (non-finite,
or beyond +-65504) are refused rather than rounded to infinity.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.common import AgentError, atomic_write

INFO_KEYS: tuple[str, ...] = ("executed", "expert_acted", "expert_exact", "expert_changes", "epoch")

OBS_DTYPES: tuple[str, ...] = ("float32", "float16")
"""Storage precisions of demonstrations' observations (see the module docstring)."""

_FLOAT16_MAX = float(np.finfo(np.float16).max)


def check_obs_dtype(obs_dtype: str) -> np.dtype[Any]:
    """The numpy dtype of an :data:`OBS_DTYPES` name, or an error naming the choices."""
    if obs_dtype not in OBS_DTYPES:
        raise AgentError(f"obs_dtype={obs_dtype!r}: use one of {OBS_DTYPES}")
    return np.dtype(obs_dtype)


def cast_obs(values: np.ndarray, dtype: np.dtype[Any], key: str) -> np.ndarray:
    """``values`` stored as ``dtype`` (no copy when it already is), refusing what ``float16`` cannot hold."""
    if values.dtype == dtype:
        return values
    if dtype == np.float16 and values.size:
        # min and max make no temporaries (a key of 120 v1 workloads is some 5 GB), and NaN propagates.
        low, high = float(values.min()), float(values.max())
        if not (math.isfinite(low) and math.isfinite(high)) or max(-low, high) > _FLOAT16_MAX:
            raise AgentError(
                f"observation {key!r} holds values float16 cannot store (non-finite or beyond +-{_FLOAT16_MAX:g});"
                " keep obs_dtype='float32' for this environment"
            )
    return values.astype(dtype)


@dataclass
class Trajectory:
    """One episode.

    Attributes:
        obs: ``{key: (T + 1, ...)}`` observations, the last one after the final action.
        acts: ``(T,)`` (sequential codec) or ``(T, D)`` (one-shot codec): the teacher's labels.
        infos: Columnar per-step information (see the module docstring), each ``(T, ...)``.
        terminal: Whether the episode ended (terminated or truncated by the environment) rather than
            being cut at the rollout's step limit.
        rews: ``(T,)`` rewards of the actions taken.
        masks: ``(T, n)`` valid actions at each observation (bool).
        metrics: The episode's final metrics (empty when it was cut short).
        workload_seed: The workload seed of the episode (``None`` for a trace).
    """

    obs: dict[str, np.ndarray]
    acts: np.ndarray
    infos: dict[str, np.ndarray]
    terminal: bool
    rews: np.ndarray
    masks: np.ndarray
    metrics: dict[str, float] = field(default_factory=dict)
    workload_seed: int | None = None

    def __len__(self) -> int:
        return len(self.acts)


@dataclass
class Transitions:
    """Flattened (observation, label) pairs for training.

    Attributes:
        obs: ``{key: (N, ...)}``.
        acts: ``(N,)`` or ``(N, D)`` labels.
        masks: ``(N, n)`` valid actions.
        rews: ``(N,)`` rewards.
        dones: ``(N,)`` whether the step ended its episode.
        returns: ``(N,)`` discounted returns to go (filled by :meth:`Demonstrations.transitions`).
        changing: ``(N,)`` whether the teacher's decision at the state's epoch changes anything in force
            (``infos["expert_changes"]``), or ``None`` when the demonstrations do not record it.
    """

    obs: dict[str, np.ndarray]
    acts: np.ndarray
    masks: np.ndarray
    rews: np.ndarray
    dones: np.ndarray
    returns: np.ndarray
    changing: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.acts)

    def take(self, index: np.ndarray) -> Transitions:
        """The pairs at ``index``."""
        return Transitions(
            {k: v[index] for k, v in self.obs.items()},
            self.acts[index],
            self.masks[index],
            self.rews[index],
            self.dones[index],
            self.returns[index],
            None if self.changing is None else self.changing[index],
        )


@dataclass
class Demonstrations:
    """Episodes from one teacher in one environment configuration.

    Attributes:
        trajectories: The episodes.
        teacher: The labelling policy's name.
        env_id: The environment id.
        env_kwargs: Its ``gym.make`` overrides.
    """

    trajectories: list[Trajectory]
    teacher: str
    env_id: str
    env_kwargs: dict[str, Any]

    def __len__(self) -> int:
        return sum(len(t) for t in self.trajectories)

    def extend(self, other: Demonstrations) -> None:
        """Aggregate ``other``'s episodes (DAgger's data set grows this way)."""
        if other.teacher != self.teacher or other.env_kwargs != self.env_kwargs or other.env_id != self.env_id:
            raise AgentError("cannot aggregate demonstrations of another teacher or environment configuration")
        mine, theirs = self.obs_dtypes(), other.obs_dtypes()
        if mine and theirs and mine != theirs:
            raise AgentError(
                f"cannot aggregate observations stored as {sorted(theirs)} with ones stored as {sorted(mine)};"
                " load or collect both with the same obs_dtype"
            )
        self.trajectories.extend(other.trajectories)

    def obs_dtypes(self) -> set[str]:
        """The storage dtypes of the episodes' observations (empty once released or when there are none)."""
        return {str(v.dtype) for t in self.trajectories for v in t.obs.values()}

    def transitions(self, gamma: float = 0.99, *, release: bool = False) -> Transitions:
        """Every (observation, label) pair, with discounted returns to go under ``gamma``.

        With ``release=True`` each episode's observations are dropped as soon as they are copied, and the
        demonstrations are left empty: the peak memory is then one copy of the observations plus one
        episode's, not two copies (100 ``HetCluster-v1`` workloads of ElasticFlow are some 10 GB a copy).
        """
        trajs = self.trajectories
        if not trajs:
            raise AgentError("no demonstrations to flatten; collect at least one episode")
        dones = []
        returns = []
        for t in trajs:
            d = np.zeros(len(t), dtype=bool)
            if len(t):
                d[-1] = True
            dones.append(d)
            returns.append(discounted_returns(t.rews, gamma))
        changing = (
            np.concatenate([np.asarray(t.infos["expert_changes"], dtype=bool) for t in trajs])
            if all("expert_changes" in t.infos for t in trajs)
            else None
        )
        acts = np.concatenate([t.acts for t in trajs])
        masks = np.concatenate([t.masks for t in trajs])
        rews = np.concatenate([t.rews for t in trajs]).astype(np.float32)
        # The observations, copied episode by episode into arrays made once (np.concatenate would hold
        # every episode's and the result at the same time).
        first = trajs[0].obs
        obs = {k: np.empty((len(acts), *v.shape[1:]), dtype=v.dtype) for k, v in first.items()}
        start = 0
        for t in trajs:
            end = start + len(t)
            for k, out in obs.items():
                out[start:end] = t.obs[k][:-1]
            if release:
                t.obs = {}
            start = end
        if release:
            self.trajectories = []
        all_returns = np.concatenate(returns).astype(np.float32)
        return Transitions(obs, acts, masks, rews, np.concatenate(dones), all_returns, changing)

    def episode_metrics(self) -> list[dict[str, float]]:
        """The final metrics of each complete episode."""
        return [t.metrics for t in self.trajectories if t.metrics]

    # ------------------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write one compressed ``.npz`` (through a temporary file, renamed when complete)."""
        p = Path(path)
        if p.suffix != ".npz":
            raise AgentError(f"demonstrations are saved as .npz; got {p.name!r}")
        trajs = self.trajectories
        if not trajs:
            raise AgentError("no demonstrations to save")
        # Any, not np.ndarray: numpy's stub types savez_compressed's **kwds beside its allow_pickle: bool.
        arrays: dict[str, Any] = {}
        for k in trajs[0].obs:
            arrays[f"obs/{k}"] = np.concatenate([t.obs[k] for t in trajs])
        arrays["acts"] = np.concatenate([t.acts for t in trajs])
        arrays["masks"] = np.concatenate([t.masks for t in trajs])
        arrays["rews"] = np.concatenate([t.rews for t in trajs])
        for k in trajs[0].infos:
            arrays[f"infos/{k}"] = np.concatenate([t.infos[k] for t in trajs])
        arrays["lengths"] = np.array([len(t) for t in trajs], dtype=np.int64)
        arrays["terminal"] = np.array([t.terminal for t in trajs], dtype=bool)
        meta = {
            "teacher": self.teacher,
            "env_id": self.env_id,
            "env_kwargs": self.env_kwargs,
            "metrics": [t.metrics for t in trajs],
            "workload_seeds": [t.workload_seed for t in trajs],
        }
        arrays["meta"] = np.array(json.dumps(meta))

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as fh:
                np.savez_compressed(fh, **arrays)

        return atomic_write(p, write)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, obs_dtype: str | None = None) -> Demonstrations:
        """Read a file written by :meth:`save`.

        ``obs_dtype`` (:data:`OBS_DTYPES`) converts the observations to that precision as each one is read
        (so a ``float32`` file is never held whole beside its ``float16`` copy); ``None`` keeps the file's.
        """
        dtype = None if obs_dtype is None else check_obs_dtype(obs_dtype)
        p = Path(path)
        if not p.is_file():
            raise AgentError(f"no demonstrations file at {p}")
        with np.load(p, allow_pickle=False) as data:
            files = set(data.files)
            for need in ("acts", "masks", "rews", "lengths", "terminal", "meta"):
                if need not in files:
                    raise AgentError(f"{p} lacks {need!r}: not a demonstrations file written by Demonstrations.save")
            meta = json.loads(str(data["meta"]))
            lengths = data["lengths"]
            ends = np.cumsum(lengths)
            starts = ends - lengths
            obs_keys = [f[4:] for f in data.files if f.startswith("obs/")]
            info_keys = [f[6:] for f in data.files if f.startswith("infos/")]
            obs_all = {k: data[f"obs/{k}"] if dtype is None else cast_obs(data[f"obs/{k}"], dtype, k) for k in obs_keys}
            info_all = {k: data[f"infos/{k}"] for k in info_keys}
            acts, masks, rews, terminal = data["acts"], data["masks"], data["rews"], data["terminal"]
        trajs = []
        for i, (a, b) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
            trajs.append(
                Trajectory(
                    obs={k: v[a + i : b + i + 1] for k, v in obs_all.items()},
                    acts=acts[a:b],
                    infos={k: v[a:b] for k, v in info_all.items()},
                    terminal=bool(terminal[i]),
                    rews=rews[a:b],
                    masks=masks[a:b],
                    metrics=dict(meta["metrics"][i]),
                    workload_seed=meta["workload_seeds"][i],
                )
            )
        return cls(trajs, meta["teacher"], meta["env_id"], dict(meta["env_kwargs"]))


def discounted_returns(rews: np.ndarray, gamma: float) -> np.ndarray:
    """Discounted returns to go of one episode."""
    out = np.zeros(len(rews), dtype=np.float64)
    acc = 0.0
    for i in range(len(rews) - 1, -1, -1):
        acc = float(rews[i]) + gamma * acc
        out[i] = acc
    return out


#: A learner for :func:`rollout`: ``(observation, mask) -> action``.
Learner = Callable[[dict[str, np.ndarray], np.ndarray], Any]


def model_learner(model: Any, *, deterministic: bool = True) -> Learner:
    """A :data:`Learner` from an SB3 model (masked prediction when the policy takes masks, or when the model
    says so with ``uses_action_masks``, as :class:`~agents.random_agent.RandomMaskedAgent` does)."""
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    maskable = bool(getattr(model, "uses_action_masks", False)) or isinstance(
        getattr(model, "policy", None), MaskableActorCriticPolicy
    )

    def act(obs: dict[str, np.ndarray], mask: np.ndarray) -> Any:
        if maskable:
            action, _ = model.predict(obs, deterministic=deterministic, action_masks=mask)
        else:
            action, _ = model.predict(obs, deterministic=deterministic)
        return int(action) if np.ndim(action) == 0 else np.asarray(action)

    return act


def rollout(
    env: Any,
    seeds: Iterable[int],
    *,
    learner: Learner | None = None,
    beta: float = 1.0,
    rng: np.random.Generator | None = None,
    max_steps: int | None = None,
    on_step: Callable[[int], None] | None = None,
    obs_dtype: str = "float32",
) -> list[Trajectory]:
    """Run one episode per workload seed and record the teacher's label for every state.

    Args:
        env: A ``HetClusterEnv`` wrapped in :class:`~hetgym.experts.ExpertLabelWrapper`.
        seeds: Workload seeds (``reset(options={"workload_seed": s})``), one episode each.
        learner: The learner acting with probability ``1 - beta`` (``None``: the teacher always acts).
        beta: Probability that the teacher's action is taken at a step.
        rng: Draws the teacher/learner choice (required when ``0 < beta < 1``).
        max_steps: Cut an episode after this many steps (a poor learner may take very many); the
            trajectory is then not ``terminal``.
        on_step: Called with the number of steps after every step (progress bars).
        obs_dtype: Storage precision of the recorded observations (:data:`OBS_DTYPES`; the learner
            always sees the environment's own).
    """
    dtype = check_obs_dtype(obs_dtype)
    if not 0.0 <= beta <= 1.0:
        raise AgentError(f"beta={beta}: it is a probability, between 0 and 1")
    if learner is None and beta < 1.0:
        raise AgentError("beta < 1 needs a learner to act")
    if 0.0 < beta < 1.0 and rng is None:
        raise AgentError("mixing teacher and learner needs an rng")
    out = []
    for seed in seeds:
        obs, info = env.reset(options={"workload_seed": int(seed)})
        if "expert_action" not in info:
            raise AgentError("rollout needs an env wrapped in ExpertLabelWrapper (info has no 'expert_action')")
        obs_rows: dict[str, list[np.ndarray]] = {k: [v] for k, v in obs.items()}
        acts: list[Any] = []
        masks: list[np.ndarray] = []
        rews: list[float] = []
        cols: dict[str, list[Any]] = {k: [] for k in INFO_KEYS}
        terminal = False
        metrics: dict[str, float] = {}
        steps = 0
        while True:
            label = np.array(info["expert_action"], copy=True)
            mask = np.asarray(info["action_mask"], dtype=bool)
            if learner is None or beta >= 1.0:
                expert_acts = True
            elif beta <= 0.0:
                expert_acts = False
            else:
                assert rng is not None
                expert_acts = bool(rng.random() < beta)
            action = label if (expert_acts or learner is None) else learner(obs, mask)
            cols["executed"].append(np.array(action, copy=True))
            cols["expert_acted"].append(expert_acts)
            cols["expert_exact"].append(bool(info.get("expert_exact", True)))
            cols["expert_changes"].append(bool(info.get("expert_changes", True)))
            cols["epoch"].append(int(info.get("epoch", 0)))
            acts.append(label)
            masks.append(mask)
            act = int(action) if np.ndim(action) == 0 else np.asarray(action)
            obs, reward, term, trunc, info = env.step(act)
            rews.append(float(reward))
            for k, v in obs.items():
                obs_rows[k].append(v)
            steps += 1
            if on_step is not None:
                on_step(steps)
            if term or trunc:
                terminal = True
                metrics = {k: float(v) for k, v in info.get("metrics", {}).items()}
                break
            if max_steps is not None and steps >= max_steps:
                break
        out.append(
            Trajectory(
                obs={k: cast_obs(np.stack(v), dtype, k) for k, v in obs_rows.items()},
                acts=np.stack(acts),
                infos={k: np.stack([np.asarray(x) for x in v]) for k, v in cols.items()},
                terminal=terminal,
                rews=np.asarray(rews, dtype=np.float32),
                masks=np.stack(masks),
                metrics=metrics,
                workload_seed=int(seed),
            )
        )
    return out


def collect_demonstrations(
    env_id: str,
    env_kwargs: dict[str, Any],
    teacher: str,
    seeds: Sequence[int],
    *,
    max_steps: int | None = None,
    on_step: Callable[[int], None] | None = None,
    obs_dtype: str = "float32",
) -> Demonstrations:
    """The teacher's episodes on the given workload seeds (behaviour cloning's data set).

    ``obs_dtype`` is the observations' storage precision (:data:`OBS_DTYPES`).
    """
    from agents.common import make_env

    check_obs_dtype(obs_dtype)
    env = make_env(env_id, env_kwargs, teacher=teacher)
    try:
        trajs = rollout(env, seeds, max_steps=max_steps, on_step=on_step, obs_dtype=obs_dtype)
    finally:
        env.close()
    return Demonstrations(trajs, teacher, env_id, dict(env_kwargs))


def load_demonstrations(
    paths: str, teacher: str, env_id: str, env_kwargs: dict[str, Any], obs_dtype: str = "float32"
) -> Demonstrations:
    """Saved demonstrations (``--save-demos``) for a run, refused unless they are its teacher's in its env.

    ``paths`` is one ``.npz`` or several separated by commas, whose episodes are pooled (no workload seed
    may appear twice); observations are converted to ``obs_dtype`` as they are read.
    """
    files = [p.strip() for p in str(paths).split(",") if p.strip()]
    if not files:
        raise AgentError(f"demos={paths!r}: name at least one .npz file")
    pooled: Demonstrations | None = None
    seen: dict[int, str] = {}
    for path in files:
        demos = Demonstrations.load(path, obs_dtype=obs_dtype)
        if demos.teacher != teacher or demos.env_kwargs != env_kwargs or demos.env_id != env_id:
            raise AgentError(
                f"{path} holds {demos.teacher!r} demonstrations in {demos.env_id} {demos.env_kwargs}, not "
                f"{teacher!r} in {env_id} {env_kwargs}; collect new ones or pass the matching --env"
            )
        for seed in demonstration_seeds(demos):
            if seed in seen:
                raise AgentError(f"workload seed {seed} is in both {seen[seed]} and {path}; pool distinct workloads")
            seen[seed] = path
        if pooled is None:
            pooled = demos
        else:
            pooled.extend(demos)
    assert pooled is not None
    return pooled


def demonstration_seeds(demos: Demonstrations) -> list[int]:
    """The workload seeds of the demonstrations' episodes (episodes on a trace have none)."""
    return [t.workload_seed for t in demos.trajectories if t.workload_seed is not None]


__all__ = [
    "INFO_KEYS",
    "OBS_DTYPES",
    "Demonstrations",
    "Learner",
    "Trajectory",
    "Transitions",
    "cast_obs",
    "check_obs_dtype",
    "collect_demonstrations",
    "demonstration_seeds",
    "discounted_returns",
    "load_demonstrations",
    "model_learner",
    "rollout",
]
