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
recipe did not record it). Then ``modal_action_share`` (the share of the agent's decisions, pooled over the
seeds, that are its most frequent action: a policy of its own covers well under 1), ``kind`` (``learned`` for a
saved agent, ``teacher`` for a lookahead teacher's row, :func:`make_row`) and, on the event-driven interface,
the best constant rule: ``best_rule`` (the constant event action with the highest mean DSR on the same seeds,
:func:`constant_rule_dsrs`), ``rule_dsr``, and the paired difference agent minus that rule with its 95%
interval (``diff_rule_mean``, ``diff_rule_ci_low``, ``diff_rule_ci_high``); these are ``null`` elsewhere and
in rows written before they existed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agents.args import AgentError
from agents.common import AgentMeta, atomic_write, num_actions
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
    "modal_action_share",
    "kind",
    "best_rule",
    "rule_dsr",
    "diff_rule_mean",
    "diff_rule_ci_low",
    "diff_rule_ci_high",
)
#: The kinds of row: a saved agent, or a lookahead teacher evaluated on the same seeds.
KINDS = ("learned", "teacher")
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


def constant_rule_dsrs(env_id: str, env_kwargs: Mapping[str, Any], seeds: Sequence[int]) -> dict[str, dict[int, float]]:
    """Each constant action of an event-driven environment played on ``seeds``: ``{rule: {seed: DSR}}``.

    A rule takes its action at every decision where the mask allows it and action 0 (the allocator's own
    choice) elsewhere; it is named ``"<action>: <description>"``. Raises :class:`AgentError` for an
    environment that is not event-driven (it has no constant rules).
    """
    from agents.common import make_env

    env = make_env(env_id, dict(env_kwargs))
    try:
        u = env.unwrapped
        actions = getattr(u, "actions", None)
        if actions is None or not hasattr(u, "action_masks"):
            raise AgentError(f"{env_id} is not event-driven: constant rules exist for HetClusterEvents-* ids")
        out: dict[str, dict[int, float]] = {}
        for action in range(num_actions(env)):
            per_seed = {}
            for seed in seeds:
                _, info = env.reset(seed=int(seed), options={"workload_seed": int(seed)})
                while True:
                    chosen = action if bool(np.asarray(info["action_mask"])[action]) else 0
                    _, _, terminated, truncated, info = env.step(chosen)
                    if terminated or truncated:
                        break
                per_seed[int(seed)] = float(info["metrics"]["dsr"])
            out[f"{action}: {actions.describe(action)}"] = per_seed
        return out
    finally:
        env.close()


def _best(per_policy: Mapping[str, Mapping[int, float]], seeds: Sequence[int]) -> tuple[str, np.ndarray]:
    means = {name: float(np.mean([dsr[s] for s in seeds])) for name, dsr in per_policy.items()}
    best = max(means, key=lambda name: means[name])
    return best, np.asarray([per_policy[best][s] for s in seeds], dtype=float)


def make_row(
    *,
    env_id: str,
    scenario: str,
    recipe: str,
    train_seed: int,
    agent: Mapping[int, float],
    experts: Mapping[str, Mapping[int, float]],
    rules: Mapping[str, Mapping[int, float]] | None = None,
    modal_action_share: float | None = None,
    kind: str = "learned",
    cpu_hours: float | None = None,
) -> dict[str, Any]:
    """One row: ``agent``'s per-seed DSR against the best of ``experts`` and (when given) of ``rules`` on the
    seeds they all have (paired per seed)."""
    if kind not in KINDS:
        raise AgentError(f"kind={kind!r}: use one of {KINDS}")
    if not experts:
        raise AgentError("--beat-the-experts compares agents with experts: give some --experts")
    seeds = sorted(int(s) for s in agent if all(s in dsr for dsr in experts.values()))
    if rules:
        seeds = [s for s in seeds if all(s in dsr for dsr in rules.values())]
    if len(seeds) < 2:
        raise AgentError(f"--beat-the-experts needs at least 2 common workload seeds for {recipe!r}, got {seeds}")
    mine = np.asarray([agent[s] for s in seeds], dtype=float)
    best, theirs = _best(experts, seeds)
    diff = paired_interval(mine, theirs)
    row: dict[str, Any] = {
        "env_id": env_id,
        "scenario": scenario,
        "recipe": recipe,
        "train_seed": int(train_seed),
        "best_expert": best,
        "agent_dsr": float(np.mean(mine)),
        "expert_dsr": float(np.mean(theirs)),
        "diff_mean": float(diff.mean),
        "diff_ci_low": float(diff.low),
        "diff_ci_high": float(diff.high),
        "seeds": seeds,
        "cpu_hours": None if cpu_hours is None or not math.isfinite(float(cpu_hours)) else float(cpu_hours),
        "modal_action_share": None
        if modal_action_share is None or not math.isfinite(modal_action_share)
        else float(modal_action_share),
        "kind": kind,
        "best_rule": None,
        "rule_dsr": None,
        "diff_rule_mean": None,
        "diff_rule_ci_low": None,
        "diff_rule_ci_high": None,
    }
    if rules:
        rule, rule_dsr = _best(rules, seeds)
        vs_rule = paired_interval(mine, rule_dsr)
        row.update(
            best_rule=rule,
            rule_dsr=float(np.mean(rule_dsr)),
            diff_rule_mean=float(vs_rule.mean),
            diff_rule_ci_low=float(vs_rule.low),
            diff_rule_ci_high=float(vs_rule.high),
        )
    return row


def rows_for(
    evaluation: Evaluation,
    metas: Mapping[str, AgentMeta],
    scenario: Mapping[str, str],
    rules: Mapping[str, Mapping[int, float]] | None = None,
) -> list[dict[str, Any]]:
    """One row per agent label in ``metas`` against the best expert of ``evaluation`` (``scenario``: the
    scenario name per label; ``rules``: the constant rules' DSR per seed, :func:`constant_rule_dsrs`)."""
    from agents.evaluation import pooled_modal_share

    runs = evaluation.runs
    experts = runs[runs["kind"] == "expert"]
    if experts.empty:
        raise AgentError("--beat-the-experts compares agents with experts: give some --experts")
    expert_dsr = {
        str(name): {int(s): float(d) for s, d in zip(group["seed"], group["dsr"], strict=True)}
        for name, group in experts.groupby("policy", sort=False)
    }
    rows = []
    for label, meta in metas.items():
        mine = runs[(runs["policy"] == label) & (runs["kind"] == "agent")]
        counts = mine["action_counts"].dropna().tolist() if "action_counts" in mine.columns else []
        results = meta.results if isinstance(meta.results, Mapping) else {}
        cpu = results.get("cpu_hours")
        rows.append(
            make_row(
                env_id=meta.env_id,
                scenario=scenario[label],
                recipe=recipe_label(meta),
                train_seed=int(meta.seed),
                agent={int(s): float(d) for s, d in zip(mine["seed"], mine["dsr"], strict=True)},
                experts=expert_dsr,
                rules=rules,
                modal_action_share=pooled_modal_share(counts) if counts else None,
                kind="learned",
                cpu_hours=None if cpu is None else float(cpu),
            )
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
        kept[tuple(row[k] for k in KEY)] = {k: row.get(k) for k in FIELDS}
    out = sorted(kept.values(), key=lambda r: (r["scenario"], r["env_id"], r["recipe"], r["train_seed"]))
    atomic_write(target, lambda p: p.write_text(json.dumps(out, indent=1) + "\n"))
    return out


def _rule_cells(r: Mapping[str, Any]) -> str:
    """The kind, modal-action and best-rule cells of a row ("-" where the row has no such field)."""
    modal = r.get("modal_action_share")
    cells = [str(r.get("kind") or "-"), "-" if modal is None else f"{100 * modal:.0f}%"]
    if r.get("best_rule") is None:
        return " | ".join([*cells, "-", "-"])
    cells.append(f"{r['best_rule']} ({r['rule_dsr']:.3f})")
    cells.append(f"{r['diff_rule_mean']:+.3f} [{r['diff_rule_ci_low']:+.3f}, {r['diff_rule_ci_high']:+.3f}]")
    return " | ".join(cells)


def markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows as a markdown table (DSR means; the paired difference with its 95% interval)."""
    head = (
        "| scenario | env id | recipe | training seed | agent DSR | best expert | its DSR "
        "| agent minus expert [95% CI] | seeds | CPU h | kind | modal action | best rule (DSR) "
        "| agent minus rule [95% CI] |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        seeds = r["seeds"]
        span = f"{min(seeds)}-{max(seeds)}" if seeds == list(range(min(seeds), max(seeds) + 1)) else str(len(seeds))
        cpu = "-" if r.get("cpu_hours") is None else f"{r['cpu_hours']:.2f}"
        lines.append(
            f"| {r['scenario']} | `{r['env_id']}` | {r['recipe']} | {r['train_seed']} | {r['agent_dsr']:.3f} | "
            f"{r['best_expert']} | {r['expert_dsr']:.3f} | {r['diff_mean']:+.3f} [{r['diff_ci_low']:+.3f}, "
            f"{r['diff_ci_high']:+.3f}] | {span} | {cpu} | {_rule_cells(r)} |"
        )
    return "\n".join(lines) + "\n"


__all__ = [
    "FIELDS",
    "KEY",
    "KINDS",
    "constant_rule_dsrs",
    "make_row",
    "markdown",
    "read_rows",
    "recipe_label",
    "rows_for",
    "scenario_name",
    "upsert",
]


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
