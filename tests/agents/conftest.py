"""Fixtures of the agents' tests: torch on one thread (the recipes set it too), restored afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch as th


@pytest.fixture(autouse=True)
def one_torch_thread() -> Iterator[None]:
    before = th.get_num_threads()
    th.set_num_threads(1)
    yield
    th.set_num_threads(before)
