"""Guard against a stray module shadowing the project's sibling packages ``baselines`` and ``agents``.

The project's top level is fixed: ``hetgym/``, ``baselines/`` and ``agents/`` sit side by side and are
imported by those names. Python looks in the working directory (``python -c``, ``python -m``, notebooks)
before site-packages, so a user's ``baselines.py`` there would be imported instead of the built-in
policies and the registry would come up empty. :func:`require_project_package` finds the module that
``import NAME`` would load, without running it, and raises an error naming the shadowing file when it
is not the project's own package.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from hetgym.sim.errors import HetgymError

#: The folder that holds ``hetgym/`` and, beside it, ``baselines/`` and ``agents/``.
PROJECT_ROOT = Path(__file__).resolve().parents[2]


class ShadowedPackageError(HetgymError, ImportError):
    """``import baselines`` (or ``agents``) would load a module other than the project's package."""


def module_origin(name: str) -> Path | None:
    """The file ``import name`` loads (a package's ``__init__.py``), found without importing it; ``None``
    when there is none (not found, built-in, or a namespace package)."""
    module = sys.modules.get(name)
    if module is not None:
        file = getattr(module, "__file__", None)
        return Path(file).resolve() if file else None
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or spec.origin in ("built-in", "frozen", "namespace"):
        return None
    return Path(spec.origin).resolve()


def require_project_package(name: str) -> None:
    """Raise :class:`ShadowedPackageError` unless ``import name`` loads the project's own package.

    Args:
        name: A sibling package of ``hetgym`` (``"baselines"`` or ``"agents"``).

    The check does not import (so a shadowing module's code never runs) unless the module is already
    imported, in which case its ``__file__`` is checked.
    """
    expected = PROJECT_ROOT / name / "__init__.py"
    found = module_origin(name)
    if found == expected.resolve():
        return
    if found is None:
        raise ShadowedPackageError(
            f"cannot find hetgym's package {name!r} (expected {expected}); a module named {name!r} without a "
            f"file may shadow it, or the install is incomplete: reinstall with `python -m pip install -e .`"
        )
    raise ShadowedPackageError(
        f"`import {name}` would load {found}, not hetgym's package at {expected.parent}: that file shadows "
        f"the project's {name!r} package (Python searches the working directory first). Rename or move "
        f"{found.name if found.name != '__init__.py' else found.parent}, or run from another directory."
    )
