"""Every registered policy declares its constructor knobs once, as a frozen Knobs dataclass that validates them."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import numpy as np
import pytest

from hetgym.sim import list_policies, make_policy, policy_class
from hetgym.sim.policy import POLICIES
from hetgym.sim.registry import KnobError, Knobs

NAMES = sorted(list_policies())


def _fields(name: str) -> dict[str, dataclasses.Field[Any]]:
    knobs = policy_class(name).knobs
    assert knobs is not None
    return {f.name: f for f in dataclasses.fields(knobs)}


def _bad_number(meta: dict[str, Any]) -> float:
    """A value just outside the knob's bounds."""
    if meta["low"] is not None:
        return meta["low"] if meta["low_open"] else meta["low"] - 1
    return meta["high"] if meta["high_open"] else meta["high"] + 1


CHOICE_KNOBS = [(n, k) for n in NAMES for k, f in _fields(n).items() if f.metadata.get("choices")]
NUMERIC_KNOBS = [
    (n, k)
    for n in NAMES
    for k, f in _fields(n).items()
    if f.metadata.get("low") is not None or f.metadata.get("high") is not None
]


@pytest.mark.parametrize("name", NAMES)
def test_knobs_match_the_constructor(name: str) -> None:
    cls = policy_class(name)
    knobs = cls.knobs
    assert knobs is not None and issubclass(knobs, Knobs), f"{name} declares no knobs dataclass"
    assert knobs.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert POLICIES.entry(name).knobs is knobs
    params = {k: p for k, p in inspect.signature(cls.__init__).parameters.items() if k != "self"}
    fields = _fields(name)
    assert set(fields) == set(params), f"{name}: knobs {sorted(fields)} vs __init__ {sorted(params)}"
    for key, p in params.items():
        assert fields[key].default == p.default, f"{name}.{key}: knob default {fields[key].default!r} vs {p.default!r}"
    knobs()  # the defaults are valid
    policy = make_policy(name)
    assert set(policy.params()) <= set(fields)


@pytest.mark.parametrize(("name", "key"), CHOICE_KNOBS)
def test_a_bad_choice_is_refused_naming_the_knob(name: str, key: str) -> None:
    with pytest.raises(KnobError, match=f"knob {key}='no-such-choice'"):
        make_policy(name, **{key: "no-such-choice"})


@pytest.mark.parametrize(("name", "key"), NUMERIC_KNOBS)
def test_a_number_out_of_bounds_is_refused_naming_the_knob(name: str, key: str) -> None:
    bad = _bad_number(dict(_fields(name)[key].metadata))
    with pytest.raises(KnobError, match=f"knob {key}="):
        make_policy(name, **{key: bad})
    with pytest.raises(KnobError, match=f"knob {key}="):
        make_policy(name, **{key: float("nan")})


def test_there_are_choice_and_numeric_knobs_to_check() -> None:
    assert len(CHOICE_KNOBS) >= 20 and len(NUMERIC_KNOBS) >= 20


def test_cross_knob_rules_are_knob_errors() -> None:
    with pytest.raises(KnobError, match="price_auto=False"):
        make_policy("dancer", price_auto=False)
    with pytest.raises(KnobError, match="price_L"):
        make_policy("hadar", price_L=2.0, price_U=1.0)
    with pytest.raises(KnobError, match="utility"):
        make_policy("hadar", utility="quadratic")
    with pytest.raises(KnobError, match="ascending"):
        make_policy("tiresias", thresholds_gpu_s=[10, 5])
    make_policy("hadar", utility=lambda job, t_s, t_min_s: 1.0)  # a callable utility is a valid knob


def test_numpy_numbers_are_accepted() -> None:
    policy = make_policy("jps", n_samples=np.int64(8), beta=np.float64(0.5))
    assert policy.params()["n_samples"] == 8
