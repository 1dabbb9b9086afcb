"""Commands contributed through the ``hetgym.commands`` entry point group (``agents`` contributes ``train`` and
``evaluate``); a plug-in that cannot be imported leaves the other commands working and is named in the help."""

from __future__ import annotations

import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

import hetgym.cli
from hetgym.cli import build_parser, main


def test_train_and_evaluate_come_from_the_agents_entry_point() -> None:
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="hetgym.commands") if e.name == "agents"]
    assert ep.value == "agents.cli"
    choices = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert {"train", "evaluate", "simulate", "compare"} <= set(choices)


def test_a_plugin_that_fails_to_import_is_named_and_the_rest_works(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "broken_plugin.py").write_text("import a_module_that_is_not_installed\n")
    (tmp_path / "empty_plugin.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins = [
        EntryPoint("broken", "broken_plugin", "hetgym.commands"),
        EntryPoint("empty", "empty_plugin", "hetgym.commands"),
    ]
    monkeypatch.setattr(hetgym.cli, "entry_points", lambda group: plugins if group == "hetgym.commands" else [])
    parser = build_parser()
    assert "broken (broken_plugin): No module named 'a_module_that_is_not_installed'" in (parser.epilog or "")
    assert "empty (empty_plugin): the module has no register(subparsers)" in (parser.epilog or "")
    assert main(["policies"]) == 0
    assert "edf" in capsys.readouterr().out
    sys.modules.pop("broken_plugin", None)
    sys.modules.pop("empty_plugin", None)


@pytest.mark.parametrize("command", ["train", "evaluate"])
def test_train_and_evaluate_without_the_rl_extra_name_the_install(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    assert main([command, "--preset", "tiny", "--smoke"] if command == "train" else [command, "--random"]) == 2
    err = capsys.readouterr().err
    assert f"hetgym {command}: error: hetgym {command} needs torch (the rl extra)" in err and "[rl]" in err
    # the CPU-only build for a Linux machine without a GPU, and PyPI's build for the others
    flat = " ".join(err.split())
    assert "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in flat
    assert "with an NVIDIA GPU, or on macOS or Windows, python -m pip install -c constraints.txt torch==2.13.0" in flat
