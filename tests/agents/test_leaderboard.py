"""``agents.leaderboard``: the "agent versus the best expert" rows that ``hetgym evaluate --beat-the-experts``
writes, paired per seed, merged into one JSON list by key."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from agents.args import AgentError
from agents.common import AgentMeta
from agents.evaluation import Evaluation
from agents.leaderboard import FIELDS, markdown, read_rows, rows_for, upsert
from hetgym.stats import paired_interval


def evaluation(agent: list[float], experts: dict[str, list[float]]) -> Evaluation:
    seeds = list(range(1000, 1000 + len(agent)))
    rows = [{"policy": "agent", "kind": "agent", "seed": s, "dsr": d} for s, d in zip(seeds, agent, strict=True)]
    for name, values in experts.items():
        rows += [{"policy": name, "kind": "expert", "seed": s, "dsr": d} for s, d in zip(seeds, values, strict=True)]
    return Evaluation(pd.DataFrame(rows), None, seeds)


def meta(seed: int = 3, teacher: str | None = "force-any", cpu: float | None = 0.5) -> AgentMeta:
    results = {} if cpu is None else {"cpu_hours": cpu}
    return AgentMeta(
        "HetClusterEvents-v0",
        {"flatten": True},
        teacher,
        "events-kickstart",
        "maskable-ppo",
        "mlp",
        seed,
        results=results,
    )


def test_the_row_pairs_the_agent_with_the_best_expert_per_seed() -> None:
    agent = [0.9, 0.8, 0.85, 0.7]
    best = [0.8, 0.8, 0.8, 0.6]
    ev = evaluation(agent, {"edf-admission": [0.3, 0.4, 0.35, 0.3], "elasticflow": best})
    (row,) = rows_for(ev, {"agent": meta()}, {"agent": "default"})
    assert list(row) == list(FIELDS)
    assert row["best_expert"] == "elasticflow" and row["recipe"] == "events-kickstart(force-any)"
    diff = paired_interval(agent, best)
    assert (row["diff_mean"], row["diff_ci_low"], row["diff_ci_high"]) == (diff.mean, diff.low, diff.high)
    assert row["agent_dsr"] == pytest.approx(0.8125) and row["expert_dsr"] == pytest.approx(0.75)
    assert row["seeds"] == [1000, 1001, 1002, 1003] and row["train_seed"] == 3 and row["cpu_hours"] == 0.5
    (row,) = rows_for(ev, {"agent": meta(teacher=None, cpu=None)}, {"agent": "ef-trace"})
    assert row["recipe"] == "events-kickstart" and row["cpu_hours"] is None and row["scenario"] == "ef-trace"


def test_no_expert_or_one_seed_is_refused() -> None:
    with pytest.raises(AgentError, match="--experts"):
        rows_for(evaluation([0.5, 0.6], {}), {"agent": meta()}, {"agent": "default"})
    with pytest.raises(AgentError, match="at least 2"):
        rows_for(evaluation([0.5], {"elasticflow": [0.4]}), {"agent": meta()}, {"agent": "default"})


def test_upsert_replaces_the_row_of_the_same_key_and_keeps_the_others(tmp_path: Path) -> None:
    path = tmp_path / "beat.json"
    ev = evaluation([0.9, 0.8, 0.85], {"elasticflow": [0.8, 0.8, 0.8]})
    first = rows_for(ev, {"agent": meta(seed=0)}, {"agent": "default"})
    second = rows_for(ev, {"agent": meta(seed=1)}, {"agent": "default"})
    upsert(path, first)
    upsert(path, second)
    assert [r["train_seed"] for r in read_rows(path)] == [0, 1]
    better = rows_for(
        evaluation([1.0, 1.0, 1.0], {"elasticflow": [0.8, 0.8, 0.8]}), {"agent": meta(seed=0)}, {"agent": "default"}
    )
    rows = upsert(path, better)
    assert len(rows) == 2 and rows[0]["agent_dsr"] == 1.0
    assert json.loads(path.read_text()) == rows
    table = markdown(rows)
    assert table.count("\n") == 4 and "1000-1002" in table and "+0.200" in table


def test_a_file_that_is_not_a_list_of_rows_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "beat.json"
    for text in ("{", '{"a": 1}', "[1, 2]"):
        path.write_text(text)
        with pytest.raises(AgentError, match=r"beat\.json"):
            upsert(path, [])
        assert path.read_text() == text


def test_scenario_name_is_the_preset_or_the_trace_windows_and_cluster() -> None:
    from agents.leaderboard import scenario_name
    from hetgym.envs.events.config import EventEnvConfig

    assert scenario_name(EventEnvConfig.make()) == "default"
    assert scenario_name(EventEnvConfig.make("tiny")) == "tiny"

    class Workload:
        trace = "../shared/data/elasticflow_traces/raw-traces.tar.gz"
        trace_member = "cluster09.csv"
        trace_window = True

    class Config:
        workload = Workload()
        cluster = "elasticflow-n4g8-het"
        scenario = "default"

    assert scenario_name(Config()) == "cluster09-windows@elasticflow-n4g8-het"
    Workload.trace_member = None
    Workload.trace_window = False
    assert scenario_name(Config()) == "raw-traces@elasticflow-n4g8-het"
