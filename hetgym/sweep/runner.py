"""Executing a sweep: the per-run worker function, three backends, and the resumable driver.

:func:`execute_run` simulates one :class:`~hetgym.sweep.spec.RunSpec` and returns its results row; it
never raises for a failing configuration (the row carries the error and a traceback summary).
Backends hand runs to it and pass each row back as soon as it is ready:

* ``sequential``: in this process, one after the other.
* ``local``: a pool of worker processes (``spawn``), each limited to one BLAS/OpenMP thread. A worker
  that dies (killed, out of memory) breaks the pool: the runs that were in flight are then retried one
  at a time in a fresh single-worker pool, so only the culprit is recorded as failed. Workers end with
  the driver: if it is killed (even with SIGKILL), they receive SIGKILL too (Linux's parent-death
  signal; elsewhere a thread polling the parent's pid), and the resource tracker then exits.
* ``ray``: one Ray task per run on a local Ray instance (``num_cpus`` = workers) or an existing
  cluster (``ray.init(address=...)``). Ray is imported only here, when this backend is used. A local
  instance ends with the driver: if it is killed (even with SIGKILL), a reaper process ends what Ray's
  own fate-sharing leaves of it (:mod:`hetgym.sweep.reaper`); a cluster given by address is never touched.

:func:`run_sweep` validates the grid, skips runs already finished in the results directory, records
each new row as it arrives and keeps the consolidated table up to date.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import datetime as dt
import logging
import multiprocessing
import os
import socket
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hetgym.limits import MAX_RAY_WORKERS, MAX_WORKERS_PER_CPU, max_local_workers
from hetgym.sim.errors import HetgymError
from hetgym.sim.usercode import describe
from hetgym.sweep.reaper import Reaper, start_reaper
from hetgym.sweep.spec import RunSpec, SweepSpec, load_imports
from hetgym.sweep.store import ResultsStore

#: Environment variables that cap the threads of BLAS/OpenMP libraries; set to 1 in workers so that
#: N workers use N cores, not N x cores.
THREAD_ENV_VARS: tuple[str, ...] = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)
BACKENDS: tuple[str, ...] = ("local", "ray", "sequential")
_TRACEBACK_CHARS = 4000

OnResult = Callable[[dict[str, Any]], None]

#: The reaper of the local Ray instance started by :func:`init_ray`, if any (see :mod:`hetgym.sweep.reaper`).
_REAPER: Reaper | None = None


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def failed_row(run: RunSpec, error: str, tb: str | None = None) -> dict[str, Any]:
    """The results row of a run that did not produce metrics."""
    try:
        row = run.flat()
    except Exception:  # e.g. its cluster cannot be built here: keep the id and the labels
        row = {"run_id": run.run_id, "policy": run.policy, "policy_name": run.policy_name, "seed": run.seed}
    row.update(status="failed", error=error, traceback=tb, worker=_worker_id(), finished_at=_now())
    return row


def execute_run(run: RunSpec) -> dict[str, Any]:
    """Simulate ``run`` and return its results row (configuration columns, metrics, status).

    Exceptions of the run are caught and recorded in the row (``status="failed"``, ``error``,
    ``traceback`` with the innermost frames); only ``KeyboardInterrupt``/``SystemExit`` propagate.
    """
    from hetgym.experiments import run_one

    try:
        load_imports(run.imports)
        row = run.flat()
        result = run_one(run.scenario_obj(), run.policy_name, run.seed, policy_kwargs=run.policy_options)
    except Exception as exc:
        tb = traceback.format_exc()
        if len(tb) > _TRACEBACK_CHARS:
            tb = "...\n" + tb[-_TRACEBACK_CHARS:]
        return failed_row(run, describe(exc), tb)
    row.update({k: float(v) for k, v in result.metrics.items()})
    row.update(
        status="ok",
        stalled=bool(result.stalled),
        num_epochs=int(result.num_epochs),
        num_events=int(result.num_events),
        wall_s=float(result.wall_s),
        error=None,
        traceback=None,
        worker=_worker_id(),
        finished_at=_now(),
    )
    return row


# --------------------------------------------------------------------------------------------
# Backends


#: How often a worker without a parent-death signal checks that its parent is alive.
PARENT_POLL_S = 0.5
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def _die_with_parent(parent_pid: int) -> str:
    """Make this process end when ``parent_pid`` (the sweep driver) does; returns the mechanism used.

    On Linux the kernel sends SIGKILL on the parent's death (``prctl(PR_SET_PDEATHSIG)``); elsewhere a daemon
    thread polls ``os.getppid()``. Either way a driver killed with SIGKILL leaves no worker behind, blocked on
    a queue that nothing will ever write to again (and holding the resource tracker's pipe open).
    """
    import signal
    import sys

    mechanism = "poll"
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0:
                mechanism = "prctl"
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)
    if mechanism == "poll":
        import threading

        def watch() -> None:
            while os.getppid() == parent_pid:
                time.sleep(PARENT_POLL_S)
            os._exit(1)

        threading.Thread(target=watch, name="hetgym-parent-watch", daemon=True).start()
    return mechanism


def _init_worker(parent_pid: int | None = None) -> None:
    """Worker start-up: end with the driver (``parent_pid``), one thread for BLAS/OpenMP (libraries already
    loaded are limited too)."""
    if parent_pid is not None:
        _die_with_parent(parent_pid)
    for var in THREAD_ENV_VARS:
        os.environ[var] = "1"
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:  # the environment variables then act on libraries loaded from now on
        pass


@contextlib.contextmanager
def _single_thread_env() -> Iterator[None]:
    """Set the thread caps in this process's environment (inherited by spawned workers), then restore it."""
    saved = {var: os.environ.get(var) for var in THREAD_ENV_VARS}
    os.environ.update({var: "1" for var in THREAD_ENV_VARS})
    try:
        yield
    finally:
        for var, value in saved.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value


def run_sequential(runs: Sequence[RunSpec], on_result: OnResult) -> None:
    """Run each configuration in this process, in order."""
    for run in runs:
        on_result(execute_run(run))


def run_local_pool(runs: Sequence[RunSpec], on_result: OnResult, workers: int) -> None:
    """Run on a pool of ``workers`` processes; rows arrive in completion order.

    A worker that dies takes the pool down; the runs in flight at that moment are then retried, each
    alone in a fresh one-worker pool, and the one whose worker dies again is recorded as failed.
    """
    if workers < 1:
        raise HetgymError(f"workers={workers}; give at least 1")
    pending = deque(runs)
    with _single_thread_env():
        while pending:
            suspects = _pool_pass(pending, on_result, workers)
            for run in suspects:
                _isolated(run, on_result)


def _new_pool(workers: int) -> cf.ProcessPoolExecutor:
    return cf.ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_init_worker,
        initargs=(os.getpid(),),
    )


def _pool_pass(pending: deque[RunSpec], on_result: OnResult, workers: int) -> list[RunSpec]:
    """Drain ``pending`` through one pool; returns the runs in flight if the pool broke."""
    pool = _new_pool(workers)
    inflight: dict[cf.Future[dict[str, Any]], RunSpec] = {}
    try:
        while pending or inflight:
            # Keep a bounded queue: rows flow back steadily and an interruption cancels little work.
            while pending and len(inflight) < 2 * workers:
                run = pending.popleft()
                inflight[pool.submit(execute_run, run)] = run
            done, _ = cf.wait(inflight, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                run = inflight.pop(fut)
                try:
                    row = fut.result()
                except BrokenProcessPool:
                    inflight[fut] = run
                    return list(inflight.values())
                except Exception as exc:  # the row could not come back (e.g. it does not pickle)
                    row = failed_row(run, f"{type(exc).__name__}: {exc}")
                on_result(row)
        return []
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _isolated(run: RunSpec, on_result: OnResult) -> None:
    pool = _new_pool(1)
    try:
        row = pool.submit(execute_run, run).result()
    except BrokenProcessPool:
        row = failed_row(
            run,
            "WorkerDied: the worker process died while running this configuration (killed, or out of memory); "
            "it was retried alone and died again",
        )
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    on_result(row)


def _package_path() -> str:
    """The folders that hold ``hetgym`` and the packages of the ``hetgym.policies`` entry points (``baselines``
    and any plug-in), found without importing them, for local Ray workers' ``PYTHONPATH``."""
    from importlib.metadata import entry_points

    from hetgym.sim.layout import module_origin, require_project_package

    names = ["hetgym", *(ep.value.split(":")[0].split(".")[0] for ep in entry_points(group="hetgym.policies"))]
    dirs = []
    for name in dict.fromkeys(names):
        if name in ("baselines", "agents"):
            require_project_package(name)
        origin = module_origin(name)
        if origin is not None:
            dirs.append(str(origin.parent.parent if origin.name == "__init__.py" else origin.parent))
    extra = os.environ.get("PYTHONPATH")
    return os.pathsep.join(dict.fromkeys([*dirs, *([extra] if extra else [])]))


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise HetgymError("the ray backend needs Ray: pip install 'hetgym[ray]' (or pip install 'ray>=2.9')") from None
    return ray


def init_ray(address: str | None = None, num_cpus: int | None = None) -> bool:
    """Start (or connect to) Ray with single-threaded workers; returns whether this call initialised it.

    Without ``address`` a local instance with ``num_cpus`` CPUs starts, and its workers import the same
    ``hetgym`` as this process; a reaper process (:func:`~hetgym.sweep.reaper.start_reaper`) ends every
    process of that instance if this process dies without shutting it down. With ``address`` (``"auto"``,
    ``"ray://host:10001"``, ...) the cluster's workers must have hetgym installed (see ``docs/sweeps.md``).
    """
    global _REAPER
    ray = _import_ray()
    if ray.is_initialized():
        return False
    env = {var: "1" for var in THREAD_ENV_VARS}
    kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING}
    if address:
        ray.init(address=address, runtime_env={"env_vars": env}, **kwargs)
        return True
    env["PYTHONPATH"] = _package_path()
    _stop_reaper()  # one left by an earlier session of this process
    _REAPER = start_reaper()
    try:
        ray.init(num_cpus=num_cpus, runtime_env={"env_vars": env}, **kwargs)
    except BaseException:
        _stop_reaper()
        raise
    if _REAPER is not None:
        try:
            session_dir = ray._private.worker._global_node.get_session_dir_path()
        except AttributeError:  # Ray's internals moved: the reaper finds the session by its name
            session_dir = None
        if session_dir:
            _REAPER.watch_session(str(session_dir))
    return True


def _stop_reaper() -> None:
    """Let the reaper of the local Ray session started by :func:`init_ray` go, once Ray is shut down."""
    global _REAPER
    if _REAPER is not None:
        _REAPER.stop()
        _REAPER = None


def run_ray(runs: Sequence[RunSpec], on_result: OnResult, workers: int | None, address: str | None = None) -> None:
    """Run one Ray task per configuration; at most ``workers`` run at once (default: the cluster's CPUs)."""
    started = init_ray(address, workers)
    import ray

    try:
        concurrency = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        task = ray.remote(num_cpus=1, max_retries=1)(execute_run)
        pending = deque(runs)
        inflight: dict[Any, RunSpec] = {}
        try:
            while pending or inflight:
                while pending and len(inflight) < 2 * concurrency:
                    run = pending.popleft()
                    inflight[task.remote(run)] = run
                ready, _ = ray.wait(list(inflight), num_returns=1)
                for ref in ready:
                    run = inflight.pop(ref)
                    try:
                        row = ray.get(ref)
                    except ray.exceptions.RayError as exc:  # worker or node died (after one retry)
                        row = failed_row(run, f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
                    on_result(row)
        finally:
            for ref in inflight:
                ray.cancel(ref, force=True)
    finally:
        if started:
            ray.shutdown()
            _stop_reaper()


# --------------------------------------------------------------------------------------------
# The driver


@dataclass
class SweepOutcome:
    """What :func:`run_sweep` did.

    Attributes:
        out_dir: The results directory.
        total: Runs in the grid.
        skipped: Runs already finished before this call (not run again).
        ran: Runs executed by this call.
        failed: Runs of the grid whose latest result is a failure.
        stale: Result files in the directory that belong to no run of this grid (kept, not in the table).
        wall_s: Wall-clock time of this call.
        tables: The consolidated tables written.
    """

    out_dir: Path
    total: int
    skipped: int
    ran: int
    failed: int
    stale: int
    wall_s: float
    tables: list[Path] = field(default_factory=list)


def run_sweep(
    spec: SweepSpec,
    out_dir: str | os.PathLike[str],
    *,
    backend: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    retry_failed: bool = False,
    on_start: Callable[[int, int], None] | None = None,
    on_result: OnResult | None = None,
    flush_every_s: float = 2.0,
) -> SweepOutcome:
    """Run every configuration of ``spec`` not yet finished in ``out_dir``; record each as it ends.

    Args:
        spec: The sweep (validated here, before anything runs).
        out_dir: Results directory (created; a previous sweep's results there are resumed).
        backend: ``local`` (process pool), ``ray`` or ``sequential``.
        workers: Parallel workers (default: this machine's CPU count; for Ray with an address, the
            cluster's CPUs).
        ray_address: Address of an existing Ray cluster (``ray`` backend only).
        retry_failed: Run again the configurations whose recorded result is a failure.
        on_start: Called with (runs to execute, runs skipped) before the first run.
        on_result: Called with each new row (e.g. to advance a progress bar).
        flush_every_s: Rewrite the consolidated table at most this often while running.
    """
    if backend not in BACKENDS:
        raise HetgymError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if ray_address and backend != "ray":
        raise HetgymError("a Ray address was given but the backend is not 'ray'; add --backend ray")
    check_workers(workers, backend)
    if backend == "ray":
        _import_ray()  # fail before anything is written
    started = time.perf_counter()
    runs = spec.expand()
    connected = connect_ray(ray_address) if backend == "ray" and ray_address else False
    try:
        return _run_sweep(spec, runs, out_dir, started, backend, workers, ray_address, retry_failed, on_start,
                          on_result, flush_every_s)  # fmt: skip
    finally:
        if connected:
            import ray

            ray.shutdown()


def check_workers(workers: int | None, backend: str) -> None:
    """Refuse fewer than one worker, or more than the bound of ``backend`` (see :mod:`hetgym.limits`)."""
    if workers is None:
        return
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise HetgymError(f"workers={workers!r}; give at least 1")
    if backend == "ray" and workers > MAX_RAY_WORKERS:
        raise HetgymError(f"workers={workers}: more than {MAX_RAY_WORKERS:,} concurrent Ray tasks; give fewer")
    if backend == "local" and workers > max_local_workers():
        raise HetgymError(
            f"workers={workers}: more than {max_local_workers()} local worker processes ({MAX_WORKERS_PER_CPU} per "
            f"CPU core of this machine; each is a process of its own, and more than the cores only adds memory); "
            "give fewer, or use --backend ray for a cluster"
        )


def connect_ray(address: str) -> bool:
    """Connect to the Ray cluster at ``address`` before anything is written; returns whether this call did.

    Raises:
        HetgymError: One line naming the address and the fix, when no cluster answers there.
    """
    try:
        return init_ray(address)
    except (ConnectionError, RuntimeError, TimeoutError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise HetgymError(
            f"cannot connect to a Ray cluster at {address!r} ({first}); start one (`ray start --head`) or leave "
            "out --ray-address to start Ray on this machine"
        ) from None


def _run_sweep(
    spec: SweepSpec,
    runs: list[RunSpec],
    out_dir: str | os.PathLike[str],
    started: float,
    backend: str,
    workers: int | None,
    ray_address: str | None,
    retry_failed: bool,
    on_start: Callable[[int, int], None] | None,
    on_result: OnResult | None,
    flush_every_s: float,
) -> SweepOutcome:
    store = ResultsStore(out_dir)
    with store.lock():
        done = store.finished()
        grid_ids = {r.run_id for r in runs}
        rows: dict[str, dict[str, Any]] = {rid: row for rid, row in done.items() if rid in grid_ids}
        todo = [r for r in runs if r.run_id not in rows or (retry_failed and rows[r.run_id].get("status") != "ok")]
        store.write_meta(
            {
                "name": spec.name,
                "description": spec.description,
                "spec": spec.to_dict(),
                "num_runs": len(runs),
                "run_ids": [r.run_id for r in runs],
            }
        )
        if on_start:
            on_start(len(todo), len(runs) - len(todo))
        last_flush = time.perf_counter()
        ran = 0

        def handle(row: dict[str, Any]) -> None:
            nonlocal last_flush, ran
            row["sweep"] = spec.name
            store.record(row)
            rows[row["run_id"]] = row
            ran += 1
            if on_result:
                on_result(row)
            if time.perf_counter() - last_flush >= flush_every_s:
                store.write_table(rows[r.run_id] for r in runs if r.run_id in rows)
                last_flush = time.perf_counter()

        tables: list[Path] = []
        try:
            if todo:
                if backend == "sequential":
                    run_sequential(todo, handle)
                elif backend == "local":
                    run_local_pool(todo, handle, workers or os.cpu_count() or 1)
                else:
                    run_ray(todo, handle, workers, ray_address)
        finally:
            # The result files are the record: an interruption between writing a run's file and noting its
            # row here must not leave the file out of the table.
            for rid, row in store.finished().items():
                if rid in grid_ids:
                    rows.setdefault(rid, row)
            tables = store.write_table(rows[r.run_id] for r in runs if r.run_id in rows)
    return SweepOutcome(
        out_dir=store.dir,
        total=len(runs),
        skipped=len(runs) - len(todo),
        ran=ran,
        failed=sum(1 for row in rows.values() if row.get("status") != "ok"),
        stale=sum(1 for rid in done if rid not in grid_ids),
        wall_s=time.perf_counter() - started,
        tables=tables,
    )


def default_out_dir(spec: SweepSpec) -> Path:
    """``spec.out`` if given, else ``results/sweeps/<name>``."""
    return Path(spec.out) if spec.out else Path("results") / "sweeps" / spec.name


def summary_line(outcome: SweepOutcome) -> str:
    """A one-line account of a finished :func:`run_sweep`."""
    parts = [f"{outcome.total} runs in the grid", f"{outcome.ran} run now", f"{outcome.skipped} already done"]
    if outcome.failed:
        parts.append(f"{outcome.failed} failed")
    if outcome.stale:
        parts.append(f"{outcome.stale} result files from other grids kept aside")
    return ", ".join(parts) + f" ({outcome.wall_s:.1f} s)"
