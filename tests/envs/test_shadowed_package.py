"""The README snippet run from the folder that holds a clone named ``hetgym``.

There Python finds the clone's folder first (the working folder leads ``sys.path``). When the package is
installed the way the README says (``pip install -e .``, which setuptools serves through an import hook
placed after the path search for this project's layout), that folder wins: ``import hetgym`` gives an
empty namespace package, none of hetgym's code runs, so nothing registers the ids. The pinned Gymnasium
(1.4.0) reads no plug-in entry points that could register them without ``import hetgym``, so the README
and docs/environment.md say it where the snippet is; this test shows what happens, and that the check they
give (``hetgym.__file__`` is ``None``) goes with the shadowing folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

_SNIPPET = """
import json
import gymnasium as gym
import hetgym

try:
    gym.make("HetCluster-Tiny-v1")
    made = "made"
except gym.error.NameNotFound as exc:
    made = f"NameNotFound: {exc}"
print(json.dumps({"file": hetgym.__file__, "path": [str(p) for p in hetgym.__path__], "made": made}))
"""


def _snippet(cwd: Path) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the installed package, as a user has it
    done = subprocess.run(
        [sys.executable, "-c", _SNIPPET], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    out: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def test_a_folder_named_hetgym_beside_the_snippet_is_what_the_docs_say(tmp_path: Path) -> None:
    (tmp_path / "hetgym").mkdir()
    (tmp_path / "hetgym" / "README.md").write_text("a clone's folder: no __init__.py at its top\n")
    seen = _snippet(tmp_path)
    if seen["file"] is None:  # the folder won: the README's check names it, and the ids are missing
        assert seen["path"] == [str(tmp_path / "hetgym")]
        assert str(seen["made"]).startswith("NameNotFound: Environment `HetCluster-Tiny` doesn't exist")
    else:  # an install the path search finds (a wheel, PYTHONPATH): the real package wins, the ids exist
        assert Path(str(seen["file"])).name == "__init__.py"
        assert seen["made"] == "made"


def test_the_snippet_works_from_any_other_folder(tmp_path: Path) -> None:
    seen = _snippet(tmp_path)
    assert seen["file"] is not None and seen["made"] == "made"
