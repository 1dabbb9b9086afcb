"""The studies of scripts/studies/ that the user docs do not point to (random agent, experts in the env,
imitation ceiling) on tiny settings: marked ``slow``, out of the default run."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from helpers import load_script

pytestmark = pytest.mark.slow


def test_random_agent_plays_every_seed_to_its_end(tmp_path: Path) -> None:
    script = load_script("studies/random_agent")
    out = tmp_path / "random.csv"
    assert (
        script.main(
            ["--env-id", "HetCluster-Tiny-v0", "-e", "codec=jobwise", "--seeds", "1000-1001", "--out", str(out)]
        )
        == 0
    )
    frame = pd.read_csv(out)
    assert frame["seed"].tolist() == [1000, 1001] and frame["steps"].gt(0).all()
    assert frame["dsr"].between(0, 1).all()


def test_experts_in_env_finds_no_gap_under_policy_compat(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    script = load_script("studies/experts_in_env")
    # The default scenario with few jobs keeps this quick.
    real_make = script.gym.make
    monkeypatch.setattr(
        script.gym, "make", lambda env_id, **kw: real_make(env_id, **{**kw, "workload": {"num_jobs": 8}})
    )
    assert script.main(["--seeds", "1000", "--policies", "edf", "--codecs", "sequential", "--out", str(tmp_path)]) == 0
    frame = pd.read_csv(tmp_path / "experts_in_env.csv")
    compat = frame[frame["run"] == "env-sequential"]
    assert (compat["max_finish_gap_s"] == 0).all() and (compat["inexact"] == 0).all()
    assert "| edf | sim |" in (tmp_path / "experts_in_env.md").read_text()


def test_imitation_ceiling_scores_every_codec_on_the_same_epochs(tmp_path: Path) -> None:
    script = load_script("studies/imitation_ceiling")
    argv = ["--envs", "HetCluster-Tiny-v0", "--seeds", "1000", "--policies", "srtf,hadare", "--out", str(tmp_path)]
    assert script.main([*argv, "--codecs", "multidiscrete,jobwise,jobwise-types,score"]) == 0
    frame = pd.read_csv(tmp_path / "imitation_ceiling.csv")
    common = frame[frame["trajectory"] == "common"]
    # One episode per policy: every codec is asked at the same epochs.
    assert common.groupby("policy")["epochs"].nunique().eq(1).all()
    exact = common.set_index(["policy", "codec"])
    assert (exact["exact"] <= exact["epochs"]).all()
    assert exact.loc[("srtf", "score"), "exact"] == exact.loc[("srtf", "score"), "epochs"]  # one type per job
    assert exact.loc[("hadare", "score"), "exact"] < exact.loc[("hadare", "multidiscrete"), "exact"]
    assert "multi-type" in exact.loc[("hadare", "score"), "misses_by_cause"]
    # jobwise-types gives a job several types: it expresses every HadarE decision that multidiscrete does.
    assert exact.loc[("hadare", "jobwise-types"), "exact"] == exact.loc[("hadare", "multidiscrete"), "exact"]
    own = frame[frame["trajectory"] == "own"]
    assert set(own["codec"]) == {"multidiscrete", "jobwise", "jobwise-types", "score"}
    text = (tmp_path / "imitation_ceiling.md").read_text()
    assert text.splitlines()[2].startswith("**Answer**: `multidiscrete`, `jobwise-types` reproduce every decision")
    assert "| hadare |" in text and "| srtf |" not in text and "The other 1 of 2 policies" in text
    assert "common trajectory (multidiscrete)" in text and "own trajectory" in text
    # --render rewrites the page from the CSV alone: the same tables, another provenance line.
    assert script.main(["--render", "--out", str(tmp_path)]) == 0
    again = (tmp_path / "imitation_ceiling.md").read_text()
    assert again.split("## What is measured")[1] == text.split("## What is measured")[1]
    assert again.splitlines()[:10] == text.splitlines()[:10]
