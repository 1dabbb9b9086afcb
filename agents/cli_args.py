"""Command-line options from the recipes' argument dataclasses (cleanrl/tyro style).

Each recipe's arguments are a dataclass whose fields carry a docstring (the string literal after the
field, as cleanrl writes them); :func:`field_help` reads those docstrings, and :func:`add_dataclass_options`
turns the union of several dataclasses' fields into ``--kebab-case`` options that default to "not
given", so :func:`dataclass_from_options` can build the chosen recipe's arguments and refuse an option
that recipe does not take.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import itertools
import textwrap
import types
import typing
from collections.abc import Sequence
from typing import Any

from agents.args import AgentError

#: Fields set by dedicated options of ``hetgym train`` (``--env KEY=VALUE``, ``--teacher``, ``--reference``,
#: ``--algo`` / ``--save-as``), not generated.
SPECIAL_FIELDS = frozenset({"env", "teacher", "reference", "algo"})


def field_help(cls: type) -> dict[str, str]:
    """The docstring of each field of a dataclass (the string literal that follows its definition)."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):  # pragma: no cover - source unavailable (frozen apps)
            continue
        node = tree.body[0]
        if not isinstance(node, ast.ClassDef):  # pragma: no cover - a dataclass's source is its class statement
            continue
        body = node.body
        for node, nxt in itertools.pairwise(body):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
            ):
                out[node.target.id] = " ".join(nxt.value.value.replace("``", "").split())
    return out


def _base_type(annotation: Any) -> tuple[type, bool]:
    """``(scalar type, optional)`` of a field annotation such as ``int``, ``str | None``."""
    if isinstance(annotation, str):
        annotation = eval(annotation, {"Any": Any})  # annotations are postponed strings under __future__
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return (args[0] if len(args) == 1 else str), True
    return annotation, False


def add_dataclass_options(parser: argparse.ArgumentParser, classes: Sequence[type], title: str) -> None:
    """Add one option per field of ``classes`` (union; the first class's help wins)."""
    group = parser.add_argument_group(title)
    seen: set[str] = set()
    for cls in classes:
        helps = field_help(cls)
        for f in dataclasses.fields(cls):
            if f.name in seen or f.name in SPECIAL_FIELDS:
                continue
            seen.add(f.name)
            typ, optional = _base_type(f.type)
            users = [c for c in classes if f.name in _names(c)]
            names = [_choice(c) for c in users]
            scope = "" if len(users) == len(classes) else f" [{', '.join(names)}]"
            help_text = f"{helps.get(f.name, '')} ({_defaults(f.name, users)}){scope}".replace("%", "%%")
            flag = "--" + f.name.replace("_", "-")
            if typ is bool:
                group.add_argument(
                    flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=help_text
                )
            else:
                convert = typ if typ in (int, float, str) else str
                if optional:
                    convert = _optional(convert)
                group.add_argument(
                    flag, dest=f.name, type=convert, default=None, metavar=f.name.upper(), help=help_text
                )


def _choice(cls: type) -> str:
    """The ``--algo`` choice whose arguments ``cls`` holds (its name when it names none)."""
    return str(getattr(cls, "choice", "") or cls.__name__)


def _default(cls: type, name: str) -> Any:
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else None


def _defaults(name: str, users: Sequence[type]) -> str:
    """``default: X``, or, where the recipes differ, ``default: X; events-ppo, kickstart: Y``."""
    first = _default(users[0], name)
    others: dict[str, list[str]] = {}
    for cls in users[1:]:
        value = _default(cls, name)
        if value != first:
            others.setdefault(str(value), []).append(_choice(cls))
    return "; ".join([f"default: {first}", *(f"{', '.join(who)}: {value}" for value, who in others.items())])


def _optional(convert: Any) -> Any:
    def parse(text: str) -> Any:
        return None if text.lower() in ("none", "null", "") else convert(text)

    parse.__name__ = getattr(convert, "__name__", "value")
    return parse


def _names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def dataclass_from_options(cls: type, namespace: argparse.Namespace, all_classes: Sequence[type], **fixed: Any) -> Any:
    """Build ``cls`` from the options given; an option of another recipe raises an :class:`AgentError`."""
    mine = _names(cls)
    values: dict[str, Any] = {}
    for other in all_classes:
        for name in _names(other):
            if name in SPECIAL_FIELDS:
                continue
            value = getattr(namespace, name, None)
            if value is None:
                continue
            if name not in mine:
                raise AgentError(f"--{name.replace('_', '-')} does not apply to this recipe ({cls.__name__})")
            values[name] = value
    values.update({k: v for k, v in fixed.items() if k in mine})
    return cls(**values)


__all__ = ["add_dataclass_options", "dataclass_from_options", "field_help"]
