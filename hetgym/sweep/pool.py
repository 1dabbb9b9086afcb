"""Map any picklable function over a list of items on the sweep runner's process pool: :func:`map_runs`.

A script whose unit of work is not a :class:`~hetgym.sweep.spec.RunSpec` (a study's own task function: one
seed of an investigation, one paper's simulation) gets the same pool as a local sweep: ``spawn`` workers,
each limited to one BLAS/OpenMP thread, that end with the driver even if it is killed with SIGKILL, and at
most :func:`~hetgym.limits.max_local_workers` of them. Results come back in the order of the items.

Unlike :func:`~hetgym.sweep.run_sweep`, nothing is recorded on disk and a failure is not a row: the first
item whose function raises (or whose worker dies) stops the map with :class:`MapRunError`, which names the
item; the work still queued is cancelled.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import pickle
from collections.abc import Callable, Iterable
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from hetgym.sim.errors import HetgymError
from hetgym.sweep.runner import _new_pool, _single_thread_env, check_workers

T = TypeVar("T")
R = TypeVar("R")

#: Characters of an item's ``repr`` quoted in an error message.
_ITEM_CHARS = 120


class MapRunError(HetgymError):
    """An item of :func:`map_runs` failed: its function raised (the exception is the ``__cause__``), or its
    worker process died. ``index`` is the item's position in the list."""

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


def _describe(item: Any) -> str:
    text = repr(item)
    return text if len(text) <= _ITEM_CHARS else text[: _ITEM_CHARS - 3] + "..."


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or getattr(getattr(fn, "func", None), "__qualname__", None) or repr(fn)


def map_runs(
    fn: Callable[[T], R],
    items: Iterable[T],
    *,
    workers: int | None = None,
    on_result: Callable[[int, R], None] | None = None,
    pool: cf.ProcessPoolExecutor | None = None,
) -> list[R]:
    """``[fn(item) for item in items]``, computed on a pool of worker processes.

    Args:
        fn: A function of one argument that pickles by reference: defined at the top level of a module
            (a script's own module included) or a :func:`functools.partial` of one; it and each item are
            sent to a worker, and what it returns is sent back.
        items: The arguments, one call each.
        workers: Worker processes (default: this machine's CPU count), at most the number of items. With
            one worker (or one item) every call runs in this process, one after the other, and nothing needs
            to pickle.
        on_result: Called in this process with ``(index, result)`` as each call finishes (in completion
            order), e.g. to report progress.
        pool: A pool from :func:`open_pool` to run on (it stays open: a caller mapping many small batches
            pays the workers' start-up once); ``None`` (default) starts one for this call and shuts it down.

    Returns:
        The results, in the order of ``items``.

    Raises:
        HetgymError: ``workers`` below 1 or above :func:`~hetgym.limits.max_local_workers`, or ``fn`` does not
            pickle (a lambda, a nested function).
        MapRunError: ``fn`` raised on an item, or the worker running it died (killed, out of memory); the
            message names the item and its index, and the remaining work is cancelled.
    """
    check_workers(workers, "local")
    todo = list(items)
    count = min(workers or os.cpu_count() or 1, len(todo))
    results: list[Any] = [None] * len(todo)
    if count <= 1:
        for index, item in enumerate(todo):
            try:
                result = fn(item)
            except Exception as exc:
                raise MapRunError(_failed(fn, index, item, exc), index) from exc
            results[index] = result
            if on_result is not None:
                on_result(index, result)
        return results
    try:
        pickle.dumps(fn)
    except Exception as exc:
        raise HetgymError(
            f"map_runs: {_name(fn)} cannot be sent to a worker process ({type(exc).__name__}: {exc}); give a function "
            "defined at the top level of a module, or workers=1"
        ) from None
    owned = pool is None
    with _single_thread_env():
        if pool is None:
            pool = _new_pool(count)
        try:
            pending = iter(enumerate(todo))
            inflight: dict[cf.Future[Any], int] = {}
            while True:
                # A bounded queue: an interruption or a failure cancels little work.
                while len(inflight) < 2 * count:
                    nxt = next(pending, None)
                    if nxt is None:
                        break
                    inflight[pool.submit(fn, nxt[1])] = nxt[0]
                if not inflight:
                    break
                done, _ = cf.wait(inflight, return_when=cf.FIRST_COMPLETED)
                for fut in sorted(done, key=lambda f: inflight[f]):
                    index = inflight.pop(fut)
                    try:
                        result = fut.result()
                    except BrokenProcessPool:
                        running = sorted([index, *inflight.values()])
                        raise MapRunError(
                            f"map_runs: a worker process of {_name(fn)} died (killed, or out of memory) while item(s) "
                            f"{', '.join(map(str, running))} were running (item {index}: {_describe(todo[index])})",
                            index,
                        ) from None
                    except Exception as exc:
                        raise MapRunError(_failed(fn, index, todo[index], exc), index) from exc
                    results[index] = result
                    if on_result is not None:
                        on_result(index, result)
        finally:
            if owned:
                pool.shutdown(wait=True, cancel_futures=True)
            else:
                for fut in inflight:
                    fut.cancel()
    return results


def open_pool(workers: int) -> cf.ProcessPoolExecutor:
    """A pool of :func:`map_runs`' workers (``spawn``, one thread each, ending with this process) that lasts
    beyond one call: give it as ``map_runs(..., pool=...)`` and call its ``shutdown()`` when done."""
    check_workers(workers, "local")
    with _single_thread_env():
        return _new_pool(workers)


def _failed(fn: Callable[..., Any], index: int, item: Any, exc: BaseException) -> str:
    return f"map_runs: {_name(fn)} failed on item {index} ({_describe(item)}): {type(exc).__name__}: {exc}"


__all__ = ["MapRunError", "map_runs", "open_pool"]
