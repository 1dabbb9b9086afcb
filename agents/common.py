"""What every recipe shares: the agent's environment, seeding, run folders and checkpoints.

**The agent's environment.** :func:`agent_env_kwargs` resolves the ``gym.make`` overrides a recipe trains
in: the teacher's round length (so the teacher acts in the environment exactly as on the simulator), then
the agent defaults of the id's interface (:func:`agent_env_defaults`), then the user's overrides. On the
``-v0`` ids the defaults widen the window to 32 slots (on the ``default`` preset more jobs can be active at
once than a 16-slot window holds, and a teacher's decision about a job outside the window cannot be
expressed; ``docs/agents.md``) and use the ``window-levels`` observation (each job's speed and deadline
slack per GPU type and count level, what a deadline-aware teacher compares). On the ``-v1`` ids (the
recipes' default), whose interface is built for learning, they keep its 32-slot window and its
``decisions="on-change"`` cadence: the teacher then acts at the agent's cadence rather than at every epoch,
with far fewer agent steps an episode and a somewhat lower DSR than at every epoch
(``docs/environment.md``).

**Checkpoints.** A run folder holds ``model.pt``, the policy's weights (tensors only, read back with
``torch.load(..., weights_only=True)``), and ``agent.json``: the environment id and overrides, the teacher's
name, the recipe and its arguments, the measured figures, and under ``"model"`` the network those weights
fit (policy class, ``policy_kwargs``, observation and action spaces; :mod:`agents.weights`).
:func:`load_agent` rebuilds the ``PPO`` or ``MaskablePPO`` model from them without unpickling anything (a
cloned policy is saved for the algorithm it will be fine-tuned with). A Stable-Baselines3 ``.zip`` archive
(what earlier versions wrote as ``model.zip``, or any other SB3 model) is unpickled on loading, which runs
whatever code it carries: :func:`load_agent` loads one only with ``trust_pickle=True`` (``--trust-pickle``),
and ``python -m agents.convert RUN --trust-pickle`` converts it once (``docs/security.md``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np
import torch as th

from agents.args import AgentError, parse_seeds, parse_teacher
from agents.weights import PICKLE_RISK, is_pickle_archive, load_weights, model_spec, rebuild_model, save_weights
from hetgym.atomic import atomic_write as _atomic_write


@runtime_checkable
class SimulatedEnv(Protocol):
    """What the agents read off a hetgym environment (``env.unwrapped``) beyond Gymnasium's API: its
    configuration, the cluster and workload of the episode, and the episode's result so far."""

    config: Any
    cluster: Any
    jobs: Any

    def result(self) -> Any: ...


def simulated(env: gym.Env[Any, Any]) -> SimulatedEnv:
    """``env.unwrapped`` as a :class:`SimulatedEnv`; another environment raises an :class:`AgentError`."""
    base = env.unwrapped
    if not isinstance(base, SimulatedEnv):
        raise AgentError(f"{type(base).__name__} is not a hetgym environment (it has no config, cluster or result)")
    return base


def num_actions(env: gym.Env[Any, Any]) -> int:
    """The number of actions of ``env``'s ``Discrete`` action space; another space raises an :class:`AgentError`."""
    space = env.action_space
    if not isinstance(space, gym.spaces.Discrete):
        raise AgentError(f"{env.spec.id if env.spec else env}: one Discrete action expected, not {space}")
    return int(space.n)


#: Environment overrides every recipe starts from on a ``-v0`` id (the user's ``env`` overrides win).
AGENT_ENV_DEFAULTS: dict[str, Any] = {"queue_slots": 32, "observation": "window-levels"}
#: The same on the ``-v1`` ids (``interface="v1"``): its window and cadence win over the teacher's physics.
AGENT_ENV_DEFAULTS_V1: dict[str, Any] = {"queue_slots": 32, "decisions": "on-change"}


def agent_env_defaults(env_id: str) -> dict[str, Any]:
    """The recipe defaults for ``env_id``: :data:`AGENT_ENV_DEFAULTS_V1` for ids of the ``v1`` interface."""
    import gymnasium

    import hetgym  # noqa: F401  (registers the ids)

    spec = gymnasium.spec(env_id) if env_id in gymnasium.registry else None
    v1 = spec is not None and (spec.kwargs or {}).get("interface") == "v1"
    return dict(AGENT_ENV_DEFAULTS_V1 if v1 else AGENT_ENV_DEFAULTS)


#: Algorithm names and their Stable-Baselines3 classes (``module:Class``).
ALGORITHMS: dict[str, str] = {
    "ppo": "stable_baselines3:PPO",
    "maskable-ppo": "sb3_contrib:MaskablePPO",
}
#: File names inside a run folder: the weights, the description, and the SB3 archive earlier versions wrote.
MODEL_FILE = "model.pt"
META_FILE = "agent.json"
PICKLE_MODEL_FILE = "model.zip"


def agent_env_kwargs(
    teacher: str | None, overrides: Mapping[str, Any] | None = None, env_id: str = "HetCluster-v1"
) -> dict[str, Any]:
    """``gym.make`` overrides for an agent taught by ``teacher`` (see the module docstring).

    Args:
        teacher: A registered policy name, possibly with knobs (``dancer:memory=observed``, see
            :func:`~agents.args.parse_teacher`), whose round length the environment takes (a teacher, or
            the reference of a PPO run from scratch), or ``None``.
        overrides: The user's overrides (``sim`` is merged with the teacher's, the rest replace).
        env_id: The registered id the agent trains in (its interface chooses the defaults).
    """
    from hetgym.experts import expert_env_kwargs

    out: dict[str, Any] = {}
    if teacher:
        name, knobs = parse_teacher(teacher)
        out = dict(expert_env_kwargs(name, **knobs))
    out.update(agent_env_defaults(env_id))
    for key, value in dict(overrides or {}).items():
        if key in ("sim", "workload") and isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return _plain(out)


def make_env(env_id: str, env_kwargs: Mapping[str, Any], *, teacher: str | None = None) -> gym.Env[Any, Any]:
    """``gym.make(env_id, **env_kwargs)``, wrapped in an ``ExpertLabelWrapper`` when ``teacher`` is given.

    ``teacher`` is a policy name, possibly with knobs (``dancer:memory=observed``).
    """
    import hetgym  # noqa: F401  (registers the ids)

    env = gym.make(env_id, **dict(env_kwargs))
    if teacher:
        from hetgym.experts import ExpertLabelWrapper

        name, knobs = parse_teacher(teacher)
        return ExpertLabelWrapper(env, name, **knobs)
    return env


def env_factory(env_id: str, env_kwargs: Mapping[str, Any]) -> Callable[[], gym.Env[Any, Any]]:
    """A picklable-enough factory for SB3's vector envs."""
    kwargs = dict(env_kwargs)

    def _make() -> gym.Env[Any, Any]:
        return make_env(env_id, kwargs)

    return _make


def seed_everything(seed: int, torch_threads: int = 1) -> None:
    """The seeding block of every recipe: Python, numpy and torch, one torch thread by default.

    One thread keeps runs reproducible bit for bit and avoids oversubscribing a small machine; the
    networks are small enough that more threads add little.
    """
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 - SB3 draws some of its randomness from numpy's global generator
    th.manual_seed(seed)
    th.set_num_threads(max(1, int(torch_threads)))


def run_name(env_id: str, recipe: str, teacher: str | None, seed: int) -> str:
    """cleanrl-style run name: ``<env>__<recipe>[-<teacher>]__<seed>__<unix time>``.

    A teacher's knobs join its name with dashes (``dagger-dancer-memory-observed``).
    """
    who = f"{recipe}-{re.sub(r'[^A-Za-z0-9._]+', '-', teacher)}" if teacher else recipe
    return f"{env_id.replace(':', '-')}__{who}__{seed}__{int(time.time())}"


def _plain(value: Any) -> Any:
    """JSON-friendly copy (tuples become lists, numpy scalars Python numbers)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    return value


def atomic_write(path: Path, write: Callable[[Path], Any]) -> Path:
    """:func:`hetgym.atomic.atomic_write`, the temporary file keeping ``path``'s suffix (SB3, numpy and
    matplotlib infer the format from it or append it)."""
    return _atomic_write(path, write, keep_suffix=True)


@dataclass
class AgentMeta:
    """What ``agent.json`` holds beside a model's weights.

    Attributes:
        env_id: The registered environment id.
        env_kwargs: The ``gym.make`` overrides (they rebuild the exact environment).
        teacher: The expert policy the agent learned from by imitation (for a fine-tuning run, its clone's;
            ``None`` for RL from scratch).
        recipe: ``bc``, ``dagger``, ``ppo`` or ``maskable-ppo``.
        algo: The algorithm the model is rebuilt as (``ppo`` or ``maskable-ppo``).
        arch: Policy architecture as asked for (``slot``, ``slot-flat``, ``set`` or ``mlp``; ``slot`` is the
            ``set`` network under ``codec="jobwise"``).
        seed: The run's seed.
        args: The recipe's arguments.
        results: Figures measured during and after training (agreement, evaluation, ...); ``stage`` says how
            far the run got when the files were written: ``checkpoint`` (training under way), ``trained``
            (training done, the final evaluation not yet: written before it, so an interrupted evaluation
            leaves a usable agent) or ``evaluated``.
        parent: The checkpoint a fine-tuning run started from.
        reference: The expert the agent is measured against (the DSR gap): the teacher for BC and DAgger,
            the ``reference`` policy for PPO (from scratch, its round length also sets the environment's);
            ``None`` in files written before it was recorded.
        model: The network the weights file fits (:func:`agents.weights.model_spec`; set by
            :func:`save_agent`); ``None`` in files written beside an SB3 ``model.zip``.
    """

    env_id: str
    env_kwargs: dict[str, Any]
    teacher: str | None
    recipe: str
    algo: str
    arch: str
    seed: int
    args: dict[str, Any] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    parent: str | None = None
    reference: str | None = None
    model: dict[str, Any] | None = None

    def to_json(self) -> str:
        return json.dumps(_plain(dataclasses.asdict(self)), indent=2, default=str)

    @classmethod
    def from_json(cls, text: str, source: str = "agent.json") -> AgentMeta:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise AgentError(f"{source} is not valid JSON ({exc}); re-save the model with its recipe") from exc
        names = {f.name for f in dataclasses.fields(cls)}
        missing = [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING and f.name not in data]
        if missing:
            raise AgentError(f"{source} lacks {missing}; it was not written by an agents recipe")
        return cls(**{k: v for k, v in data.items() if k in names})


def algorithm_class(algo: str) -> Any:
    """The SB3 algorithm class of an :data:`ALGORITHMS` name."""
    if algo not in ALGORITHMS:
        raise AgentError(f"unknown algorithm {algo!r}; use one of {list(ALGORITHMS)}")
    module, name = ALGORITHMS[algo].split(":")
    return getattr(__import__(module, fromlist=[name]), name)


def save_agent(model: Any, meta: AgentMeta, folder: str | os.PathLike[str], name: str = MODEL_FILE) -> Path:
    """Save ``model``'s policy weights as ``folder/name`` and ``meta`` as ``folder/agent.json``.

    ``meta.model`` is set to the network's description (the safe format, :mod:`agents.weights`); nothing
    is written when the network cannot be described.
    """
    if not name.endswith(".pt"):
        raise AgentError(f"save_agent writes weights (a .pt file), not {name!r}")
    meta.model = model_spec(model)
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    target = out / name
    atomic_write(target, lambda p: save_weights(model, p))
    atomic_write(out / META_FILE, lambda p: p.write_text(meta.to_json()))
    return target


def save_meta(meta: AgentMeta, folder: str | os.PathLike[str]) -> Path:
    """Rewrite ``folder/agent.json`` (e.g. with the figures of an evaluation run after the model was saved)."""
    return atomic_write(Path(folder) / META_FILE, lambda p: p.write_text(meta.to_json()))


def resolve_model_path(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """``(model file, agent.json)`` of a run folder or of a model file with ``agent.json`` beside it.

    A run folder's model is ``model.pt``, or its ``model.zip`` when it holds no ``model.pt`` (an SB3
    archive, which only a trusted load opens).
    """
    p = Path(path)
    if p.is_dir():
        model, meta = p / MODEL_FILE, p / META_FILE
        if not model.is_file() and (p / PICKLE_MODEL_FILE).is_file():
            model = p / PICKLE_MODEL_FILE
    else:
        model, meta = p, p.parent / META_FILE
    if not model.is_file():
        raise AgentError(f"no model at {model}; give a run folder (holding {MODEL_FILE}) or a model file")
    if not meta.is_file():
        raise AgentError(
            f"no {META_FILE} beside {model}; models saved by `hetgym train` keep it in the run folder; for any "
            "other SB3 model give its algorithm and env (hetgym evaluate MODEL.zip --algo ppo --env-id ID --env K=V "
            "--trust-pickle)"
        )
    return model, meta


def refuse_pickle(path: Path) -> AgentError:
    """The error of loading the SB3 archive ``path`` without trusting it."""
    return AgentError(
        f"{path} was not loaded: {PICKLE_RISK}. Load it only if you trust where it came from: --trust-pickle "
        f"(trust_pickle=True in load_agent); or convert it once: python -m agents.convert {path} --trust-pickle "
        "(docs/security.md)"
    )


def set_decoding(model: Any, decoding: str | None) -> None:
    """Give ``model``'s policy the deterministic ``decoding`` (``None``: leave its own).

    The set network (``agents.set_policy``) takes ``argmax`` or ``kind-first``; any other policy decodes
    by its own rule and takes ``argmax`` only (which leaves it as it is).
    """
    if decoding is None:
        return
    policy = model.policy
    if hasattr(policy, "decoding"):
        from agents.set_policy import check_decoding

        try:
            policy.decoding = check_decoding(decoding)
        except ValueError as exc:
            raise AgentError(str(exc)) from exc
        # SB3 rebuilds a saved policy from the model's policy_kwargs: keep the decoding there too.
        if isinstance(getattr(model, "policy_kwargs", None), dict):
            model.policy_kwargs["decoding"] = decoding
    elif decoding != "argmax":
        raise AgentError(
            f"decoding={decoding!r} needs the set network (arch 'set' with codec 'jobwise' or 'jobwise-types'); "
            f"this model's policy is {type(policy).__name__}, which decodes by its own rule"
        )


def load_agent(
    path: str | os.PathLike[str],
    env: Any = None,
    *,
    algo: str | None = None,
    env_id: str | None = None,
    env_kwargs: dict[str, Any] | None = None,
    decoding: str | None = None,
    trust_pickle: bool = False,
) -> tuple[Any, AgentMeta]:
    """Load a saved agent: ``(SB3 model, metadata)``. ``env`` is attached when given.

    A run folder (or a ``.pt`` file beside its ``agent.json``) is rebuilt from its weights and description,
    never unpickled. An SB3 ``.zip`` archive is unpickled, which runs any code the file carries: it loads
    only with ``trust_pickle=True``, else :class:`AgentError` is raised before the file is opened. A
    ``.zip`` without ``agent.json`` beside it (any SB3 archive) loads when ``algo`` and ``env_id`` say
    what it is and where it acts (``env_kwargs``: its ``gym.make`` overrides); its metadata then has
    ``recipe="external"``. ``decoding`` replaces the set network's deterministic decoding
    (:func:`set_decoding`).
    """
    p = Path(path)
    if algo is not None and p.is_file() and not (p.parent / META_FILE).is_file():
        if env_id is None:
            raise AgentError(f"{p} has no {META_FILE} beside it: give the env it acts in with --env-id (and --env)")
        if not trust_pickle:
            raise refuse_pickle(p)
        meta = AgentMeta(env_id, dict(env_kwargs or {}), None, "external", algo, "external", 0)
        model = algorithm_class(algo).load(p, env=env, device="cpu")
    else:
        model_path, meta_path = resolve_model_path(path)
        meta = AgentMeta.from_json(meta_path.read_text(), str(meta_path))
        if is_pickle_archive(model_path):
            if not trust_pickle:
                raise refuse_pickle(model_path)
            model = algorithm_class(meta.algo).load(model_path, env=env, device="cpu")
        elif meta.model is None:
            raise AgentError(
                f"{meta_path} does not describe the network (no 'model' entry) that {model_path.name} fits; "
                "save the agent again with its recipe"
            )
        else:
            model = rebuild_model(algorithm_class(meta.algo), meta.model, load_weights(model_path), env)
    set_decoding(model, decoding)
    return model, meta


__all__ = [
    "AGENT_ENV_DEFAULTS",
    "ALGORITHMS",
    "META_FILE",
    "MODEL_FILE",
    "PICKLE_MODEL_FILE",
    "AgentError",
    "AgentMeta",
    "SimulatedEnv",
    "agent_env_kwargs",
    "algorithm_class",
    "atomic_write",
    "env_factory",
    "load_agent",
    "make_env",
    "num_actions",
    "parse_seeds",
    "refuse_pickle",
    "resolve_model_path",
    "run_name",
    "save_agent",
    "save_meta",
    "seed_everything",
    "set_decoding",
    "simulated",
]
