"""Stalled runs, absurd work and jobs that can never fit, through ``hetgym simulate`` and ``compare``:
a message on screen and a non-zero exit, never a hang or a silent partial answer."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hetgym.cli import main
from hetgym.sim.allocation import Allocation
from hetgym.sim.policy import POLICIES, Policy, register_policy
from hetgym.sim.view import ClusterView

HEADER = "job_id,submit_s,job_type,batch_size,total_iters,num_gpus\n"


@pytest.fixture
def idle_policy() -> Iterator[str]:
    """A registered policy that never gives any job GPUs."""

    @register_policy("test-idle")
    class Idle(Policy):
        name = "test-idle"

        def schedule(self, view: ClusterView) -> Allocation:
            return Allocation()

    yield "test-idle"
    POLICIES.unregister("test-idle")


def _trace(tmp_path: Path, rows: str) -> str:
    path = tmp_path / "trace.csv"
    path.write_text(HEADER + rows)
    return str(path)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    started = time.perf_counter()
    code = main(argv)
    assert time.perf_counter() - started < 60.0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out, captured.err


def test_simulate_reports_a_stall_and_exits_1(idle_policy: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["simulate", "--policy", idle_policy, "--scenario", "tiny", "--no-progress"], capsys)
    assert code == 1
    assert "the run stalled: no job made progress in simulated work" in " ".join(out.split())
    assert "12 of 12 jobs did not finish" in out


def test_compare_reports_a_stall_and_exits_1(
    idle_policy: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["compare", "--policies", f"fifo,{idle_policy}", "--seeds", "0", "--scenario", "tiny"]
    code, out, _ = _run([*argv, "--no-progress", "--no-plots", "--out", str(tmp_path / "o")], capsys)
    text = " ".join(out.split())
    assert code == 1
    assert f"{idle_policy} seed 0: the run stalled" in text and "fifo seed 0" not in text


def test_compare_writes_the_finished_runs_and_lists_the_stalled_ones(
    idle_policy: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import json

    import pandas as pd

    out_dir = tmp_path / "o"
    argv = ["compare", "--policies", f"fifo,{idle_policy}", "--seeds", "0,1", "--scenario", "tiny"]
    code, out, _ = _run([*argv, "--no-progress", "--out", str(out_dir)], capsys)
    text = " ".join(out.split())
    assert code == 1  # still a failure of the command
    for seed in (0, 1):
        assert f"{idle_policy} seed {seed}: the run stalled" in text
    assert (
        "2 of 4 runs are not in the results (2 stalled or left jobs unfinished): listed above and in "
        f"{out_dir}/failed_runs.csv" in text
    )
    # The finished runs' results and figures are written, and only theirs.
    runs = pd.read_csv(out_dir / "runs.csv")
    assert runs["policy"].tolist() == ["fifo", "fifo"] and runs["seed"].tolist() == [0, 1]
    assert set(pd.read_csv(out_dir / "jobs.csv.gz")["policy"]) == {"fifo"}
    assert pd.read_csv(out_dir / "summary.csv")["policy"].tolist() == ["fifo"]
    assert sorted(p.name for p in out_dir.glob("*.png"))  # the figures of the runs that finished
    failed = pd.read_csv(out_dir / "failed_runs.csv")
    assert failed["policy"].tolist() == [idle_policy] * 2 and failed["seed"].tolist() == [0, 1]
    assert failed["outcome"].tolist() == ["left out"] * 2
    assert all(p.startswith("the run stalled: no job made progress") for p in failed["problem"])
    summary = json.loads((out_dir / "summary.json").read_text())
    assert sorted(summary["left_out"]) == [f"{idle_policy}@0", f"{idle_policy}@1"]
    assert list(summary["metrics"]) == ["fifo"]


def test_compare_with_every_run_stalled_writes_nothing(
    idle_policy: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["compare", "--policies", idle_policy, "--seeds", "0", "--scenario", "tiny", "--no-plots"]
    code, out, _ = _run([*argv, "--no-progress", "--out", str(tmp_path / "o")], capsys)
    assert code == 1 and "all 1 runs stalled or left jobs unfinished (listed above); no results written" in " ".join(
        out.split()
    )
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("policy", ["fifo", "tiresias"])
@pytest.mark.parametrize("command", ["simulate", "compare"])
def test_absurd_work_in_a_trace_is_refused(
    policy: str, command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = _trace(tmp_path, "0,0,resnet50,64,1000,1\n1,10,resnet50,64,1e300,1\n2,20,resnet50,64,500,2\n")
    chosen = ["--policy", policy] if command == "simulate" else ["--policies", policy, "--seeds", "0"]
    out_dir = tmp_path / "o"
    argv = [command, *chosen, "--trace", trace, "--no-progress", "--out", str(out_dir)]
    code, _, err = _run(argv, capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "job 1: field 'total_iters' is 1e+300" in lines[0]
    assert "fix total_iters in the trace" in lines[0]
    assert not out_dir.exists()


def test_a_job_larger_than_the_cluster_is_refused_or_reported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = _trace(tmp_path, "0,0,resnet50,64,1000,1\n1,10,resnet50,64,1000,65\n2,20,resnet50,64,500,2\n")
    base = ["compare", "--policies", "fifo", "--seeds", "0", "--trace", trace, "--cluster", "default", "--no-plots"]
    code, _, err = _run([*base, "--no-progress", "--out", str(tmp_path / "a")], capsys)
    assert code == 2 and "job 1: field 'num_gpus' is 65 but cluster 'default' has 64 GPUs" in err
    assert "--oversize-jobs reject" in err and not (tmp_path / "a").exists()
    # Admitted on request: the job is rejected at arrival and the screen says so; the others complete.
    code, out, _ = _run([*base, "--no-progress", "--out", str(tmp_path / "b"), "--oversize-jobs", "reject"], capsys)
    assert code == 0 and "fifo seed 0: 1 jobs can never fit the cluster and were rejected at arrival" in out


def test_unfinished_jobs_fail_unless_a_time_limit_was_asked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = ["simulate", "--policy", "fifo", "--scenario", "tiny", "--no-progress", "--max-time-s", "3600"]
    code, out, _ = _run(argv, capsys)
    assert code == 0 and "did not finish" not in out
    code, out, _ = _run(["simulate", "--policy", "fifo", "--scenario", "tiny", "--no-progress"], capsys)
    assert code == 0 and "did not finish" not in out and "stalled" not in out


def test_a_sweep_with_a_stalled_run_says_so_and_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    module = tmp_path / "idle_policy.py"
    module.write_text(
        "from hetgym.sim.allocation import Allocation\n"
        "from hetgym.sim.policy import Policy, POLICIES, register_policy\n"
        "if 'test-sweep-idle' not in POLICIES.names():\n"
        "    @register_policy('test-sweep-idle')\n"
        "    class Idle(Policy):\n"
        "        name = 'test-sweep-idle'\n"
        "        def schedule(self, view):\n"
        "            return Allocation()\n"
    )
    argv = ["sweep", "--scenarios", "tiny", "--policies", "fifo,test-sweep-idle", "--seeds", "1"]
    argv += ["--backend", "sequential", "--no-progress", "--import", str(module), "--out", str(tmp_path / "sw")]
    try:
        code, out, _ = _run(argv, capsys)
    finally:
        POLICIES.unregister("test-sweep-idle")
    text = " ".join(out.split())
    assert code == 1
    assert "stalled: test-sweep-idle seed 0: the simulator's watchdog stopped the run" in text
    assert "1 runs stalled" in text and "stalled: fifo" not in text
