"""``scripts/studies/lookahead.py --suite``: a suite scenario's kwargs, and the action set beside them."""

from __future__ import annotations

import argparse

import pytest
from helpers import load_script

from hetgym.suite import get


def _ns(**values: object) -> argparse.Namespace:
    return argparse.Namespace(**{"env_id": "HetClusterEvents-Tiny-v0", "suite": None, "action_set": None, **values})


def test_a_suite_scenario_gives_its_event_kwargs_and_an_action_set() -> None:
    script = load_script("studies/lookahead")
    assert script._environment(_ns()) == ("HetClusterEvents-Tiny-v0", None)
    env_id, kwargs = script._environment(_ns(suite="load-2x", action_set="share"))
    assert env_id == "HetClusterEvents-v0"
    assert kwargs == {**get("load-2x").kwargs(), "action_set": "share"}
    with pytest.raises(SystemExit, match="--suite"):
        script._environment(_ns(action_set="share"))
