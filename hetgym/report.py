"""One page from a results folder: ``hetgym report RESULTS_DIR``.

:func:`build_report` reads the output folder of ``hetgym compare`` (``summary.json``, ``summary.csv``,
``timings.csv``), ``hetgym sweep`` (``results.parquet``/``results.csv``) or ``hetgym evaluate``
(``evaluation.csv``) and gathers its tables and figures; :func:`write_report` turns them into
``report.html``, a self-contained page (the figures embedded as base64 PNG, no external link, no
script) and/or ``report.md`` (the figures referred to by file name), each written atomically next to
the results. A sweep's figures, which ``hetgym sweep`` leaves to ``--report``, are drawn for the page.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from hetgym.atomic import atomic_write

#: The formats :func:`write_report` writes.
FORMATS: tuple[str, ...] = ("html", "md")

_CSS = """
body { font-family: sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f0f0f0; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
.note { color: #666; font-size: 0.9em; }
"""


@dataclass
class Report:
    """The content of a report page.

    Attributes:
        title: The page title.
        kind: ``compare``, ``sweep`` or ``evaluate``.
        source: The results folder.
        tables: ``(caption, table)`` pairs, shown in order.
        figures: ``(caption, PNG bytes, file name)`` triples.
        notes: Lines of text shown under the title.
        config: The configuration (shown as JSON), when the results record one.
    """

    title: str
    kind: str
    source: Path
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    figures: list[tuple[str, bytes, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    config: dict[str, Any] | None = None


def detect_kind(folder: Path) -> str:
    """The command that wrote ``folder``: ``compare``, ``sweep`` or ``evaluate``.

    Raises:
        FileNotFoundError: ``folder`` is missing or holds none of their result files.
    """
    if not folder.is_dir():
        raise FileNotFoundError(f"results folder {str(folder)!r} does not exist; give the folder a command wrote")
    if (folder / "summary.json").is_file() and (folder / "runs.csv").is_file():
        return "compare"
    if any((folder / name).is_file() for name in ("results.parquet", "results.csv")) or (folder / "runs").is_dir():
        return "sweep"
    if (folder / "evaluation.csv").is_file():
        return "evaluate"
    raise FileNotFoundError(
        f"{folder} holds no results of hetgym compare (summary.json, runs.csv), sweep (results.parquet or "
        "results.csv) or evaluate (evaluation.csv)"
    )


def _figures(folder: Path) -> list[tuple[str, bytes, str]]:
    return [(png.stem.replace("_", " "), png.read_bytes(), png.name) for png in sorted(folder.glob("*.png"))]


def _fmt(value: Any, scale: float = 1.0, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, bool | str):
        return str(value)
    try:
        number = float(value) * scale
    except (TypeError, ValueError):
        return str(value)
    return f"{number:.{digits}g}" if abs(number) < 1e-3 or abs(number) >= 1e5 else f"{number:.{digits}f}"


def _fmt_as(value: Any, scale: float, fmt: str) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "-"
    return "-" if not math.isfinite(number) else fmt.format(number * scale)


def _load(path: Path, read: Callable[[Path], Any]) -> Any:
    """``read(path)``, a damaged file (truncated, not UTF-8, not the format) reported by its name."""
    try:
        return read(path)
    except (ValueError, OSError) as exc:  # JSON, CSV, parquet and decoding errors are ValueErrors
        raise ValueError(
            f"{path}: cannot read it ({type(exc).__name__}: {exc}); is it complete? rerun the command that wrote it"
        ) from None


def _json_object(path: Path) -> dict[str, Any]:
    value = _load(path, lambda p: json.loads(p.read_text()))
    if not isinstance(value, dict):
        raise ValueError(f"{path}: holds a JSON {type(value).__name__}, not an object; rerun the command that wrote it")
    return value


def _compare_report(folder: Path) -> Report:
    from hetgym.experiments import HEADLINE_METRICS

    summary = _json_object(folder / "summary.json")
    config = summary.get("config")
    scenario = summary.get("scenario", {})
    report = Report(f"hetgym compare: scenario '{scenario.get('name', '?')}'", "compare", folder, config=config)
    report.notes.append(
        f"cluster {scenario.get('cluster', '?')}; policies {', '.join(summary.get('policies', []))}; "
        f"seeds {summary.get('seeds')}"
    )
    if config and config.get("overrides"):
        report.notes.append("overrides: " + ", ".join(f"{k}={v}" for k, v in config["overrides"].items()))
    if config and config.get("policy_options"):
        knobs = [f"{p}:{k}={v}" for p, kv in config["policy_options"].items() for k, v in kv.items()]
        report.notes.append("knobs: " + ", ".join(knobs))
    agg_path = folder / "summary.csv"
    agg = _load(agg_path, lambda p: pd.read_csv(p, index_col=0)) if agg_path.is_file() else pd.DataFrame()
    if not agg.empty:
        rows = []
        for policy, row in agg.iterrows():
            cells = {"policy": str(policy)}
            for key, label, scale, fmt in HEADLINE_METRICS:
                if key in agg.columns:
                    mean, sd = row.get(key), row.get(f"{key}_std")
                    text = _fmt_as(mean, scale, fmt)
                    if sd is not None and isinstance(sd, float) and math.isfinite(sd) and sd > 0:
                        text += f" ± {_fmt_as(sd, scale, fmt)}"
                    cells[label] = text
            rows.append(cells)
        report.tables.append(("Mean (± sd over seeds) per policy", pd.DataFrame(rows)))
    if (folder / "timings.csv").is_file():
        timings = _load(folder / "timings.csv", pd.read_csv)
        if not timings.empty:
            t = timings.drop(columns=["seed"]).groupby("policy", sort=False).mean(numeric_only=True)
            shown = pd.DataFrame(
                {"policy": t.index, **{c: [_fmt(v) for v in t[c]] for c in t.columns}},
            )
            report.tables.append(("Timings on the machine that ran it (mean over seeds; not reproducible)", shown))
    if summary.get("errors"):
        errors = pd.DataFrame({"run": list(summary["errors"]), "error": list(summary["errors"].values())})
        report.tables.append(("Failed runs", errors))
    report.figures = _figures(folder)
    return report


def _sweep_report(folder: Path) -> Report:
    from hetgym.sweep import load_results
    from hetgym.sweep import write_report as sweep_figures
    from hetgym.sweep.report import SUMMARY_METRICS, format_mean_sd

    table = next((folder / n for n in ("results.parquet", "results.csv") if (folder / n).is_file()), folder / "runs")
    results = _load(table, lambda _: load_results(folder))
    meta_path = folder / "sweep.json"
    meta = _json_object(meta_path) if meta_path.is_file() else {}
    report = Report(f"hetgym sweep: {meta.get('name', folder.name)}", "sweep", folder, config=meta.get("spec"))
    ok = int((results["status"] == "ok").sum()) if "status" in results.columns else len(results)
    report.notes.append(f"{len(results)} runs recorded, {ok} succeeded, of {meta.get('num_runs', '?')} in the grid")
    with tempfile.TemporaryDirectory(prefix="hetgym-report-") as tmp:
        summary, written = sweep_figures(results, Path(tmp))
        report.figures = [(p.stem.replace("_", " "), p.read_bytes(), p.name) for p in written if p.suffix == ".png"]
    if not summary.empty:
        keys = [c for c in summary.columns if not c.endswith(("_mean", "_std")) and c not in ("n_ok", "n_failed")]
        rows = []
        for _, row in summary.iterrows():
            cells = {k.split(".", 1)[-1]: str(row[k]) for k in keys}
            for col, label, scale in SUMMARY_METRICS:
                if f"{col}_mean" in summary.columns:
                    cells[label] = format_mean_sd(row[f"{col}_mean"], row[f"{col}_std"], scale)
            cells["seeds ok / failed"] = f"{int(row['n_ok'])} / {int(row['n_failed'])}"
            rows.append(cells)
        report.tables.append(("Mean (± sd over seeds)", pd.DataFrame(rows)))
    if "status" in results.columns and (results["status"] != "ok").any():
        bad = results.loc[results["status"] != "ok", [c for c in ("run_id", "policy", "seed", "error") if c in results]]
        report.tables.append(("Failed runs", bad.reset_index(drop=True)))
    return report


def _evaluate_report(folder: Path) -> Report:
    agg = _load(folder / "evaluation.csv", lambda p: pd.read_csv(p, index_col=0))
    report = Report(f"hetgym evaluate: {folder.name}", "evaluate", folder)
    columns = [c for c in ("kind", "dsr", "dsr_std", "jct_mean_s", "jct_mean_s_std", "num_seeds") if c in agg.columns]
    shown = agg[columns].copy() if columns else agg.copy()
    for col in shown.columns:
        scale = 1 / 3600 if col.startswith("jct") else 1.0
        shown[col] = [_fmt(v, scale) for v in shown[col]]
    shown = shown.rename(columns={"jct_mean_s": "avg JCT (h)", "jct_mean_s_std": "avg JCT sd (h)"})
    report.tables.append(("Mean over held-out seeds per policy", shown.reset_index()))
    report.figures = _figures(folder)
    return report


def build_report(folder: str | Path) -> Report:
    """Gather the tables and figures of a ``compare``, ``sweep`` or ``evaluate`` results folder."""
    path = Path(folder)
    kind = detect_kind(path)
    return {"compare": _compare_report, "sweep": _sweep_report, "evaluate": _evaluate_report}[kind](path)


def _html_table(df: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in df.itertuples(index=False)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def to_html(report: Report) -> str:
    """A self-contained HTML page: inline CSS, figures as ``data:`` URIs, no script and no external link."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(report.title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(report.title)}</h1>",
        f'<p class="note">results folder: {html.escape(str(report.source))}</p>',
    ]
    parts += [f"<p>{html.escape(note)}</p>" for note in report.notes]
    for caption, table in report.tables:
        parts += [f"<h2>{html.escape(caption)}</h2>", _html_table(table)]
    for caption, data, name in report.figures:
        encoded = base64.b64encode(data).decode("ascii")
        parts += [
            f"<h2>{html.escape(caption)}</h2>",
            f'<img alt="{html.escape(name)}" src="data:image/png;base64,{encoded}">',
        ]
    if report.config is not None:
        text = json.dumps(report.config, indent=2, sort_keys=True, default=str)
        parts += ["<h2>Configuration</h2>", f"<pre>{html.escape(text)}</pre>"]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _md_cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def to_markdown(report: Report, where: Path | None = None) -> str:
    """The report as Markdown: tables as pipe tables, figures referred to by path (relative to ``where``,
    the page's folder; default the results folder)."""
    lines = [f"# {report.title}", "", f"Results folder: `{report.source}`", ""]
    for note in report.notes:
        lines += [note, ""]
    for caption, table in report.tables:
        lines += [f"## {caption}", ""]
        lines.append("| " + " | ".join(_md_cell(c) for c in table.columns) + " |")
        lines.append("|" + "---|" * len(table.columns))
        lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
        lines.append("")
    for caption, _, name in report.figures:
        if (report.source / name).is_file():
            link = Path(os.path.relpath(report.source / name, where or report.source)).as_posix()
            lines += [f"## {caption}", "", f"![{caption}]({link})", ""]
    if report.config is not None:
        text = json.dumps(report.config, indent=2, sort_keys=True, default=str)
        lines += ["## Configuration", "", "```json", text, "```", ""]
    return "\n".join(lines)


def write_report(folder: str | Path, formats: tuple[str, ...] = FORMATS, out: Path | None = None) -> list[Path]:
    """Write ``report.html`` and/or ``report.md`` into ``folder`` (or ``out`` with its suffix replaced).

    Every page is built before any is written, and each is written atomically.
    """
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise ValueError(f"report format(s) {bad or formats}: choose among {', '.join(FORMATS)}")
    report = build_report(folder)
    base = out if out is not None else Path(folder) / "report.html"
    pages = {"html": to_html(report), "md": to_markdown(report, base.parent)}
    written = []
    for fmt in formats:

        def write(path: Path, text: str = pages[fmt]) -> None:
            path.write_text(text, encoding="utf-8")

        written.append(atomic_write(base.with_suffix(f".{fmt}"), write))
    return written
