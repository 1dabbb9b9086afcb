"""Rows of "agent versus the best expert" written by ``hetgym evaluate --beat-the-experts FILE.json``.

One row per saved agent, training seed and scenario: the agent's mean DSR over the evaluation's workload
seeds, the best expert among those evaluated on the same seeds (the highest mean DSR), and the paired
difference (agent minus that expert, per seed) with its 95% Student-t interval. The file is a JSON list
of such rows; a new evaluation replaces the rows with the same ``(env_id, scenario, recipe, train_seed)``
and keeps the others, so the file gathers the recipes and seeds evaluated one after another.

Row fields: ``env_id``, ``scenario`` (the scenario preset, ``"default"`` for the flagship one), ``recipe``
(the recipe, with its teacher in brackets when it has one), ``train_seed``, ``best_expert``,
``agent_dsr``, ``expert_dsr``, ``diff_mean``, ``diff_ci_low``, ``diff_ci_high``, ``seeds`` (the workload
seeds) and ``cpu_hours`` (the CPU time of training, from the agent's ``agent.json``; ``null`` when the
recipe did not record it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agents.args import AgentError
from agents.common import AgentMeta, atomic_write
from agents.evaluation import Evaluation
from hetgym.stats import paired_interval

#: The fields of a row, in the order they are written.
FIELDS = (
    "env_id",
    "scenario",
    "recipe",
    "train_seed",
    "best_expert",
    "agent_dsr",
    "expert_dsr",
    "diff_mean",
    "diff_ci_low",
    "diff_ci_high",
    "seeds",
    "cpu_hours",
)
#: The fields that identify a row (a new evaluation replaces the row with the same key).
KEY = ("env_id", "scenario", "recipe", "train_seed")


def scenario_name(config: Any) -> str:
    """The scenario of an environment's configuration as the rows name it: the scenario preset's name
    (``"default"`` for the flagship one) or, for a workload read from a trace, the trace (its archive
    member's name when it has one), ``-windows`` when windows of it are drawn, and ``@`` the cluster."""
    workload = getattr(config, "workload", None)
    trace = getattr(workload, "trace", None)
    if trace:
        stem = Path(str(getattr(workload, "trace_member", None) or trace)).name.split(".")[0]
        windows = "-windows" if getattr(workload, "trace_window", False) else ""
        return f"{stem}{windows}@{getattr(config, 'cluster', '?')}"
    return str(getattr(config, "scenario", "default"))


def recipe_label(meta: AgentMeta) -> str:
    """The recipe's name, with its teacher in brackets when it learned from one (``events-kickstart(force-any)``)."""
    return f"{meta.recipe}({meta.teacher})" if meta.teacher else meta.recipe


def rows_for(
    evaluation: Evaluation, metas: Mapping[str, AgentMeta], scenario: Mapping[str, str]
) -> list[dict[str, Any]]:
    """One row per agent label in ``metas`` against the best expert of ``evaluation`` (``scenario``: the
    scenario name per label)."""
    runs = evaluation.runs
    experts = runs[runs["kind"] == "expert"]
    if experts.empty:
        raise AgentError("--beat-the-experts compares agents with experts: give some --experts")
    means = experts.groupby("policy", sort=False)["dsr"].mean()
    best = str(means.idxmax())
    ref = experts[experts["policy"] == best].set_index("seed")["dsr"]
    rows = []
    for label, meta in metas.items():
        mine = runs[(runs["policy"] == label) & (runs["kind"] == "agent")].set_index("seed")["dsr"]
        seeds = [int(s) for s in mine.index if s in ref.index]
        if len(seeds) < 2:
            raise AgentError(f"--beat-the-experts needs at least 2 common workload seeds for {label!r}, got {seeds}")
        agent = mine.loc[seeds].to_numpy(dtype=float)
        theirs = ref.loc[seeds].to_numpy(dtype=float)
        diff = paired_interval(agent, theirs)
        cpu = meta.results.get("cpu_hours") if isinstance(meta.results, Mapping) else None
        rows.append(
            {
                "env_id": meta.env_id,
                "scenario": scenario[label],
                "recipe": recipe_label(meta),
                "train_seed": int(meta.seed),
                "best_expert": best,
                "agent_dsr": float(np.mean(agent)),
                "expert_dsr": float(np.mean(theirs)),
                "diff_mean": float(diff.mean),
                "diff_ci_low": float(diff.low),
                "diff_ci_high": float(diff.high),
                "seeds": seeds,
                "cpu_hours": None if cpu is None or not math.isfinite(float(cpu)) else float(cpu),
            }
        )
    return rows


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of an existing file (``[]`` when there is none); a file that is not such a list is refused."""
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AgentError(f"{path}: not a readable JSON file ({exc}); give a new file or fix this one") from exc
    if not isinstance(data, list) or not all(isinstance(r, dict) and all(k in r for k in KEY) for r in data):
        raise AgentError(f"{path}: not a list of rows with the fields {list(KEY)}; give a new file")
    return data


def upsert(path: str | Path, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Write ``rows`` into the JSON list at ``path``, replacing those with the same key; return the whole list."""
    target = Path(path)
    kept = {tuple(r[k] for k in KEY): r for r in read_rows(target)}
    for row in rows:
        kept[tuple(row[k] for k in KEY)] = {k: row[k] for k in FIELDS}
    out = sorted(kept.values(), key=lambda r: (r["scenario"], r["env_id"], r["recipe"], r["train_seed"]))
    atomic_write(target, lambda p: p.write_text(json.dumps(out, indent=1) + "\n"))
    return out


def markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows as a markdown table (DSR means; the paired difference with its 95% interval)."""
    head = (
        "| scenario | env id | recipe | training seed | agent DSR | best expert | its DSR "
        "| agent minus expert [95% CI] | seeds | CPU h |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        seeds = r["seeds"]
        span = f"{min(seeds)}-{max(seeds)}" if seeds == list(range(min(seeds), max(seeds) + 1)) else str(len(seeds))
        cpu = "-" if r.get("cpu_hours") is None else f"{r['cpu_hours']:.2f}"
        lines.append(
            f"| {r['scenario']} | `{r['env_id']}` | {r['recipe']} | {r['train_seed']} | {r['agent_dsr']:.3f} | "
            f"{r['best_expert']} | {r['expert_dsr']:.3f} | {r['diff_mean']:+.3f} [{r['diff_ci_low']:+.3f}, "
            f"{r['diff_ci_high']:+.3f}] | {span} | {cpu} |"
        )
    return "\n".join(lines) + "\n"


__all__ = ["FIELDS", "KEY", "markdown", "read_rows", "recipe_label", "rows_for", "scenario_name", "upsert"]


# -- the suite's leaderboard (docs/results/leaderboard.json, hetgym.suite.board) -----------------------------

#: ``gym.make`` keys a suite scenario sets; a saved agent's other keys (``flatten``, ``probe``, its physics)
#: are kept when it plays the scenario.
SCENARIO_KEYS = ("scenario", "cluster", "workload")


def suite_env_kwargs(meta: AgentMeta, scenario: Any) -> dict[str, Any]:
    """The agent's ``gym.make`` kwargs on a suite scenario: the scenario's cluster and workload, the agent's rest.

    Raises:
        AgentError: The agent acts in an interface the suite does not define (naming the ones it does).
    """
    from hetgym.suite import INTERFACES

    if meta.env_id not in INTERFACES:
        raise AgentError(
            f"the agent acts in {meta.env_id}; the suite's scenarios are defined for {list(INTERFACES)}: "
            "train it on one of those ids (hetgym.suite.get(name).kwargs(env_id) gives the scenario's kwargs)"
        )
    kept = {k: v for k, v in dict(meta.env_kwargs).items() if k not in SCENARIO_KEYS}
    return {**kept, **scenario.kwargs(meta.env_id)}


def suite_learned_task(model: Any, meta: AgentMeta, scenario: Any, label: str, *, max_steps: int | None) -> Any:
    """A :class:`hetgym.suite.run.Task` that scores a saved agent on ``scenario`` (kind ``learned``)."""
    import time

    from agents.evaluation import evaluate_model
    from hetgym.suite import board
    from hetgym.suite.run import Task

    env_kwargs = suite_env_kwargs(meta, scenario)

    def compute(seeds: Sequence[int]) -> list[dict[str, Any]]:
        started = time.process_time()
        runs = evaluate_model(model, meta.env_id, env_kwargs, seeds, max_steps=max_steps)
        cut = int(runs["truncated_by_eval"].astype(bool).sum())
        cpu = meta.results.get("cpu_hours") if isinstance(meta.results, Mapping) else None
        note = f"{recipe_label(meta)}, training seed {meta.seed}" + (
            f"; {cut} episodes cut at --max-steps" if cut else ""
        )
        return [
            board.make_row(
                scenario.name,
                label,
                "learned",
                meta.env_id,
                seeds,
                [float(v) for v in runs["dsr"]],
                cpu_s=time.process_time() - started,
                note=note,
                detail={"training_cpu_hours": cpu, "env_kwargs": env_kwargs},
            )
        ]

    return Task(scenario, "learned", (label,), compute, 1.0, always=True)


__all__ += ["SCENARIO_KEYS", "suite_env_kwargs", "suite_learned_task"]
