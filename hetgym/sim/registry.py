"""One typed registry for every pluggable component, and knobs as frozen, self-validating dataclasses.

Policies, placers, action codecs, observation encoders, rewards and window orders are each a
:class:`Registry`: a name maps to an :class:`Entry` holding the component (a class or a function), the
frozen dataclass of its knobs (or ``None`` when it has none) and the first line of its docstring. An
unknown name raises :class:`~hetgym.sim.errors.UnknownNameError` naming the nearest registered ones, so
a typo is easy to fix; registering a name twice for two different objects is refused.

Knobs are declared once, as fields of a frozen dataclass deriving from :class:`Knobs`, with their
constraints in :func:`knob`; construction validates every field and names the knob, the value and the
fix (:class:`KnobError`), and :meth:`Knobs.from_kwargs` rejects an unknown knob naming the nearest
valid one. Pure Python: no gymnasium, no torch.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import numbers
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from hetgym.sim.errors import HetgymError, UnknownNameError

T = TypeVar("T")
K = TypeVar("K", bound="Knobs")


class KnobError(HetgymError, ValueError):
    """A knob has a bad value (the message names the knob, the value and what is allowed)."""


def knob(
    default: Any = dataclasses.MISSING,
    *,
    choices: tuple[Any, ...] | None = None,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    integer: bool = False,
    optional: bool = False,
    doc: str = "",
) -> Any:
    """A dataclass field with constraints that :class:`Knobs` checks on construction.

    Args:
        default: The default value.
        choices: The allowed values (strings, usually).
        low, high: Bounds of a number (inclusive unless ``low_open`` / ``high_open``); a bounded number
            must be finite.
        integer: The value must be an integer (``bool`` is refused).
        optional: ``None`` is allowed as well.
        doc: One line describing the knob (shown by ``hetgym policies --knobs``).
    """
    meta = {
        "choices": choices,
        "low": low,
        "high": high,
        "low_open": low_open,
        "high_open": high_open,
        "integer": integer,
        "optional": optional,
        "doc": doc,
    }
    if default is dataclasses.MISSING:
        return dataclasses.field(metadata=meta)
    if isinstance(default, list | dict | set):
        raise TypeError("knob defaults must be immutable (use a tuple)")
    return dataclasses.field(default=default, metadata=meta)


def check_knob(owner: str, name: str, value: Any, meta: Mapping[str, Any]) -> None:
    """Raise :class:`KnobError` when ``value`` breaks the constraints ``meta`` (see :func:`knob`)."""
    if value is None and meta.get("optional"):
        return
    where = f"{owner}: knob {name}={value!r}"
    choices = meta.get("choices")
    if choices is not None:
        if value not in choices:
            raise KnobError(f"{where} is not one of {list(choices)}")
        return
    low, high, integer = meta.get("low"), meta.get("high"), meta.get("integer")
    # numbers.Real also admits numpy scalars (np.int64 is no int), which sweeps and arrays hand over.
    if integer and (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or math.floor(value) != value
    ):
        raise KnobError(f"{where}: give an integer")
    if low is None and high is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise KnobError(f"{where}: give a finite number")
    if low is not None and (value <= low if meta.get("low_open") else value < low):
        raise KnobError(f"{where}: it must be {'>' if meta.get('low_open') else '>='} {low}")
    if high is not None and (value >= high if meta.get("high_open") else value > high):
        raise KnobError(f"{where}: it must be {'<' if meta.get('high_open') else '<='} {high}")


@dataclass(frozen=True)
class Knobs:
    """Base of the frozen knob dataclasses: every field is checked against its :func:`knob` constraints."""

    def __post_init__(self) -> None:
        owner = type(self).__name__
        for f in dataclasses.fields(self):
            if f.metadata:
                check_knob(owner, f.name, getattr(self, f.name), f.metadata)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The knob names, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.init)

    @classmethod
    def from_kwargs(cls: type[K], what: str = "", **kwargs: Any) -> K:
        """Build from keyword arguments; an unknown knob raises naming the nearest valid one."""
        names = cls.names()
        for key in kwargs:
            if key not in names:
                raise UnknownNameError(f"knob of {what or cls.__name__}", key, names)
        return cls(**kwargs)

    @classmethod
    def of(cls: type[K], values: Mapping[str, Any]) -> K:
        """Build from the knob-named entries of ``values`` (a constructor's ``locals()``); others are ignored."""
        return cls(**{name: values[name] for name in cls.names()})

    def as_dict(self) -> dict[str, Any]:
        """The knob values by name."""
        return {name: getattr(self, name) for name in self.names()}


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One registered component.

    Attributes:
        name: The registry name.
        obj: The component (a class or a function).
        knobs: The frozen dataclass of its knobs, or ``None``.
        doc: The first line of its docstring.
    """

    name: str
    obj: T
    knobs: type[Knobs] | None = None
    doc: str = ""


class Registry(Generic[T]):
    """Components of one kind by name (see the module docstring).

    Args:
        kind: What is registered, for messages (``"action codec"``).
        hint: Appended to unknown-name errors (where to list the names, how to add one).
        modules: Modules whose import registers entries here, imported on the first look-up (so that a
            base class's module need not import the modules of the subclasses it registers).
    """

    #: Every registry made, by kind (for tools that list what can be plugged in).
    ALL: ClassVar[dict[str, Registry[Any]]] = {}

    def __init__(self, kind: str, hint: str = "", *, modules: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self.hint = hint
        self._entries: dict[str, Entry[T]] = {}
        self._modules = modules
        Registry.ALL[kind] = self

    def _load(self) -> None:
        """Import the modules that register entries here (once, before the first look-up)."""
        modules, self._modules = self._modules, ()
        for module in modules:
            importlib.import_module(module)

    def register(self, name: str, obj: T, *, knobs: type[Knobs] | None = None, replace: bool = False) -> T:
        """Register ``obj`` under ``name``; the same object again is a no-op, another one is refused."""
        key = str(name).lower()
        existing = self._entries.get(key)
        if existing is not None and not replace and _identity(existing.obj) != _identity(obj):
            raise HetgymError(f"{self.kind} name {key!r} is already registered by {_identity(existing.obj)}")
        doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
        self._entries[key] = Entry(key, obj, knobs, doc[0] if doc else "")
        return obj

    def decorator(self, name: str | None = None, *, knobs: type[Knobs] | None = None) -> Callable[[T], T]:
        """``@registry.decorator("name")``: register the decorated class or function (default: its ``name``)."""

        def deco(obj: T) -> T:
            key = name or getattr(obj, "name", None) or getattr(obj, "__name__", None)
            if not key:
                raise HetgymError(f"give the {self.kind} a name")
            return self.register(str(key), obj, knobs=knobs)

        return deco

    def entry(self, name: str) -> Entry[T]:
        """The entry registered as ``name`` (unknown names raise, naming the nearest)."""
        self._load()
        key = str(name).lower()
        found = self._entries.get(key)
        if found is None:
            raise UnknownNameError(self.kind, name, self._entries, self.hint)
        return found

    def get(self, name: str) -> T:
        """The component registered as ``name``."""
        return self.entry(name).obj

    def names(self) -> tuple[str, ...]:
        """Registered names, sorted."""
        self._load()
        return tuple(sorted(self._entries))

    def describe(self) -> dict[str, str]:
        """Registered names with the first line of their docstring."""
        return {k: self._entries[k].doc for k in self.names()}

    def unregister(self, name: str) -> None:
        """Forget ``name`` (for tests and interactive sessions)."""
        self._load()
        self._entries.pop(str(name).lower(), None)

    def __getitem__(self, name: str) -> T:
        """``registry[name]``, the same as :meth:`get` (an unknown name raises a ``KeyError`` subclass)."""
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        self._load()
        return isinstance(name, str) and name.lower() in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self._load()
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {list(self.names())})"


def _identity(obj: object) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


__all__ = ["Entry", "KnobError", "Knobs", "Registry", "check_knob", "knob"]
