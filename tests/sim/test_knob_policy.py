"""KnobPolicy: a policy's knobs, written once as its knob dataclass, make its constructor, state and docstring."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass

import numpy as np
import pytest

from baselines.dancer import Dancer, DancerKnobs
from baselines.hadar import HadarE, HadarEKnobs, HadarKnobs
from hetgym.sim import list_policies, make_policy, policy_class
from hetgym.sim.allocation import Allocation
from hetgym.sim.cluster import get_cluster
from hetgym.sim.errors import UnknownNameError
from hetgym.sim.knob_policy import KnobPolicy
from hetgym.sim.registry import KnobError, Knobs, knob
from hetgym.sim.view import ClusterView

KNOB_POLICIES = sorted(n for n in list_policies() if issubclass(policy_class(n), KnobPolicy))


def test_every_registered_policy_is_built_from_its_knobs() -> None:
    assert sorted(list_policies()) == KNOB_POLICIES


@pytest.mark.parametrize("name", KNOB_POLICIES)
def test_the_policy_holds_its_knobs_and_lists_them_in_its_docstring(name: str) -> None:
    cls = policy_class(name)
    policy = make_policy(name)
    assert isinstance(policy, KnobPolicy) and cls.knobs is not None
    assert type(policy.knob_values) is cls.knobs
    assert policy.params() == policy.knob_values.as_dict() == cls.knobs().as_dict()
    # The class that names the knobs lists them; a subclass that only inherits them refers to it.
    owner = next(c for c in cls.__mro__ if "knobs" in vars(c))
    if owner is not cls:
        assert f":class:`{owner.__name__}`" in (cls.__doc__ or ""), f"{name}: its docstring names not {owner.__name__}"
    doc = inspect.getdoc(owner) or ""
    assert f"Args (the fields of :class:`{cls.knobs.__name__}`):" in doc
    for field in dataclasses.fields(cls.knobs):
        assert f"\n    {field.name}: " in doc, f"{name}: knob {field.name} missing from the docstring"


def test_a_variant_extends_its_base_knobs_and_takes_them_all() -> None:
    assert issubclass(HadarEKnobs, HadarKnobs)
    policy = HadarE(mode="plan", copy_rule="srpt")
    assert policy.knob_values == HadarEKnobs(mode="plan", copy_rule="srpt")
    params = list(inspect.signature(HadarE.__init__).parameters)
    assert params == ["self", *(f.name for f in dataclasses.fields(HadarEKnobs))]


def test_numbers_are_kept_as_the_plain_types_of_the_defaults() -> None:
    policy = Dancer(dp_quanta=np.int64(50), round_s=30, deadline_margin_s=np.float64(5.0), max_count=4.0)
    k = policy.knob_values
    assert (k.dp_quanta, k.round_s, k.deadline_margin_s, k.max_count) == (50, 30.0, 5.0, 4)
    assert type(k.dp_quanta) is int and type(k.round_s) is float and type(k.deadline_margin_s) is float
    assert type(k.max_count) is int and policy.round_s == 30.0
    assert Dancer(price_L=1, price_U=2, price_auto=False).knob_values.price_L == 1  # optional: as given


def test_an_unknown_or_bad_knob_is_refused_by_name() -> None:
    with pytest.raises(UnknownNameError, match="price_mode"):
        Dancer(price_mod="exp")
    with pytest.raises(KnobError, match="knob dp_quanta=0"):
        Dancer(dp_quanta=0)
    with pytest.raises(TypeError):
        Dancer(60.0)  # keywords only


def test_a_fork_shares_the_frozen_knobs() -> None:
    policy = Dancer()
    policy.reset(get_cluster("tiny"), rng=np.random.default_rng(0))
    assert policy.copy_state().knob_values is policy.knob_values


@dataclass(frozen=True)
class _ToyKnobs(Knobs):
    """Knobs of the toy policy."""

    size: int = knob(2, low=1, integer=True, doc="how many")


def test_a_knob_policy_may_not_write_its_own_constructor() -> None:
    with pytest.raises(TypeError, match="_configure"):

        class _Toy(KnobPolicy[_ToyKnobs]):
            knobs = _ToyKnobs

            def __init__(self, size: int = 2) -> None:
                super().__init__(size=size)

            def schedule(self, view: ClusterView) -> Allocation:
                return Allocation({})


def test_derived_state_is_set_in_configure() -> None:
    class _Toy(KnobPolicy[_ToyKnobs]):
        """A toy policy."""

        knobs = _ToyKnobs

        def _configure(self) -> None:
            self.keeps_gpus_busy = self.knob_values.size > 2

        def schedule(self, view: ClusterView) -> Allocation:
            return Allocation({})

    assert _Toy(size=3).keeps_gpus_busy and not _Toy().keeps_gpus_busy
    assert "    size: how many (default ``2``)." in (_Toy.__doc__ or "")
    assert DancerKnobs().round_s == Dancer().round_s


def test_the_documented_knob_policy_checks_its_knobs() -> None:
    """docs/writing-a-policy.md's first example: the knob it declares is the constructor's, checked and listed."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "writing-a-policy.md").read_text()
    example = re.search(r"```python\n(.*?)```", page, re.S)
    assert example, "docs/writing-a-policy.md lost its first example"
    from hetgym.sim.policy import POLICIES

    namespace: dict[str, object] = {}
    exec(compile(example.group(1), "writing-a-policy.md", "exec"), namespace)  # the page's own code
    try:
        _check_biggest_first()
    finally:  # other tests see the usual registry
        POLICIES.unregister("biggest-first")


def _check_biggest_first() -> None:
    policy = make_policy("biggest-first", keep_free=1)
    assert isinstance(policy, KnobPolicy) and policy.params() == {"keep_free": 1}
    assert "keep_free" in str(inspect.signature(type(policy)))
    assert "keep_free: GPUs of each type left free" in (type(policy).__doc__ or "")
    with pytest.raises(KnobError, match="keep_free=-1: it must be >= 0"):
        make_policy("biggest-first", keep_free=-1)
    with pytest.raises(UnknownNameError, match="did you mean 'keep_free'"):
        make_policy("biggest-first", keep_fre=1)
