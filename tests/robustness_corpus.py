"""The robustness corpus: bad settings, malformed traces, misused outputs, env misuse and files that would run
code when read, each a case.

Every case is generated (no stored files) and states what a user must get back:

* a CLI case runs ``hetgym ARGV`` in a fresh directory holding the case's input files and expects a
  non-zero exit, no traceback, exactly one ``hetgym COMMAND: error:`` line on stderr that names what is
  wrong (``expect``: lower-case substrings that line must contain, e.g. the setting, the file, the row),
  no file created and no input file changed;
* an API case calls the Python API and expects a ``ValueError``/``KeyError``/``HetgymError`` whose message
  contains ``expect``, and never another exception type (``TypeError``, ``ZeroDivisionError``,
  ``OverflowError``, ``AttributeError`` are tracebacks in a user's script).

Both must finish within :data:`CASE_TIMEOUT_S`: a case that runs longer is a hang.
This module holds the case type, :func:`build_corpus` (every case, in a fixed order) and :func:`run_case` (the
judge). The cases live in their families' modules beside it: ``tests/robustness_cli.py`` (settings, malformed
traces and output folders on the command line), ``tests/robustness_api.py`` (files that would run code when read,
and the Python API), ``tests/robustness_sizes.py`` (size settings and output folders), ``tests/robustness_readers.py``
and ``tests/robustness_inputs.py`` (the trace readers, input that reads as something else).
``tests/cli/test_robustness_corpus.py`` runs every case; ``scripts/robustness.py`` runs them and writes the
table of docs/results/robustness.md.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Seconds after which a case counts as a hang.
CASE_TIMEOUT_S = 60.0

HEADER = "job_id,submit_s,job_type,batch_size,total_iters,num_gpus,deadline_s"
GOOD_ROW = "0,0,resnet50,64,1000,1,36000"


@dataclass(frozen=True)
class Case:
    """One corpus case (see the module docstring)."""

    id: str
    category: str
    expect: tuple[str, ...]
    argv: tuple[str, ...] = ()
    files: dict[str, bytes] = field(default_factory=dict)
    api: Callable[[Path], Any] | None = None
    #: Files the case may legitimately leave (none by default).
    allowed_outputs: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return "api" if self.api is not None else "cli"


def _sibling(name: str) -> Any:
    """The corpus module ``tests/NAME.py``, loaded by file location like this one (see scripts/robustness.py)."""
    import importlib.util
    import sys

    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def build_corpus() -> list[Case]:
    """Every case, in a fixed order (ids are unique)."""
    readers = _sibling("robustness_readers").reader_cases()  # before robustness_inputs, which imports it
    inputs = _sibling("robustness_inputs").input_cases()
    sizes = _sibling("robustness_sizes")
    cli, api = _sibling("robustness_cli"), _sibling("robustness_api")
    cases = [*cli.setting_cases(), *cli.trace_cases(), *cli.output_cases(), *sizes.output_cases(), *api.api_cases()]
    cases += [*api.code_from_data_cases(), *readers, *inputs, *sizes.size_cases()]
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "corpus case ids must be unique"
    return cases


# ------------------------------------------------------------------------------------------------
# Running a case


@dataclass
class Outcome:
    """What a case gave back; ``verdict`` is ``"ok"`` or what went wrong."""

    case_id: str
    verdict: str
    exit_code: int | None
    message: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"


#: The one line a CLI error must print on stderr: ``hetgym COMMAND: error: ...`` (argparse's form too).
_ERROR_LINE = re.compile(r"^hetgym( [\w-]+)*: error: ")


class _Hang(Exception):
    """Raised by the alarm when a case runs past :data:`CASE_TIMEOUT_S`."""


ACCEPTED_ERRORS: tuple[type[BaseException], ...] = (ValueError, KeyError, LookupError)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run_case(case: Case, workdir: Path, timeout_s: float = CASE_TIMEOUT_S) -> Outcome:
    """Run ``case`` in the empty directory ``workdir`` (in this process) and judge it."""
    import contextlib
    import os
    import signal
    import time

    from hetgym.sim.errors import HetgymError

    for name, content in case.files.items():
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).write_bytes(content)
    before = _snapshot(workdir)

    def on_alarm(signum: int, frame: Any) -> None:
        raise _Hang

    old_handler = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    cwd = os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    code: int | None = None
    raised: BaseException | None = None
    try:
        os.chdir(workdir)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            if case.api is not None:
                case.api(workdir)
            else:
                from hetgym.cli import main

                code = main(list(case.argv))
    except _Hang:
        return Outcome(case.id, "hang", None, f"still running after {timeout_s:.0f} s", time.perf_counter() - t0)
    except SystemExit as exc:  # argparse's errors
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:
        raised = exc
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        os.chdir(cwd)
    seconds = time.perf_counter() - t0
    if case.api is not None:
        if raised is None:
            return Outcome(case.id, "accepted silently", None, "no error raised", seconds)
        message = str(raised.args[0]) if isinstance(raised, KeyError) and raised.args else str(raised)
        if not isinstance(raised, (*ACCEPTED_ERRORS, HetgymError)):
            return Outcome(case.id, f"traceback ({type(raised).__name__})", None, message, seconds)
        missing = [w for w in case.expect if w.lower() not in message.lower()]
        verdict = "ok" if not missing else f"message lacks {missing}"
        return Outcome(case.id, verdict, None, message.splitlines()[0] if message else "", seconds)
    text = out.getvalue() + err.getvalue()
    if raised is not None:
        return Outcome(case.id, f"traceback ({type(raised).__name__})", None, str(raised)[:300], seconds)
    after = _snapshot(workdir)
    changed = [n for n in before if after.get(n) != before[n]]
    created = [n for n in after if n not in before and n not in case.allowed_outputs]
    errors = [line.strip() for line in err.getvalue().splitlines() if _ERROR_LINE.match(line)]
    message = errors[-1] if errors else ""
    if "Traceback" in text:
        verdict = "traceback (printed)"
    elif code == 0 or code is None:
        verdict = "accepted silently"
    elif changed:
        verdict = f"input changed: {changed}"
    elif created:
        verdict = f"output left: {created[:3]}"
    elif len(errors) != 1:
        verdict = f"{len(errors)} error lines"
    else:
        missing = [w for w in case.expect if w.lower() not in message.lower()]
        verdict = "ok" if not missing else f"message lacks {missing}"
    return Outcome(case.id, verdict, code, message, seconds)
