"""One typed registry for every pluggable component, and knobs as frozen, self-validating dataclasses.

Policies, placers, action codecs, observation encoders, rewards and window orders are each a
:class:`Registry`: a name maps to an :class:`Entry` holding the component (a class or a function), the
frozen dataclass of its knobs (or ``None`` when it has none) and its docstring's summary. An
unknown name raises :class:`~hetgym.sim.errors.UnknownNameError` naming the nearest registered ones, so
a typo is easy to fix; registering a name twice for two different objects is refused. An
:class:`Alias` is a second name for an entry with some of its knobs preset (``jobwise-types`` is
``jobwise`` with ``several_types=True``): it resolves to that entry, and :meth:`Registry.knobs_for` adds its
preset knobs, so a variant that differs from another only by knob values need not be a class of its own.

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

    @classmethod
    def given_or_default(cls: type[K], given: Knobs | None, owner: str) -> K:
        """``given``, or the defaults when it is ``None`` (a component's constructor); another class raises
        ``TypeError`` naming ``owner`` (``"the score codec"``)."""
        own = given if given is not None else cls()
        if not isinstance(own, cls):
            raise TypeError(f"{owner}'s knobs are a {cls.__name__}, got {type(own).__name__}")
        return own


@dataclass(frozen=True)
class Alias:
    """A second registry name for an entry, with some of the entry's knobs preset.

    Attributes:
        name: The alias.
        target: The name of the entry it stands for.
        knobs: The preset knob values, as ``(knob, value)`` pairs.
    """

    name: str
    target: str
    knobs: tuple[tuple[str, Any], ...] = ()

    def describe(self) -> str:
        """``alias of 'target' with knob=value, ...`` (what listings show for the alias)."""
        preset = ", ".join(f"{k}={v!r}" for k, v in self.knobs)
        return f"alias of {self.target!r}" + (f" with {preset}" if preset else "")


def summary_line(doc: str | None) -> str:
    """A docstring's summary on one line: its first paragraph, joined.

    The summary is the first line by convention, but a long one (a paper's full title and venue) wraps onto
    the next lines; the first line alone would end mid-title in a listing.
    """
    paragraph = (doc or "").strip().split("\n\n", 1)[0]
    return " ".join(paragraph.split())


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One registered component.

    Attributes:
        name: The registry name.
        obj: The component (a class or a function).
        knobs: The frozen dataclass of its knobs, or ``None``.
        doc: Its docstring's summary (:func:`summary_line`).
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
        self._aliases: dict[str, Alias] = {}
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
        if key in self._aliases and not replace:
            raise HetgymError(f"{self.kind} name {key!r} is already an {self._aliases[key].describe()}")
        self._aliases.pop(key, None)
        existing = self._entries.get(key)
        if existing is not None and not replace and _identity(existing.obj) != _identity(obj):
            raise HetgymError(f"{self.kind} name {key!r} is already registered by {_identity(existing.obj)}")
        self._entries[key] = Entry(key, obj, knobs, summary_line(getattr(obj, "__doc__", None)))
        return obj

    def decorator(self, name: str | None = None, *, knobs: type[Knobs] | None = None) -> Callable[[T], T]:
        """``@registry.decorator("name")``: register the decorated class or function (default: its ``name``)."""

        def deco(obj: T) -> T:
            key = name or getattr(obj, "name", None) or getattr(obj, "__name__", None)
            if not key:
                raise HetgymError(f"give the {self.kind} a name")
            return self.register(str(key), obj, knobs=knobs)

        return deco

    def alias(self, name: str, target: str, **knobs: Any) -> None:
        """Register ``name`` as a second name for ``target`` with ``knobs`` preset (the same alias again is a
        no-op; a name already in use is refused). ``target`` may be registered later (a lazy module)."""
        key = str(name).lower()
        made = Alias(key, str(target).lower(), tuple(knobs.items()))
        if key in self._entries:
            raise HetgymError(f"{self.kind} name {key!r} is already registered by {_identity(self._entries[key].obj)}")
        existing = self._aliases.get(key)
        if existing is not None and existing != made:
            raise HetgymError(f"{self.kind} name {key!r} is already an {existing.describe()}")
        self._aliases[key] = made

    def aliases(self) -> dict[str, Alias]:
        """The registered aliases by name, sorted."""
        self._load()
        return {k: self._aliases[k] for k in sorted(self._aliases)}

    def resolve(self, name: str) -> tuple[Entry[T], dict[str, Any]]:
        """The entry ``name`` stands for and the knobs it presets (none unless ``name`` is an alias)."""
        self._load()
        key = str(name).lower()
        found = self._entries.get(key)
        if found is not None:
            return found, {}
        alias = self._aliases.get(key)
        if alias is None:
            raise UnknownNameError(self.kind, name, self.names(), self.hint)
        target = self._entries.get(alias.target)
        if target is None:
            raise HetgymError(f"{self.kind} {key!r} is an {alias.describe()}, which is not registered")
        return target, dict(alias.knobs)

    def entry(self, name: str) -> Entry[T]:
        """The entry registered as ``name``, or the one the alias ``name`` stands for (unknown names raise,
        naming the nearest)."""
        return self.resolve(name)[0]

    def knobs_for(self, name: str, given: Knobs | Mapping[str, Any] | None = None) -> Knobs | None:
        """The knobs ``name`` is built with: ``given`` (an instance or a mapping of knob values; ``None``: the
        defaults) with an alias's preset knobs added; ``None`` when the entry has no knobs.

        A given value that contradicts the alias's preset raises :class:`KnobError` (use the target's name).
        """
        entry, preset = self.resolve(name)
        cls = entry.knobs
        if cls is None:
            if given:
                raise KnobError(f"the {self.kind} {name!r} has no knobs")
            return None
        if isinstance(given, cls) and not preset:
            return given
        values = given.as_dict() if isinstance(given, Knobs) else dict(given or {})
        for knob_name, value in preset.items():
            if knob_name in values and values[knob_name] != value:
                raise KnobError(
                    f"{self.kind} {str(name).lower()!r} presets {knob_name}={value!r}, not {values[knob_name]!r}; "
                    f"use {entry.name!r} to set it"
                )
        return cls.from_kwargs(f"{self.kind} {entry.name!r}", **{**values, **preset})

    def get(self, name: str) -> T:
        """The component registered as ``name``."""
        return self.entry(name).obj

    def names(self) -> tuple[str, ...]:
        """Registered names, aliases included, sorted."""
        self._load()
        return tuple(sorted({*self._entries, *self._aliases}))

    def describe(self) -> dict[str, str]:
        """Registered names with their docstring's summary (an alias: what it stands for)."""
        return {k: self._entries[k].doc if k in self._entries else self._aliases[k].describe() for k in self.names()}

    def unregister(self, name: str) -> None:
        """Forget ``name`` and the aliases standing for it (for tests and interactive sessions)."""
        self._load()
        key = str(name).lower()
        self._entries.pop(key, None)
        self._aliases.pop(key, None)
        for alias in [a.name for a in self._aliases.values() if a.target == key]:
            del self._aliases[alias]

    def __getitem__(self, name: str) -> T:
        """``registry[name]``, the same as :meth:`get` (an unknown name raises a ``KeyError`` subclass)."""
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        self._load()
        return isinstance(name, str) and (name.lower() in self._entries or name.lower() in self._aliases)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {list(self.names())})"


def _identity(obj: object) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


__all__ = ["Alias", "Entry", "KnobError", "Knobs", "Registry", "check_knob", "knob"]
