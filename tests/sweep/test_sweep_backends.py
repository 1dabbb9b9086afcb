"""Sweep execution: same results in-process and on the local pool; resume; failures recorded, not fatal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from hetgym.sweep import NONDETERMINISTIC_COLUMNS, ResultsStore, SweepSpec, load_results, run_sweep
from hetgym.sweep.runner import failed_row
from hetgym.sweep.spec import RunSpec

ROOT = Path(__file__).resolve().parents[2]
FLAKY = str(Path(__file__).with_name("sweep_policies.py"))
SMALL: dict[str, Any] = {
    "name": "small",
    "policies": ["fifo", "srtf"],
    "scenarios": ["tiny"],
    "loads": [0.5, 0.9],
    "seeds": [0, 1],
    "workload": {"num_jobs": 8},
}


def deterministic(df: pd.DataFrame) -> pd.DataFrame:
    """The table without the timing and host columns, indexed by run id."""
    return df.drop(columns=[c for c in NONDETERMINISTIC_COLUMNS if c in df.columns]).set_index("run_id").sort_index()


@pytest.fixture(scope="module")
def sequential_table(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    out = tmp_path_factory.mktemp("seq")
    outcome = run_sweep(SweepSpec.from_dict(SMALL), out, backend="sequential")
    assert (outcome.total, outcome.ran, outcome.failed) == (8, 8, 0)
    return load_results(out)


def test_sequential_table_has_one_row_per_run_with_config_and_metrics(sequential_table: pd.DataFrame) -> None:
    df = sequential_table
    runs = SweepSpec.from_dict(SMALL).expand()
    assert list(df["run_id"]) == [r.run_id for r in runs]  # grid order
    assert (df["status"] == "ok").all()
    for col in ("policy", "seed", "cluster", "workload.target_utilisation", "sim.restart_penalty_s", "dsr"):
        assert col in df.columns
    assert df["jct_mean_s"].gt(0).all()
    assert df["num_jobs"].eq(8).all()


def test_local_pool_matches_sequential(tmp_path: Path, sequential_table: pd.DataFrame) -> None:
    outcome = run_sweep(SweepSpec.from_dict(SMALL), tmp_path, backend="local", workers=2)
    assert (outcome.ran, outcome.failed) == (8, 0)
    pool = load_results(tmp_path)
    pd.testing.assert_frame_equal(deterministic(pool), deterministic(sequential_table))
    assert pool["worker"].nunique() >= 1
    csv = pd.read_csv(tmp_path / "results.csv")
    assert list(csv["run_id"]) == list(pool["run_id"])
    assert csv["dsr"].tolist() == pytest.approx(pool["dsr"].tolist(), nan_ok=True)


class Interrupt(Exception):
    pass


# The process-pool variants start worker processes (10-20 s on two cores): they run in the slow suite.
@pytest.mark.parametrize("backend", ["sequential", pytest.param("local", marks=pytest.mark.slow)])
def test_resume_after_interruption_skips_finished_runs(
    tmp_path: Path, backend: str, sequential_table: pd.DataFrame
) -> None:
    spec = SweepSpec.from_dict(SMALL)
    seen: list[str] = []

    def stop_after_three(row: dict[str, Any]) -> None:
        seen.append(row["run_id"])
        if len(seen) == 3:
            raise Interrupt

    with pytest.raises(Interrupt):
        run_sweep(spec, tmp_path, backend=backend, workers=2, on_result=stop_after_three)
    recorded = set(ResultsStore(tmp_path).finished())
    assert recorded == set(seen)  # each result was on disk before the next one was handled
    partial = load_results(tmp_path)  # the table was consolidated on the way out
    assert set(partial["run_id"]) == recorded

    again: list[str] = []
    outcome = run_sweep(spec, tmp_path, backend=backend, workers=2, on_result=lambda r: again.append(r["run_id"]))
    assert outcome.skipped == 3 and outcome.ran == 5
    assert not set(again) & recorded
    pd.testing.assert_frame_equal(deterministic(load_results(tmp_path)), deterministic(sequential_table))
    assert not list(tmp_path.rglob("*.tmp"))


@pytest.mark.slow  # kills and restarts a whole sweep process (about 17 s on two cores)
def test_resume_after_the_process_is_killed(tmp_path: Path, sequential_table: pd.DataFrame) -> None:
    """A sweep process SIGKILLed mid-run: finished runs are kept intact and not run again."""
    counter = tmp_path / "kill-counter"
    counter.write_text("2")  # the third run kills the whole (sequential) sweep process
    config = tmp_path / "sweep.yaml"
    config.write_text(
        json.dumps(
            {
                **SMALL,
                "policies": [{"name": "sweep-test-flaky", "options": {"kill_after": str(counter)}}],
                "imports": [FLAKY],
            }
        )
    )
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "hetgym.cli", "sweep", str(config), "--out", str(out), "--backend", "sequential"]
    first = subprocess.run([*cmd, "--no-progress"], cwd=ROOT, capture_output=True, text=True)
    assert first.returncode == -9, first.stderr
    files = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (out / "runs").glob("*.json")}
    assert len(files) == 2
    second = subprocess.run([*cmd, "--no-progress"], cwd=ROOT, capture_output=True, text=True)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "resuming: 2 of 4 runs already done, 2 to run" in second.stdout
    for name, (data, mtime) in files.items():
        path = out / "runs" / name
        assert path.read_bytes() == data and path.stat().st_mtime_ns == mtime
    df = load_results(out)
    assert len(df) == 4 and (df["status"] == "ok").all()
    # The flaky policy is FIFO when it does not kill: the same metrics as FIFO in the reference table.
    keys = ["seed", "workload.target_utilisation"]
    fifo = sequential_table[sequential_table["policy"] == "fifo"].set_index(keys).sort_index()
    got = df.set_index(keys).sort_index()
    for metric in ("dsr", "jct_mean_s", "makespan_s", "num_reconfigs"):
        assert got[metric].tolist() == fifo[metric].tolist()


@pytest.mark.parametrize("backend", ["sequential", pytest.param("local", marks=pytest.mark.slow)])
def test_a_failing_configuration_is_recorded_and_the_rest_run(tmp_path: Path, backend: str) -> None:
    spec = SweepSpec.from_dict(
        {
            **SMALL,
            "loads": [0.7],
            "policies": ["fifo", {"name": "sweep-test-flaky", "grid": {"fail": [False, True]}}],
            "imports": [FLAKY],
        }
    )
    outcome = run_sweep(spec, tmp_path, backend=backend, workers=2)
    assert (outcome.total, outcome.failed) == (6, 2)
    df = load_results(tmp_path).set_index("policy")
    bad = df.loc["sweep-test-flaky[fail=true]"]
    assert (bad["status"] == "failed").all()
    assert bad["error"].str.contains("RuntimeError: deliberate failure of this configuration").all()
    assert bad["traceback"].str.contains("in schedule").all()
    assert bad["seed"].tolist() == [0, 1]  # the configuration columns are kept for failed runs
    good = df.loc[["fifo", "sweep-test-flaky[fail=false]"]]
    assert (good["status"] == "ok").all() and good["dsr"].notna().all()
    # A resume does not retry failures unless asked.
    assert run_sweep(spec, tmp_path, backend="sequential").ran == 0
    assert run_sweep(spec, tmp_path, backend="sequential", retry_failed=True).ran == 2


@pytest.mark.slow  # a worker process is killed and the pool restarted (7-10 s on two cores)
def test_a_worker_that_dies_fails_only_its_own_run(tmp_path: Path) -> None:
    spec = SweepSpec.from_dict(
        {
            **SMALL,
            "loads": [0.7],
            "seeds": [0],
            "policies": ["fifo", "srtf", {"name": "sweep-test-flaky", "options": {"die": True}}],
            "imports": [FLAKY],
        }
    )
    outcome = run_sweep(spec, tmp_path, backend="local", workers=2)
    df = load_results(tmp_path).set_index("policy")
    assert outcome.failed == 1
    assert df.loc["sweep-test-flaky", "status"] == "failed"
    assert "WorkerDied" in df.loc["sweep-test-flaky", "error"]
    assert (df.loc[["fifo", "srtf"], "status"] == "ok").all()


def test_invalid_grid_writes_nothing(tmp_path: Path) -> None:
    from hetgym.sweep import SweepConfigError

    out = tmp_path / "out"
    with pytest.raises(SweepConfigError, match="did you mean 'fifo'"):
        run_sweep(SweepSpec.from_dict({**SMALL, "policies": ["fifo", "fifoo"]}), out)
    assert not out.exists()


def test_store_lock_refuses_a_second_writer(tmp_path: Path) -> None:
    from hetgym.sim.errors import HetgymError

    store = ResultsStore(tmp_path)
    with store.lock(), pytest.raises(HetgymError, match="another sweep is writing"), ResultsStore(tmp_path).lock():
        pass


def test_unreadable_result_files_are_rerun(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    run = SweepSpec.from_dict(SMALL).expand()[0]
    store.record(failed_row(run, "x"))
    (tmp_path / "runs" / "0123456789abcdef.json").write_text("{not json")
    assert set(store.finished()) == {run.run_id}


def test_run_spec_pickles_with_its_id() -> None:
    import pickle

    run = SweepSpec.from_dict(SMALL).expand()[0]
    clone = pickle.loads(pickle.dumps(run))
    assert isinstance(clone, RunSpec) and clone.run_id == run.run_id and clone == run


def _thread_caps() -> tuple[str | None, int]:
    from threadpoolctl import threadpool_info

    return os.environ.get("OMP_NUM_THREADS"), max((p["num_threads"] for p in threadpool_info()), default=1)


def test_pool_workers_are_single_threaded_and_the_driver_env_is_restored() -> None:
    pytest.importorskip("threadpoolctl")
    from hetgym.sweep.runner import THREAD_ENV_VARS, _new_pool, _single_thread_env

    before = {v: os.environ.get(v) for v in THREAD_ENV_VARS}
    with _single_thread_env():
        pool = _new_pool(1)
        try:
            env, threads = pool.submit(_thread_caps).result()
        finally:
            pool.shutdown()
    assert env == "1" and threads == 1
    assert {v: os.environ.get(v) for v in THREAD_ENV_VARS} == before


def test_ray_backend_without_ray_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from hetgym.sim.errors import HetgymError

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails as if it were not installed
    with pytest.raises(HetgymError, match=r"pip install 'hetgym\[ray\]'"):
        run_sweep(SweepSpec.from_dict(SMALL), tmp_path / "out", backend="ray", workers=2)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_ctrl_c_stop_cleanly_with_a_consolidated_table(tmp_path: Path, signum: int) -> None:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "hetgym.cli", "sweep", "--policies", "fifo", "--scenarios", "tiny", "--seeds", "200"]
    cmd += ["--set", "workload.num_jobs=8", "--out", str(out), "--backend", "sequential", "--no-progress"]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as in a terminal
    )
    try:
        deadline = time.monotonic() + 120
        while len(list((out / "runs").glob("*.json"))) < 3:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.stdout else ""
            time.sleep(0.05)
        proc.send_signal(signum)
        text, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, text
    assert "interrupted" in text
    files = set(ResultsStore(out).finished())
    assert 3 <= len(files) < 200
    assert set(pd.read_csv(out / "results.csv")["run_id"]) == files
    assert not list(out.rglob("*.tmp"))


def test_table_with_a_knob_of_mixed_types_still_writes_parquet(tmp_path: Path) -> None:
    rows = [
        {"run_id": "a", "status": "ok", "policy.level": 3, "dsr": 0.5},
        {"run_id": "b", "status": "ok", "policy.level": "high", "dsr": 0.7},
        {"run_id": "c", "status": "failed", "policy.level": None, "dsr": None, "error": "x"},
    ]
    ResultsStore(tmp_path).write_table(rows)
    df = pd.read_parquet(tmp_path / "results.parquet")
    assert df["policy.level"].tolist()[:2] == ["3", "high"] and pd.isna(df["policy.level"][2])
    assert df["run_id"].tolist() == ["a", "b", "c"] and df.columns[:2].tolist() == ["run_id", "status"]
    assert pd.read_csv(tmp_path / "results.csv")["dsr"].tolist()[:2] == [0.5, 0.7]
