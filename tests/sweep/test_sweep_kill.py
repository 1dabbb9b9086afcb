"""A local sweep killed with SIGKILL leaves no process behind, and resuming it loses and repeats no run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hetgym.sweep import load_results

ROOT = Path(__file__).resolve().parents[2]
FLAKY = str(Path(__file__).with_name("sweep_policies.py"))

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of a process, or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the command name may hold spaces and parentheses
    return int(fields[1]), fields[0]


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` in the process tree."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st is not None:
                children.setdefault(st[0], []).append(int(entry.name))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


def alive(pids: set[int]) -> set[int]:
    """The processes of ``pids`` still running (a zombie has ended)."""
    out = set()
    for pid in pids:
        st = _stat(pid)
        if st is not None and st[1] not in ("Z", "X"):
            out.add(pid)
    return out


_PARENT = """
import os, subprocess, sys, time
code = (
    "import sys, time; from hetgym.sweep.runner import _die_with_parent; "
    "print('armed', _die_with_parent(int(sys.argv[1])), flush=True); time.sleep(120)"
)
child = subprocess.Popen([sys.executable, "-c", code, str(os.getpid())])
print("child", child.pid, flush=True)
time.sleep(120)
"""


def test_a_process_armed_with_die_with_parent_ends_when_its_parent_is_killed() -> None:
    parent = subprocess.Popen([sys.executable, "-c", _PARENT], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        lines = dict(parent.stdout.readline().split() for _ in range(2))
        assert lines["armed"] == ("prctl" if sys.platform.startswith("linux") else "poll")
        child = int(lines["child"])
        assert alive({child})
        parent.kill()
        parent.wait(timeout=10)
        killed_at = time.monotonic()
        while alive({child}) and time.monotonic() - killed_at < 5:
            time.sleep(0.05)
        assert not alive({child})
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


@pytest.mark.slow
def test_sigkill_of_a_local_sweep_leaves_no_process_and_resume_repeats_nothing(tmp_path: Path) -> None:
    config = tmp_path / "sweep.yaml"
    config.write_text(
        json.dumps(
            {
                "name": "killed",
                "policies": [{"name": "sweep-test-flaky", "options": {"sleep_s": 1.5}}],
                "scenarios": ["tiny"],
                "loads": [0.5, 0.9],
                "seeds": [0, 1, 2, 3],
                "workload": {"num_jobs": 6},
                "imports": [FLAKY],
            }
        )
    )
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "hetgym.cli", "sweep", str(config), "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(
        [*cmd, "--backend", "local", "--workers", "2"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not list((out / "runs").glob("*.json")):  # wait until the pool has delivered a run
            assert proc.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline, "no run finished in 120 s"
            time.sleep(0.1)
        tree = descendants(proc.pid)
        assert len(tree) >= 3  # two workers and the resource tracker
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        killed_at = time.monotonic()
        while alive(tree) and time.monotonic() - killed_at < 10:
            time.sleep(0.1)
        left = alive(tree)
        assert not left, f"still running 10 s after the sweep was killed: {sorted(left)}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    before = {p.name: p.read_bytes() for p in (out / "runs").glob("*.json")}
    assert 1 <= len(before) < 8
    resumed = subprocess.run([*cmd, "--backend", "local", "--workers", "2"], cwd=ROOT, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"resuming: {len(before)} of 8 runs already done, {8 - len(before)} to run" in resumed.stdout
    for name, data in before.items():
        assert (out / "runs" / name).read_bytes() == data  # finished runs were not run again
    df = load_results(out)
    assert len(df) == 8 and df["run_id"].is_unique and (df["status"] == "ok").all()
    assert len(list((out / "runs").glob("*.json"))) == 8
