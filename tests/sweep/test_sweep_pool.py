"""``hetgym.sweep.map_runs``: results in the items' order, the runner's single-threaded spawn workers, and errors
that name the failing item (a raising function, a dying worker, a function that cannot be sent, bad counts)."""

from __future__ import annotations

import math
import os

import pytest

from hetgym.sim.errors import HetgymError
from hetgym.sweep import MapRunError, map_runs, open_pool
from hetgym.sweep.runner import THREAD_ENV_VARS


def test_one_worker_runs_in_this_process_in_order() -> None:
    seen: list[tuple[int, int]] = []
    out = map_runs(lambda x: x * x, [3, 1, 2], workers=1, on_result=lambda i, r: seen.append((i, r)))
    assert out == [9, 1, 4]
    assert seen == [(0, 9), (1, 1), (2, 4)]
    assert map_runs(abs, [], workers=4) == []


def test_a_raising_item_is_named_with_its_cause() -> None:
    with pytest.raises(MapRunError, match=r"failed on item 2 \(-1\.0\): ValueError: math domain error") as info:
        map_runs(math.sqrt, [4.0, 9.0, -1.0, 16.0], workers=1)
    assert info.value.index == 2 and isinstance(info.value.__cause__, ValueError)


def test_pool_keeps_the_order_and_single_threaded_workers() -> None:
    before = {v: os.environ.get(v) for v in THREAD_ENV_VARS}
    done: list[int] = []
    values = [float(v) for v in range(12, 0, -1)]
    out = map_runs(math.sqrt, values, workers=2, on_result=lambda i, _: done.append(i))
    assert out == [math.sqrt(v) for v in values]
    assert sorted(done) == list(range(12))
    assert map_runs(os.getenv, ["OMP_NUM_THREADS", "MKL_NUM_THREADS"], workers=2) == ["1", "1"]
    assert {v: os.environ.get(v) for v in THREAD_ENV_VARS} == before  # the driver's environment is restored
    with pytest.raises(MapRunError, match=r"failed on item 3 \(-2\.0\)") as info:
        map_runs(math.sqrt, [1.0, 4.0, 9.0, -2.0, 16.0], workers=2)
    assert info.value.index == 3 and isinstance(info.value.__cause__, ValueError)


@pytest.mark.slow  # a worker process kills itself (a few seconds on two cores)
def test_a_dying_worker_is_a_clear_error() -> None:
    with pytest.raises(MapRunError, match=r"worker process of .*died \(killed, or out of memory\)"):
        map_runs(os._exit, [3, 3], workers=2)


def test_unpicklable_functions_and_bad_worker_counts_fail_before_any_work() -> None:
    with pytest.raises(HetgymError, match=r"cannot be sent to a worker process.*workers=1"):
        map_runs(lambda x: x, [1, 2], workers=2)
    with pytest.raises(HetgymError, match=r"workers=0; give at least 1"):
        map_runs(abs, [1], workers=0)
    with pytest.raises(HetgymError, match=r"local worker processes"):
        map_runs(abs, [1], workers=10_000_000)


def test_an_open_pool_serves_several_maps_and_stays_open() -> None:
    pool = open_pool(2)
    try:
        pids = set(map_runs(_pid, range(6), workers=2, pool=pool))
        assert map_runs(math.sqrt, [4.0, 9.0], workers=2, pool=pool) == [2.0, 3.0]
        with pytest.raises(MapRunError, match="item 1"):
            map_runs(math.sqrt, [1.0, -1.0], workers=2, pool=pool)
        pids |= set(map_runs(_pid, range(6), workers=2, pool=pool))
        # Still open after a failed item, and never more than its two workers: no pool per call.
        assert os.getpid() not in pids and len(pids) <= 2
    finally:
        pool.shutdown(wait=True)


def _pid(_: object) -> int:
    return os.getpid()
