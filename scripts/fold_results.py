"""Fold a study folder's per-run JSON reports into one CSV, one row per run.

Each ``*.json`` file directly in the input folder is read (subfolders are not). A file holding one JSON
object gives one row; a file holding a list gives one row per element (a list of objects, such as the
reports of ``scripts/studies/clone_agreement.py``). Columns: ``file`` (the JSON file's name), ``item``
(the element's index in a list, empty for an object), then the union of the rows' keys in sorted order.
Nested objects are flattened with dotted keys (``env_kwargs.sim.round_s``); lists, numbers, booleans and
``null`` are written as JSON text, strings as they are; a key a row lacks is left empty. The output is
the same for the same input files, whatever the order the file system lists them in.

Usage::

    python scripts/fold_results.py docs/results/agents_v1 docs/results/agents_v1/runs.csv
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any


def flatten(value: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Flatten a JSON object into ``{dotted key: cell text}``."""
    out: dict[str, str] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict) and item:
            out.update(flatten(item, prefix=f"{name}."))
        elif isinstance(item, str):
            out[name] = item
        else:
            out[name] = json.dumps(item, sort_keys=True)
    return out


def rows_of(path: Path) -> list[dict[str, str]]:
    """The rows one JSON report gives."""
    data = json.loads(path.read_text())
    items = data if isinstance(data, list) else [data]
    rows = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise SystemExit(f"error: {path}: expected a JSON object or a list of objects")
        row = {"file": path.name, "item": str(index) if isinstance(data, list) else ""}
        for key, cell in flatten(item).items():
            if key in ("file", "item"):
                raise SystemExit(f"error: {path}: key {key!r} is reserved for the CSV's own columns")
            row[key] = cell
        rows.append(row)
    return rows


def fold(folder: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The CSV's columns and rows for the JSON reports directly in ``folder``."""
    rows = [row for path in sorted(folder.glob("*.json")) for row in rows_of(path)]
    keys = sorted({key for row in rows for key in row} - {"file", "item"})
    return ["file", "item", *keys], rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the study folder holding the per-run *.json reports")
    parser.add_argument("out", type=Path, help="the CSV to write")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        parser.error(f"{args.folder} is not a folder")
    columns, rows = fold(args.folder)
    if not rows:
        parser.error(f"no *.json reports in {args.folder}")
    with args.out.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {args.out}: {len(rows)} rows, {len(columns)} columns")


if __name__ == "__main__":
    main()
