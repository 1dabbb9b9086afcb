"""``hetgym report RESULTS_DIR``: one page (HTML and/or Markdown) from a compare, sweep or evaluate folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from hetgym.cli._common import console


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="turn a compare/sweep/evaluate results folder into one HTML page (and Markdown)",
        description="Write RESULTS_DIR/report.html, a self-contained page (tables, and the figures embedded "
        "as PNG; no external link), and RESULTS_DIR/report.md, from the output folder of hetgym compare, "
        "sweep or evaluate.",
    )
    p.add_argument("results", type=Path, metavar="RESULTS_DIR", help="a folder written by compare, sweep or evaluate")
    p.add_argument(
        "--format",
        choices=("html", "md", "both"),
        default="both",
        help="which page(s) to write (default both)",
    )
    p.add_argument(
        "--out", type=Path, help="path of the page, its suffix set by the format (default RESULTS_DIR/report)"
    )
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from hetgym.report import FORMATS, write_report

    formats = FORMATS if args.format == "both" else (args.format,)
    if args.out is not None and args.out.is_dir():
        raise ValueError(f"--out {args.out} is a folder; give the path of the page, e.g. {args.out / 'report.html'}")
    written = write_report(args.results, formats, out=args.out)
    console.print("wrote " + ", ".join(str(p) for p in written))
    return 0
