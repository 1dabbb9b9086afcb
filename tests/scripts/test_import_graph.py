"""scripts/import_graph.py: no arrow from ``hetgym`` to ``agents`` or ``baselines``, and circles told apart by
what holds them (module-level, lazy or type-only imports)."""

from __future__ import annotations

from pathlib import Path

from helpers import load_script

ROOT = Path(__file__).resolve().parents[2]


def test_hetgym_imports_neither_agents_nor_baselines() -> None:
    script = load_script("import_graph")
    result = script.analyse(ROOT)
    assert result["hetgym_to_agents_or_baselines"] == []
    assert "hetgym -> agents" not in result["between_packages"]
    assert result["between_packages"]["baselines -> hetgym"] > 0
    assert script.main(["--root", str(ROOT)]) == 0


def write(root: Path, files: dict[str, str]) -> None:
    for package in ("hetgym", "baselines", "agents"):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").touch()
    for name, text in files.items():
        (root / name).write_text(text)


def test_circles_are_classified_by_what_holds_them(tmp_path: Path) -> None:
    script = load_script("import_graph")
    write(
        tmp_path,
        {
            "hetgym/a.py": "from hetgym import b\n",
            "hetgym/b.py": "import hetgym.a\n",
            "hetgym/c.py": "def f():\n    from hetgym.d import x\n",
            "hetgym/d.py": "from .c import f\nx = 1\n",
            "hetgym/e.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from hetgym.f import y\n",
            "hetgym/f.py": "from hetgym.e import z\ny = 1\n",
            "hetgym/g.py": "def f():\n    import baselines\n",
        },
    )
    result = script.analyse(tmp_path)
    held = {tuple(c["modules"]): c["held_by"] for c in result["circles"]}
    assert held == {("hetgym.a", "hetgym.b"): "module-level imports", ("hetgym.c", "hetgym.d"): "lazy imports"}
    assert result["type_only_circles"] == [["hetgym.e", "hetgym.f"]]
    assert result["hetgym_to_agents_or_baselines"] == ["hetgym.g -> baselines"]
    assert script.main(["--root", str(tmp_path)]) == 1
