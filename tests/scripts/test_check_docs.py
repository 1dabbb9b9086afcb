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
