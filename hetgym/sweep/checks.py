"""Validation helpers of sweep descriptions: the error type, seed parsing and the small type checks.

Every problem in a sweep description raises :class:`SweepConfigError` with a message that names the
key and how to fix it. The helpers here check one value each (a list, an axis, a mapping, positive
numbers, known keys, a dataclass field's type) and are shared by the parser and the grid expansion
(:mod:`hetgym.sweep.spec`).
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from hetgym.seeds import parse_seeds as _parse_seeds
from hetgym.sim.errors import HetgymError, UnknownNameError


class SweepConfigError(HetgymError, ValueError):
    """A sweep description is malformed; the message names the key and how to fix it."""


#: The project's seed parser (:func:`hetgym.seeds.parse_seeds`) raising a sweep's own error type.
parse_seeds = partial(_parse_seeds, error=SweepConfigError)


def check_name(value: Any) -> str:
    """The sweep's ``name`` if it is one plain path component (it names the folder ``results/sweeps/NAME``)."""
    name = str(value)
    if name in (".", "..") or any(c in name for c in "/\\\0") or name != name.strip() or not name:
        raise SweepConfigError(
            f"name: {name!r} is not a plain folder name (it names results/sweeps/NAME, so it may not hold '/', "
            "'\\', be '.' or '..', or start or end with a space); give e.g. 'load-sweep', or set 'out' (--out) "
            "for a folder elsewhere"
        )
    return name


def as_list(value: Any, where: str) -> list[Any]:
    """A list or tuple as a list; anything else fails naming ``where``."""
    if isinstance(value, (list, tuple)):
        return list(value)
    raise SweepConfigError(f"{where}: give a list, not {value!r}")


def as_axis(value: Any, where: str) -> tuple[Any, ...]:
    """A grid axis: a non-empty list of values."""
    values = as_list(value, where)
    if not values:
        raise SweepConfigError(f"{where}: the axis is empty; give at least one value")
    return tuple(values)


def as_mapping(value: Any, where: str) -> Mapping[str, Any]:
    """A mapping (``None`` reads as an empty one)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SweepConfigError(f"{where}: give a mapping key: value, not {value!r}")
    return value


def positive_numbers(value: Any, where: str) -> list[float]:
    """One positive finite number or a list of distinct ones."""
    values = as_axis([value] if isinstance(value, (int, float)) and not isinstance(value, bool) else value, where)
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v > 0 and math.isfinite(v)):
            raise SweepConfigError(f"{where}: {v!r} is not a positive number")
    if len(set(values)) != len(values):
        raise SweepConfigError(f"{where}: {list(values)} repeats a value")
    return list(values)


def check_keys(values: Mapping[str, Any], valid: Sequence[str], kind: str) -> None:
    """Fail on the first key of ``values`` not in ``valid``, naming the nearest valid one."""
    for key in values:
        if key not in valid:
            raise SweepConfigError(str(UnknownNameError(kind, key, valid)))


def check_field(key: str, valid: Sequence[str], kind: str, *, where: str = "", hint: str = "") -> None:
    """Fail when ``key`` is not a known field, naming the nearest one (and ``where`` it was given)."""
    if key not in valid:
        msg = str(UnknownNameError(kind, key, valid, hint))
        raise SweepConfigError(f"{where}: {msg}" if where else msg)


def resolve_path(value: Any, base: Path) -> str:
    """A path given in a sweep file, relative to ``base`` unless absolute (``~`` expanded)."""
    path = Path(str(value)).expanduser()
    return str(path if path.is_absolute() else (base / path))


def check_types(cls: type, values: Mapping[str, Any], where: str) -> None:
    """Reject values whose type does not match the dataclass field's annotation (e.g. ``num_jobs: "50"``)."""
    hints = typing.get_type_hints(cls)
    for key, value in values.items():
        hint = hints.get(key)
        if hint is not None and not _matches(value, hint):
            raise SweepConfigError(f"{where}.{key} = {value!r} ({type(value).__name__}); expected {_hint_name(hint)}")


def _matches(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        return isinstance(value, Mapping)
    return True


def _hint_name(hint: Any) -> str:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(_hint_name(h) for h in typing.get_args(hint))
    if hint is type(None):
        return "null"
    return getattr(hint, "__name__", str(hint))


def load_yaml(text: str, source: str) -> Any:
    """``yaml.safe_load(text)``, refusing a mapping that names a key twice (YAML would keep the last silently).

    Raises:
        SweepConfigError: naming ``source``, the key and its line; or the YAML parser's message.
    """
    import yaml

    class _Loader(yaml.SafeLoader):
        pass

    def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if isinstance(key, typing.Hashable) and key in seen:
                raise SweepConfigError(
                    f"sweep config {source}: line {line}: key {key!r} appears twice in one mapping (first at line "
                    f"{seen[key]}); keep one"
                )
            if isinstance(key, typing.Hashable):
                seen[key] = line
        return loader.construct_mapping(node, deep=deep)

    _Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise SweepConfigError(f"sweep config {source}: not valid YAML: {exc}") from None
