"""The one seed parser (:mod:`hetgym.seeds`): its forms, its refusals, and the error type each caller names."""

from __future__ import annotations

from typing import Any

import pytest

from agents.args import AgentError
from agents.args import parse_seeds as recipe_seeds
from hetgym.seeds import SeedsError, parse_seeds
from hetgym.sweep import SweepConfigError
from hetgym.sweep import parse_seeds as sweep_seeds


def test_forms() -> None:
    assert parse_seeds("0-2, 7") == [0, 1, 2, 7]
    assert parse_seeds(3) == [0, 1, 2]
    assert parse_seeds([5, 4]) == [5, 4]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("5-2", "runs backwards"),
        ("a,b", "not a non-negative integer"),
        ("-1", "not a non-negative integer"),
        ("", "no seeds"),
        ([], "no seeds"),
        ("1,0-1", "repeat a seed"),
        (True, "list of integers"),
        (0, "count >= 1"),
        (["a"], "not an integer"),
        ("0-999999999", "HETGYM_MAX_RUNS"),
    ],
)
def test_refusals_name_the_fault(value: Any, message: str) -> None:
    with pytest.raises(SeedsError, match=message):
        parse_seeds(value)


def test_each_caller_gets_its_own_error_type_with_the_same_message() -> None:
    with pytest.raises(AgentError, match="runs backwards"):
        recipe_seeds("5-2")
    with pytest.raises(SweepConfigError, match="runs backwards"):
        sweep_seeds("5-2")
