"""``hetgym.suite.board``, ``page`` and ``run``: rows, normalised scores, resume, the page, the oracle hook."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import hetgym.suite as s
from hetgym.suite import board, page
from hetgym.suite.run import oracle_task, plan, run_tasks
from hetgym.suite.scores import ORACLE_AGENT, expert_scores, rule_names, rule_scores

SEEDS = [1000, 1001, 1002]


def _row(scenario: str, agent: str, kind: str, values: list[float]) -> dict[str, Any]:
    return board.make_row(scenario, agent, kind, "simulator", SEEDS, values)


def test_a_row_has_the_mean_and_its_interval() -> None:
    row = _row("default", "elasticflow", "expert", [0.8, 0.9, 1.0])
    assert list(row) == list(board.FIELDS)
    assert row["dsr"] == pytest.approx(0.9) and row["ci_low"] < 0.9 < row["ci_high"]
    assert row["seeds"] == SEEDS and row["tier"] == "reference"
    with pytest.raises(board.BoardError, match="kind"):
        _row("default", "x", "teacher", [0.1, 0.2, 0.3])
    with pytest.raises(board.BoardError, match="not in the suite"):
        _row("nowhere", "x", "expert", [0.1, 0.2, 0.3])
    with pytest.raises(board.BoardError, match="2 values for 3 seeds"):
        _row("default", "x", "expert", [0.1, 0.2])


def test_normalised_is_the_share_of_the_headroom_closed() -> None:
    rows = board.normalise(
        [
            _row("default", "elasticflow", "expert", [0.8, 0.8, 0.8]),
            _row("default", "edf", "expert", [0.4, 0.4, 0.4]),
            _row("default", board.NORMALISING_BOUND, "bound", [1.0, 1.0, 1.0]),
            _row("default", "always-force", "rule", [0.9, 0.9, 0.9]),
            _row("tiny", "edf", "expert", [0.5, 0.5, 0.5]),
        ]
    )
    by = {(r["scenario"], r["agent"]): r["normalised"] for r in rows}
    assert by["default", "always-force"] == pytest.approx(0.5)
    assert by["default", "elasticflow"] == pytest.approx(0.0)
    assert by["default", "edf"] == pytest.approx(-2.0)
    assert by["tiny", "edf"] is None  # no bound on tiny


def test_a_row_on_fewer_seeds_is_normalised_on_its_own_seeds() -> None:
    """An oracle row on one workload is set against the best expert and the bound on that workload."""
    oracle = board.make_row("default", "oracle-lookahead-hindsight", "bound", "env", [1001], [0.95])
    stranger = board.make_row("default", "other", "rule", "env", [7], [0.95])
    rows = board.normalise(
        [
            _row("default", "elasticflow", "expert", [0.7, 0.9, 0.8]),
            _row("default", board.NORMALISING_BOUND, "bound", [1.0, 1.0, 0.9]),
            oracle,
            stranger,
        ]
    )
    by = {r["agent"]: r["normalised"] for r in rows}
    assert by["oracle-lookahead-hindsight"] == pytest.approx((0.95 - 0.9) / (1.0 - 0.9))  # seed 1001's values
    assert by["other"] is None  # seed 7 is not among the expert's seeds


def test_upsert_replaces_the_same_key_keeps_the_rest_and_refuses_a_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "board.json"
    board.upsert(path, [_row("default", "edf", "expert", [0.1, 0.2, 0.3]), _row("tiny", "edf", "expert", [1, 1, 1])])
    rows = board.upsert(path, [_row("default", "edf", "expert", [0.5, 0.5, 0.5])])
    assert [(r["scenario"], r["dsr"]) for r in rows] == [("default", pytest.approx(0.5)), ("tiny", 1.0)]
    assert json.loads(path.read_text()) == rows
    path.write_text('{"not": "a list"}')
    with pytest.raises(board.BoardError, match="another --board"):
        board.upsert(path, rows)
    assert json.loads(path.read_text()) == {"not": "a list"}  # nothing half-written


def test_a_full_board_makes_a_short_page_with_the_answer_first() -> None:
    rows = []
    for name in s.names():
        rows.append(_row(name, "bound-alone", "bound", [1.0, 1.0, 1.0]))
        rows.append(_row(name, board.NORMALISING_BOUND, "bound", [1.0, 0.9, 1.0]))
        rows.append(_row(name, "bound-capacity-nofork", "bound", [0.9, 0.9, 0.9]))
        rows.append(board.make_row(name, ORACLE_AGENT, "bound", "HetClusterEvents-v0", SEEDS, None))
        for i, expert in enumerate(("elasticflow", "dancer", "hadar", "hadare", "asrpt", "jps", "edf", "edf-x")):
            rows.append(_row(name, expert, "expert", [0.1 * i, 0.1 * i, 0.1 * i]))
        for rule in rule_names(s.get(name)):
            rows.append(_row(name, rule, "rule", [0.5, 0.6, 0.7]))
        rows.append(_row(name, "events-ppo-s0", "learned", [0.7, 0.7, 0.7]))
    text = page.markdown(board.normalise(rows), answer=page.answer(board.normalise(rows)), notes=page.NOTES)
    lines = text.splitlines()
    assert lines[2].startswith("**Answer.**") and len(lines) <= 150
    assert sum(line.startswith("### Tier:") for line in lines) == len(s.TIERS)
    assert "not computed" in text and "[3 seeds]" in text
    assert "- default: 1 experts (edf-admission)" in text  # the board above has "edf-x" instead
    assert "constant rules" not in text.split("### Tier")[0].split("Not computed yet")[1]


def test_the_oracle_row_says_not_computed_without_the_lookahead_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "hetgym.lookahead", None)  # import fails
    (row,) = oracle_task(s.get("tiny")).compute(SEEDS)
    assert row["dsr"] is None and "not computed" in row["note"] and row["kind"] == "bound"


def test_the_oracle_row_calls_hindsight_oracle_when_it_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def hindsight_oracle(env_id: str, env_kwargs: dict[str, Any], workload_seed: int, *, base_action: int) -> dict:
        calls.append((env_id, env_kwargs["scenario"], workload_seed, base_action))
        return {"dsr": 0.25 * (workload_seed - 999), "cpu_s": 1.0}

    fake = types.ModuleType("hetgym.lookahead")
    fake.hindsight_oracle = hindsight_oracle  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "hetgym.lookahead", fake)
    (row,) = oracle_task(s.get("tiny")).compute(SEEDS)
    assert row["per_seed"] == [0.25, 0.5, 0.75] and row["cpu_s"] == 3.0 and "not a result" in row["note"]
    force = rule_names(s.get("tiny"))["always-force"]
    assert calls == [("HetClusterEvents-v0", "tiny", seed, force) for seed in SEEDS]


def test_always_auto_is_elasticflow_on_the_raw_simulator() -> None:
    rule, _ = rule_scores(s.get("tiny"), rule_names(s.get("tiny"))["always-auto"], SEEDS)
    expert, _ = expert_scores(s.get("tiny"), "elasticflow", SEEDS)
    assert rule == expert


def test_a_run_resumes_from_the_rows_already_on_the_board(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, md = tmp_path / "board.json", tmp_path / "board.md"
    tasks = plan([s.get("tiny")], experts=("edf",), rules=["always-reject"], oracle=False)
    first = run_tasks(tasks, SEEDS, path, page_path=md, progress=False)
    assert {r["agent"] for r in first} == {
        "bound-alone",
        "bound-capacity",
        "bound-capacity-nofork",
        "edf",
        "always-reject",
    }
    assert next(r for r in first if r["agent"] == "always-reject")["dsr"] == 0.0
    for agent in ("bound-capacity", "bound-capacity-nofork"):
        assert next(r for r in first if r["agent"] == agent)["detail"]["solver"] == ["optimal"]
    assert "| tiny |" in md.read_text()
    again = run_tasks(tasks, SEEDS, path, page_path=md, progress=False)
    assert "0 tasks to run (3 already" in capsys.readouterr().out
    assert again == first


def test_the_command_lists_and_refuses_bad_input_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hetgym.suite.__main__ import main

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in s.names()) and "test seeds 1000-1019" in out
    target = tmp_path / "b.json"
    assert main(["run", "--suite", "nope", "--board", str(target)]) == 2
    assert "load-2x" in capsys.readouterr().err
    assert main(["run", "--suite", "tiny", "--rules", "always-nope", "--board", str(target)]) == 2
    assert "always-force" in capsys.readouterr().err
    assert main(["bounds", "--suite", "tiny", "--num-slots", "0", "--board", str(target)]) == 2
    assert main(["merge", str(tmp_path / "missing.json"), "--board", str(target)]) == 2
    assert not target.exists()
