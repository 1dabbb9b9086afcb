"""scripts/studies/experts_at_defaults.py: experts through the registered ids at their defaults end every episode.

A study (scripts/studies/): its smoke run stays in the default test run, the other tests are marked ``slow``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from helpers import load_script

EAD = load_script("studies/experts_at_defaults")


def test_experts_end_every_tiny_v1_episode_and_the_page_says_so(tmp_path: Path) -> None:
    rc = EAD.main(
        [
            "--env-ids",
            "HetCluster-Tiny-v1",
            "--seeds",
            "1000",
            "--policies",
            "dancer,fifo,hadare",
            "--out",
            str(tmp_path),
        ]
    )
    assert rc == 0
    frame = pd.read_csv(tmp_path / "experts_at_defaults.csv")
    assert sorted(frame["policy"]) == ["dancer", "fifo", "hadare"]
    assert (frame["stop"] == "done").all() and (frame["unfinished"] == 0).all()
    assert frame["dsr_env"].between(0, 1).all() and frame["dsr_sim"].between(0, 1).all()
    # FIFO's decisions are expressible at the defaults: the env gives the simulator's figure
    assert frame.loc[frame["policy"] == "fifo", "dsr_env"].item() == pytest.approx(
        frame.loc[frame["policy"] == "fifo", "dsr_sim"].item()
    )
    page = (tmp_path / "experts_at_defaults.md").read_text()
    assert "no expert stalls" in page and "| HetCluster-Tiny-v1 | dancer | 1/1 |" in page


@pytest.mark.slow
def test_a_step_limit_is_reported_as_not_done(tmp_path: Path) -> None:
    rc = EAD.main(
        [
            "--env-ids",
            "HetCluster-Tiny-v1",
            "--seeds",
            "1000",
            "--policies",
            "fifo",
            "--max-steps",
            "3",
            "--out",
            str(tmp_path),
        ]
    )
    assert rc == 1
    frame = pd.read_csv(tmp_path / "experts_at_defaults.csv")
    assert frame["stop"].tolist() == ["step-limit"] and frame["steps"].tolist() == [3]
    assert "1 of 1 episodes did not end" in (tmp_path / "experts_at_defaults.md").read_text()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--policies", "nosuch"], "unknown policies ['nosuch']"),
        (["--env-ids", "HetCluster-v9"], "'HetCluster-v9' is not registered"),
        (["--seeds", "a-b"], "--seeds 'a-b'"),
        (["--workers", "0"], "--workers and --max-steps must be >= 1"),
    ],
)
def test_bad_arguments_name_the_setting_and_write_nothing(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        EAD.main([*argv, "--out", str(out)])
    assert exc.value.code == 2 and message in capsys.readouterr().err
    assert not out.exists()
