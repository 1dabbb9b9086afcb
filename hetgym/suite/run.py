"""Computing leaderboard rows with a checkpoint per row: bounds, experts, constant rules, the oracle.

:func:`plan` lists the tasks for some scenarios, most informative first (the bounds and the leading experts
and rules on every scenario before the rest), so a run cut short still leaves a useful board.
:func:`run_tasks` computes each task over the test seeds and writes its rows at once
(:func:`hetgym.suite.board.upsert`), skipping a row already on the board with the same seeds unless
``force``: rerunning the same command resumes where it stopped. It prints a CPU-time estimate first and
progress lines as it goes (:class:`hetgym.progress.ProgressReport`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hetgym.progress import ProgressReport, format_duration
from hetgym.sim.errors import HetgymError
from hetgym.suite import board, page
from hetgym.suite.scenarios import SuiteScenario
from hetgym.suite.scores import (
    EXPERTS,
    ORACLE_AGENT,
    ORACLE_BASE_RULE,
    RULE_ENV_ID,
    bound_scores,
    expert_scores,
    oracle_function,
    oracle_scores,
    rule_names,
    rule_scores,
)

#: Experts and rules computed in the first pass over the scenarios (the rest follow).
FIRST_EXPERTS = ("elasticflow", "dancer", "hadare", "edf-admission")
FIRST_RULES = ("always-auto", "always-force")
#: Rough CPU seconds of one episode (and of one workload's bounds) per workload size in jobs, for the
#: estimate printed before a run only (docs/suite.md, "Cost", gives the measured figures).
EPISODE_CPU_S = {12: 0.05, 40: 0.3, 120: 1.0}
BOUND_CPU_S = {12: 0.02, 40: 0.5, 120: 0.2}


@dataclass(frozen=True)
class Task:
    """One unit of work: the rows ``agents`` of ``scenario``, computed by one call."""

    scenario: SuiteScenario
    kind: str
    agents: tuple[str, ...]
    compute: Callable[[Sequence[int]], list[dict[str, Any]]]
    episodes_per_seed: float
    always: bool = False


def _size(scenario: SuiteScenario) -> int:
    num_jobs = int(scenario.kwargs()["workload"].get("num_jobs", 120)) if "workload" in scenario.overrides else 0
    if not num_jobs:
        num_jobs = 12 if scenario.name == "tiny" else 120
    return min(EPISODE_CPU_S, key=lambda n: abs(n - num_jobs))


def bound_task(scenario: SuiteScenario, **options: Any) -> Task:
    """The three bound rows of ``scenario`` (alone, capacity, capacity without forked copies)."""

    def compute(seeds: Sequence[int]) -> list[dict[str, Any]]:
        bounds, cpu_s = bound_scores(scenario, seeds, **options)
        solver = {key: sorted({b.status[key] for b in bounds}) for key in ("capacity", "capacity_nofork")}
        by_type = {t: [b.alone_by_type[t] for b in bounds] for t in bounds[0].alone_by_type} if bounds else {}
        common = {"cpu_s": cpu_s / 3}
        note = "upper bound on every policy (docs/suite.md, Bounds)"
        return [
            board.make_row(
                scenario.name,
                "bound-alone",
                "bound",
                "simulator",
                seeds,
                [b.alone_mixed for b in bounds],
                note=note,
                detail={
                    "alone_by_type_mean": {t: sum(v) / len(v) for t, v in by_type.items()},
                    "alone_best_type_mean": sum(b.alone_best_type for b in bounds) / len(bounds),
                    "alone_best_type": [b.alone_best_type for b in bounds],
                },
                **common,
            ),
            board.make_row(
                scenario.name,
                "bound-capacity",
                "bound",
                "simulator",
                seeds,
                [b.capacity for b in bounds],
                note=note,
                detail={
                    "lp": [b.capacity_lp for b in bounds],
                    "num_slots": bounds[0].num_slots if bounds else 0,
                    "solver": solver["capacity"],
                },
                **common,
            ),
            board.make_row(
                scenario.name,
                "bound-capacity-nofork",
                "bound",
                "simulator",
                seeds,
                [b.capacity_nofork for b in bounds],
                note="upper bound on every schedule without forked copies (all but HadarE's fork mode)",
                detail={
                    "lp": [b.capacity_nofork_lp for b in bounds],
                    "num_slots": bounds[0].num_slots if bounds else 0,
                    "solver": solver["capacity_nofork"],
                },
                **common,
            ),
        ]

    return Task(scenario, "bound", ("bound-alone", "bound-capacity", "bound-capacity-nofork"), compute, 0.0)


def expert_task(scenario: SuiteScenario, policy: str) -> Task:
    """The row of expert ``policy`` on ``scenario`` (raw simulator)."""

    def compute(seeds: Sequence[int]) -> list[dict[str, Any]]:
        values, cpu_s = expert_scores(scenario, policy, seeds)
        return [board.make_row(scenario.name, policy, "expert", "simulator", seeds, values, cpu_s=cpu_s)]

    return Task(scenario, "expert", (policy,), compute, 1.0)


def rule_task(scenario: SuiteScenario, name: str, action: int) -> Task:
    """The row of the constant rule ``name`` (action ``action`` at every decision) on ``scenario``."""

    def compute(seeds: Sequence[int]) -> list[dict[str, Any]]:
        values, cpu_s = rule_scores(scenario, action, seeds)
        note = f"action {action} at every decision"
        return [board.make_row(scenario.name, name, "rule", RULE_ENV_ID, seeds, values, cpu_s=cpu_s, note=note)]

    return Task(scenario, "rule", (name,), compute, 1.0)


def oracle_task(scenario: SuiteScenario) -> Task:
    """The oracle reference row: computed with ``hetgym.lookahead`` when it exists, else "not computed"."""

    def compute(seeds: Sequence[int]) -> list[dict[str, Any]]:
        got = oracle_scores(scenario, seeds)
        label = "oracle reference, not a result"
        if got is None:
            note = f"{label}; not computed: hetgym.lookahead.hindsight_oracle is not available"
            return [board.make_row(scenario.name, ORACLE_AGENT, "bound", RULE_ENV_ID, seeds, None, note=note)]
        values, cpu_s = got
        note = f"{label}; hindsight one-step lookahead over {ORACLE_BASE_RULE}"
        return [
            board.make_row(scenario.name, ORACLE_AGENT, "bound", RULE_ENV_ID, seeds, values, cpu_s=cpu_s, note=note)
        ]

    # Not available: a placeholder row, rewritten on every run (it costs nothing); a computed row resumes like
    # any other (its rollouts are the suite's most expensive rows).
    available = oracle_function() is not None
    # About 4 episodes' worth of rollouts per job (a decision per job, each candidate played to the end).
    episodes = 4.0 * _size(scenario) if available else 0.0
    return Task(scenario, "bound", (ORACLE_AGENT,), compute, episodes, always=not available)


def plan(
    scenarios: Sequence[SuiteScenario],
    *,
    experts: Sequence[str] | None = EXPERTS,
    rules: Sequence[str] | str | None = "all",
    bounds: bool = True,
    oracle: bool = True,
    bound_options: dict[str, Any] | None = None,
) -> list[Task]:
    """The tasks for ``scenarios``: bounds, then the first experts and rules, then the rest."""
    first: list[Task] = []
    rest: list[Task] = []
    for scenario in scenarios:
        scenario.check_data()
        if bounds:
            first.append(bound_task(scenario, **(bound_options or {})))
        if oracle:
            first.append(oracle_task(scenario))
        for policy in experts or ():
            (first if policy in FIRST_EXPERTS else rest).append(expert_task(scenario, policy))
        if rules:
            table = rule_names(scenario)
            wanted = list(table) if rules == "all" else [r for r in rules if r in table]
            for name in wanted:
                (first if name in FIRST_RULES else rest).append(rule_task(scenario, name, table[name]))
    return first + rest


def check_rules(scenarios: Sequence[SuiteScenario], rules: Sequence[str]) -> None:
    """Refuse a rule name no scenario has (naming the valid ones)."""
    known = {name for s in scenarios for name in rule_names(s)}
    unknown = [r for r in rules if r not in known]
    if unknown:
        raise HetgymError(f"--rules {unknown}: no such constant rule; valid names here: {sorted(known)}")


def estimate_cpu_s(tasks: Sequence[Task], num_seeds: int) -> float:
    """A rough CPU-time estimate of ``tasks`` (see :data:`EPISODE_CPU_S`)."""
    total = 0.0
    for task in tasks:
        size = _size(task.scenario)
        per_seed = BOUND_CPU_S[size] if task.kind == "bound" and not task.always else 0.0
        per_seed += task.episodes_per_seed * EPISODE_CPU_S[size]
        total += per_seed * num_seeds
    return total


def _done(rows: dict[tuple[str, str], dict[str, Any]], task: Task, seeds: Sequence[int]) -> bool:
    if task.always:
        return False
    for agent in task.agents:
        row = rows.get((task.scenario.name, agent))
        if row is None or row["dsr"] is None or list(row["seeds"]) != [int(s) for s in seeds]:
            return False
    return True


def _dsr_text(row: dict[str, Any]) -> str:
    return "not computed" if row["dsr"] is None else f"{row['dsr']:.3f}"


def write_page(board_path: Path, page_path: Path | None) -> None:
    """Regenerate the markdown page from the board (``page_path=None``: skip)."""
    if page_path is None:
        return
    rows = board.read_rows(board_path)
    text = page.markdown(rows, answer=page.answer(rows), notes=page.NOTES)
    from hetgym.atomic import atomic_write

    atomic_write(page_path, lambda p: p.write_text(text))


def run_tasks(
    tasks: Sequence[Task],
    seeds: Sequence[int],
    board_path: str | Path,
    *,
    page_path: str | Path | None = None,
    force: bool = False,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Compute every task not yet on the board (see the module docstring); return the board's rows."""
    target = Path(board_path)
    md = None if page_path is None else Path(page_path)
    existing = {(r["scenario"], r["agent"]): r for r in board.read_rows(target)}
    todo = [t for t in tasks if force or not _done(existing, t, seeds)]
    skipped = len(tasks) - len(todo)
    estimate = estimate_cpu_s(todo, len(seeds))
    log(
        f"suite: {len(todo)} tasks to run ({skipped} already on {target}), {len(seeds)} seeds each; estimated "
        f"{format_duration(estimate)} of CPU time (load average {os.getloadavg()[0]:.1f})"
    )
    with ProgressReport(enabled=progress) as report:
        report.task("suite", len(todo), unit="rows")
        for task in todo:
            rows = task.compute(seeds)
            board.upsert(target, rows)
            write_page(target, md)
            shown = ", ".join(f"{r['agent']} {_dsr_text(r)}" for r in rows)
            report.update(advance=1, detail=f"{task.scenario.name}: {shown}")
    if not todo:
        write_page(target, md)
    return board.read_rows(target)


__all__ = [
    "FIRST_EXPERTS",
    "FIRST_RULES",
    "Task",
    "bound_task",
    "check_rules",
    "estimate_cpu_s",
    "expert_task",
    "oracle_task",
    "plan",
    "rule_task",
    "run_tasks",
    "write_page",
]
