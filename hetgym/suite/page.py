"""The leaderboard's markdown page (docs/results/leaderboard.md), generated from its JSON rows.

The answer first (per scenario: the best expert, the best constant rule, the bounds and the headroom left),
then one table per tier with the agents as rows and the tier's scenarios as columns. Every expert, bound and
learned row is shown; of the constant rules, ``always-auto`` (ElasticFlow's own choice), ``always-force`` and
any rule that is the best rule on one of the tier's scenarios (the rest are in the JSON file), so the page
stays short.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hetgym.suite.board import NORMALISING_BOUND, best_expert
from hetgym.suite.scenarios import SCENARIOS, TEST_SEEDS, TIERS

#: Rules always shown on the page.
SHOWN_RULES = ("always-auto", "always-force")
#: The bound rows, in the order shown.
BOUND_ORDER = ("bound-alone", "bound-capacity", "bound-capacity-nofork", "oracle-lookahead-hindsight")


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _cell(row: Mapping[str, Any] | None) -> str:
    if row is None:
        return ""
    if row["dsr"] is None:
        return "not computed"
    half = None if row["ci_high"] is None else (row["ci_high"] - row["ci_low"]) / 2
    text = _fmt(row["dsr"]) + ("" if half is None else f" ±{half:.3f}")
    if row.get("normalised") is not None and row["kind"] != "bound":
        text += f" ({row['normalised']:+.2f})"
    if len(row["seeds"]) != len(TEST_SEEDS) or list(row["seeds"]) != list(TEST_SEEDS):
        text += f" [{len(row['seeds'])} seeds]"
    return text


def _best_rule(rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    rules = [r for r in rows if r["kind"] == "rule" and r["dsr"] is not None]
    return max(rules, key=lambda r: (r["dsr"], r["agent"])) if rules else None


def headroom_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per scenario: best expert, best rule, the bounds and the headroom (bound minus best expert)."""
    lines = [
        "| scenario | tier | best expert | its DSR | best constant rule | its DSR | alone bound | capacity bound "
        "| capacity bound, no fork | headroom | headroom, no fork |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, scenario in SCENARIOS.items():
        mine = [r for r in rows if r["scenario"] == name]
        if not mine:
            continue
        by_agent = {r["agent"]: r for r in mine}
        best = best_expert(mine)
        rule = _best_rule(mine)
        bound = by_agent.get(NORMALISING_BOUND)
        room = None if best is None or bound is None or bound["dsr"] is None else bound["dsr"] - best["dsr"]
        nofork = by_agent.get("bound-capacity-nofork")
        room_nf = None if best is None or nofork is None or nofork["dsr"] is None else nofork["dsr"] - best["dsr"]
        lines.append(
            f"| {name} | {scenario.tier} | {best['agent'] if best else '-'} | {_fmt(best['dsr'] if best else None)} "
            f"| {rule['agent'] if rule else '-'} | {_fmt(rule['dsr'] if rule else None)} "
            f"| {_fmt((by_agent.get('bound-alone') or {}).get('dsr'))} | {_fmt(bound['dsr'] if bound else None)} "
            f"| {_fmt(nofork['dsr'] if nofork else None)} "
            f"| {'-' if room is None else f'{room:+.3f}'} | {'-' if room_nf is None else f'{room_nf:+.3f}'} |"
        )
    return lines


def tier_table(rows: Sequence[Mapping[str, Any]], tier: str) -> list[str]:
    """The table of one tier: agents as rows, the tier's scenarios as columns."""
    names = [n for n, s in SCENARIOS.items() if s.tier == tier and any(r["scenario"] == n for r in rows)]
    if not names:
        return []
    mine = [r for r in rows if r["scenario"] in names]
    shown_rules = set(SHOWN_RULES)
    for name in names:
        best = _best_rule([r for r in mine if r["scenario"] == name])
        if best is not None:
            shown_rules.add(best["agent"])
    agents: list[tuple[str, str]] = []
    for kind in ("bound", "expert", "learned", "rule"):
        found = sorted({r["agent"] for r in mine if r["kind"] == kind})
        if kind == "bound":
            found = [a for a in BOUND_ORDER if a in found] + [a for a in found if a not in BOUND_ORDER]
        if kind == "rule":
            found = [a for a in found if a in shown_rules]
        agents += [(a, kind) for a in found]
    cell = {(r["agent"], r["scenario"]): r for r in mine}
    lines = [
        f"### Tier: {tier}",
        "",
        "| agent | kind | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for agent, kind in agents:
        lines.append(f"| {agent} | {kind} | " + " | ".join(_cell(cell.get((agent, n))) for n in names) + " |")
    return [*lines, ""]


#: The notes under the headroom table: how the rows were computed and how to read them.
NOTES = (
    "Rows written by `python -m hetgym.suite run --suite all` (experts, constant rules, bounds) and "
    "`hetgym evaluate --suite NAME|all` (saved agents, policies, rules) into [leaderboard.json](leaderboard.json); "
    "docs/suite.md defines the scenarios, the bounds and how to submit a row. DSR means over the held-out "
    "workload seeds 1000-1019 (a cell says so when a row has other seeds), ± the half-width of the 95% "
    "Student-t interval; in brackets the normalised score, (agent - best expert) / (capacity bound - best "
    "expert), the share of the headroom the row closes. Experts run on the raw simulator; constant rules "
    "(`always-<action>`: one action of `HetClusterEvents-v0` at every decision) through the event interface. "
    "Bounds: *alone*, the share of jobs that could meet their deadline with the whole cluster to themselves; "
    "*capacity*, a time-indexed MILP relaxation over the workload, valid for every policy and execution mode; "
    "*capacity, no fork*, the same for schedules that never fork a job into copies (every expert but "
    "HadarE, every rule); the hindsight lookahead is an oracle reference, never a result. Headroom: "
    "capacity bound minus best expert; headroom, no fork: the no-fork bound minus best expert (what an agent "
    "of HetCluster-v1 or HetClusterEvents-v0, which never forks, could gain at most; negative where HadarE's "
    "forked copies beat that bound). Only the rules `always-auto`, `always-force` and each scenario's best "
    "rule are shown; the JSON file has every rule.",
)


def answer(rows: Sequence[Mapping[str, Any]]) -> str:
    """The page's first paragraph, from the rows: where the experts stand and where the headroom is."""
    rooms = []
    for name in SCENARIOS:
        mine = [r for r in rows if r["scenario"] == name]
        best = best_expert(mine)
        bound = next((r for r in mine if r["agent"] == NORMALISING_BOUND and r["dsr"] is not None), None)
        nofork = next((r for r in mine if r["agent"] == "bound-capacity-nofork" and r["dsr"] is not None), None)
        if best is not None and bound is not None:
            rooms.append((bound["dsr"] - best["dsr"], name, best, bound, nofork))
    if not rooms:
        return "**Answer.** No scenario has both an expert row and a capacity bound yet."
    rooms.sort(key=lambda x: (-x[0], x[1]))
    top = ", ".join(
        f"{name} ({best['agent']} {best['dsr']:.3f} against {bound['dsr']:.3f}"
        + ("" if nofork is None else f"; {nofork['dsr']:.3f} without forked copies")
        + ")"
        for _, name, best, bound, nofork in rooms[:3]
    )
    low = rooms[-1]
    nofork_rooms = sorted(
        ((nf["dsr"] - best["dsr"], name) for _, name, best, _, nf in rooms if nf is not None),
        key=lambda x: (-x[0], x[1]),
    )
    nofork_text = ""
    if nofork_rooms:
        listed = ", ".join(f"{name} ({room:+.3f})" for room, name in nofork_rooms[:3])
        nofork_text = (
            f" Against the no-fork bound, which caps every agent of HetCluster-v1 and HetClusterEvents-v0, the "
            f"most headroom is on {listed}."
        )
    return (
        f"**Answer.** Over the {len(rooms)} scenarios with an expert and a bound, the most headroom above the "
        f"best expert is left on {top}; the least on {low[1]} ({low[0]:+.3f}).{nofork_text} The bounds are "
        "upper bounds (relaxations), not achievable scores: the headroom is at most this."
    )


def missing(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per scenario whose expert, rule or bound rows are not all on the board yet."""
    from hetgym.suite.scores import EXPERTS, rule_names

    out = []
    for name, scenario in SCENARIOS.items():
        have = {r["agent"] for r in rows if r["scenario"] == name and r["dsr"] is not None}
        experts = [e for e in EXPERTS if e not in have]
        rules = [r for r in rule_names(scenario) if r not in have]
        bounds = [b for b in BOUND_ORDER[:3] if b not in have]
        parts = [f"{len(v)} {k} ({', '.join(v)})" for k, v in (("experts", experts), ("bounds", bounds)) if v]
        if rules:
            parts.append(f"{len(rules)} of {len(rule_names(scenario))} constant rules")
        if parts:
            out.append(f"- {name}: {'; '.join(parts)}")
    return ["**Not computed yet** (rerun the command to resume):", "", *out] if out else []


def markdown(rows: Sequence[Mapping[str, Any]], *, answer: str = "", notes: Sequence[str] = ()) -> str:
    """The whole page: title, ``answer``, the headroom table, ``notes``, then one table per tier."""
    out = ["# Suite leaderboard", ""]
    if answer:
        out += [answer, ""]
    out += headroom_table(rows)
    out.append("")
    out += list(notes)
    if notes:
        out.append("")
    gaps = missing(rows)
    if gaps:
        out += [*gaps, ""]
    for tier in TIERS:
        out += tier_table(rows, tier)
    return "\n".join(out).rstrip() + "\n"


__all__ = ["BOUND_ORDER", "NOTES", "SHOWN_RULES", "answer", "headroom_table", "markdown", "missing", "tier_table"]
