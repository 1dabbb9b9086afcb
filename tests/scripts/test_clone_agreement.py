"""scripts/clone_agreement.py: a saved clone against its teacher on held-out workloads."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from agents import bc
from agents.args import BCArgs
from agents.bc import action_agreement
from agents.common import load_agent
from agents.demos import collect_demonstrations

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "clone_agreement.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("clone_agreement", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["clone_agreement"] = module
    spec.loader.exec_module(module)
    return module


CA = _module()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    args = BCArgs(
        env_id="HetCluster-Tiny-v1",
        teacher="edf",
        env={"codec": "multidiscrete", "observation": "window-levels"},
        train_seeds="0-2",
        val_seeds="100",
        eval_seeds="1000",
        epochs=2,
        hidden=16,
        out_dir=str(out),
        run_name="bc",
    )
    return bc.train(args).path


def test_it_measures_the_clone_on_the_teachers_held_out_episodes(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "figures" / "agreement.json"
    assert CA.main([str(run), "--seeds", "200-201", "--out", str(out)]) == 0
    (row,) = json.loads(out.read_text())
    # The same figures, computed here from the parts.
    model, meta = load_agent(run)
    expected = action_agreement(
        model.policy, collect_demonstrations(meta.env_id, meta.env_kwargs, "edf", [200, 201]).transitions()
    )
    assert row["agreement"] == expected["agreement"] and row["states"] == expected["states"]
    assert row["agreement_changing"] == expected["agreement_changing"]
    assert 0 < row["changing_share"] < 1 and row["teacher"] == "edf" and row["seeds"] == [200, 201]
    demos = collect_demonstrations(meta.env_id, meta.env_kwargs, "edf", [200, 201])
    assert row["teacher_dsr_in_env"] == sum(m["dsr"] for m in demos.episode_metrics()) / 2
    assert "at changing epochs" in capsys.readouterr().out
    assert [p.name for p in out.parent.iterdir()] == ["agreement.json"]  # no temporary file left


def test_training_seeds_and_runs_without_a_teacher_are_refused(run: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        CA.main([str(run), "--seeds", "1-3", "--out", str(tmp_path / "a.json")])
    with pytest.raises(SystemExit):
        CA.main([str(tmp_path / "no-such-run")])
    assert not (tmp_path / "a.json").exists()
