"""Re-measure the figures the docs state and compare them with what the docs say.

Each claim names the doc file and the exact sentence fragment that states it (the script fails when the
fragment is gone, so a doc edit cannot silently leave the script checking an old figure), the figure as
stated, how it is measured here and the tolerance. The output is a table of doc claim vs measured value;
the exit status is 1 when any claim is outside its tolerance or its fragment is missing.

Groups (the deterministic group always runs; the others on request):

* deterministic: DSR of the classic policies on Tiny seeds 0-5 and the experts' episode epochs
  (``docs/environment.md``), the running-maximum count on ``gavel-philly`` workloads (``docs/traces.md``),
  the random-agent snippets of ``README.md`` and ``docs/v0.md`` (run as written; the line they print is
  the one their ``# prints:`` comment states), the size of the default comparison (``README.md``).
  Exact: the simulator is deterministic. Seconds in all.
* ``--timings``: ``scripts/bench/bench_env.py``'s sequential-codec steps per CPU-second (``docs/v0.md``), 3 short
  runs per window size; tolerance 30% either side of the stated range (a shared machine moves it).
* ``--budgets``: wall time of ``hetgym train --algo bc --teacher dancer`` on ``HetCluster-v0`` and of the
  same with ``--preset tiny`` (``docs/v0.md``, ``docs/agents.md``): one run each, minutes; within 0.4-1.35
  times the stated time (the stated runs shared the machine with other work).
* ``--readme``: the README's figures that need runs: the wall and CPU time of command 1's ``hetgym compare``
  (CPU time within 0.7-1.3 times the stated one; the wall time follows the machine's load), and its
  RL path run as written (the ``hetgym train`` and ``hetgym evaluate`` commands of its block, in a temporary
  folder): training wall and CPU time, evaluation wall time, the DSR table (experts and the random agent
  exact, the trained agent within 0.05). About 10 minutes on two cores.
* ``--suite``: the wall time of command 2's tests (``python -m pytest -m "not slow" -q``), from 4 minutes on
  a quiet machine to half an hour on a busy one.
* ``--commands [DOC ...]``: instead of the claims, run every ``hetgym ...`` command line of README.md and
  docs/*.md (or of the DOCs given) at small sizes and report each: ok or failed, exit code, CPU seconds
  (``scripts/doc_commands.py``, which says what is run, at which sizes, and what is skipped). Exit status
  1 when a documented command fails.

Every run (``--fragments-only`` included) also checks that no docstring or ``#:`` comment of ``hetgym/``,
``agents/`` or ``baselines/`` states a measured timing (``ms``, ``µs``, steps per second, CPU or wall
seconds): those figures go stale, so the docs state them with the command that measured them.

Usage::

    python scripts/check_docs.py                       # deterministic claims
    python scripts/check_docs.py --timings --budgets   # the timings and budgets (about 15 minutes on two cores)
    python scripts/check_docs.py --readme --suite      # the README's measured figures
    python scripts/check_docs.py --commands            # every documented hetgym command, small
"""

from __future__ import annotations

import argparse
import ast
import csv
import functools
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TINY_SEEDS = range(6)
CLASSIC = ("edf", "srtf", "fifo", "tiresias")
EXPERTS = ("edf", "srtf", "fifo", "tiresias", "dancer", "elasticflow")


@dataclass(frozen=True)
class Claim:
    """One figure a doc states.

    Attributes:
        name: Short label.
        doc: Path of the doc, relative to the repository root.
        fragment: Text the doc must contain (where the figure is stated).
        stated: The figure as the doc states it (compared with ``measure``'s value by ``check``).
        measure: Returns the measured value.
        check: ``check(stated, measured) -> bool``.
        group: ``deterministic``, ``timings`` or ``budgets``.
    """

    name: str
    doc: str
    fragment: str
    stated: Any
    measure: Callable[[], Any]
    check: Callable[[Any, Any], bool]
    group: str = "deterministic"


# ------------------------------------------------------------------------------------------------
# Measurements


def tiny_dsr_range(policy: str) -> tuple[float, float]:
    """(min, max) DSR of ``policy`` on the Tiny scenario over seeds 0-5, rounded to 2 decimals."""
    from hetgym.experiments import run_one

    values = [run_one("tiny", policy, seed).metrics["dsr"] for seed in TINY_SEEDS]
    return round(min(values), 2), round(max(values), 2)


def tiny_env_epochs(policies: tuple[str, ...]) -> tuple[int, int]:
    """(min, max) decision epochs of the experts' HetCluster-Tiny-v0 episodes (default physics), seeds 0-5."""
    import gymnasium as gym

    import hetgym  # noqa: F401 - registers the ids
    from hetgym.experts import ExpertAgent

    epochs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for policy in policies:
            for seed in TINY_SEEDS:
                env = gym.make("HetCluster-Tiny-v0")
                agent = ExpertAgent(policy, env)
                obs, _ = env.reset(seed=seed)
                while True:
                    action, _ = agent.predict(obs)
                    obs, _, terminated, truncated, info = env.step(action)
                    if terminated or truncated:
                        break
                epochs.append(int(info["metrics"]["num_decisions"]))
    return min(epochs), max(epochs)


def running_max_changes() -> tuple[int, int, int]:
    """(multi-GPU jobs, V100 rate changed, rate changed on some type) by the running maximum over counts,
    on the ``gavel`` scenario's ``gavel-philly`` workloads of seeds 0-4."""
    from hetgym.sim.throughput import ThroughputModel
    from hetgym.workloads import get_scenario

    processed, raw = ThroughputModel.default(), ThroughputModel(monotone=False)
    scenario = get_scenario("gavel")
    cluster = scenario.cluster_spec()
    multi = v100 = any_type = 0
    for seed in range(5):
        for job in scenario.workload.build(cluster, seed=seed).jobs:
            if job.num_gpus < 2:
                continue
            multi += 1
            changed = []
            for gpu in cluster.gpu_types:
                a = processed.rate(job.job_type, job.batch_size, gpu, job.num_gpus)
                b = raw.rate(job.job_type, job.batch_size, gpu, job.num_gpus)
                if abs(a - b) > 1e-4 * max(b, 1e-12):
                    changed.append(gpu)
            v100 += "v100" in changed
            any_type += bool(changed)
    return multi, v100, any_type


def bench_env_steps_per_cpu_s() -> tuple[int, int]:
    """(min, max) sequential-codec steps per CPU-second of ``scripts/bench/bench_env.py`` (K = 16 and 64), 3 short
    runs each (per CPU-second, not wall: on a shared machine the wall figure follows the load)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "env.json"
        cmd = [sys.executable, str(ROOT / "scripts" / "bench" / "bench_env.py"), "--out", str(out), "--repeats", "3"]
        subprocess.run([*cmd, "--steps", "10000", "--one-shot-steps", "300"], check=True, capture_output=True)
        import json

        data = json.loads(out.read_text())
    rows = data["results"] if isinstance(data, dict) and "results" in data else data
    figures = [int(r["steps_per_cpu_s"]) for r in rows if r.get("codec") == "sequential"]
    return min(figures), max(figures)


def train_wall_s(*extra: str) -> float:
    """Wall seconds of ``hetgym train --algo bc --teacher dancer`` (plus ``extra``), in a temporary folder."""
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "hetgym.cli",
                "train",
                "--algo",
                "bc",
                "--teacher",
                "dancer",
                "--no-progress",
                *extra,
            ],
            cwd=tmp,
            check=True,
            capture_output=True,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        return time.perf_counter() - started


def snippet_output(doc: str, marker: str) -> str:
    """The last line a ``python`` block of ``doc`` prints, the block found by ``marker``, run as written in a
    fresh interpreter at the repository root."""
    text = (ROOT / doc).read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    (code,) = [b for b in blocks if marker in b]
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    return out.stdout.strip().splitlines()[-1]


def default_comparison_size() -> tuple[int, int]:
    """(policies, runs) of a plain ``hetgym compare``: the default policies times the default seeds."""
    from hetgym.cli.run import DEFAULT_SEEDS
    from hetgym.experiments import default_policies

    seeds = DEFAULT_SEEDS.split(",")
    policies = len(default_policies())
    return policies, policies * len(seeds)


def _cli(command: str) -> list[str]:
    """A ``hetgym ...`` command line of a doc as an argument list run by this interpreter."""
    args = shlex.split(command)
    assert args[0] == "hetgym", command
    return [sys.executable, "-m", "hetgym.cli", *args[1:]]


def _timed(args: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    subprocess.run(args, cwd=cwd, check=True, capture_output=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@functools.cache
def compare_time_s() -> tuple[float, float]:
    """(wall, CPU) seconds of command 1's ``hetgym compare`` (its results into a temporary folder)."""
    with tempfile.TemporaryDirectory() as tmp:
        wall, cpu = _timed(_cli(f"hetgym compare --out {tmp}/out"), Path(tmp))
    return round(wall), round(cpu)


def readme_block_commands(marker: str, doc: str = "README.md") -> list[str]:
    """The ``hetgym`` commands of the ``bash`` block of ``doc`` that contains ``marker`` (continuations joined,
    comments dropped)."""
    text = (ROOT / doc).read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```bash\n")[1:]]
    (block,) = [b for b in blocks if marker in b]
    lines = [line.split(" #", 1)[0].rstrip() for line in block.replace("\\\n", " ").splitlines()]
    return [line for line in lines if line.startswith("hetgym ")]


RL_PATH_MARKER = "--run-name tiny-v1-ppo"


@functools.cache
def rl_path() -> dict[str, Any]:
    """The README's RL path run as written in a temporary folder: training wall and CPU seconds, evaluation wall
    seconds, and the mean DSR of each policy of the evaluation (by its ``policy`` name)."""
    commands = readme_block_commands(RL_PATH_MARKER)
    train = [c for c in commands if c.startswith("hetgym train")]
    evaluate = [c for c in commands if c.startswith("hetgym evaluate")]
    assert len(train) == 1 and len(evaluate) == 1, commands
    with tempfile.TemporaryDirectory() as tmp:
        train_wall, train_cpu = _timed(_cli(train[0]), Path(tmp))
        eval_wall, _ = _timed(_cli(evaluate[0]), Path(tmp))
        with open(Path(tmp) / "results" / "evaluate" / "evaluation.csv", newline="") as fh:
            dsr = {row["policy"]: round(float(row["dsr"]), 3) for row in csv.DictReader(fh)}
    return {"train_wall_s": round(train_wall), "train_cpu_s": round(train_cpu), "eval_wall_s": round(eval_wall),
            "dsr": dsr}  # fmt: skip


def suite_wall_s() -> float:
    """Wall seconds of command 2's tests, ``python -m pytest -m "not slow" -q``, at the repository root."""
    return round(_timed([sys.executable, "-m", "pytest", "-m", "not slow", "-q"], ROOT)[0], 0)


# ------------------------------------------------------------------------------------------------
# Claims


def _equal(stated: Any, measured: Any) -> bool:
    return bool(stated == measured)


def _within_range(rel: float) -> Callable[[Any, Any], bool]:
    def check(stated: Any, measured: Any) -> bool:
        lo, hi = stated
        m_lo, m_hi = measured
        return bool(lo * (1 - rel) <= m_lo and m_hi <= hi * (1 + rel))

    return check


def _within(tolerance: float) -> Callable[[Any, Any], bool]:
    def check(stated: Any, measured: Any) -> bool:
        return bool(abs(stated - measured) <= tolerance)

    return check


def _budget(low: float, high: float) -> Callable[[Any, Any], bool]:
    """A time budget holds when the measured time is between ``low`` and ``high`` times the stated one (the
    stated figures were measured on a loaded machine, so a quiet one may be well below them)."""

    def check(stated: Any, measured: Any) -> bool:
        return bool(low * stated <= measured <= high * stated)

    return check


TINY_DSR_STATED = {"edf": (0.17, 0.58), "srtf": (0.25, 0.58), "fifo": (0.0, 0.58), "tiresias": (0.25, 0.58)}
TINY_DSR_FRAGMENT = "DSR EDF 0.17-0.58, SRTF 0.25-0.58, FIFO 0-0.58, Tiresias 0.25-0.58"

CLAIMS: list[Claim] = [
    *(
        Claim(
            f"Tiny DSR, {policy}, seeds 0-5",
            "docs/environment.md",
            TINY_DSR_FRAGMENT,
            TINY_DSR_STATED[policy],
            lambda policy=policy: tiny_dsr_range(policy),  # type: ignore[misc]
            _equal,
        )
        for policy in CLASSIC
    ),
    Claim(
        "Tiny-v0 epochs, experts, seeds 0-5",
        "docs/environment.md",
        "Tiny-v0 episodes have 62 to 5,166 epochs",
        (62, 5166),
        lambda: tiny_env_epochs(EXPERTS),
        _equal,
    ),
    Claim(
        "Tiny-v0 epochs, EDF and SRTF",
        "docs/environment.md",
        "EDF and SRTF 92-2,060",
        (92, 2060),
        lambda: tiny_env_epochs(("edf", "srtf")),
        _equal,
    ),
    Claim(
        "running maximum on gavel-philly, seeds 0-4",
        "docs/traces.md",
        "it changes the V100 rate of 114 of the 331",
        (331, 114, 158),
        running_max_changes,
        _equal,
    ),
    Claim(
        "bench_env sequential steps/CPU-s",
        "docs/v0.md",
        "the sequential codec makes 23,300-33,300 steps per CPU-second",
        (23_300, 33_300),
        bench_env_steps_per_cpu_s,
        _within_range(0.30),
        group="timings",
    ),
    Claim(
        "hetgym train --algo bc --teacher dancer, v0 (s)",
        "docs/v0.md",
        "# 885 s, one run on two busy cores (load 4-7)",
        885.0,
        lambda: round(train_wall_s("--env-id", "HetCluster-v0"), 0),
        _budget(0.4, 1.35),
        group="budgets",
    ),
    Claim(
        "... --preset tiny (s)",
        "docs/agents.md",
        "with `--preset tiny` 16 s",
        16.0,
        lambda: round(train_wall_s("--preset", "tiny"), 0),
        _budget(0.4, 1.35),
        group="budgets",
    ),
    Claim(
        "README random agent on Tiny-v1, seed 0",
        "README.md",
        "# prints: done 5 7 0.167 1.7",
        "done 5 7 0.167 1.7",
        lambda: snippet_output("README.md", "# prints: done"),
        _equal,
    ),
    Claim(
        "v0 random agent on Tiny-v0, seed 0",
        "docs/v0.md",
        "# prints: done 12 0.0 nan",
        "done 12 0.0 nan",
        lambda: snippet_output("docs/v0.md", "# prints: done"),
        _equal,
    ),
    Claim(
        "default compare: policies, runs",
        "README.md",
        "(15 policies x 3 seeds, 45 simulations)",
        (15, 45),
        default_comparison_size,
        _equal,
    ),
    Claim(
        "README command 1: hetgym compare (s)",
        "README.md",
        "took 30 s wall (30 CPU-s) at a load average of 0.5-0.7",
        30,
        lambda: compare_time_s()[0],
        _budget(0.7, 3.0),  # measured on a quiet machine: a loaded one takes longer
        group="readme",
    ),
    Claim(
        "README command 1: hetgym compare (CPU-s)",
        "README.md",
        "took 30 s wall (30 CPU-s) at a load average of 0.5-0.7",
        30,
        lambda: compare_time_s()[1],
        _budget(0.7, 1.3),
        group="readme",
    ),
    Claim(
        "README RL path: training wall (s)",
        "README.md",
        "training (51,200 steps) took 557 s wall (154 CPU-s)",
        557,
        lambda: rl_path()["train_wall_s"],
        _budget(0.2, 1.35),
        group="readme",
    ),
    Claim(
        "README RL path: training CPU (s)",
        "README.md",
        "training (51,200 steps) took 557 s wall (154 CPU-s)",
        154,
        lambda: rl_path()["train_cpu_s"],
        _budget(0.7, 1.3),
        group="readme",
    ),
    Claim(
        "README RL path: evaluation wall (s)",
        "README.md",
        "and the evaluation 55 s",
        55,
        lambda: rl_path()["eval_wall_s"],
        _budget(0.3, 1.35),
        group="readme",
    ),
    Claim(
        "README RL path: the trained agent's DSR",
        "README.md",
        "| MaskablePPO from scratch (this run) | 0.733 |",
        0.733,
        lambda: rl_path()["dsr"]["maskable-ppo"],
        _within(0.05),
        group="readme",
    ),
    *(
        Claim(
            f"README RL path: {policy}'s DSR",
            "README.md",
            f"| {label} | {dsr:.3f} |",
            dsr,
            lambda policy=policy: rl_path()["dsr"][policy],  # type: ignore[misc]
            _equal,
            group="readme",
        )
        for policy, label, dsr in (
            ("elasticflow", "ElasticFlow", 0.825),
            ("hadare", "HadarE", 0.779),
            ("dancer", "Dancer", 0.725),
            ("edf-admission", "EDF with admission", 0.371),
            ("srtf", "SRTF", 0.342),
            ("random", "random masked agent", 0.154),
        )
    ),
    Claim(
        "README command 2: the tests (s)",
        "README.md",
        "the tests of command 2 (2,916 tests) took 323 s wall (324 CPU-s) at a load average of 0.6-1.8",
        323,
        suite_wall_s,
        _budget(0.7, 3.0),  # measured on a quiet machine: a loaded one takes longer
        group="suite",
    ),
]


def check_fragments(claims: list[Claim]) -> list[str]:
    """The claims whose doc no longer contains their fragment."""
    missing = []
    for claim in claims:
        text = (ROOT / claim.doc).read_text()
        if claim.fragment not in " ".join(text.split()):
            missing.append(f"{claim.doc}: {claim.fragment!r} not found (update the doc or this script)")
    return missing


#: The packages whose docstrings and ``#:`` attribute comments must hold no measured timings.
DOCSTRING_PACKAGES = ("hetgym", "agents", "baselines")
#: A timing: a number with a unit of time under a second, or a rate of steps, or CPU / wall seconds.
TIMING = re.compile(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:ms|µs|us|ns)\b"
    r"|\d[\d,]*(?:\.\d+)?\s?steps?/s\b"
    r"|\d[\d,]*(?:\.\d+)?\s?steps? (?:a|per) (?:CPU[- ])?second"
    r"|\d[\d,]*(?:\.\d+)?\s?(?:CPU|wall)[- ]s(?:econds?)?\b"
)
#: (file, matched text) pairs that are no measurement, with the reason.
TIMING_ALLOWED = {
    ("baselines/hadar/hadare.py", "20 ms"): "computed from the defaults (0.2 GB over a 12.5 GB/s NIC), not measured",
    ("hetgym/workloads/scenario.py", "3.6 ms"): "the interval of the largest arrival rate, 10^6 jobs an hour",
}


def _doc_texts(path: Path) -> list[tuple[int, str]]:
    """``(first line, text)`` of each module, class and function docstring and ``#:`` comment of a file."""
    source = path.read_text()
    texts = [(n, line.strip()[2:]) for n, line in enumerate(source.splitlines(), 1) if line.lstrip().startswith("#:")]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            value = first.value if isinstance(first, ast.Expr) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                texts.append((first.lineno, value.value))
    return texts


def docstring_timings(root: Path = ROOT, packages: tuple[str, ...] = DOCSTRING_PACKAGES) -> list[str]:
    """The measured timings docstrings state (``file:line: text``): measurements belong in the docs.

    A timing in a docstring goes stale when the code or the machine changes and no check re-measures it;
    the docs state it with the command that measured it. :data:`TIMING_ALLOWED` lists the figures that are
    no measurement.
    """
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            for line, text in _doc_texts(path):
                for match in TIMING.finditer(text):
                    if (rel, match.group(0)) in TIMING_ALLOWED:
                        continue
                    at = line + text[: match.start()].count("\n")
                    found.append(f"{rel}:{at}: {match.group(0)!r} (a measured timing belongs in the docs)")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timings", action="store_true", help="also bench_env's steps/s (about a minute)")
    parser.add_argument("--budgets", action="store_true", help="also the BC training budgets (about 10 minutes)")
    parser.add_argument("--readme", action="store_true", help="also the README's compare time and RL path (10 minutes)")
    parser.add_argument("--suite", action="store_true", help="also the README's test-suite time (4-30 minutes)")
    parser.add_argument("--fragments-only", action="store_true", help="only check that every claim is in its doc")
    parser.add_argument(
        "--commands",
        nargs="*",
        type=Path,
        metavar="DOC",
        help="instead of the claims, run the documented hetgym commands, small (of README.md and docs/*.md, or "
        "of the DOCs given; see scripts/doc_commands.py)",
    )
    args = parser.parse_args(argv)
    if args.commands is not None:
        # the sibling script, which Python finds beside the script it runs
        import doc_commands

        return int(doc_commands.main([str(doc) for doc in args.commands]))
    requested = {"timings": args.timings, "budgets": args.budgets, "readme": args.readme, "suite": args.suite}
    groups = {"deterministic"} | {group for group, wanted in requested.items() if wanted}
    missing = check_fragments(CLAIMS)
    for line in missing:
        print(f"MISSING  {line}")
    timings = docstring_timings()
    for line in timings:
        print(f"DOCSTRING  {line}")
    missing += timings
    if args.fragments_only:
        return 1 if missing else 0
    failed = bool(missing)
    print(f"{'claim':<46} {'doc':<22} {'doc says':<22} {'measured':<22} ok")
    for claim in CLAIMS:
        if claim.group not in groups:
            continue
        measured = claim.measure()
        ok = claim.check(claim.stated, measured)
        failed |= not ok
        print(f"{claim.name:<46} {claim.doc:<22} {claim.stated!s:<22} {measured!s:<22} {'yes' if ok else 'NO'}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
