"""The typed registry and self-validating knobs."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from hetgym.sim.errors import HetgymError, UnknownNameError
from hetgym.sim.registry import KnobError, Knobs, Registry, knob


@dataclass(frozen=True)
class ToyKnobs(Knobs):
    rule: str = knob("gain", choices=("gain", "srpt"))
    round_s: float = knob(60.0, low=0.0, low_open=True)
    copies: int | None = knob(None, low=1, integer=True, optional=True)
    share: float = knob(0.5, low=0.0, high=1.0)


def test_knobs_validate_every_field_naming_knob_value_and_fix() -> None:
    assert ToyKnobs().as_dict() == {"rule": "gain", "round_s": 60.0, "copies": None, "share": 0.5}
    with pytest.raises(KnobError, match=r"rule='gains' is not one of \['gain', 'srpt'\]"):
        ToyKnobs(rule="gains")
    with pytest.raises(KnobError, match=r"round_s=0\.0.*> 0\.0"):
        ToyKnobs(round_s=0.0)
    with pytest.raises(KnobError, match="finite"):
        ToyKnobs(round_s=float("inf"))
    with pytest.raises(KnobError, match="finite"):
        ToyKnobs(share=float("nan"))
    with pytest.raises(KnobError, match="integer"):
        ToyKnobs(copies=2.5)  # type: ignore[arg-type]
    with pytest.raises(KnobError, match="integer"):
        ToyKnobs(copies=True)  # type: ignore[arg-type]
    with pytest.raises(KnobError, match=r"<= 1\.0"):
        ToyKnobs(share=1.5)
    with pytest.raises(UnknownNameError, match="did you mean 'round_s'"):
        ToyKnobs.from_kwargs(round=60.0)
    assert isinstance(KnobError("x"), ValueError)


def test_registry_names_the_nearest_and_refuses_a_second_owner() -> None:
    reg: Registry[type] = Registry("toy component", "List them with toys().")

    @reg.decorator("alpha", knobs=ToyKnobs)
    class Alpha:
        """The first toy."""

    assert reg.get("ALPHA") is Alpha and "alpha" in reg and reg.entry("alpha").knobs is ToyKnobs
    assert reg["alpha"] is Alpha  # read like the plain dicts the registries replace
    assert reg.describe() == {"alpha": "The first toy."}
    reg.register("alpha", Alpha)  # the same object again is fine
    with pytest.raises(HetgymError, match="already registered"):
        reg.register("alpha", type("Other", (), {}))
    with pytest.raises(UnknownNameError, match=r"did you mean 'alpha'.*toys"):
        reg.get("alpah")
    with pytest.raises(KeyError):
        reg["alpah"]
    reg.unregister("alpha")
    assert len(reg) == 0 and Registry.ALL["toy component"] is reg


def test_an_alias_stands_for_an_entry_with_knobs_preset() -> None:
    reg: Registry[type] = Registry("toy alias component", "List them with toys().")

    @reg.decorator("alpha", knobs=ToyKnobs)
    class Alpha:
        """The first toy."""

    reg.alias("alpha-srpt", "alpha", rule="srpt")
    reg.alias("alpha-srpt", "alpha", rule="srpt")  # the same alias again is fine
    assert reg.get("Alpha-SRPT") is Alpha and "alpha-srpt" in reg and reg.names() == ("alpha", "alpha-srpt")
    assert reg.entry("alpha-srpt").name == "alpha" and reg.resolve("alpha-srpt")[1] == {"rule": "srpt"}
    assert reg.describe() == {"alpha": "The first toy.", "alpha-srpt": "alias of 'alpha' with rule='srpt'"}
    assert reg.knobs_for("alpha-srpt") == ToyKnobs(rule="srpt")
    assert reg.knobs_for("alpha-srpt", {"share": 0.25}) == ToyKnobs(rule="srpt", share=0.25)
    assert reg.knobs_for("alpha", ToyKnobs(share=0.25)) == ToyKnobs(share=0.25)
    with pytest.raises(KnobError, match=r"presets rule='srpt'.*use 'alpha'"):
        reg.knobs_for("alpha-srpt", ToyKnobs())
    with pytest.raises(HetgymError, match="already an alias of 'alpha'"):
        reg.alias("alpha-srpt", "alpha", rule="gain")
    with pytest.raises(HetgymError, match="already an alias"):
        reg.register("alpha-srpt", Alpha)
    with pytest.raises(HetgymError, match="already registered"):
        reg.alias("alpha", "alpha-srpt")
    with pytest.raises(UnknownNameError, match="did you mean 'alpha-srpt'"):
        reg.get("alpha-srp")  # the nearest-name error knows the aliases
    reg.unregister("alpha")  # and its aliases with it
    assert len(reg) == 0


@pytest.mark.parametrize(
    ("kind", "plural"), [("policy", "policies"), ("GPU type", "GPU types"), ("config key", "config keys")]
)
def test_an_unknown_name_lists_the_valid_ones_in_plain_english(kind: str, plural: str) -> None:
    with pytest.raises(UnknownNameError, match=f"Valid {plural}: a, b"):
        raise UnknownNameError(kind, "zzz", ["b", "a"])


def test_the_window_feature_groups_load_only_when_used() -> None:
    """The observation registry lists the window encoder's aliases without importing the group modules."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from hetgym.envs.observations import OBSERVATIONS\n"
        "from hetgym.sim.registry import Registry\n"
        "names = ','.join(OBSERVATIONS.names())\n"
        "assert 'hetgym.envs.observations_levels' not in sys.modules\n"
        "assert 'hetgym.envs.observations_cursor' not in sys.modules\n"
        "lazy = Registry('toy lazy component', modules=('hetgym.envs.observations_nodes',))\n"
        "assert 'hetgym.envs.observations_nodes' not in sys.modules\n"
        "lazy.names()  # a registry imports its modules on the first look-up\n"
        "assert 'hetgym.envs.observations_nodes' in sys.modules\n"
        "print(names)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "window,window-cursor,window-levels,window-nodes"
