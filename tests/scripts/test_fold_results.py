"""``scripts/fold_results.py``: per-run JSON reports fold into one CSV, one row per report."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from helpers import load_script


def test_reports_fold_into_one_row_each_with_dotted_keys(tmp_path: Path) -> None:
    fold = load_script("fold_results")
    (tmp_path / "b.json").write_text(json.dumps({"wall_s": 1.5, "env_kwargs": {"sim": {"round_s": 60.0}}}))
    (tmp_path / "a.json").write_text(json.dumps([{"run": "x", "seeds": [1, 2]}, {"run": "y", "ok": True}]))
    out = tmp_path / "runs.csv"
    fold.main([str(tmp_path), str(out)])
    with out.open() as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["file", "item", "env_kwargs.sim.round_s", "ok", "run", "seeds", "wall_s"]
    expected = [("a.json", "0", "x"), ("a.json", "1", "y"), ("b.json", "", "")]
    assert [(r["file"], r["item"], r["run"]) for r in rows] == expected
    assert rows[0]["seeds"] == "[1, 2]" and rows[1]["ok"] == "true"
    assert rows[2]["env_kwargs.sim.round_s"] == "60.0" and rows[2]["wall_s"] == "1.5"
