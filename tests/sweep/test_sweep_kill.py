"""A sweep killed with SIGKILL leaves no process behind (local pool, local Ray), and resuming it loses and repeats
no run."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from hetgym.sweep import load_results
from hetgym.sweep.reaper import SESSION_NAME, Reaper, _in_session, start_reaper

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


def holding_files_under(dir_test: Callable[[str], bool]) -> set[int]:
    """The processes with an open file in a directory for which ``dir_test(name)`` holds."""
    out = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            links = [os.readlink(fd) for fd in (entry / "fd").iterdir()]
        except OSError:
            continue
        if any(dir_test(part) for link in links for part in link.split("/")[:-1]):
            out.add(int(entry.name))
    return out


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


def test_a_path_is_in_the_session_reported_or_else_in_one_named_after_the_driver_since_the_reaper_started() -> None:
    started = dt.datetime(2026, 1, 2, 3, 4, 5)
    ours = "/tmp/ray/session_2026-01-02_03-04-05_000001_4242"
    assert _in_session(ours + "/logs/raylet.out", ours, 4242, started)
    assert not _in_session(ours + "_9/logs/raylet.out", ours, 4242, started)  # a sibling, not inside
    assert not _in_session("/tmp/ray/session_2026-01-02_03-04-05_000001_4243/x", ours, 4242, started)
    # The driver died before it could report its session: Ray's naming identifies it.
    assert _in_session(ours + "/logs/raylet.out", None, 4242, started)
    assert not _in_session(ours + "/logs/raylet.out", None, 4243, started)  # another driver's
    older = "/tmp/ray/session_2026-01-02_03-04-04_999999_4242/logs/raylet.out"  # an earlier process with this pid
    assert not _in_session(older, None, 4242, started)
    assert not _in_session("/tmp/ray/session_latest/logs/raylet.out", None, 4242, started)
    assert SESSION_NAME.fullmatch(Path(ours).name)


_HOLD = "import sys, time; f = open(sys.argv[1], 'w'); print('open', flush=True); time.sleep(120)"

_DRIVER = """
import subprocess, sys, time
from hetgym.sweep.reaper import start_reaper
reaper = start_reaper()
hold = "import sys, time; f = open(sys.argv[1], 'w'); print('open', flush=True); time.sleep(120)"
# Stands for a Ray process: outside the driver's process tree, a log file open in the session directory.
member = subprocess.Popen([sys.executable, "-c", hold, sys.argv[1] + "/raylet.out"], stdout=subprocess.PIPE,
                          start_new_session=True, text=True)
member.stdout.readline()
reaper.watch_session(sys.argv[1])
print("member", member.pid, "reaper", reaper.proc.pid, flush=True)
time.sleep(120)
"""


def _holder(path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "open\n"
    return proc


def test_the_reaper_kills_the_session_of_a_driver_killed_with_sigkill_and_nothing_else(tmp_path: Path) -> None:
    session = tmp_path / "session"
    other = tmp_path / "session-of-another-cluster"
    session.mkdir()
    other.mkdir()
    bystander = _holder(other / "raylet.out")  # a process of a Ray cluster this driver did not start
    driver = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, str(session)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    member = reaper = None
    try:
        assert driver.stdout is not None
        words = driver.stdout.readline().split()
        member, reaper = int(words[1]), int(words[3])
        assert alive({member, reaper})
        driver.kill()
        driver.wait(timeout=10)
        killed_at = time.monotonic()
        while alive({member, reaper}) and time.monotonic() - killed_at < 10:
            time.sleep(0.05)
        assert not alive({member, reaper}), "the session's process or the reaper outlived the driver by 10 s"
        assert bystander.poll() is None
    finally:
        for pid in alive({p for p in (member, reaper) if p is not None}):
            os.kill(pid, signal.SIGKILL)
        for proc in (driver, bystander):
            proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


def test_a_reaper_stopped_by_its_driver_exits_at_once_and_leaves_other_processes_alone(tmp_path: Path) -> None:
    holder = _holder(tmp_path / "raylet.out")
    reaper = start_reaper()
    assert isinstance(reaper, Reaper)
    try:
        reaper.watch_session(str(tmp_path / "session"))
        began = time.monotonic()
        reaper.stop()
        assert reaper.proc.returncode == 0
        assert time.monotonic() - began < 5
        assert holder.poll() is None
    finally:
        reaper.proc.kill()
        reaper.proc.wait()
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="Ray is not installed (pip install 'hetgym[ray]'); the Ray backend is optional",
)
def test_sigkill_of_a_sweep_on_its_own_local_ray_leaves_no_ray_process_and_resume_repeats_nothing(
    tmp_path: Path,
) -> None:
    config = tmp_path / "sweep.yaml"
    config.write_text(
        json.dumps(
            {
                "name": "killed-on-ray",
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
        [*cmd, "--backend", "ray", "--workers", "2"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )

    def of_this_session(name: str) -> bool:  # Ray names a session after the pid of the process that started it
        return name.startswith("session_") and name.endswith(f"_{proc.pid}")

    session: set[int] = set()
    try:
        deadline = time.monotonic() + 180
        while not (out / "runs").is_dir() or not list((out / "runs").glob("*.json")):
            assert proc.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline, "no run finished in 180 s"
            time.sleep(0.1)
        tree = descendants(proc.pid)
        session = tree | holding_files_under(of_this_session)
        assert len(session) >= 6  # at least the GCS, the raylet, two agents, two workers and the reaper
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        killed_at = time.monotonic()
        while alive(session) and time.monotonic() - killed_at < 10:
            time.sleep(0.1)
        left = alive(session) | holding_files_under(of_this_session)
        assert not left, f"still running 10 s after the sweep was killed: {sorted(left)}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in alive(session) | holding_files_under(of_this_session):  # only this sweep's Ray session
            os.kill(pid, signal.SIGKILL)
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
