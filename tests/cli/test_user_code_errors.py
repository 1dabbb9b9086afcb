"""No command prints a traceback when code of the user's raises, or when a path the user gave cannot be written.

Every command that runs a user's code (an ``--import`` file or module, a custom policy's constructor given
``-P`` knobs, its ``schedule`` during a run, a plug-in command or policy from an entry point) reports one
line naming the file, the line and the exception, and exits non-zero; ``--debug`` (before or after the
command's name) and ``HETGYM_DEBUG=1`` show the whole traceback instead. A write that fails names the path
the user gave, never the temporary file it goes through, and leaves nothing behind.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import pytest

import hetgym.cli
import hetgym.sim.policy
from hetgym.atomic import atomic_write
from hetgym.cli import main

TRACEBACK = "Traceback (most recent call last)"
REPO = Path(__file__).resolve().parents[2]

#: User files: (name, text); the cases below name the line each fails on.
SYNTAX_ERROR = ("syntax_bad.py", "x = 1\ndef f(:\n    pass\n")
RAISES = ("raises_at_import.py", "import math\n\nVALUE = math.sqrt(-1)\n")
VALUE_ERROR = ("value_error.py", "# a user's own check\nraise ValueError('my bad value')\n")
EXITS = ("exits.py", "import sys\n\nsys.exit(3)\n")
POLICIES = (
    "my_policies.py",
    '''"""Two custom policies that fail."""

from hetgym.sim.policy import Policy, register_policy


@register_policy("test-bad-schedule")
class BadSchedule(Policy):
    """Raises in schedule()."""

    name = "test-bad-schedule"

    def reset(self, cluster, *, rng):
        pass

    def schedule(self, view):
        return 1 / 0


@register_policy("test-bad-init")
class BadInit(Policy):
    """Raises in its constructor for a knob value it refuses."""

    name = "test-bad-init"

    def __init__(self, level: int = 1):
        if level > 1:
            raise RuntimeError(f"level {level} is not supported")
        self.level = level

    def reset(self, cluster, *, rng):
        pass

    def schedule(self, view):
        raise AssertionError("never run")
''',
)
SCHEDULE_LINE = POLICIES[1].splitlines().index("        return 1 / 0") + 1
INIT_LINE = POLICIES[1].splitlines().index('            raise RuntimeError(f"level {level} is not supported")') + 1

SMALL = ["--scenario", "tiny", "--no-progress"]
SWEEP = ["sweep", "--name", "t", "--scenarios", "tiny", "--seeds", "1", "--no-progress", "--backend", "sequential"]

#: (id, the user file, the command line, the line named, the exception named).
CASES = [
    ("simulate-import-syntax", SYNTAX_ERROR, ["simulate", *SMALL, "--policy", "fifo"], 2, "SyntaxError"),
    ("simulate-import-raises", RAISES, ["simulate", *SMALL, "--policy", "fifo"], 3, "ValueError: math domain error"),
    ("simulate-import-valueerror", VALUE_ERROR, ["simulate", *SMALL, "--policy", "fifo"], 2, "ValueError: my bad"),
    ("simulate-import-exits", EXITS, ["simulate", *SMALL, "--policy", "fifo"], 3, "sys.exit(3)"),
    (
        "compare-import-syntax",
        SYNTAX_ERROR,
        ["compare", *SMALL, "--policies", "fifo", "--seeds", "0"],
        2,
        "SyntaxError",
    ),
    (
        "sweep-import-raises",
        RAISES,
        [*SWEEP, "--policies", "fifo"],
        3,
        "ValueError",
    ),
    (
        "simulate-schedule-raises",
        POLICIES,
        ["simulate", *SMALL, "--policy", "test-bad-schedule"],
        SCHEDULE_LINE,
        "ZeroDivisionError: division by zero",
    ),
    (
        "compare-schedule-raises",
        POLICIES,
        ["compare", *SMALL, "--policies", "fifo,test-bad-schedule", "--seeds", "0", "--no-plots"],
        SCHEDULE_LINE,
        "ZeroDivisionError: division by zero",
    ),
    (
        "simulate-knob-init-raises",
        POLICIES,
        ["simulate", *SMALL, "--policy", "test-bad-init", "-P", "level=2"],
        INIT_LINE,
        "RuntimeError: level 2 is not supported",
    ),
    (
        "compare-knob-init-raises",
        POLICIES,
        ["compare", *SMALL, "--policies", "test-bad-init", "-P", "test-bad-init:level=2", "--seeds", "0"],
        INIT_LINE,
        "RuntimeError: level 2 is not supported",
    ),
    (
        "sweep-knob-init-raises",
        POLICIES,
        [*SWEEP, "--policies", "test-bad-init", "-P", "test-bad-init:level=2"],
        INIT_LINE,
        "RuntimeError: level 2 is not supported",
    ),
]


def _hetgym(argv: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m hetgym.cli ARGV`` in ``cwd``, this checkout's code first on the path."""
    environ = {k: v for k, v in os.environ.items() if k != "HETGYM_DEBUG"}
    environ.update(PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]), **env)
    return subprocess.run(
        [sys.executable, "-m", "hetgym.cli", *argv], cwd=cwd, env=environ, capture_output=True, text=True, timeout=120
    )


def _write(folder: Path, user_file: tuple[str, str]) -> str:
    name, text = user_file
    (folder / name).write_text(text)
    return name


@pytest.mark.parametrize(("user_file", "argv", "line", "exception"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_user_code_errors_are_one_line_naming_file_line_and_exception(
    tmp_path: Path,
    request: pytest.FixtureRequest,
    user_file: tuple[str, str],
    argv: list[str],
    line: int,
    exception: str,
) -> None:
    name = _write(tmp_path, user_file)
    out = tmp_path / "out"
    done = _hetgym([*argv, "--import", name, "--out", str(out)], tmp_path)
    text = done.stdout + done.stderr
    assert done.returncode != 0, text
    assert TRACEBACK not in text
    assert f"{name}, line {line}" in done.stderr, done.stderr
    assert exception in done.stderr, done.stderr
    assert "--debug" in done.stderr and "HETGYM_DEBUG=1" in done.stderr  # how to see more
    if "compare-schedule" not in request.node.name:  # compare may keep the runs that did not fail
        assert not out.exists()  # nothing written, not even a temporary folder
        assert sorted(p.name for p in tmp_path.iterdir() if p.name != "__pycache__") == [name]


@pytest.mark.parametrize("where", ["before", "after", "env"])
def test_debug_shows_the_whole_traceback_down_to_the_users_line(tmp_path: Path, where: str) -> None:
    name = _write(tmp_path, POLICIES)
    argv = ["simulate", *SMALL, "--policy", "test-bad-schedule", "--import", name]
    if where == "before":
        done = _hetgym(["--debug", *argv], tmp_path)
    elif where == "after":
        done = _hetgym([*argv, "--debug"], tmp_path)
    else:
        done = _hetgym(argv, tmp_path, HETGYM_DEBUG="1")
    assert done.returncode != 0
    assert TRACEBACK in done.stderr
    assert f'{name}", line {SCHEDULE_LINE}, in schedule' in done.stderr
    assert done.stderr.rstrip().endswith("ZeroDivisionError: division by zero")


def test_debug_shows_an_import_files_own_traceback_chained(tmp_path: Path) -> None:
    name = _write(tmp_path, RAISES)
    done = _hetgym(["simulate", *SMALL, "--policy", "fifo", "--import", name], tmp_path, HETGYM_DEBUG="yes")
    assert f'{name}", line 3, in <module>' in done.stderr
    assert "The above exception was the direct cause of the following exception" in done.stderr
    assert "UserCodeError: imports: raises_at_import.py failed: ValueError: math domain error" in done.stderr


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc, where no file can be created")
@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (
            ["trace", "sample", "--recipe", "elasticflow", "--num-jobs", "5", "--out", "/proc/hetgym-x.csv"],
            "'/proc/hetgym-x.csv'",
        ),
        (["simulate", *SMALL, "--policy", "fifo", "--out", "/proc/hetgym-results"], "--out /proc/hetgym-results: "),
    ],
    ids=["trace-sample-file", "simulate-folder"],
)
def test_a_write_where_no_file_can_be_created_names_the_users_path(tmp_path: Path, argv: list[str], named: str) -> None:
    done = _hetgym(argv, tmp_path)
    text = done.stdout + done.stderr
    assert done.returncode == 2, text
    assert TRACEBACK not in text
    assert named in done.stderr and "No such file or directory" in done.stderr, done.stderr
    assert ".tmp" not in done.stderr  # not the temporary file's name


def test_a_failed_write_names_the_path_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "table.csv"

    def full_disk(tmp: Path) -> None:
        tmp.write_text("half")
        raise OSError(28, "No space left on device", str(tmp))

    with pytest.raises(OSError, match="No space left on device") as caught:
        atomic_write(target, full_disk)
    assert caught.value.filename == str(target) and caught.value.errno == 28
    assert list(tmp_path.iterdir()) == []

    def reads_a_missing_input(tmp: Path) -> None:
        raise FileNotFoundError(2, "No such file or directory", str(tmp_path / "input.csv"))

    with pytest.raises(FileNotFoundError) as missing:  # an error about another file keeps its path
        atomic_write(target, reads_a_missing_input)
    assert missing.value.filename == str(tmp_path / "input.csv")
    assert list(tmp_path.iterdir()) == []


def _plugins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, source: str) -> None:
    (tmp_path / "user_plugin.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "user_plugin", raising=False)
    plugin = [EntryPoint("mine", "user_plugin", "hetgym.commands")]
    monkeypatch.setattr(hetgym.cli, "entry_points", lambda group: plugin if group == "hetgym.commands" else [])


COMMAND_PLUGINS = {
    "raises-at-import": ("import os\n\nos.environ['HOME'] + 1\n", 3, "TypeError"),
    "register-raises": ("def register(sub):\n    sub.add_parser('mine')\n    raise RuntimeError('half done')\n", 3, ""),
    "command-raises": (
        "def register(sub):\n    sub.add_parser('mine').set_defaults(func=run)\n\n\n"
        "def run(args):\n    return {}['missing']\n",
        6,
        "KeyError",
    ),
}


@pytest.mark.parametrize("case", sorted(COMMAND_PLUGINS))
def test_a_plugin_command_that_raises_is_named_with_its_file_and_line(
    case: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, line, exception = COMMAND_PLUGINS[case]
    _plugins(monkeypatch, tmp_path, source)
    monkeypatch.delenv("HETGYM_DEBUG", raising=False)
    assert main(["mine"]) != 0
    err = capsys.readouterr().err
    assert f"user_plugin.py, line {line}" in err and exception in err, err
    if case != "command-raises":  # the plug-in is named, and the other commands still work
        assert "unknown command 'mine'; the plug-in commands that could not be loaded: mine (user_plugin)" in err
        assert main(["presets"]) == 0


def test_a_plugin_commands_error_surfaces_with_the_debug_switch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _plugins(monkeypatch, tmp_path, COMMAND_PLUGINS["command-raises"][0])
    monkeypatch.setenv("HETGYM_DEBUG", "1")
    with pytest.raises(KeyError, match="missing"):  # raised, for Python to print its traceback
        main(["mine"])


def test_a_policy_plugin_that_raises_is_named_with_its_entry_point_file_and_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "user_policies.py").write_text("from hetgym.sim import get_cluster\n\nget_cluster('no-such-preset')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "user_policies", raising=False)
    found = [*entry_points(group="hetgym.policies"), EntryPoint("mine", "user_policies", "hetgym.policies")]
    monkeypatch.setattr(hetgym.sim.policy, "entry_points", lambda group: found)
    monkeypatch.setattr(hetgym.sim.policy, "_LOADED", False)
    monkeypatch.delenv("HETGYM_DEBUG", raising=False)
    assert main(["policies"]) == 1
    err = capsys.readouterr().err
    assert "policy plug-in 'mine' (user_policies" in err
    assert "user_policies.py, line 3" in err, err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc, where no file can be created")
def test_debug_is_accepted_after_a_nested_subcommand_too(tmp_path: Path) -> None:
    argv = ["trace", "sample", "--recipe", "elasticflow", "--num-jobs", "5", "--out", "/proc/hetgym-x.csv", "--debug"]
    done = _hetgym(argv, tmp_path)
    assert TRACEBACK in done.stderr
    assert done.stderr.rstrip().endswith("FileNotFoundError: [Errno 2] No such file or directory: '/proc/hetgym-x.csv'")
