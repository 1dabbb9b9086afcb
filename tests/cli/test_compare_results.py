"""``hetgym compare`` / ``simulate`` results: named by their configuration, checked before any run,
written only on success and atomically, byte-identical for identical inputs, and custom policies by
``--import``."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from hetgym.cli import main
from hetgym.experiments import Comparison, compare
from hetgym.workloads.scenario import get_scenario

REPO = Path(__file__).resolve().parents[2]
TINY = ["--scenario", "tiny", "--no-progress"]

FAILING_POLICY = '''
from hetgym.sim import Policy, register_policy


@register_policy()
class AlwaysFails(Policy):
    """Raises on its first decision (a broken custom policy)."""

    name = "test-always-fails"
    in_default_comparison = False

    def schedule(self, view):
        raise RuntimeError("this policy always fails")
'''


@pytest.fixture
def registry_snapshot() -> Iterator[None]:
    """Remove the policies a test registers through ``--import``, so other tests see the usual registry."""
    from hetgym.sim.policy import POLICIES, list_policies
    from hetgym.sweep import runspec

    before, imported = set(list_policies()), set(runspec._IMPORTED)
    yield
    for name in set(POLICIES.names()) - before:
        POLICIES.unregister(name)
    runspec._IMPORTED.intersection_update(imported)


def _planned(**kwargs: object) -> Comparison:
    empty = pd.DataFrame()
    base = {"scenario": get_scenario("tiny"), "policies": ["fifo", "srtf"], "seeds": [0]}
    base.update(kwargs)
    return Comparison(base["scenario"], base["policies"], base["seeds"], empty, empty, empty,  # type: ignore[arg-type]
                      policy_kwargs=base.get("policy_kwargs", {}))  # type: ignore[arg-type]  # fmt: skip


def test_the_configuration_hash_changes_with_every_part_of_the_configuration() -> None:
    tiny = get_scenario("tiny")
    reference = _planned().config_hash()
    assert _planned().config_hash() == reference  # the same configuration, the same name
    variants = [
        _planned(scenario=tiny.with_overrides(cluster="default")),
        _planned(scenario=tiny.with_overrides(workload={"num_jobs": 6})),
        _planned(scenario=tiny.with_overrides(sim={"restart_penalty_s": 0.0})),
        _planned(policies=["fifo"]),
        _planned(seeds=[0, 1]),
        _planned(policy_kwargs={"srtf": {"type_choice": "order"}}),
    ]
    hashes = [v.config_hash() for v in variants]
    assert reference not in hashes and len(set(hashes)) == len(hashes)
    overridden = variants[0]
    assert overridden.overrides() == {"cluster": "default"}
    assert "cluster=default" in overridden.describe()
    assert "srtf:type_choice=order" in variants[-1].describe()


def test_default_folder_is_named_by_scenario_and_hash_and_records_knobs_and_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["compare", *TINY, "--policies", "fifo,srtf", "--seeds", "0", "--no-plots", "--num-jobs", "8"]
    assert main([*args, "-P", "srtf:type_choice=order"]) == 0
    assert main(args) == 0  # a knob less: another folder, the first one kept
    text = capsys.readouterr().out
    folders = sorted((tmp_path / "results").iterdir())
    assert len(folders) == 2 and all(re.fullmatch(r"compare-tiny-[0-9a-f]{8}", f.name) for f in folders)
    assert "num_jobs=8" in text  # titles name the override
    by_knobs = {}
    for folder in folders:
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["config"]["overrides"] == {"workload.num_jobs": 8}
        assert folder.name.endswith(summary["config_hash"])
        by_knobs[json.dumps(summary["config"]["policy_options"])] = folder
    knobbed = by_knobs[json.dumps({"srtf": {"type_choice": "order"}})]
    runs = pd.read_csv(knobbed / "runs.csv")
    assert list(runs["workload.num_jobs"]) == [8, 8] and set(runs["cluster"]) == {"tiny"}
    options = dict(zip(runs["policy"], runs["policy_options"], strict=True))
    assert json.loads(options["srtf"]) == {"type_choice": "order"} and json.loads(options["fifo"]) == {}


def test_a_misspelt_knob_fails_before_any_run_and_keeps_earlier_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "kept"
    out.mkdir()
    (out / "runs.csv").write_text("earlier results\n")
    code = main(
        ["compare", *TINY, "--policies", "fifo,srtf", "-P", "srtf:type_choise=order", "--out", str(out), "--force"]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "unknown knob 'type_choise' for policy 'srtf'; did you mean 'type_choice'?" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert (out / "runs.csv").read_text() == "earlier results\n" and sorted(p.name for p in out.iterdir()) == [
        "runs.csv"
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["compare", "--policies", "fifo,srtf", "-P", "srtf:type_choice=orderr"], "type_choice='orderr' is not one of"),
        (["compare", "--policies", "fifo", "-P", "srtf:type_choice=order"], "not among the compared"),
        (["compare", "--policies", "fifo,fifo"], "name a policy twice"),
        (["compare", "--policies", "fifo", "--seeds", "0,x"], "'x' is not a non-negative integer or a range"),
        (["simulate", "--policy", "srtf", "-P", "type_choise=order"], "unknown knob 'type_choise' for policy 'srtf'"),
    ],
)
def test_names_and_values_are_checked_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    out = tmp_path / "out"
    assert main([*argv, *TINY, "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_out_is_checked_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    for command in (["compare", "--policies", "fifo"], ["simulate", "--policy", "fifo"]):
        assert main([*command, *TINY, "--out", str(a_file)]) == 2
        assert "is a file" in capsys.readouterr().err
        assert a_file.read_text() == "x"
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "old.txt").write_text("old")
    assert main(["compare", "--policies", "fifo", *TINY, "--seeds", "0", "--out", str(existing)]) == 2
    assert "add --force" in capsys.readouterr().err and (existing / "old.txt").is_file()
    assert (
        main(["compare", "--policies", "fifo", *TINY, "--seeds", "0", "--no-plots", "--out", str(existing), "--force"])
        == 0
    )
    assert not (existing / "old.txt").exists() and (existing / "runs.csv").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_a_run_that_fails_writes_nothing_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], registry_snapshot: None
) -> None:
    module = tmp_path / "failing_policy.py"
    module.write_text(FAILING_POLICY)
    out = tmp_path / "out"
    argv = ["compare", *TINY, "--import", str(module), "--policies", "test-always-fails", "--seeds", "0,1"]
    assert main([*argv, "--out", str(out)]) == 1
    text = capsys.readouterr().err
    assert "this policy always fails" in text and "no results written" in text
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["failing_policy.py"]


def test_a_run_that_fails_beside_runs_that_finish_keeps_theirs_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], registry_snapshot: None
) -> None:
    module = tmp_path / "failing_policy.py"
    module.write_text(FAILING_POLICY)
    out = tmp_path / "out"
    argv = ["compare", *TINY, "--import", str(module), "--policies", "fifo,test-always-fails", "--seeds", "0"]
    assert main([*argv, "--no-plots", "--out", str(out)]) == 1
    captured = capsys.readouterr()
    assert "test-always-fails seed 0 failed: RuntimeError: this policy always fails" in captured.err
    assert "hetgym compare: error: 1 of 2 runs failed (listed above; run with --debug" in captured.err
    assert "1 of 2 runs are not in the results (1 failed)" in " ".join(captured.out.split())
    assert pd.read_csv(out / "runs.csv")["policy"].tolist() == ["fifo"]
    failed = pd.read_csv(out / "failed_runs.csv")
    rows = failed.to_dict("records")
    assert [(r["policy"], r["seed"], r["outcome"]) for r in rows] == [("test-always-fails", 0, "failed")]
    # The problem names the exception and where the user's code raised it.
    assert rows[0]["problem"].startswith("RuntimeError: this policy always fails (")
    assert rows[0]["problem"].endswith("failing_policy.py, line 13)")


def test_a_fixed_workload_runs_one_seed_of_each_policy_that_is_not_randomised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = str(REPO / "traces" / "elasticflow-tiny-12.parquet")
    argv = ["compare", "--trace", trace, "--cluster", "tiny", "--policies", "fifo,jps,srtf", "--no-progress"]
    assert main([*argv, "--no-plots", "--out", str(tmp_path / "a")]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "2 policies that are not randomised run seed 0 only; jps (randomised) runs seeds 0,1,2" in text
    assert "5 runs (3 policies);" in text
    runs = pd.read_csv(tmp_path / "a" / "runs.csv")
    assert list(zip(runs["policy"], runs["seed"], strict=True)) == [
        ("fifo", 0),
        ("jps", 0),
        ("srtf", 0),
        ("jps", 1),
        ("jps", 2),
    ]
    config = json.loads((tmp_path / "a" / "summary.json").read_text())["config"]
    assert config["seeds_by_policy"] == {"fifo": [0], "srtf": [0]}
    # --seeds given: every policy runs each seed, and the seeds repeat a deterministic policy's run.
    assert main([*argv, "--seeds", "0,1", "--no-plots", "--out", str(tmp_path / "b")]) == 0
    runs = pd.read_csv(tmp_path / "b" / "runs.csv")
    assert (
        len(runs) == 6 and "seeds_by_policy" not in json.loads((tmp_path / "b" / "summary.json").read_text())["config"]
    )
    fifo = runs[runs["policy"] == "fifo"].drop(columns=["seed"]).reset_index(drop=True)
    assert fifo.loc[0].equals(fifo.loc[1])


def test_an_interrupted_save_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted_save(self: Comparison, out_dir: Path, *, plots: bool = True) -> list[Path]:
        (Path(out_dir) / "runs.csv").write_text("half")
        raise KeyboardInterrupt

    monkeypatch.setattr(Comparison, "save", interrupted_save)
    out = tmp_path / "out"
    assert main(["compare", *TINY, "--policies", "fifo", "--seeds", "0", "--out", str(out)]) == 130
    assert list(tmp_path.iterdir()) == []


def test_simulate_writes_its_folder_atomically_with_config_and_timings_apart(tmp_path: Path) -> None:
    out = tmp_path / "sim"
    argv = ["simulate", "--policy", "srtf", "-P", "type_choice=order", *TINY, "--cluster", "default", "--out", str(out)]
    assert main(argv) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "config.json", "jobs.csv", "metrics.json", "timeline.csv", "timings.json",
    ]  # fmt: skip
    config = json.loads((out / "config.json").read_text())
    assert config["overrides"] == {"cluster": "default"} and config["policy_options"] == {
        "srtf": {"type_choice": "order"}
    }
    metrics = json.loads((out / "metrics.json").read_text())
    assert "decision_ms_p50" not in metrics and "dsr" in metrics
    assert set(json.loads((out / "timings.json").read_text())) == {"wall_s", "decision_ms_p50", "decision_ms_p99"}
    assert main(argv) == 2  # it exists now: --force to replace it
    assert main([*argv, "--force"]) == 0


def test_two_identical_compares_write_byte_identical_results(tmp_path: Path) -> None:
    argv = ["compare", *TINY, "--policies", "fifo,tiresias", "--seeds", "0,1", "--no-plots"]
    for name in ("a", "b"):
        assert main([*argv, "--out", str(tmp_path / name)]) == 0
    for file in ("runs.csv", "summary.csv", "summary.json", "jobs.csv.gz"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes(), file
    runs = pd.read_csv(tmp_path / "a" / "runs.csv")
    assert not {"wall_s", "decision_ms_p50", "decision_ms_p99"} & set(runs.columns)
    timings = pd.read_csv(tmp_path / "a" / "timings.csv")
    assert len(timings) == 4 and (timings["wall_s"] > 0).all()


def test_the_api_keeps_timings_apart_and_aggregates_them_on_request() -> None:
    comparison = compare("tiny", ["fifo"], [0])
    assert "decision_ms_p50" not in comparison.aggregate().columns
    assert "decision_ms_p50" in comparison.aggregate(timings=True).columns


def test_the_documented_import_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, registry_snapshot: None
) -> None:
    doc = (REPO / "docs" / "writing-a-policy.md").read_text()
    code = re.search(r"```python\n(.*?)```", doc, re.S)
    command = re.search(r"`(hetgym compare --import [^`]+)`", doc)
    assert code and command, "docs/writing-a-policy.md lost its example or its --import command"
    argv = shlex.split(command.group(1))[1:]
    module = argv[argv.index("--import") + 1]
    (tmp_path / module).write_text(code.group(1))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    assert main([*argv, *TINY, "--seeds", "0", "--no-plots", "--out", str(out)]) == 0
    runs = pd.read_csv(out / "runs.csv")
    assert list(runs["policy"]) == ["biggest-first"] and runs["num_completed"].iloc[0] > 0
    assert json.loads((out / "summary.json").read_text())["config"]["imports"] == [module]


def test_simulate_takes_import_too(tmp_path: Path, capsys: pytest.CaptureFixture[str], registry_snapshot: None) -> None:
    module = tmp_path / "failing_policy.py"
    module.write_text(FAILING_POLICY)
    out = tmp_path / "out"
    code = main(["simulate", "--import", str(module), "--policy", "test-always-fails", *TINY, "--out", str(out)])
    assert code == 1  # the policy is found and run; its failure is reported in one line, nothing written
    assert "this policy always fails" in capsys.readouterr().err and not out.exists()


def test_help_says_what_runs_by_default() -> None:
    from hetgym.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    text = sub.choices["compare"].format_help()  # type: ignore[attr-defined]
    assert "every registered policy" not in text and "variants" in " ".join(text.split())


def test_the_table_fits_in_80_columns(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "80"}
    cmd = [sys.executable, "-m", "hetgym.cli", "compare", *TINY, "--seeds", "0,1", "--no-plots",
           "--out", str(tmp_path / "o"), "--policies", "fifo,srtf,edf-admission,gavel-makespan-agnostic",
           "-P", "srtf:type_choice=order"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any("DSR" in line for line in lines) and any(line.strip().startswith("edf-admission") for line in lines)
    assert max(len(line) for line in lines) <= 80, "\n".join(line for line in lines if len(line) > 80)
