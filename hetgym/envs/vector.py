"""``HetClusterVectorEnv``: N ``HetClusterEnv`` stepped in one process, batched without per-key copies.

``gym.make_vec("HetCluster-v1", num_envs=N)`` builds this class (it is the ids' ``vector_entry_point``);
``vectorization_mode="sync"`` / ``"async"`` still give Gymnasium's generic ``SyncVectorEnv`` /
``AsyncVectorEnv``. The results are the same as ``SyncVectorEnv``'s (same observations, rewards, flags and
infos for the same seeds and actions: ``tests/envs/test_vector.py``); what differs is the cost of batching:

* Observations. Every built-in encoder keeps an epoch's features in one flat float32 buffer (its
  ``layout``); a step's observation is a copy of it plus the features the draft changed. Each step
  allocates one ``(N, size)`` array: the sub-envs only change state (:meth:`HetClusterEnv.transition`),
  then, from :data:`BATCH_MIN_ENVS` sub-envs on, the built-in encoders write all N rows at once
  (``observe_batch``: the epoch buffers copied in, the drafts' features computed by numpy operations over
  the stacked drafts; with fewer sub-envs, or other encoders with a layout, each sub-env writes its row
  through ``observe_into``). The batched ``Dict`` observation is a set of column views of
  that array (a fresh array every step, so observations never share memory across steps).
  ``SyncVectorEnv`` instead stacks every key of every sub-env's ``Dict`` separately and deep-copies the
  result. Encoders without a flat layout (user-registered ones may have none) fall back to per-key copies.
* Infos. Gymnasium's vector info layout (``info[key]`` an array over sub-envs, ``info["_key"]`` the mask of
  sub-envs that reported it; dict values nested the same way), built in one pass, the scalar keys of one
  type converted together.
* No wrappers. Sub-envs are ``HetClusterEnv`` instances without Gymnasium's per-env checker and order
  enforcing wrappers (the vector env enforces reset-before-step itself); ``max_episode_steps`` is applied as
  Gymnasium's ``TimeLimit`` would.

Autoreset follows Gymnasium's modes (``autoreset_mode=``, declared in ``metadata["autoreset_mode"]``), as
``SyncVectorEnv`` applies them: ``NEXT_STEP`` (the default) resets a sub-env on the step after it terminates
or truncates (its action is ignored, its reward is 0, its flags are False); ``SAME_STEP`` resets it within
the step that ended it, returning the new episode's first observation and the ended episode's last under
``info["final_obs"]`` / ``info["final_info"]``; ``DISABLED`` never resets: stepping an ended sub-env raises
until ``reset(options={"reset_mask": mask})`` resets it.

The event-driven ids (``HetClusterEvents-*``) have their own ``vector_entry_point``,
:func:`make_event_vector_env`: Gymnasium's ``SyncVectorEnv`` over ``HetClusterEventEnv`` with the same
``num_envs`` / ``max_episode_steps`` / ``autoreset_mode`` arguments and ``action_masks()``.

Masks, batched. Every vector env of every id gives the sub-envs' valid actions as ``info["action_mask"]``, a
bool array of shape ``(num_envs, n)`` after ``reset`` and each ``step`` (in all three vectorisation modes:
``sync``, ``async``, ``vector_entry_point``); :func:`batched_action_masks` returns the same array on demand for
any of them and for Stable-Baselines3's ``VecEnv`` (``action_masks()``, ``call`` or ``env_method``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeGuard

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv
from gymnasium.vector.utils import batch_space

from hetgym.envs.codecs.base import discrete_index, multidiscrete_array
from hetgym.envs.env import HetClusterEnv
from hetgym.envs.observations import WindowObservation
from hetgym.envs.observations_layout import Observation
from hetgym.limits import MAX_NUM_ENVS
from hetgym.sim.errors import HetgymError

#: Encoders whose :meth:`~hetgym.envs.observations.WindowObservation.observe_batch` the vector env uses
#: (exactly these classes, whatever their feature-group knobs: a subclass may change what an observation holds).
BATCHED_ENCODERS: tuple[type[WindowObservation], ...] = (WindowObservation,)
#: From this many sub-envs on, batched encoding costs less than a row per sub-env (its numpy calls have a
#: fixed cost per step; measured in ``docs/environment.md``, "Vectorised environments").
BATCH_MIN_ENVS = 6


class HetClusterVectorEnv(VectorEnv):
    """N ``HetClusterEnv`` with the same configuration, stepped in turn in this process.

    Args:
        num_envs: Number of sub-environments, an integer in [1, :data:`~hetgym.limits.MAX_NUM_ENVS`].
        max_episode_steps: Truncate a sub-env's episode after this many steps (``None``: the env's own caps
            only), as ``gym.make(..., max_episode_steps=...)`` would.
        render_mode: Passed to every sub-env; :meth:`render` returns a tuple of their renders.
        autoreset_mode: Gymnasium's ``AutoresetMode`` (or its value, ``"NextStep"``, ``"SameStep"``,
            ``"Disabled"``), applied as ``SyncVectorEnv`` applies it (see the module docstring) and declared in
            ``metadata["autoreset_mode"]``.
        **kwargs: ``HetClusterEnv`` keyword arguments (the same for every sub-env).

    ``reset(seed=s)`` seeds sub-env ``i`` with ``s + i`` (a list of seeds gives one per sub-env), as
    ``SyncVectorEnv`` does; ``options={"reset_mask": mask}`` resets only the masked sub-envs.
    """

    metadata: dict[str, Any] = {  # noqa: RUF012  (Gymnasium's convention: a class-level dict)
        "autoreset_mode": AutoresetMode.NEXT_STEP,
        "render_modes": ["ansi", "rgb_array"],
    }

    def __init__(
        self,
        num_envs: int = 1,
        *,
        max_episode_steps: int | None = None,
        render_mode: str | None = None,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        **kwargs: Any,
    ) -> None:
        _check_vector_args(num_envs, max_episode_steps)
        self.autoreset_mode = parse_autoreset_mode(autoreset_mode)
        self.num_envs = int(num_envs)
        self.max_episode_steps = None if max_episode_steps is None else int(max_episode_steps)
        self.render_mode = render_mode
        self.envs = [HetClusterEnv(render_mode=render_mode, **kwargs) for _ in range(self.num_envs)]
        first = self.envs[0]
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = dict(self.metadata, env_metadata=first.metadata, autoreset_mode=self.autoreset_mode)
        obs_space: Any = first.observation_space
        # The flat ids (a Box observation) return the (N, size) array itself; the others its column views.
        self._flat_obs = isinstance(obs_space, gym.spaces.Box)
        self._obs_spaces: dict[str, gym.spaces.Space[Any]] = {} if self._flat_obs else dict(obs_space.spaces)
        # The flat layout of every sub-env's observation (the same encoder for all), or None: per-key copies.
        layout: dict[str, slice] | None = first.encoder.layout
        if layout is not None and not self._flat_obs and set(layout) != set(self._obs_spaces):
            layout = None
        self._layout: dict[str, slice] | None = layout
        self._flat_size: int = max((sl.stop for sl in layout.values()), default=0) if layout else 0
        self._last_flat: np.ndarray | None = None
        # The built-in encoders also encode the whole batch at once (numpy over the sub-envs' drafts), which
        # pays off from BATCH_MIN_ENVS sub-envs on.
        encoder = first.encoder
        self._batched = layout is not None and type(encoder) in BATCHED_ENCODERS and self.num_envs >= BATCH_MIN_ENVS
        self._started: np.ndarray = np.zeros(self.num_envs, dtype=bool)
        self._autoreset: np.ndarray = np.zeros(self.num_envs, dtype=bool)
        self._elapsed: np.ndarray = np.zeros(self.num_envs, dtype=np.int64)
        self._last_obs: list[Observation | None] = [None] * self.num_envs

    # ----------------------------------------------------------------------------------------
    # Gymnasium API

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Reset every sub-env (or those in ``options["reset_mask"]``); see the class docstring for seeds."""
        seeds = self._seeds(seed)
        if options is not None and not isinstance(options, Mapping):
            raise ValueError(f"reset options={options!r} is a {type(options).__name__}; give None or a dict")
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is None:
            mask = np.ones(self.num_envs, dtype=bool)
        else:
            mask = np.asarray(mask)
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise ValueError(
                    f"options['reset_mask'] must be a bool array of shape ({self.num_envs},), "
                    f"got dtype {mask.dtype} and shape {mask.shape}"
                )
            if not self._started[~mask].all():
                raise HetgymError("a partial reset (reset_mask) needs every unmasked sub-env reset before")
        infos: list[dict[str, Any] | None] = [None] * self.num_envs
        flat = None
        if self._layout is not None:
            last = self._last_flat
            flat = np.zeros((self.num_envs, self._flat_size), dtype=np.float32) if last is None else last.copy()
        for i in np.flatnonzero(mask).tolist():
            env = self.envs[i]
            obs, info = env.reset(seed=seeds[i], options=options or None)
            if flat is not None:
                env.encoder.observe_into(env.state, flat[i])
            else:
                self._last_obs[i] = obs
            infos[i] = info
            self._started[i] = True
            self._autoreset[i] = False
            self._elapsed[i] = 0
        return self._batch_obs(flat), _batch_infos(infos, self.num_envs)

    def step(self, actions: Any) -> tuple[Observation, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-env with its action (autoresetting those that ended on the previous step)."""
        if not self._started.all():
            raise HetgymError("call reset() on the vector env before step()")
        same_step = self.autoreset_mode is AutoresetMode.SAME_STEP
        if self.autoreset_mode is AutoresetMode.DISABLED and self._autoreset.any():
            ended = np.flatnonzero(self._autoreset).tolist()
            raise HetgymError(
                f"sub-envs {ended} ended and autoreset_mode is DISABLED: reset them first, "
                f"reset(options={{'reset_mask': mask}}) with mask True at {ended}"
            )
        actions = self._split_actions(actions)
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminated = np.zeros(self.num_envs, dtype=bool)
        truncated = np.zeros(self.num_envs, dtype=bool)
        infos: list[dict[str, Any] | None] = [None] * self.num_envs
        limit = self.max_episode_steps
        # The batch's observations: one new array, each sub-env writing its row (see the module docstring).
        flat = None if self._layout is None else np.empty((self.num_envs, self._flat_size), dtype=np.float32)
        autoreset = self._autoreset.tolist()
        elapsed = self._elapsed
        batched = self._batched and flat is not None
        final_obs: np.ndarray | None = None
        for i, env in enumerate(self.envs):
            if autoreset[i]:
                obs, info = env.reset()
                elapsed[i] = 0
                if flat is not None and not batched:
                    env.encoder.observe_into(env.state, flat[i])
            else:
                if batched:
                    reward, term, trunc, info = env.transition(actions[i])
                elif flat is not None:
                    reward, term, trunc, info = env.step_into(actions[i], flat[i])
                else:
                    obs, step_reward, term, trunc, info = env.step(actions[i])
                    reward = float(step_reward)
                elapsed[i] += 1
                if limit is not None and elapsed[i] >= limit:
                    trunc = True
                rewards[i], terminated[i], truncated[i] = reward, term, trunc
                if same_step and (term or trunc):
                    # Gymnasium's SAME_STEP: the ended episode's last observation and info go under
                    # final_obs / final_info, the step returns the new episode's first observation.
                    row = None if flat is None or batched else flat[i]
                    if final_obs is None:  # an object array of sub-env observations, as Gymnasium batches it
                        final_obs = np.full(self.num_envs, None, dtype=object)
                    final_obs[i] = self._final_obs(env, obs if flat is None else None, row)
                    obs, reset_info = env.reset()
                    elapsed[i] = 0
                    if flat is not None and not batched:
                        env.encoder.observe_into(env.state, flat[i])
                    info = {"final_info": info, **reset_info}
            if flat is None:
                self._last_obs[i] = obs
            infos[i] = info
        # NEXT_STEP resets the ended sub-envs on the next step; DISABLED refuses to step them.
        self._autoreset = np.zeros(self.num_envs, dtype=bool) if same_step else terminated | truncated
        if batched:
            assert flat is not None
            envs = self.envs
            encoder = envs[0].encoder
            assert isinstance(encoder, BATCHED_ENCODERS)  # what self._batched checked (exactly these classes)
            encoders = [e for e in (env.encoder for env in envs) if isinstance(e, WindowObservation)]
            assert len(encoders) == len(envs)  # self._batched checked every sub-env's encoder
            encoder.observe_batch(encoders, [env.state for env in envs], flat)
        batch_infos = _batch_infos(infos, self.num_envs)
        if final_obs is not None:
            batch_infos["final_obs"] = final_obs
            batch_infos["_final_obs"] = np.array([o is not None for o in final_obs], dtype=bool)
        return self._batch_obs(flat), rewards, terminated, truncated, batch_infos

    def render(self) -> tuple[Any, ...] | None:
        """Every sub-env's render (``None`` without a ``render_mode``)."""
        if self.render_mode is None:
            gym.logger.warn(
                "You are calling render method without specifying any render mode. You can specify the "
                'render_mode at initialization, e.g. gym.make_vec("HetCluster-v1", render_mode="ansi")'
            )
            return None
        return tuple(env.render() for env in self.envs)

    def close_extras(self, **kwargs: Any) -> None:
        """Close every sub-env."""
        for env in self.envs:
            env.close()

    # ----------------------------------------------------------------------------------------
    # What SyncVectorEnv also offers

    def action_masks(self) -> np.ndarray:
        """Every sub-env's valid actions, stacked: shape ``(num_envs, mask_size)``."""
        return np.stack([env.action_masks() for env in self.envs])

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call (or read, when not callable) attribute ``name`` of every sub-env."""
        out = []
        for env in self.envs:
            attr = getattr(env, name)
            out.append(attr(*args, **kwargs) if callable(attr) else attr)
        return tuple(out)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of every sub-env."""
        return tuple(getattr(env, name) for env in self.envs)

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` on every sub-env (one value for all, or a list or tuple of one per sub-env)."""
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(f"set_attr needs {self.num_envs} values (one per sub-env), got {len(values)}")
        for env, value in zip(self.envs, values, strict=True):
            setattr(env, name, value)

    # ----------------------------------------------------------------------------------------
    # Batching

    def _final_obs(self, env: HetClusterEnv, obs: Observation | None, row: np.ndarray | None) -> Observation:
        """An ended sub-env's last observation as its own ``Dict`` (``SAME_STEP``'s ``info["final_obs"]``).

        ``obs``: the step's own ``Dict`` (the per-key path); ``row``: its batch row, written by ``step_into``
        and about to be overwritten by the reset's; neither (batched encoding, which runs after every
        sub-env has moved): encoded here, before the reset.
        """
        if obs is not None:
            return obs
        assert self._layout is not None
        final = np.empty(self._flat_size, dtype=np.float32)
        if row is not None:
            final[:] = row
        else:
            env.encoder.observe_into(env.state, final)
        if self._flat_obs:
            return final
        return {key: final[sl] for key, sl in self._layout.items()}

    def _seeds(self, seed: int | Sequence[int | None] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, bool):
            raise TypeError(f"reset(seed={seed!r}): give an integer seed, a list of one per sub-env, or None")
        if isinstance(seed, (int, np.integer)):
            return [int(seed) + i for i in range(self.num_envs)]
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(f"reset(seed=...) needs one seed per sub-env ({self.num_envs}), got {len(seeds)}")
        return seeds

    def _split_actions(self, actions: Any) -> list[Any]:
        space = self.single_action_space
        arr = np.asarray(actions)
        if isinstance(space, gym.spaces.Discrete):
            expected: tuple[int, ...] = (self.num_envs,)
        elif isinstance(space, gym.spaces.MultiDiscrete):
            expected = (self.num_envs, *space.shape)
        else:  # pragma: no cover - every built-in codec has one of the two spaces
            return list(actions)
        if arr.shape != expected:
            raise ValueError(
                f"actions must have shape {expected} (one action per sub-env for {space}), got shape {arr.shape}"
            )
        # Every stepping sub-env's action is checked before any sub-env steps, so a bad one changes nothing.
        codec = self.envs[0].config.codec
        if isinstance(space, gym.spaces.Discrete):
            out = arr.tolist() if arr.dtype.kind in "iub" else list(arr)
            for i, action in enumerate(out):
                if self._autoreset[i]:
                    continue  # this sub-env resets instead of stepping: its action is not used
                try:
                    discrete_index(action, int(space.n), codec)
                except ValueError as err:
                    raise ValueError(f"sub-env {i}: {err}") from None
            return out
        out = list(arr)
        for i, action in enumerate(out):
            if self._autoreset[i]:
                continue
            try:
                multidiscrete_array(action, np.asarray(space.nvec), codec)
            except ValueError as err:
                raise ValueError(f"sub-env {i}: {err}") from None
        return out

    def _batch_obs(self, flat: np.ndarray | None) -> Observation:
        """The batched observation: column views of ``flat`` (the flat path), else per-key copies."""
        if flat is not None:
            assert self._layout is not None
            self._last_flat = flat
            if self._flat_obs:
                return flat
            return {key: flat[:, sl] for key, sl in self._layout.items()}
        n = self.num_envs
        out = {key: np.empty((n, *(space.shape or ())), dtype=space.dtype) for key, space in self._obs_spaces.items()}
        for i, obs in enumerate(self._last_obs):
            assert isinstance(obs, dict)  # the per-key path: an encoder without a flat layout, so a Dict
            for key, value in obs.items():
                out[key][i] = value
        return out


def _batch_infos(infos: list[dict[str, Any] | None], num_envs: int) -> dict[str, Any]:
    """Gymnasium's vector info layout for per-sub-env ``infos`` (``None``: that sub-env reported nothing)."""
    if _same_keys(infos):
        return _batch_same_keys(infos, num_envs)
    out: dict[str, Any] = {}
    keys: dict[str, None] = {}
    for info in infos:
        if info:
            keys.update(dict.fromkeys(info))
    for key in keys:
        values = [info.get(key, _MISSING) if info else _MISSING for info in infos]
        present = np.array([v is not _MISSING for v in values], dtype=bool)
        sample = next(v for v in values if v is not _MISSING)
        if isinstance(sample, dict):
            out[key] = _batch_infos([v if isinstance(v, dict) else None for v in values], num_envs)
        else:
            out[key] = _batch_values(values, present, sample, num_envs)
        out[f"_{key}"] = present
    return out


_MISSING = object()


def _same_keys(infos: list[dict[str, Any] | None]) -> TypeGuard[list[dict[str, Any]]]:
    """Whether every sub-env reported, with the same keys."""
    first = infos[0]
    return first is not None and all(info is not None and info.keys() == first.keys() for info in infos)


def _batch_same_keys(infos: list[dict[str, Any]], num_envs: int) -> dict[str, Any]:
    """:func:`_batch_infos` when every sub-env reported the same keys (the usual case): one pass per key.

    Scalar keys of one type (the reward components, the counters) are converted together, one array of
    shape ``(number of keys, num_envs)`` whose rows are the keys' arrays; every ``"_key"`` mask is a row of
    one all-True array. Values and dtypes are those of a key-by-key conversion.
    """
    keys = list(infos[0])
    if all(list(info) == keys for info in infos):
        columns = list(zip(*(info.values() for info in infos), strict=True))  # one transposition
    else:
        columns = [tuple(info[key] for info in infos) for key in keys]
    present = np.ones((len(keys), num_envs), dtype=bool)
    batched: dict[str, Any] = {}
    by_kind: dict[type, list[int]] = {}
    scalars = (int, float, bool)
    for i, (key, values) in enumerate(zip(keys, columns, strict=True)):
        sample = values[0]
        kind = type(sample)
        if isinstance(sample, dict):
            batched[key] = _batch_infos(list(values), num_envs)
        elif kind in scalars or isinstance(sample, np.number):
            by_kind.setdefault(kind, []).append(i)
        elif isinstance(sample, np.ndarray) and all(
            isinstance(v, np.ndarray) and v.shape == sample.shape and v.dtype == sample.dtype for v in values
        ):
            # np.array of equal-shape numeric arrays is np.stack's result, built in one C call.
            batched[key] = np.stack(values) if sample.dtype.hasobject else np.array(values)
        else:
            batched[key] = _batch_values(list(values), present[i].copy(), sample, num_envs)
    for kind, rows in by_kind.items():
        block = np.array([columns[i] for i in rows], dtype=kind)
        for j, i in enumerate(rows):
            batched[keys[i]] = block[j]
    out: dict[str, Any] = {}
    for i, key in enumerate(keys):
        out[key] = batched[key]
        out[f"_{key}"] = present[i]
    return out


def _batch_values(values: list[Any], present: np.ndarray, sample: Any, num_envs: int) -> np.ndarray:
    """One info key over sub-envs, typed as Gymnasium's ``VectorEnv._add_info`` types it."""
    if isinstance(sample, np.ndarray):
        arr = np.zeros((num_envs, *sample.shape), dtype=sample.dtype)
        for i, v in enumerate(values):
            if present[i]:
                arr[i] = v
        return arr
    if type(sample) in (int, float, bool) or isinstance(sample, np.number):
        dtype: Any = type(sample)
        fill: Any = 0
    else:
        dtype, fill = object, None
    arr = np.full(num_envs, fill, dtype=dtype)
    for i, v in enumerate(values):
        if present[i]:
            arr[i] = v
    return arr


def make_vector_env(num_envs: int = 1, **kwargs: Any) -> HetClusterVectorEnv:
    """The registered ids' ``vector_entry_point`` (``gym.make_vec`` passes the id's kwargs through)."""
    return HetClusterVectorEnv(num_envs, **kwargs)


def parse_autoreset_mode(mode: str | AutoresetMode) -> AutoresetMode:
    """``mode`` as an ``AutoresetMode`` (an instance or its value); anything else raises naming the valid ones."""
    if isinstance(mode, AutoresetMode):
        return mode
    try:
        return AutoresetMode(mode)
    except ValueError:
        valid = ", ".join(repr(m.value) for m in AutoresetMode)
        raise ValueError(
            f"autoreset_mode={mode!r} is not a Gymnasium autoreset mode; give gymnasium.vector.AutoresetMode.X "
            f"or one of {valid}"
        ) from None


def _check_vector_args(num_envs: Any, max_episode_steps: Any) -> None:
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
    if num_envs > MAX_NUM_ENVS:
        raise ValueError(
            f"num_envs={num_envs} is more than {MAX_NUM_ENVS}: every sub-environment holds its own simulator "
            "and buffers and is stepped in this process; for more parallel episodes, run several processes"
        )
    if max_episode_steps is not None and (
        isinstance(max_episode_steps, bool)
        or not isinstance(max_episode_steps, (int, np.integer))
        or max_episode_steps < 1
    ):
        raise ValueError(f"max_episode_steps must be None or an integer >= 1, got {max_episode_steps!r}")


class HetClusterEventVectorEnv(SyncVectorEnv):
    """Gymnasium's ``SyncVectorEnv`` over ``HetClusterEventEnv`` sub-envs, with :meth:`action_masks`.

    The event-driven ids' ``vector_entry_point`` (:func:`make_event_vector_env`); steps, seeds, infos and
    autoreset are ``SyncVectorEnv``'s own.
    """

    def action_masks(self) -> np.ndarray:
        """Every sub-env's valid actions, stacked: shape ``(num_envs, mask_size)``."""
        return np.stack(self.call("action_masks"))


def make_event_vector_env(
    num_envs: int = 1,
    *,
    max_episode_steps: int | None = None,
    render_mode: str | None = None,
    autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    **kwargs: Any,
) -> HetClusterEventVectorEnv:
    """The event-driven ids' ``vector_entry_point``: ``num_envs`` ``HetClusterEventEnv(**kwargs)``.

    The arguments are :class:`HetClusterVectorEnv`'s; ``max_episode_steps`` wraps each sub-env in
    Gymnasium's ``TimeLimit``.
    """
    _check_vector_args(num_envs, max_episode_steps)
    mode = parse_autoreset_mode(autoreset_mode)
    factories = [_EventEnvFactory(max_episode_steps, render_mode, dict(kwargs))] * int(num_envs)
    return HetClusterEventVectorEnv(factories, autoreset_mode=mode)


class _EventEnvFactory:
    """Builds one event-driven sub-env (a class, not a closure: the settings stay inspectable)."""

    def __init__(self, max_episode_steps: int | None, render_mode: str | None, kwargs: dict[str, Any]) -> None:
        self.max_episode_steps = max_episode_steps
        self.render_mode = render_mode
        self.kwargs = kwargs

    def __call__(self) -> gym.Env[Any, Any]:
        from hetgym.envs.events.env import HetClusterEventEnv  # imported when an env is first made

        env: gym.Env[Any, Any] = HetClusterEventEnv(render_mode=self.render_mode, **self.kwargs)
        if self.max_episode_steps is not None:
            env = gym.wrappers.TimeLimit(env, max_episode_steps=self.max_episode_steps)
        return env


def batched_action_masks(envs: Any) -> np.ndarray:
    """The valid actions of every sub-env of a vector env, a bool array of shape ``(num_envs, n)``.

    Works for the ids' vector envs (their ``action_masks()``), Gymnasium's ``SyncVectorEnv`` and
    ``AsyncVectorEnv`` (``call("action_masks")``, which ``AsyncVectorEnv`` answers from its workers) and
    Stable-Baselines3's ``VecEnv`` (``env_method("action_masks")``, what sb3-contrib's ``get_action_masks``
    reads). After ``reset`` or ``step`` it equals that call's ``info["action_mask"]``.
    """
    method: Callable[[], Any] | None = getattr(envs, "action_masks", None)
    if callable(method):
        return np.asarray(method(), dtype=bool)
    if hasattr(envs, "env_method"):
        return np.stack(envs.env_method("action_masks")).astype(bool, copy=False)
    if hasattr(envs, "call"):
        return np.stack(envs.call("action_masks")).astype(bool, copy=False)
    raise TypeError(
        f"{type(envs).__name__} is not a vector env: give a gymnasium VectorEnv (gym.make_vec) or an SB3 VecEnv"
    )


__all__ = [
    "HetClusterEventVectorEnv",
    "HetClusterVectorEnv",
    "batched_action_masks",
    "make_event_vector_env",
    "make_vector_env",
    "parse_autoreset_mode",
]
