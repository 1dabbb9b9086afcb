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
#: is for ``scripts/bench/nightly_properties.py``. Pick one with ``pytest --hypothesis-profile=NAME``.
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

    ``--write`` digests every case (printing ``key summary``) and replaces ``path`` (JSON with ``indent``)
    through a temporary sibling, so an interrupted run leaves the committed file intact. ``--drift``
    writes nothing: it re-runs the cases (the slow ones too with ``--slow``) and reports how many
    differ from the committed digests and how far their metrics moved (exit 1 when any differ), for
    testing against package releases newer than the lock. One of the two is required.
    """
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help=f"(re)write {path.name}")
    mode.add_argument("--drift", action="store_true", help=f"compare with {path.name}, write nothing")
    parser.add_argument("--slow", action="store_true", help="with --drift: the slow cases too")
    args = parser.parse_args()
    if args.drift:
        committed = json.loads(path.read_text())
        chosen = [c for c in cases if args.slow or not getattr(c, "slow", False)]
        changed = 0
        for case in chosen:
            line = drift_line(case.key, committed.get(case.key), digest(case))
            changed += line.startswith("CHANGED")
            print(line, flush=True)
        print(f"drift: {changed} of {len(chosen)} cases differ from {path.name}")
        return 1 if changed else 0
    table = {}
    for case in cases:
        table[case.key] = digest(case)
        print(case.key, summary(table[case.key]), flush=True)
    text = json.dumps(table, indent=indent, sort_keys=True) + "\n"
    atomic_write(path, lambda tmp: tmp.write_text(text))
    print(f"wrote {len(table)} digests to {path}")
    return 0


def drift_line(key: str, want: dict[str, Any] | None, got: dict[str, Any]) -> str:
    """``same KEY``, or ``CHANGED KEY`` with each changed entry; for ``metrics``, each metric's move."""
    if want is None:
        return f"CHANGED {key}: no committed digest"
    if got == want:
        return f"same    {key}"
    moves = []
    for name in sorted(set(got) | set(want)):
        old, new = want.get(name), got.get(name)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            for metric in sorted(set(old) | set(new)):
                a, b = old.get(metric), new.get(metric)
                if a != b and isinstance(a, float) and isinstance(b, float):
                    moves.append(f"{metric} {a:.6g} -> {b:.6g} ({b - a:+.3g})")
                elif a != b:
                    moves.append(f"{metric} {a} -> {b}")
        elif name.endswith("sha256"):
            moves.append(f"{name} differs")
        else:
            moves.append(f"{name} {old} -> {new}")
    return f"CHANGED {key}: " + "; ".join(moves)


SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(path: str) -> ModuleType:
    """``scripts/<path>.py`` (``"lock"``, ``"bench/bench_env"``) imported as the module named by its last
    part (scripts are not a package)."""
    name = path.rsplit("/", 1)[-1]
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{path}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
