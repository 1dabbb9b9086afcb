"""The leaderboard's fields for expert iteration: the best constant event rule on the same seeds, the paired
difference to it, the modal-action share and the kind of row."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents.args import AgentError
from agents.evaluation import pooled_modal_share
from agents.leaderboard import FIELDS, constant_rule_dsrs, make_row, markdown, upsert
from hetgym.lookahead import play_rule
from hetgym.stats import paired_interval

SEEDS = [1000, 1001, 1002]


def test_row_carries_the_best_rule_and_its_paired_difference():
    agent = {1000: 0.9, 1001: 0.8, 1002: 0.7}
    experts = {"a": {1000: 0.5, 1001: 0.5, 1002: 0.5}, "b": {1000: 0.8, 1001: 0.8, 1002: 0.6}}
    rules = {"0: auto": {1000: 0.8, 1001: 0.8, 1002: 0.6}, "4: force": {1000: 0.9, 1001: 0.7, 1002: 0.5}}
    row = make_row(
        env_id="HetClusterEvents-Tiny-v0",
        scenario="tiny",
        recipe="exit(lookahead)",
        train_seed=0,
        agent=agent,
        experts=experts,
        rules=rules,
        modal_action_share=0.75,
        kind="learned",
    )
    assert set(row) == set(FIELDS)
    assert row["best_expert"] == "b" and row["expert_dsr"] == pytest.approx(2.2 / 3)
    assert row["best_rule"] == "0: auto" and row["rule_dsr"] == pytest.approx(2.2 / 3)
    expected = paired_interval(np.array([0.9, 0.8, 0.7]), np.array([0.8, 0.8, 0.6]))
    assert row["diff_rule_mean"] == pytest.approx(expected.mean)
    assert (row["diff_rule_ci_low"], row["diff_rule_ci_high"]) == pytest.approx((expected.low, expected.high))
    assert row["modal_action_share"] == 0.75 and row["kind"] == "learned"
    assert "0: auto (0.733)" in markdown([row])


def test_row_without_rules_leaves_the_rule_fields_empty_and_kind_is_checked():
    agent = {1000: 0.9, 1001: 0.8}
    experts = {"a": {1000: 0.5, 1001: 0.5}}
    row = make_row(env_id="x", scenario="s", recipe="r", train_seed=0, agent=agent, experts=experts, kind="teacher")
    assert row["best_rule"] is None and row["diff_rule_mean"] is None and row["kind"] == "teacher"
    assert "| teacher | - | - | - |" in markdown([row])
    with pytest.raises(AgentError, match="kind"):
        make_row(env_id="x", scenario="s", recipe="r", train_seed=0, agent=agent, experts=experts, kind="oracle")


def test_rows_written_before_the_new_fields_still_render_and_upsert(tmp_path):
    values = ["e", "s", "r", 0, "a", 0.5, 0.4, 0.1, 0.0, 0.2, [1, 2], None]
    old = dict(zip(FIELDS[:12], values, strict=True))
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([old]))
    experts = {"a": {1: 0.4, 2: 0.5}}
    new = make_row(env_id="e", scenario="s", recipe="r2", train_seed=0, agent={1: 0.5, 2: 0.6}, experts=experts)
    rows = upsert(path, [new])
    assert len(rows) == 2 and "best_rule" not in rows[0] and rows[1]["kind"] == "learned"
    assert markdown(rows).count("\n") == 4


def test_constant_rules_are_the_event_actions_played_on_the_seeds():
    rules = constant_rule_dsrs("HetClusterEvents-Tiny-v0", {"flatten": True}, SEEDS[:2])
    assert len(rules) == 8 and all(set(dsr) == set(SEEDS[:2]) for dsr in rules.values())
    force = next(name for name in rules if name.endswith("force"))
    auto = next(name for name in rules if name.startswith("0: "))
    for seed in SEEDS[:2]:
        assert rules[force][seed] == play_rule("HetClusterEvents-Tiny-v0", None, seed, "force")["dsr"]
        assert rules[auto][seed] == play_rule("HetClusterEvents-Tiny-v0", None, seed, 0)["dsr"]
    with pytest.raises(AgentError, match="event-driven"):
        constant_rule_dsrs("HetCluster-Tiny-v1", {}, SEEDS[:2])


def test_pooled_modal_share_pools_counts_over_episodes():
    counts = [json.dumps({"4": 3, "0": 1}), json.dumps({"0": 4})]
    assert pooled_modal_share(counts) == pytest.approx(5 / 8)
