"""Policies built from their knob dataclass: each knob written once, as a field of that dataclass.

A :class:`KnobPolicy` names its frozen :class:`~hetgym.sim.registry.Knobs` dataclass (``knobs = XKnobs``,
what the policy registry records) and writes nothing else per knob: its constructor takes exactly those
fields as keywords, builds the dataclass once (which validates every knob and names a bad one) and holds
it as :attr:`KnobPolicy.knob_values`; the code reads ``self.knob_values.x``. A variant extends the
dataclass (HadarE's knobs are Hadar's and its own). Every built-in policy of ``baselines`` is one, and a
policy of one's own may be (``docs/writing-a-policy.md``). What ``inspect``, :func:`~hetgym.sim.make_policy`
and ``hetgym policies --knobs`` read of the constructor, the keywords and their defaults, is made from
the fields, and so is the ``Args:`` section of the class docstring (each field's ``doc``).

The instance attribute is ``knob_values``, not ``knobs``: on a policy class ``knobs`` is the dataclass
itself (:attr:`hetgym.sim.policy.Policy.knobs`), as on the action codecs.
"""

from __future__ import annotations

import dataclasses
import inspect
import numbers
import textwrap
from typing import Any, ClassVar, Generic, TypeVar, cast

from hetgym.sim.policy import Policy
from hetgym.sim.registry import Knobs

K = TypeVar("K", bound=Knobs)

#: Width of the generated ``Args:`` lines (the project's line length).
_DOC_WIDTH = 120


class KnobPolicy(Policy, Generic[K]):
    """A policy whose constructor keywords are the fields of its knob dataclass :attr:`knobs`.

    Attributes:
        knob_values: The knobs this instance was built with (an instance of :attr:`knobs`, frozen).
    """

    knob_values: K
    # The knobs are frozen: a fork (copy_state) shares them.
    fork_shared: ClassVar[tuple[str, ...]] = (*Policy.fork_shared, "knob_values")

    def __init__(self, **knob_values: Any) -> None:
        super().__init__()
        knobs = type(self).knobs
        if knobs is None:
            raise TypeError(f"{type(self).__name__} declares no knobs dataclass (set its class attribute 'knobs')")
        # from_kwargs names the nearest valid knob for an unknown one; the dataclass validates every value.
        self.knob_values = cast(K, _normalised(knobs.from_kwargs(type(self).__name__, **knob_values)))
        self._configure()

    def _configure(self) -> None:
        """Hook: set what follows from the knobs (the round length, the placer, whether the policy draws)."""

    def params(self) -> dict[str, Any]:
        """The knob values by name."""
        return self.knob_values.as_dict()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        knobs = cls.__dict__.get("knobs")
        if knobs is None:
            return  # a base that leaves the knobs to its subclasses, or one that inherits them with their init
        if "__init__" in cls.__dict__:
            raise TypeError(f"{cls.__name__}: a KnobPolicy takes its knobs as keywords; derive state in _configure")
        # Made from the knobs once the class exists; setattr, since mypy refuses assigning to a method.
        setattr(cls, "__init__", _init_taking(knobs))  # noqa: B010
        cls.__doc__ = _with_args_section(cls.__doc__ or "", knobs)


def _normalised(values: Knobs) -> Knobs:
    """``values`` with an integer knob as an ``int`` and a knob whose default is a ``float`` as a ``float``.

    A knob may arrive as a numpy scalar or a float holding an integer (a sweep's grid, a YAML file); the
    policy computes with the plain types, as it would with the defaults.
    """
    changed: dict[str, Any] = {}
    for f in dataclasses.fields(values):
        value: Any = getattr(values, f.name)
        is_number = isinstance(value, numbers.Real) and not isinstance(value, bool)  # None is no number either
        if not is_number:
            continue
        if f.metadata.get("integer"):
            plain: Any = int(value)
        elif type(f.default) is float:
            plain = float(value)
        else:
            continue
        if type(plain) is not type(value):
            changed[f.name] = plain
    return dataclasses.replace(values, **changed) if changed else values


def _init_taking(knobs: type[Knobs]) -> Any:
    """``KnobPolicy.__init__`` with a signature of ``knobs``' fields as keyword-only parameters."""

    def __init__(self: KnobPolicy[Any], **knob_values: Any) -> None:
        KnobPolicy.__init__(self, **knob_values)

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.type)
        for f in dataclasses.fields(knobs)
        if f.init
    ]
    # inspect.signature reads a function's __signature__ first (make_policy, `hetgym policies --knobs`).
    vars(__init__)["__signature__"] = inspect.Signature(params)
    __init__.__doc__ = f"Build the policy from the knobs of :class:`{knobs.__name__}` (keywords, each optional)."
    return __init__


def _with_args_section(doc: str, knobs: type[Knobs]) -> str:
    """``doc`` with an ``Args:`` section listing every knob: its ``doc`` and default."""
    doc = inspect.cleandoc(doc)
    lines = ["", "", f"Args (the fields of :class:`{knobs.__name__}`):"]
    for f in dataclasses.fields(knobs):
        if not f.init:
            continue
        text = f"{f.name}: {f.metadata.get('doc', '').rstrip('.')} (default ``{f.default!r}``)."
        lines += textwrap.wrap(
            text, _DOC_WIDTH - 4, initial_indent="    ", subsequent_indent="        ", break_on_hyphens=False
        )
    return doc + "\n".join(lines)
