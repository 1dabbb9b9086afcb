"""``scripts/studies/lookahead.py --suite``: a suite scenario's kwargs, and the action set beside them."""

from __future__ import annotations

import argparse

import pytest
from helpers import load_script

from hetgym.suite import get


def _ns(**values: object) -> argparse.Namespace:
    return argparse.Namespace(**{"env_id": "HetClusterEvents-Tiny-v0", "suite": None, "action_set": None, **values})


def test_a_suite_scenario_gives_its_event_kwargs_and_an_action_set() -> None:
    script = load_script("studies/lookahead")
    assert script._environment(_ns()) == ("HetClusterEvents-Tiny-v0", None)
    env_id, kwargs = script._environment(_ns(suite="load-2x", action_set="share"))
    assert env_id == "HetClusterEvents-v0"
    assert kwargs == {**get("load-2x").kwargs(), "action_set": "share"}
    with pytest.raises(SystemExit, match="--suite"):
        script._environment(_ns(action_set="share"))


def test_publish_writes_a_teacher_row_beside_the_existing_ones(tmp_path) -> None:
    import json

    script = load_script("studies/lookahead")
    run = tmp_path / "run"
    run.mkdir()
    setup = {
        "env_id": "HetClusterEvents-v0",
        "suite": "tiny",
        "env_kwargs": get("tiny").kwargs(),
        "base": "elasticflow",
        "knobs": {"k_initial": 2, "k_max": 4, "workers": 1},
        "command": "lookahead.py run --suite tiny",
    }
    (run / "setup.json").write_text(json.dumps(setup))
    teacher = {1000: 0.75, 1001: 1.0}
    for seed, dsr in teacher.items():
        brief = {"dsr": dsr, "cpu_s": 6.0, "decisions": 3, "deviations": 1, "decision_cpu_s": [1.0, 2.0, 3.0]}
        brief["deviated_at"] = [{"decision": 1, "base_action": 0, "chosen": 5, "margin_jobs": 1.5, "futures": 4}]
        (run / f"seed-{seed}.json").write_text(json.dumps({"seed": seed, "teacher": brief}))
    out = tmp_path / "rows.json"
    other = {"env_id": "x", "scenario": "y", "recipe": "z", "train_seed": 0, "kept": True}
    out.write_text(json.dumps([other]))
    assert script.main(["publish", str(run), "--out", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert other in rows  # rows of other runs are kept whole
    (row,) = [r for r in rows if r["scenario"] == "tiny"]
    assert row["kind"] == "teacher" and row["seeds"] == [1000, 1001]
    assert row["agent_dsr"] == 0.875 and row["cpu_s_per_decision"] == 2.0 and row["deviations"] == 2
    assert row["modal_action_share"] == 4 / 6  # action 0 at four of six decisions, 5 at two
    assert row["best_rule"] is not None and row["command"] == setup["command"]
    assert row["recipe"] == "lookahead(sampled; base elasticflow, K=2..4)"
