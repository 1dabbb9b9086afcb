"""Test helpers: a hand-made throughput table, a scripted policy, the hypothesis profiles, the digest
modules' ``--write`` command line and loading a script of ``scripts/`` as a module."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd
from hypothesis import HealthCheck, settings

from hetgym.atomic import atomic_write
from hetgym.sim import ThroughputModel
from hetgym.sim.throughput import table_from_records


def toy_model() -> ThroughputModel:
    """Job type ``a`` (batch 1): 1 it/s per V100 and 0.5 it/s per K80, perfectly linear to 4 GPUs.

    Job type ``b``: faster on K80 (2 it/s) than on V100 (1 it/s), single-GPU figures only.
    Multi-server factor for ``a`` on V100 at 4 GPUs: 0.5 (unconsolidated 2.0 vs consolidated 4.0).
    """
    cons = table_from_records(
        {
            ("a", 1, "v100", 1): 1.0,
            ("a", 1, "v100", 2): 2.0,
            ("a", 1, "v100", 4): 4.0,
            ("a", 1, "k80", 1): 0.5,
            ("a", 1, "k80", 2): 1.0,
            ("a", 1, "k80", 4): 2.0,
            ("b", 1, "v100", 1): 1.0,
            ("b", 1, "k80", 1): 2.0,
        }
    )
    uncons = table_from_records({("a", 1, "v100", 4): 2.0, ("a", 1, "v100", 2): 2.0}, placement="unconsolidated")
    gpu_types = pd.DataFrame(
        {
            "gpu_type": ["v100", "k80", "a100"],
            "speed_index": [1.0, 0.5, 2.0],
            "mem_gb": [16, 12, 40],
            "source": ["test"] * 3,
            "note": [""] * 3,
        }
    )
    return ThroughputModel(pd.concat([cons, uncons], ignore_index=True), gpu_types)


class Scripted:
    """A test policy: ``decide(view) -> Allocation``, recording every view it sees."""

    name = "scripted"
    round_s = None

    def __init__(self, decide) -> None:  # type: ignore[no-untyped-def]
        self.decide = decide
        self.views: list = []  # type: ignore[type-arg]

    def reset(self, cluster, *, rng) -> None:  # type: ignore[no-untyped-def]
        self.views = []

    def schedule(self, view):  # type: ignore[no-untyped-def]
        self.views.append(view)
        return self.decide(view)


#: Examples per hypothesis test in each profile. ``default`` serves the everyday run (tests that set no
#: ``max_examples`` of their own); ``slow`` is the floor of the property tests marked ``slow``; ``nightly``
#: is for ``scripts/nightly_properties.py``. Pick one with ``pytest --hypothesis-profile=NAME``.
HYPOTHESIS_PROFILES: dict[str, int] = {"default": 10, "slow": 1_000, "nightly": 10_000}


def register_hypothesis_profiles() -> None:
    """Register :data:`HYPOTHESIS_PROFILES` (no deadline: the machines running the suite are shared).

    Registering the loaded profile reloads it, so ``default`` applies unless ``--hypothesis-profile``
    chose another, whichever of this and the hypothesis plugin runs first.
    """
    for name, examples in HYPOTHESIS_PROFILES.items():
        settings.register_profile(
            name, max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow]
        )


def slow_settings() -> settings:
    """Settings of the property tests marked ``slow``: the ``slow`` profile's examples, or the loaded
    profile's when it asks for more (``--hypothesis-profile=nightly``)."""
    examples = max(HYPOTHESIS_PROFILES["slow"], settings.default.max_examples)
    return settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def write_digests_cli(
    doc: str | None,
    path: Path,
    cases: Iterable[Any],
    digest: Callable[[Any], Any],
    summary: Callable[[Any], str],
    *,
    indent: int = 1,
) -> int:
    """The command line of the digest modules (``tests/sim_digests.py``, ``tests/env_digests.py``).

    Refuses to run without ``--write``; with it, digests every case (printing ``key summary``) and
    replaces ``path`` (JSON with ``indent``) through a temporary sibling, so an interrupted run leaves the
    committed file intact.
    """
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help=f"(re)write {path.name}")
    args = parser.parse_args()
    if not args.write:
        parser.error("give --write to regenerate the committed digests (only for a deliberate behaviour change)")
    table = {}
    for case in cases:
        table[case.key] = digest(case)
        print(case.key, summary(table[case.key]), flush=True)
    text = json.dumps(table, indent=indent, sort_keys=True) + "\n"
    atomic_write(path, lambda tmp: tmp.write_text(text))
    print(f"wrote {len(table)} digests to {path}")
    return 0


SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` imported as the module ``name`` (scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
