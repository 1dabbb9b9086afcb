"""scripts/plot_learning_curves.py: curves from TensorBoard logs, clear errors for bad input."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from helpers import load_script

pytest.importorskip("tensorboard")


def _run(folder: Path, values: list[float]) -> Path:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(folder / "tb" / "PPO_1"))
    for i, v in enumerate(values):
        writer.add_scalar("episode/dsr", v, (i + 1) * 100)
    writer.close()
    return folder


def test_writes_the_png_and_every_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _run(tmp_path / "a", [0.1, 0.2, 0.3, 0.4])
    b = _run(tmp_path / "b", [0.5, 0.5])
    out = tmp_path / "fig" / "curves.png"
    assert (
        load_script("plot_learning_curves").main(
            [str(a), str(b), "--labels", "A,B", "--smooth", "2", "--hline", "EDF=0.3", "--out", str(out)]
        )
        == 0
    )
    assert out.stat().st_size > 0
    table = pd.read_csv(out.with_suffix(".csv"))
    assert table.groupby("run").size().to_dict() == {"A": 4, "B": 2}
    assert table[table.run == "A"]["value"].round(3).tolist() == [0.1, 0.2, 0.3, 0.4]
    assert "A: last 2 points of episode/dsr: mean 0.350" in capsys.readouterr().out


def test_bad_input_names_the_problem(tmp_path: Path) -> None:
    mod = load_script("plot_learning_curves")
    a = _run(tmp_path / "a", [0.1])
    with pytest.raises(SystemExit, match="no TensorBoard event files"):
        mod.main([str(tmp_path / "missing"), "--out", str(tmp_path / "x.png")])
    with pytest.raises(SystemExit, match="no scalar 'episode/jct'"):
        mod.main([str(a), "--tag", "episode/jct", "--out", str(tmp_path / "x.png")])
    with pytest.raises(SystemExit):
        mod.main([str(a), "--labels", "A,B", "--out", str(tmp_path / "x.png")])
    assert not (tmp_path / "x.png").exists()
