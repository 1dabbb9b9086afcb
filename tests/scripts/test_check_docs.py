"""``scripts/check_docs.py``: every doc claim it checks is still in its doc, and the deterministic
figures the docs state are the ones the code measures."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from helpers import load_script


@pytest.fixture(scope="module")
def check_docs() -> ModuleType:
    return load_script("check_docs")


def test_every_claim_is_stated_in_its_doc(check_docs: ModuleType) -> None:
    assert check_docs.check_fragments(check_docs.CLAIMS) == []
    assert check_docs.main(["--fragments-only"]) == 0


def test_a_missing_fragment_is_reported(check_docs: ModuleType) -> None:
    claim = check_docs.CLAIMS[0]
    moved = check_docs.Claim(claim.name, claim.doc, "a sentence no doc contains", 0, lambda: 0, check_docs._equal)
    missing = check_docs.check_fragments([moved])
    assert len(missing) == 1 and claim.doc in missing[0]


@pytest.mark.parametrize("policy", ["edf", "fifo"])
def test_tiny_dsr_claims_hold(check_docs: ModuleType, policy: str) -> None:
    assert check_docs.tiny_dsr_range(policy) == check_docs.TINY_DSR_STATED[policy]


def test_running_maximum_claim_holds(check_docs: ModuleType) -> None:
    (claim,) = [c for c in check_docs.CLAIMS if c.name.startswith("running maximum")]
    assert claim.measure() == claim.stated


@pytest.mark.slow
def test_every_deterministic_claim_holds(check_docs: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert check_docs.main([]) == 0
    out = capsys.readouterr().out
    assert " NO" not in out and "MISSING" not in out


def test_the_readme_snippets_print_what_they_say(check_docs: ModuleType) -> None:
    for name in ("README random agent", "v0 random agent"):
        (claim,) = [c for c in check_docs.CLAIMS if c.name.startswith(name)]
        assert claim.measure() == claim.stated


def test_the_readme_rl_path_is_one_train_and_one_evaluate_on_the_v1_id(check_docs: ModuleType) -> None:
    commands = check_docs.readme_block_commands(check_docs.RL_PATH_MARKER)
    assert [c.split()[1] for c in commands] == ["train", "evaluate"]
    assert "--env-id HetCluster-Tiny-v1" in commands[0] and "runs/tiny-v1-ppo" in commands[1]
    assert check_docs._cli(commands[1])[1:4] == ["-m", "hetgym.cli", "evaluate"]


def test_no_docstring_states_a_measured_timing(check_docs: ModuleType) -> None:
    assert check_docs.docstring_timings() == []


def test_a_docstring_timing_is_reported(check_docs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(
        '"""A module.\n\nA step takes about 73 µs here.\n"""\n\n'
        "#: Rounds of 360 s; measured at 8,772 steps per CPU second.\nX = 1\n\n\n"
        'def f() -> None:\n    """Runs in 12 ms (CPU-bound)."""\n'
    )
    found = check_docs.docstring_timings(tmp_path, ("pkg",))
    assert [line.split(" (")[0] for line in found] == [
        "pkg/mod.py:6: '8,772 steps per CPU second'",
        "pkg/mod.py:3: '73 µs'",
        "pkg/mod.py:11: '12 ms'",
    ]


# ------------------------------------------------------------------------------------------------
# --commands: every documented hetgym command runs

SYNTHETIC_DOC = """# A doc

Prose that names `hetgym compare` is no command.

```bash
hetgym policies                      # a comment
hetgym simulate --policy no-such-policy
python -m pip install -e . && hetgym compare --scenario tiny \\
    --policies fifo,edf --seeds 0,1,2
hetgym evaluate runs/<old run> --trust-pickle
hetgym compare --trace traces/user_trace.csv --scenario tiny
```

```python
import hetgym  # not a shell block
```
"""


def test_the_commands_of_a_doc_are_extracted_and_shrunk(tmp_path: Path) -> None:
    doc_commands = load_script("doc_commands")
    doc = tmp_path / "doc.md"
    doc.write_text(SYNTHETIC_DOC)
    commands = doc_commands.extract_commands(doc)
    assert [(c.line, c.text) for c in commands] == [
        (6, "hetgym policies"),
        (7, "hetgym simulate --policy no-such-policy"),
        (8, "hetgym compare --scenario tiny --policies fifo,edf --seeds 0,1,2"),  # joined, after the &&
        (10, "hetgym evaluate 'runs/<old_run>' --trust-pickle"),
        (11, "hetgym compare --trace traces/user_trace.csv --scenario tiny"),
    ]
    assert doc_commands.shrink(list(commands[2].tokens))[-2:] == ["--seeds", "0"]
    assert doc_commands.shrink(["hetgym", "compare"]) == ["hetgym", "compare", "--seeds", "0"]
    assert doc_commands.shrink(["hetgym", "evaluate", "runs/x", "--seeds=1000-1019"])[-3:] == [
        "--seeds=1000-1001", "--max-steps", "2000",
    ]  # fmt: skip
    assert doc_commands.shrink(["hetgym", "train", "--algo", "ppo", "--total-timesteps", "50000"]) == [
        "hetgym", "train", "--algo", "ppo", "--total-timesteps", "512", "--smoke", "--out-dir", "runs",
    ]  # fmt: skip
    assert doc_commands.shrink(["hetgym", "trace", "sample", "--num-jobs", "500"])[-1] == "50"
    assert doc_commands.shrink(["hetgym", "sweep", "--report", "x"]) == ["hetgym", "sweep", "--report", "x"]


def test_the_fixtures_and_placeholders_stand_in_for_the_users_files(tmp_path: Path) -> None:
    doc_commands = load_script("doc_commands")
    assert doc_commands.missing_input(["hetgym", "compare", "--import", "my_policy.py"], tmp_path) == ""
    assert "register_policy" in (tmp_path / "my_policy.py").read_text()
    assert doc_commands.missing_input(["hetgym", "compare", "--trace", "traces/my_trace.csv"], tmp_path) == ""
    assert doc_commands.missing_input(["hetgym", "x", "--out", "out/new.csv", "in/old.csv"], tmp_path) == "in/old.csv"
    (tmp_path / "runs" / "bc-a").mkdir(parents=True)
    filled, reason = doc_commands.fill_placeholders(["hetgym", "train", "--init", "runs/<bc_run>"], tmp_path)
    assert filled[-1] == "runs/bc-a" and reason == ""
    _, reason = doc_commands.fill_placeholders(["hetgym", "evaluate", "runs/<old_run>"], tmp_path)
    assert reason.startswith("placeholder <old run>")
    command = doc_commands.DocCommand("doc.md", 1, ("hetgym", "sweep", "--report", "x", "--ray-address", "auto"))
    outcome = doc_commands.run_command(command, tmp_path)
    assert outcome.status == "skipped" and outcome.reason.startswith("needs a running Ray cluster")


def test_commands_runs_each_command_and_fails_on_a_failing_one(tmp_path: Path) -> None:
    import subprocess
    import sys

    doc = tmp_path / "doc.md"
    doc.write_text(SYNTHETIC_DOC)
    script = Path(__file__).resolve().parents[2] / "scripts" / "check_docs.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--commands", str(doc)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    outcomes = [line for line in lines if line.split(" ", 1)[0] in {"ok", "FAILED", "skipped"}]
    status = {line.split(f"{doc}:")[1].split()[0]: line.split()[0] for line in outcomes}
    assert status == {"6": "ok", "7": "FAILED", "8": "ok", "10": "skipped", "11": "skipped"}, proc.stdout
    failed = next(line for line in lines if line.startswith("FAILED"))
    assert "exit 2" in failed and "CPU-s" in failed
    assert any("unknown policy 'no-such-policy'" in line for line in lines)  # the failure's own message
    ran = next(line for line in lines if line.startswith("ok") and ":8" in line)
    assert ran.endswith("hetgym compare --scenario tiny --policies fifo,edf --seeds 0")  # shrunk to one seed
    assert "(needs traces/user_trace.csv: a file the user supplies, not written here)" in proc.stdout
    assert "5 documented commands: 3 ran (1 failed), 2 skipped;" in proc.stdout
    assert lines[-1] == f"failed: {doc}:7  hetgym simulate --policy no-such-policy"


@pytest.mark.slow
def test_every_documented_command_runs() -> None:
    doc_commands = load_script("doc_commands")
    outcomes = doc_commands.run_all(doc_commands.documented_commands())
    assert len(outcomes) >= 40 and sum(o.status != "skipped" for o in outcomes) >= 30
    failed = [f"{o.command.doc}:{o.command.line} {o.command.text}: {o.tail}" for o in outcomes if o.status == "FAILED"]
    assert failed == []


def test_a_commands_output_shown_in_a_block_is_not_a_command(tmp_path: Path) -> None:
    doc_commands = load_script("doc_commands")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "```\nhetgym compare: error: imports: my.py failed: SyntaxError: invalid syntax (my.py, line 3)\n```\n\n"
        "```bash\nhetgym policies\n```\n"
    )
    assert [c.text for c in doc_commands.extract_commands(doc)] == ["hetgym policies"]
