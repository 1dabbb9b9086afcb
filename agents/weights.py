"""The safe agent format: a policy's weights as tensors and its network described in JSON, never a pickle.

A Stable-Baselines3 ``model.zip`` keeps the algorithm's attributes as cloudpickle, and unpickling runs
whatever code the file names: loading a zip from elsewhere is running a program from elsewhere. This
module saves what ``predict`` needs in a form that cannot carry code:

* **the weights**, ``torch.save`` of a plain ``dict`` of tensors (the policy's ``state_dict``, no optimiser
  state), read back with ``torch.load(..., weights_only=True)``, which refuses any other object;
* **the network**, a JSON-expressible mapping (:func:`model_spec`, stored under ``"model"`` in the run's
  ``agent.json``): the policy class as ``module:Class``, its ``policy_kwargs`` (classes such as an
  activation function by name, ``{"class": "torch.nn.modules.activation:ReLU"}``), and the observation and
  action spaces (:func:`space_to_json`), and the environment steps it was trained for.

:func:`rebuild_model` makes a fresh algorithm object (``PPO`` or ``MaskablePPO``) from the two, so that
``predict``, ``policy`` and fine-tuning work as on a loaded archive. Class names are resolved only within
:data:`ALLOWED_MODULES` and must name a class of the expected kind, so a crafted JSON can neither import an
arbitrary module nor call an arbitrary function.
"""

from __future__ import annotations

import importlib
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces

from agents.args import AgentError

#: The format's name and version, stored with every description.
FORMAT = "hetgym-agent/1"
#: Module prefixes a class named in a description may come from.
ALLOWED_MODULES: tuple[str, ...] = ("stable_baselines3.", "sb3_contrib.", "agents.", "torch.nn.", "torch.optim.")
#: What a user is told when a file would have to be unpickled.
PICKLE_RISK = "an SB3 .zip archive keeps its data as pickle, and unpickling runs any code the file carries"


# ------------------------------------------------------------------------------------------------
# Spaces


def _number(x: float) -> float | str:
    return float(x) if math.isfinite(x) else str(float(x))


def _numbers(values: np.ndarray) -> Any:
    """A Box bound: one number when every element is the same, else the flat list (non-finite as text)."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    if flat.size and np.all(flat == flat[0]):
        return _number(float(flat[0]))
    return [_number(float(v)) for v in flat]


def space_to_json(space: spaces.Space[Any]) -> dict[str, Any]:
    """A JSON description of a ``Box``, ``Discrete``, ``MultiDiscrete``, ``MultiBinary``, ``Dict`` or ``Tuple``."""
    if isinstance(space, spaces.Box):
        return {
            "type": "Box",
            "shape": list(space.shape),
            "dtype": str(space.dtype),
            "low": _numbers(space.low),
            "high": _numbers(space.high),
        }
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, spaces.MultiDiscrete):
        return {"type": "MultiDiscrete", "nvec": np.asarray(space.nvec).tolist(), "dtype": str(space.dtype)}
    if isinstance(space, spaces.MultiBinary):
        return {"type": "MultiBinary", "n": np.asarray(space.n).tolist()}
    if isinstance(space, spaces.Dict):
        return {"type": "Dict", "spaces": {str(k): space_to_json(v) for k, v in space.spaces.items()}}
    if isinstance(space, spaces.Tuple):
        return {"type": "Tuple", "spaces": [space_to_json(v) for v in space.spaces]}
    raise AgentError(f"cannot describe the space {space} in the safe agent format")


def _bound(value: Any, shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    if isinstance(value, list):
        array = np.array([float(v) for v in value], dtype=np.float64).reshape(shape)
    else:
        array = np.full(shape, float(value), dtype=np.float64)
    return array.astype(dtype)


def space_from_json(data: Mapping[str, Any]) -> spaces.Space[Any]:
    """The space :func:`space_to_json` described."""
    try:
        kind = data["type"]
        if kind == "Box":
            shape = tuple(int(s) for s in data["shape"])
            dtype = np.dtype(data["dtype"])
            return spaces.Box(_bound(data["low"], shape, dtype), _bound(data["high"], shape, dtype), shape, dtype)
        if kind == "Discrete":
            return spaces.Discrete(int(data["n"]), start=int(data.get("start", 0)))
        if kind == "MultiDiscrete":
            return spaces.MultiDiscrete(np.array(data["nvec"], dtype=np.int64), dtype=np.dtype(data["dtype"]))
        if kind == "MultiBinary":
            return spaces.MultiBinary(data["n"])
        if kind == "Dict":
            return spaces.Dict({str(k): space_from_json(v) for k, v in data["spaces"].items()})
        if kind == "Tuple":
            return spaces.Tuple([space_from_json(v) for v in data["spaces"]])
    except (KeyError, TypeError, ValueError) as exc:
        raise AgentError(f"a space in the agent's description is malformed ({exc!r})") from None
    raise AgentError(f"unknown space type {kind!r} in the agent's description")


# ------------------------------------------------------------------------------------------------
# Classes and policy_kwargs


def class_name(cls: type) -> str:
    """``module:QualName`` of a class."""
    return f"{cls.__module__}:{cls.__qualname__}"


def resolve_class(name: str, base: type | None = None) -> type:
    """The class ``module:QualName`` names, from :data:`ALLOWED_MODULES` only (a subclass of ``base``)."""
    module, _, qualname = str(name).partition(":")
    if not qualname or not (module + ".").startswith(ALLOWED_MODULES):
        allowed = ", ".join(p.rstrip(".") for p in ALLOWED_MODULES)
        raise AgentError(f"the agent's description names {name!r}; only classes of {allowed} are loaded from it")
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise AgentError(f"the agent's description names {name!r}, which does not exist here ({exc})") from None
    if not isinstance(obj, type) or (base is not None and not issubclass(obj, base)):
        raise AgentError(f"the agent's description names {name!r}, which is not a {base.__name__ if base else 'class'}")
    return obj


def _encode(value: Any, where: str) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise AgentError(f"policy_kwargs {where} = {value} cannot be saved in the safe agent format")
        return value
    if isinstance(value, np.generic):
        return _encode(value.item(), where)
    if isinstance(value, Mapping):
        return {str(k): _encode(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, type):
        return {"class": class_name(value)}
    raise AgentError(f"policy_kwargs {where} = {value!r} cannot be saved in the safe agent format")


def _decode(value: Any) -> Any:
    if isinstance(value, Mapping):
        if set(value) == {"class"}:
            return resolve_class(value["class"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


# ------------------------------------------------------------------------------------------------
# Saving and rebuilding


def model_spec(model: Any) -> dict[str, Any]:
    """The JSON-expressible description of ``model``'s network (raises :class:`AgentError` if there is none)."""
    return {
        "format": FORMAT,
        "policy_class": class_name(type(model.policy)),
        "policy_kwargs": _encode(dict(getattr(model, "policy_kwargs", None) or {}), "policy_kwargs"),
        "observation_space": space_to_json(model.observation_space),
        "action_space": space_to_json(model.action_space),
        "num_timesteps": int(getattr(model, "num_timesteps", 0)),
    }


def save_weights(model: Any, path: str | os.PathLike[str]) -> None:
    """``torch.save`` of ``model.policy``'s ``state_dict`` as a plain dict of tensors (no optimiser state)."""
    state = {str(k): v.detach().cpu().clone() for k, v in model.policy.state_dict().items()}
    th.save(state, path)


def load_weights(path: str | os.PathLike[str]) -> dict[str, th.Tensor]:
    """The tensors :func:`save_weights` wrote; anything else in the file is refused, never unpickled."""
    try:
        state = th.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # weights_only refuses any object but tensors and plain containers
        named = re.search(r"Unsupported global: GLOBAL (\S+)", str(exc))
        text = str(exc).strip()
        why = f"it names {named.group(1)}" if named else f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
        raise AgentError(
            f"{path} is not a file of weights: it holds something other than tensors, and nothing else is loaded "
            f"from it ({why})"
        ) from None
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, th.Tensor) for k, v in state.items()
    ):
        raise AgentError(f"{path} does not hold a dict of named tensors")
    return state


def rebuild_model(algo_class: type, spec: Mapping[str, Any], weights: Mapping[str, th.Tensor], env: Any = None) -> Any:
    """A fresh ``algo_class`` model with ``spec``'s network holding ``weights`` (``env`` attached when given).

    The algorithm's own hyperparameters are SB3's defaults: what is restored is the policy (for ``predict``
    and as the start of fine-tuning), not a training run in progress.
    """
    from stable_baselines3.common.policies import BasePolicy

    if not isinstance(spec, Mapping) or spec.get("format") != FORMAT:
        got = spec.get("format") if isinstance(spec, Mapping) else type(spec).__name__
        raise AgentError(f"the agent's description has format {got!r}, not {FORMAT!r}")
    try:
        policy_class = resolve_class(spec["policy_class"], BasePolicy)
        policy_kwargs = _decode(spec.get("policy_kwargs") or {})
        observation_space = space_from_json(spec["observation_space"])
        action_space = space_from_json(spec["action_space"])
    except KeyError as exc:
        raise AgentError(f"the agent's description lacks {exc}") from None
    model = algo_class(policy_class, env=None, device="cpu", policy_kwargs=policy_kwargs, _init_setup_model=False)
    model.observation_space, model.action_space, model.n_envs = observation_space, action_space, 1
    try:
        model._setup_model()
        model.policy.load_state_dict(dict(weights), strict=True)
    except (RuntimeError, ValueError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0]
        raise AgentError(f"the weights do not fit the network the agent's description gives: {first}") from None
    model.policy.set_training_mode(False)
    model.num_timesteps = int(spec.get("num_timesteps", 0))
    if env is not None:
        model.set_env(env)
    return model


def is_pickle_archive(path: Path) -> bool:
    """Whether ``path`` is (named as) an SB3 ``.zip`` archive, the format that needs trusting."""
    return path.suffix.lower() == ".zip"


__all__ = [
    "ALLOWED_MODULES",
    "FORMAT",
    "PICKLE_RISK",
    "class_name",
    "is_pickle_archive",
    "load_weights",
    "model_spec",
    "rebuild_model",
    "resolve_class",
    "save_weights",
    "space_from_json",
    "space_to_json",
]
