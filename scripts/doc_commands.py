"""Run every ``hetgym ...`` command line of the README and ``docs/*.md``, at small sizes, and report each.

A documented command that fails is a bug a new user meets first; this is the guard against it
(``python scripts/check_docs.py --commands`` runs it, as does ``python scripts/doc_commands.py``).

What it runs: every line of a fenced code block (``bash``, ``sh``, ``shell``, ``console`` or no language)
whose command, or one of its ``&&`` / ``||`` / ``;`` / ``|`` parts, starts with ``hetgym`` (continuation
lines joined, comments dropped), in the order of the files (README.md first, then docs/*.md by name) and
of the lines. Each runs as ``python -m hetgym.cli ...`` with this checkout first on ``PYTHONPATH``, in one
temporary folder shared by all commands (so a ``hetgym train --run-name X`` provides ``runs/X`` to the
``hetgym evaluate runs/X`` after it), where the repository's ``traces/``, ``scripts/`` and ``tests/`` are
linked in for the commands that read them.

Sizes: :data:`OVERRIDES` replaces or adds the options that set how much work a command does (seeds,
steps, epochs, jobs), per subcommand; nothing else of a command is changed. ``hetgym compare`` keeps its
``--num-jobs``: some failures only show at the documented size.

Files the user supplies: a command naming a path that does not exist when it is its turn is skipped with
the reason, unless :data:`FIXTURES` provides a small stand-in (a policy file for ``--import``, a trace from
``traces/`` for ``--trace``, Gavel's smallest trace for ``hetgym gavel -t``). A ``<placeholder>`` in a path
is filled from what earlier commands wrote when :data:`PLACEHOLDERS` knows how (``<hash>``: the newest
matching results folder; ``<run>``: the newest run), else the command is skipped; so is a command that
needs a service this check does not start (:data:`NEEDS_OUTSIDE`: an existing Ray cluster).

Output: one line per command (``ok``, ``FAILED`` or ``skipped``; exit code; CPU seconds of the command and
its children; wall seconds; where the doc states it; the command as run), the end of a failed command's
output, then a summary. Exit status 1 when any command failed.

Usage::

    python scripts/doc_commands.py                    # README.md and docs/*.md
    python scripts/doc_commands.py docs/traces.md     # one doc
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Code-block languages whose lines are shell commands (``""``: a block with no language).
SHELL_LANGUAGES = frozenset({"bash", "sh", "shell", "console", ""})
#: Per command, seconds before it is stopped and counted as failed (nothing may hang).
TIMEOUT_S = 900.0
#: Repository folders linked into the workspace, read by documented commands (``traces/`` is a folder of
#: links, so a fixture written into it stays out of the repository).
LINKED = ("scripts", "tests")
#: Options whose value is a path the command writes, not one it reads.
OUTPUT_OPTIONS = frozenset({"--out", "--out-dir", "--beat-the-experts"})
#: A token that names a file: it has a folder or a file extension (and is no ``KEY=VALUE``).
PATH_LIKE = re.compile(r"^[^=:-][^=:]*(/.*|\.(py|csv|parquet|trace|gz|zip|yaml|yml|json|npz|pt))$")
PLACEHOLDER = re.compile(r"<([^<>]+)>")
SEPARATORS = frozenset({"&&", "||", ";", "|"})


@dataclass(frozen=True)
class DocCommand:
    """One ``hetgym`` command of a doc: ``doc`` (path as shown), ``line`` (1-based) and its tokens."""

    doc: str
    line: int
    tokens: tuple[str, ...]

    @property
    def text(self) -> str:
        return shlex.join(self.tokens)


# ------------------------------------------------------------------------------------------------
# Extraction


def _hetgym_parts(line: str) -> list[list[str]]:
    """The parts of a shell line that are ``hetgym`` commands (comment dropped; a placeholder's spaces
    kept inside one token as ``_``)."""
    line = PLACEHOLDER.sub(lambda m: "<" + m.group(1).replace(" ", "_") + ">", line)
    try:
        tokens = shlex.split(line, comments=True)
    except ValueError:  # an unbalanced quote: no command a user could paste either
        return []
    parts: list[list[str]] = [[]]
    for token in tokens:
        if token in SEPARATORS:
            parts.append([])
        else:
            parts[-1].append(token)
    # "hetgym compare: error: ..." is a command's output shown in a block, not a command.
    return [p for p in parts if p and p[0] == "hetgym" and not (len(p) > 1 and p[1].endswith(":"))]


def extract_commands(path: Path, root: Path = ROOT) -> list[DocCommand]:
    """Every ``hetgym`` command of ``path``'s shell code blocks, continuation lines joined."""
    lines = path.read_text().splitlines()
    try:
        shown = path.resolve().relative_to(root).as_posix()
    except ValueError:
        shown = str(path)
    found: list[DocCommand] = []
    language: str | None = None  # None: outside a block
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith("```"):
            language = stripped[3:].strip().lower() if language is None else None
            i += 1
            continue
        if language is not None and language in SHELL_LANGUAGES:
            start, text = i, lines[i]
            while text.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text.rstrip()[:-1] + " " + lines[i].strip()
            found += [DocCommand(shown, start + 1, tuple(part)) for part in _hetgym_parts(text)]
        i += 1
    return found


def documented_commands(docs: list[Path] | None = None, root: Path = ROOT) -> list[DocCommand]:
    """The commands of ``docs`` (default: README.md, then docs/*.md by name)."""
    paths = docs if docs else [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    return [command for path in paths for command in extract_commands(path, root)]


# ------------------------------------------------------------------------------------------------
# Sizes


def first_seeds(n: int) -> Callable[[str], str]:
    """A ``--seeds`` value cut to its first ``n`` seeds (``0,1,2`` -> ``0``; ``1000-1019`` -> ``1000-1001``)."""

    def cut(value: str) -> str:
        first = value.split(",")[0].strip()
        if not first:
            return value
        low, _, high = first.partition("-")
        if not high or not low.isdigit() or not high.isdigit():
            return ",".join(value.split(",")[:n])
        return low if n == 1 or int(high) == int(low) else f"{low}-{min(int(high), int(low) + n - 1)}"

    return cut


def constant(value: str) -> Callable[[str], str]:
    return lambda _documented: value


@dataclass(frozen=True)
class Override:
    """How one subcommand is run small: ``replace`` maps an option to a function of its documented value;
    ``add`` gives options added when absent (``None``: a flag without value); ``when`` limits ``add`` to
    some of the command's forms."""

    replace: dict[str, Callable[[str], str]] = field(default_factory=dict)
    add: dict[str, str | None] = field(default_factory=dict)
    when: Callable[[list[str]], bool] = lambda _args: True


#: The per-command overrides (the subcommand, or two words for ``trace sample``). The sizes: one seed for
#: compare and sweep (two for evaluate, the fewest ``--beat-the-experts`` takes, with the agents' episodes
#: capped at ``--smoke``'s 2,000 steps: a barely trained agent can take far longer), the training recipes at
#: ``--smoke`` budgets (512 PPO steps, one epoch, one teacher and one held-out workload, one DAgger round)
#: saved in ``runs/`` as documented, 40-job workloads for sweeps, 50-job synthetic traces.
OVERRIDES: dict[str, Override] = {
    "compare": Override(replace={"--seeds": first_seeds(1)}, add={"--seeds": "0"}),
    "evaluate": Override(replace={"--seeds": first_seeds(2)}, add={"--seeds": "1000-1001", "--max-steps": "2000"}),
    "train": Override(
        replace={
            "--total-timesteps": constant("512"),
            "--n-steps": constant("256"),
            "--epochs": constant("1"),
            "--epochs-per-round": constant("1"),
            "--rounds": constant("1"),
            "--episodes-per-round": constant("1"),
            "--train-seeds": first_seeds(1),
            "--val-seeds": first_seeds(1),
            "--eval-seeds": first_seeds(1),
            "--teacher-seeds": first_seeds(1),
            "--stages": constant("12:4:256,24:8:256"),
        },
        add={"--smoke": None, "--out-dir": "runs"},
    ),
    "sweep": Override(
        replace={"--seeds": constant("1")},
        add={"--seeds": "1", "--set": "workload.num_jobs=40"},
        when=lambda args: "--report" not in args,
    ),
    "trace sample": Override(replace={"--num-jobs": constant("50")}),
}


def _override_key(args: list[str]) -> str:
    words = [a for a in args[1:3] if not a.startswith("-")]
    two = " ".join(words[:2])
    return two if two in OVERRIDES else (words[0] if words else "")


def shrink(args: list[str]) -> list[str]:
    """``args`` (``hetgym`` first) with :data:`OVERRIDES` applied."""
    override = OVERRIDES.get(_override_key(args))
    if override is None:
        return list(args)
    out: list[str] = []
    i = 0
    while i < len(args):
        option, eq, value = args[i].partition("=")
        if option in override.replace and eq:
            out.append(f"{option}={override.replace[option](value)}")
        elif option in override.replace and i + 1 < len(args):
            out += [option, override.replace[option](args[i + 1])]
            i += 1
        else:
            out.append(args[i])
        i += 1
    if override.when(args):
        given = {a.partition("=")[0] for a in out}
        for option, value in override.add.items():
            if option not in given:
                out += [option] if value is None else [option, value]
    return out


# ------------------------------------------------------------------------------------------------
# Files the user supplies

MY_POLICY = '''"""A policy of the user's own (docs/writing-a-policy.md): oldest first, on the first type with room."""

from hetgym.sim import Allocation, AllocationBuilder, ClusterView, Policy, register_policy


@register_policy()
class MyPolicy(Policy):
    """Each waiting job, oldest first, on the first GPU type with room for its gang; running jobs stay."""

    name = "my-policy"

    def schedule(self, view: ClusterView) -> Allocation:
        builder = AllocationBuilder(view)
        for job in view.running:
            builder.keep(job)
        for job in view.waiting:
            for gpu_type in view.allowed_types(job):
                if builder.free[gpu_type] >= job.num_gpus:
                    builder.assign(job.job_id, {gpu_type: job.num_gpus})
                    break
        return builder.build()
'''


def _copy_from(relative: str) -> Callable[[Path, Path], None]:
    return lambda target, root: shutil.copyfile(root / relative, target)


#: Stand-ins for files a documented command reads but the user supplies, written when missing.
FIXTURES: dict[str, Callable[[Path, Path], None]] = {
    "my_policy.py": lambda target, _root: target.write_text(MY_POLICY),
    "traces/my_trace.csv": _copy_from("traces/elasticflow-default-100.csv"),
    "my.trace": _copy_from("tests/data/gavel/t0-60.trace"),
    # the output of `hetgym trace convert` on ElasticFlow's archive (which the user downloads): a trace of
    # the canonical schema from traces/ stands in
    "c04.parquet": _copy_from("traces/elasticflow-tiny-12.parquet"),
}


def _newest(paths: list[Path], skip: int = 0) -> Path | None:
    ordered = sorted(paths, key=lambda p: p.stat().st_mtime_ns, reverse=True)
    return ordered[skip] if len(ordered) > skip else None


#: ``<placeholder>`` -> how to fill it from what earlier commands wrote: ``(required word in the name, how
#: many of the newest matches to pass over)``. A placeholder not listed here (``<old run>``: a run folder
#: of an older release) makes its command skipped.
PLACEHOLDERS: dict[str, tuple[str, int]] = {
    "hash": ("", 0),
    "run": ("", 0),
    "other_run": ("", 1),
    "bc_run": ("bc", 0),
    "dagger_run": ("dagger", 0),
}


#: Options that need something outside this machine's reach: a command giving one is skipped with the reason.
NEEDS_OUTSIDE = {"--ray-address": "needs a running Ray cluster (ray start --head), which this check does not start"}


def fill_placeholders(args: list[str], workspace: Path) -> tuple[list[str], str]:
    """``args`` with each ``<placeholder>`` filled (see :data:`PLACEHOLDERS`), or the reason it cannot be."""
    out = []
    for arg in args:
        match = PLACEHOLDER.search(arg)
        if match is None:
            out.append(arg)
            continue
        name = match.group(1)
        if name not in PLACEHOLDERS:
            return args, f"placeholder <{name.replace('_', ' ')}>: a file of the user's own"
        word, skip = PLACEHOLDERS[name]
        pattern = PLACEHOLDER.sub("*", arg)
        candidates = [p for p in workspace.glob(pattern) if word in p.name]
        found = _newest(candidates, skip)
        if found is None:
            return args, f"placeholder <{name.replace('_', ' ')}>: no {pattern} written by an earlier command"
        out.append(found.relative_to(workspace).as_posix())
    return out, ""


def missing_input(args: list[str], workspace: Path, root: Path = ROOT) -> str:
    """Provide the :data:`FIXTURES` ``args`` read; return the first input path still missing ("" if none)."""
    for i, arg in enumerate(args[1:], 1):
        if args[i - 1] in OUTPUT_OPTIONS or not PATH_LIKE.match(arg):
            continue
        target = workspace / arg
        if not target.exists() and arg in FIXTURES:
            target.parent.mkdir(parents=True, exist_ok=True)
            FIXTURES[arg](target, root)
        if not target.exists():
            return arg
    return ""


def make_workspace(root: Path = ROOT) -> Path:
    """A temporary folder with the repository's inputs linked in (see the module docstring)."""
    workspace = Path(tempfile.mkdtemp(prefix="hetgym-doc-commands-"))
    for name in LINKED:
        (workspace / name).symlink_to(root / name, target_is_directory=True)
    (workspace / "traces").mkdir()
    for trace in sorted((root / "traces").iterdir()):
        (workspace / "traces" / trace.name).symlink_to(trace)
    return workspace


# ------------------------------------------------------------------------------------------------
# Running


@dataclass
class Outcome:
    """What became of one documented command."""

    command: DocCommand
    status: str  # "ok", "FAILED" or "skipped"
    ran: list[str] = field(default_factory=list)
    reason: str = ""
    exit_code: int | None = None
    cpu_s: float = 0.0
    wall_s: float = 0.0
    tail: list[str] = field(default_factory=list)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_command(command: DocCommand, workspace: Path, root: Path = ROOT, timeout_s: float = TIMEOUT_S) -> Outcome:
    """Run one documented command small in ``workspace`` (or say why not)."""
    args, reason = fill_placeholders(shrink(list(command.tokens)), workspace)
    outside = [NEEDS_OUTSIDE[a.partition("=")[0]] for a in args if a.partition("=")[0] in NEEDS_OUTSIDE]
    if outside:
        return Outcome(command, "skipped", args, outside[0])
    if reason:
        return Outcome(command, "skipped", reason=reason)
    missing = missing_input(args, workspace, root)
    if missing:
        return Outcome(command, "skipped", args, f"needs {missing}: a file the user supplies, not written here")
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "HETGYM_PROGRESS_S": "60"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    before, started = _children_cpu_s(), time.perf_counter()
    # a session of its own, so that a timeout stops its workers (process pool, Ray) too
    proc = subprocess.Popen(
        [sys.executable, "-m", "hetgym.cli", *args[1:]],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout_s)
        code: int = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        code = -int(signal.SIGKILL)
        output += f"\n(stopped after {timeout_s:g} s)"
    wall_s, cpu_s = time.perf_counter() - started, _children_cpu_s() - before
    tail = [line for line in output.splitlines() if line.strip()][-12:]
    return Outcome(command, "ok" if code == 0 else "FAILED", args, "", code, cpu_s, wall_s, tail if code else [])


def report_line(outcome: Outcome) -> str:
    """One line of the report (plus the end of a failed command's output)."""
    where = f"{outcome.command.doc}:{outcome.command.line}"
    if outcome.status == "skipped":
        return f"skipped  {'':>8} {'':>9} {'':>8}  {where}  {outcome.command.text}\n         ({outcome.reason})"
    line = (
        f"{outcome.status:<8} exit {outcome.exit_code:<3} {outcome.cpu_s:7.1f} CPU-s {outcome.wall_s:6.1f} s  "
        f"{where}  {shlex.join(outcome.ran)}"
    )
    return line + "".join(f"\n         | {text}" for text in outcome.tail)


def run_all(
    commands: list[DocCommand],
    root: Path = ROOT,
    timeout_s: float = TIMEOUT_S,
    out: Callable[[str], None] = print,
    workspace: Path | None = None,
) -> list[Outcome]:
    """Run ``commands`` in order in one workspace, printing each outcome as it comes, then the summary."""
    own = workspace is None
    space = make_workspace(root) if workspace is None else workspace
    outcomes = []
    started, before = time.perf_counter(), _children_cpu_s()
    try:
        for command in commands:
            outcome = run_command(command, space, root, timeout_s)
            out(report_line(outcome))
            outcomes.append(outcome)
    finally:
        if own:
            shutil.rmtree(space, ignore_errors=True)
    ran = [o for o in outcomes if o.status != "skipped"]
    failed = [o for o in ran if o.status == "FAILED"]
    out(
        f"{len(outcomes)} documented commands: {len(ran)} ran ({len(failed)} failed), "
        f"{len(outcomes) - len(ran)} skipped; {time.perf_counter() - started:.0f} s wall, "
        f"{_children_cpu_s() - before:.0f} CPU-s"
    )
    for outcome in failed:
        out(f"failed: {outcome.command.doc}:{outcome.command.line}  {outcome.command.text}")
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docs", nargs="*", type=Path, help="markdown files (default: README.md and docs/*.md)")
    parser.add_argument("--timeout-s", type=float, default=TIMEOUT_S, help="per command (default: %(default)s)")
    args = parser.parse_args(argv)
    for doc in args.docs:
        if not doc.is_file():
            parser.error(f"{doc}: no such file; give markdown files, or nothing for README.md and docs/*.md")
    outcomes = run_all(documented_commands(args.docs or None), timeout_s=args.timeout_s)
    return 1 if any(o.status == "FAILED" for o in outcomes) else 0


if __name__ == "__main__":
    raise SystemExit(main())
