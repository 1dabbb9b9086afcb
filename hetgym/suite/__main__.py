"""``python -m hetgym.suite``: list the scenarios, compute bounds and reference scores, regenerate the page.

Commands::

    python -m hetgym.suite list
    python -m hetgym.suite bounds --suite all            # the bound rows (and the oracle row)
    python -m hetgym.suite run --suite all               # bounds, experts, every constant rule
    python -m hetgym.suite page                          # docs/results/leaderboard.md from the JSON
    python -m hetgym.suite merge rows.json ...           # add other boards' rows (same key: theirs win)

``run`` and ``bounds`` write each row into ``--board`` (default docs/results/leaderboard.json) as soon as it
is computed and skip rows already there with the same seeds (``--force`` recomputes), so rerunning a cut
run resumes it; they print a CPU-time estimate first and progress lines as they go.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hetgym.sim.errors import HetgymError

DEFAULT_PAGE = Path("docs/results/leaderboard.md")


def _parser() -> argparse.ArgumentParser:
    from hetgym.suite.board import DEFAULT_JSON
    from hetgym.suite.scores import EXPERTS

    parser = argparse.ArgumentParser(prog="python -m hetgym.suite", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the scenarios: name, tier, description, seeds")
    for name, text in (
        ("bounds", "the headroom bounds (and the oracle reference row) of each scenario"),
        ("run", "bounds, experts and constant rules of each scenario"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("--suite", default="all", help="'all' (default) or comma-separated scenario names")
        p.add_argument("--seeds", help="workload seeds (default: each scenario's test seeds, 1000-1019)")
        p.add_argument("--board", type=Path, default=DEFAULT_JSON, help=f"the JSON rows (default {DEFAULT_JSON})")
        p.add_argument("--page", type=Path, default=DEFAULT_PAGE, help=f"the page (default {DEFAULT_PAGE})")
        p.add_argument("--no-page", action="store_true", help="do not regenerate the page")
        p.add_argument("--force", action="store_true", help="recompute rows already on the board")
        p.add_argument("--no-progress", action="store_true", help="no progress lines")
        p.add_argument("--num-slots", type=int, default=48, help="time slots of the capacity bound (default 48)")
        p.add_argument("--time-limit-s", type=float, default=20.0, help="MILP time limit per workload (default 20)")
        p.add_argument(
            "--no-oracle",
            action="store_true",
            help="skip the hindsight lookahead oracle's row (its rollouts cost the most: docs/suite.md)",
        )
        if name == "run":
            p.add_argument(
                "--experts",
                default=",".join(EXPERTS),
                help="comma-separated policies, or 'none' (default: the suite's)",
            )
            p.add_argument("--rules", default="all", help="'all' (default), 'none' or comma-separated rule names")
            p.add_argument("--no-bounds", action="store_true", help="skip the bound rows")
    p = sub.add_parser("page", help="regenerate the page from the JSON rows")
    p.add_argument("--board", type=Path, default=DEFAULT_JSON)
    p.add_argument("--page", type=Path, default=DEFAULT_PAGE)
    p = sub.add_parser("merge", help="merge the rows of other board files into --board, then regenerate the page")
    p.add_argument("sources", nargs="+", type=Path, help="board files (JSON lists of rows)")
    p.add_argument("--board", type=Path, default=DEFAULT_JSON)
    p.add_argument("--page", type=Path, default=DEFAULT_PAGE)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _main(args)
    except (HetgymError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _main(args: argparse.Namespace) -> int:
    from hetgym.suite import scenarios as sc

    if args.command == "list":
        for s in sc.SCENARIOS.values():
            print(f"{s.name:16s} {s.tier:14s} {s.description}")
        test, train = sc.TEST_SEEDS, sc.TRAIN_SEEDS
        print(f"test seeds {test[0]}-{test[-1]}; training seeds {train[0]}-{train[-1]}")
        return 0
    from hetgym.suite.run import check_rules, plan, run_tasks, write_page

    if args.command == "page":
        write_page(args.board, args.page)
        print(f"wrote {args.page}")
        return 0
    if args.command == "merge":
        from hetgym.suite.board import read_rows, upsert

        incoming = []
        for source in args.sources:
            if not source.exists():
                raise ValueError(f"{source}: no such board file")
            incoming += read_rows(source)  # every file is read (and checked) before anything is written
        rows = upsert(args.board, incoming)
        write_page(args.board, args.page)
        print(f"merged {len(incoming)} rows; {args.board} holds {len(rows)}; wrote {args.page}")
        return 0
    from hetgym.sweep.checks import parse_seeds

    chosen = sc.resolve(args.suite)
    seeds = parse_seeds(args.seeds) if args.seeds else list(sc.TEST_SEEDS)
    if not 1 <= args.num_slots <= 1000:
        raise ValueError(f"--num-slots {args.num_slots}: give 1 to 1000")
    if not 0 < args.time_limit_s <= 3600:
        raise ValueError(f"--time-limit-s {args.time_limit_s}: give a value in (0, 3600]")
    options = {"num_slots": args.num_slots, "time_limit_s": args.time_limit_s}
    if args.command == "bounds":
        tasks = plan(chosen, experts=(), rules=None, oracle=not args.no_oracle, bound_options=options)
    else:
        from hetgym.sim.policy import policy_class

        experts = [] if args.experts == "none" else [e.strip() for e in args.experts.split(",") if e.strip()]
        for name in experts:
            policy_class(name)  # an unknown name raises, naming the nearest
        rules: list[str] | str | None = None if args.rules == "none" else args.rules
        if rules not in (None, "all"):
            rules = [r.strip() for r in str(args.rules).split(",") if r.strip()]
            check_rules(chosen, rules)
        tasks = plan(
            chosen,
            experts=experts,
            rules=rules,
            bounds=not args.no_bounds,
            oracle=not args.no_oracle,
            bound_options=options,
        )
    run_tasks(
        tasks,
        seeds,
        args.board,
        page_path=None if args.no_page else args.page,
        force=args.force,
        progress=not args.no_progress,
    )
    print(f"wrote {args.board}" + ("" if args.no_page else f" and {args.page}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
