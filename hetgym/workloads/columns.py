"""The canonical trace schema's columns, its constants and its error: the leaf the trace readers share.

:mod:`hetgym.workloads.schema` (the schema, :func:`~hetgym.workloads.schema.read_trace` and the writer) and
:mod:`hetgym.workloads.canonical_csv` (the CSV reader) both import these, so that neither imports the other
for them; ``hetgym.workloads.schema`` re-exports every name.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hetgym.sim.errors import HetgymError

SCHEMA_VERSION = 1
REQUIRED_COLUMNS = ("job_id", "submit_s", "job_type", "batch_size", "total_iters", "num_gpus")
OPTIONAL_COLUMNS = (
    "deadline_s",
    "user",
    "min_gpus",
    "max_gpus",
    "dp",
    "pp",
    "tp",
    "model_bytes",
    "priority_weight",
    "best_effort",
    "duration_s",
    "gpu_types",
    "template_id",
)
FEATURE_PREFIX = "feat_"
INT_COLUMNS = ("job_id", "batch_size", "num_gpus", "min_gpus", "max_gpus", "dp", "pp", "tp")
FLOAT_COLUMNS = ("submit_s", "total_iters", "deadline_s", "model_bytes", "priority_weight", "duration_s")
#: The first line of a canonical CSV: this, then the metadata as JSON.
CSV_MAGIC = "# hetgym-trace "


class TraceError(HetgymError, ValueError):
    """A trace file or table that does not follow the canonical schema."""


#: The longest line a trace reader accepts, in characters (bytes for the canonical CSV's pre-check). A
#: canonical row is well under a kilobyte; the bound keeps a corrupt or wrong file (one huge field, no
#: newlines) from being read into memory whole.
MAX_LINE_CHARS = 1 << 20
#: The longest CSV field, in characters: ``csv.field_size_limit`` for the readers of public CSV traces.
MAX_FIELD_CHARS = 1 << 17


def unknown_column_error(name: str, known: Sequence[str], source: str, *, fix: str = "") -> TraceError:
    """The error for a column a reader does not know: the nearest known name, the known ones, a fix."""
    import difflib

    near = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    tail = f"; {fix}" if fix else ""
    return TraceError(f"unknown column {name!r} in {source}{hint} (known columns: {', '.join(known)}){tail}")


def metadata_object(value: Any, path: Path, where: str) -> dict[str, Any]:
    """The trace metadata, which must be a JSON object."""
    if not isinstance(value, dict):
        raise TraceError(
            f"{path}: {where} holds a JSON {type(value).__name__}, not an object; the metadata is an object "
            'such as {"schema_version": 1}: fix or remove it'
        )
    return value


__all__ = [
    "CSV_MAGIC",
    "FEATURE_PREFIX",
    "FLOAT_COLUMNS",
    "INT_COLUMNS",
    "MAX_FIELD_CHARS",
    "MAX_LINE_CHARS",
    "OPTIONAL_COLUMNS",
    "REQUIRED_COLUMNS",
    "SCHEMA_VERSION",
    "TraceError",
    "metadata_object",
    "unknown_column_error",
]
