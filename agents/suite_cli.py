"""``hetgym evaluate --suite NAME|all``: score saved agents, registered policies or constant rules on the
suite's scenarios and write one row per (agent, scenario) into the leaderboard.

Saved agents (MODEL arguments) play each scenario through their own interface (``HetCluster-v1`` or
``HetClusterEvents-v0``) with the scenario's cluster and workload; ``--policies`` run on the raw simulator
(``suite``: the suite's experts, :data:`hetgym.suite.scores.EXPERTS`); ``--rules`` play one action of
``HetClusterEvents-v0`` at every decision (``all`` or names such as ``always-force``). Every score is over
the scenario's held-out test seeds unless ``--seeds`` is given. Rows go into ``--board`` (default
docs/results/leaderboard.json; a row with the same scenario and agent is replaced, the others kept) and
the page ``--page`` is regenerated; the policies' and rules' rows already on the board with the same seeds
are kept (rerunning resumes), an agent's are always recomputed.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

DEFAULT_BOARD = Path("docs/results/leaderboard.json")
DEFAULT_PAGE = Path("docs/results/leaderboard.md")


def add_suite_options(parser: argparse.ArgumentParser) -> None:
    """The ``--suite`` options of ``hetgym evaluate``."""
    group = parser.add_argument_group("suite (docs/suite.md)")
    group.add_argument(
        "--suite",
        metavar="NAME|all",
        help="score on the suite's scenarios (hetgym.suite.names(); comma-separated or 'all') over their held-out "
        "test seeds and write one row per agent and scenario into --board (docs/suite.md)",
    )
    group.add_argument(
        "--policies",
        metavar="NAMES",
        help="with --suite: registered policies to score on the raw simulator ('suite': the suite's experts)",
    )
    group.add_argument(
        "--rules",
        metavar="NAMES",
        help="with --suite: constant rules of HetClusterEvents-v0 ('all', or names such as always-force)",
    )
    group.add_argument(
        "--board", type=Path, default=DEFAULT_BOARD, help=f"with --suite: the rows (default {DEFAULT_BOARD})"
    )
    group.add_argument(
        "--page", type=Path, default=DEFAULT_PAGE, help=f"with --suite: the page (default {DEFAULT_PAGE})"
    )


def cmd_evaluate_suite(args: argparse.Namespace) -> int:
    """Run ``hetgym evaluate --suite`` (see the module docstring)."""
    from agents.args import parse_seeds
    from agents.common import load_agent, seed_everything
    from agents.leaderboard import recipe_label, suite_learned_task
    from hetgym.sim.policy import policy_class
    from hetgym.suite import TEST_SEEDS, resolve
    from hetgym.suite.run import check_rules, plan, run_tasks
    from hetgym.suite.scores import EXPERTS

    unsupported = [
        flag
        for flag, given in (
            ("--trace", args.trace),
            ("--ensemble", args.ensemble),
            ("--random", args.random),
            ("--beat-the-experts", args.beat_the_experts),
            ("--preset", args.preset),
        )
        if given
    ]
    if unsupported:
        raise ValueError(f"--suite does not combine with {', '.join(unsupported)}; the scenario sets the env")
    if args.experts not in ("all", None):
        raise ValueError("with --suite, name the policies with --policies (the suite's experts: --policies suite)")
    scenarios = resolve(args.suite)
    seeds = parse_seeds(args.seeds) if args.seeds else list(TEST_SEEDS)
    policies: list[str] = []
    if args.policies:
        policies = list(EXPERTS) if args.policies.strip() == "suite" else [p.strip() for p in args.policies.split(",")]
        for name in policies:
            policy_class(name)  # an unknown name raises, naming the nearest
    rules: Any = None
    if args.rules:
        rules = "all" if args.rules.strip() == "all" else [r.strip() for r in args.rules.split(",") if r.strip()]
        if rules != "all":
            check_rules(scenarios, rules)
    if not (args.models or policies or rules):
        raise ValueError("nothing to score: give MODELs, --policies (e.g. suite) or --rules (e.g. all)")
    labels = [s.strip() for s in args.labels.split(",")] if args.labels else []
    if labels and len(labels) != len(args.models):
        raise ValueError(f"--labels names {len(labels)} agents but {len(args.models)} were given")
    seed_everything(0)
    tasks = plan(scenarios, experts=policies, rules=rules, bounds=False, oracle=False)
    for i, path in enumerate(args.models):
        model, meta = load_agent(path, decoding=args.decoding, trust_pickle=args.trust_pickle)
        label = labels[i] if labels else f"{recipe_label(meta)}-s{meta.seed}"
        tasks += [suite_learned_task(model, meta, s, label, max_steps=args.max_steps) for s in scenarios]
    run_tasks(tasks, seeds, args.board, page_path=args.page, progress=not args.no_progress)
    print(f"wrote {args.board} and {args.page}")
    return 0


__all__ = ["add_suite_options", "cmd_evaluate_suite"]
