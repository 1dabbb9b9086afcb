"""The project's import graph: arrows between its packages and the import circles among its modules.

Reads every module of ``hetgym/``, ``baselines/`` and ``agents/`` with :mod:`ast` (nothing is imported) and
records each ``import`` of a project module: at module level or inside a function (a lazy import), and
whether it only serves type checking (under ``if TYPE_CHECKING:``). ``from package import name`` points at
the submodule ``package.name`` when there is one, else at the package. The implicit import of a module's
parent packages is not counted.

It prints the arrows between the three packages (``hetgym -> agents`` and ``hetgym -> baselines`` must be
none: ``hetgym`` reaches them only through entry points), then every circle: each strongly connected set of
modules under the runtime imports (module level and lazy), and whether it is held together only by lazy
imports; type-only imports do not make circles. Exit status 1 when ``hetgym`` imports ``agents`` or
``baselines``.

Usage::

    python scripts/import_graph.py
    python scripts/import_graph.py --json bench/import_graph.json
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("hetgym", "baselines", "agents")


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` (module names), ``lazy`` inside a function, ``typing`` only for types."""

    source: str
    target: str
    lazy: bool
    typing: bool


def project_modules(root: Path) -> dict[str, Path]:
    """Every module of the project's packages: dotted name to file."""
    out = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def module_edges(name: str, path: Path, modules: dict[str, Path]) -> list[Edge]:
    """The project imports of one module."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    edges: list[Edge] = []

    def target_of(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    def visit(node: ast.AST, lazy: bool, typing: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    visit_stmt(stmt, lazy, True)
                for stmt in child.orelse:
                    visit_stmt(stmt, lazy, typing)
                continue
            visit_stmt(child, lazy, typing)

    def visit_stmt(node: ast.AST, lazy: bool, typing: bool) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                found = target_of(alias.name)
                if found and found != name:
                    edges.append(Edge(name, found, lazy, typing))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                found = target_of(f"{base}.{alias.name}") if f"{base}.{alias.name}" in modules else target_of(base)
                if found and found != name:
                    edges.append(Edge(name, found, lazy, typing))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            visit(node, True, typing)
        else:
            visit(node, lazy, typing)

    visit(tree, False, False)
    return edges


def strongly_connected(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module (the circles)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def connect(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    for v in nodes:
        if v not in index:
            connect(v)
    return sorted(out, key=lambda c: (-len(c), c))


def analyse(root: Path) -> dict[str, object]:
    """The arrows between packages and the circles (see the module docstring)."""
    modules = project_modules(root)
    edges = [e for name, path in modules.items() for e in module_edges(name, path, modules)]
    between = Counter(
        f"{e.source.split('.')[0]} -> {e.target.split('.')[0]}"
        for e in edges
        if e.source.split(".")[0] != e.target.split(".")[0] and not e.typing
    )
    back = sorted(
        f"{e.source} -> {e.target}"
        for e in edges
        if e.source.split(".")[0] == "hetgym" and e.target.split(".")[0] in ("agents", "baselines")
    )
    runtime: dict[str, set[str]] = {}
    eager: dict[str, set[str]] = {}
    for e in edges:
        if not e.typing:
            runtime.setdefault(e.source, set()).add(e.target)
            if not e.lazy:
                eager.setdefault(e.source, set()).add(e.target)
    names = sorted(modules)
    eager_sets = [set(c) for c in strongly_connected(names, eager)]
    circles = [
        {"modules": c, "held_by": "module-level imports" if any(set(c) <= s for s in eager_sets) else "lazy imports"}
        for c in strongly_connected(names, runtime)
    ]
    with_types = strongly_connected(
        names, {s: {e.target for e in edges if e.source == s} for s in {e.source for e in edges}}
    )
    runtime_sets = [set(c["modules"]) for c in circles]
    type_only = [c for c in with_types if not any(set(c) <= s for s in runtime_sets)]
    return {
        "modules": len(modules),
        "imports": len(edges),
        "between_packages": dict(sorted(between.items())),
        "hetgym_to_agents_or_baselines": back,
        "circles": circles,
        "type_only_circles": type_only,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the project's root (default: here)")
    parser.add_argument("--json", type=Path, help="also write the result as JSON")
    args = parser.parse_args(argv)
    missing = [p for p in PACKAGES if not (args.root / p / "__init__.py").is_file()]
    if missing:
        parser.error(f"--root {args.root}: no package {missing} there; run from the project's root or give --root")
    result = analyse(args.root)
    print(f"{result['modules']} modules, {result['imports']} project imports")
    print("arrows between packages (runtime imports):")
    for key, count in result["between_packages"].items():  # type: ignore[attr-defined]
        print(f"  {key}: {count}")
    back = result["hetgym_to_agents_or_baselines"]
    print(f"hetgym -> agents/baselines: {len(back)}")  # type: ignore[arg-type]
    for arrow in back:  # type: ignore[attr-defined]
        print(f"  {arrow}")
    circles = result["circles"]
    print(f"import circles (runtime imports): {len(circles)}")  # type: ignore[arg-type]
    for c in circles:  # type: ignore[attr-defined]
        print(f"  {len(c['modules'])} modules, held by {c['held_by']}: {', '.join(c['modules'])}")
    for c in result["type_only_circles"]:  # type: ignore[attr-defined]
        print(f"  type-only: {', '.join(c)}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 1 if back else 0


if __name__ == "__main__":
    raise SystemExit(main())
