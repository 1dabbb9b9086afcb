"""``hetgym sweep`` results: byte-identical tables for the same grid (timings apart), and a Ray address
with no cluster behind it failing in one line with no folder left."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from hetgym.cli import main

GRID = ["sweep", "--policies", "fifo,srtf", "--scenarios", "tiny", "--seeds", "0,1", "--backend", "sequential",
        "--no-progress"]  # fmt: skip


def test_two_identical_sweeps_write_byte_identical_tables(tmp_path: Path) -> None:
    for name in ("a", "b"):
        assert main([*GRID, "--out", str(tmp_path / name)]) == 0
    for file in ("results.csv", "results.parquet"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes(), file
    results = pd.read_csv(tmp_path / "a" / "results.csv")
    assert len(results) == 4 and not {"wall_s", "worker", "finished_at", "decision_ms_p50"} & set(results.columns)
    timings = pd.read_csv(tmp_path / "a" / "timings.csv")
    assert set(timings["run_id"]) == set(results["run_id"]) and (timings["wall_s"] > 0).all()

    from hetgym.sweep import load_results

    joined = load_results(tmp_path / "a")  # the timings are joined back in by run id
    assert len(joined) == 4 and joined["wall_s"].notna().all()


def test_a_ray_address_with_no_cluster_is_one_line_and_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("ray", reason="the ray backend needs Ray installed")
    from hetgym.sweep import runner

    def no_cluster(address: str | None = None, num_cpus: int | None = None) -> bool:
        # What ray.init(address="auto") raises when no Ray instance runs on this machine.
        raise ConnectionError(
            "Could not find any running Ray instance. Please specify the one to connect to by setting "
            "`--address` flag or `RAY_ADDRESS` environment variable."
        )

    monkeypatch.setattr(runner, "init_ray", no_cluster)
    out = tmp_path / "sweep"
    code = main([*GRID[:-3], "--backend", "ray", "--ray-address", "auto", "--no-progress", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "cannot connect to a Ray cluster at 'auto'" in err and "ray start --head" in err
    assert not out.exists() and list(tmp_path.iterdir()) == []
