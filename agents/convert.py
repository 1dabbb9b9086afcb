"""Convert saved agents from SB3 ``.zip`` archives to the safe format (weights + JSON).

``python -m agents.convert RUN [RUN ...] --trust-pickle`` loads each run folder's ``model.zip`` and
``model_<steps>.zip`` checkpoints (or each ``.zip`` given, with ``agent.json`` beside it), which unpickles
them, and writes ``model.pt`` (``model_<steps>.pt``) beside them, with the network's description added to
``agent.json``. The archives are left in place; once converted, ``hetgym evaluate`` and
:func:`agents.common.load_agent` read the ``.pt`` files and never open the archives again.

Unpickling runs any code an archive carries, so the command refuses to run without ``--trust-pickle``:
convert only archives you made or trust (``docs/security.md``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from agents.args import AgentError
from agents.common import META_FILE, PICKLE_MODEL_FILE, load_agent, save_agent
from agents.weights import PICKLE_RISK


def archives(path: Path) -> list[Path]:
    """The SB3 archives of a run folder (``model.zip``, ``model_<steps>.zip``), or ``[path]`` for a file."""
    if path.is_dir():
        found = [path / PICKLE_MODEL_FILE] if (path / PICKLE_MODEL_FILE).is_file() else []
        found += sorted(path.glob("model_*.zip"))
        if not found:
            raise AgentError(f"{path} holds no {PICKLE_MODEL_FILE} or model_<steps>.zip to convert")
        return found
    if path.suffix.lower() != ".zip" or not path.is_file():
        raise AgentError(f"{path} is neither a run folder nor an SB3 .zip archive")
    return [path]


def convert(path: Path, *, trust_pickle: bool) -> list[Path]:
    """Write the safe format beside each archive of ``path``; the ``.pt`` files written."""
    if not trust_pickle:
        raise AgentError(
            f"converting {path} loads its archives: {PICKLE_RISK}. Give --trust-pickle if you made them or trust "
            "where they came from (docs/security.md)"
        )
    written = []
    for archive in archives(path):
        if not (archive.parent / META_FILE).is_file():
            raise AgentError(f"no {META_FILE} beside {archive}: only archives saved by the agents recipes convert")
        model, meta = load_agent(archive, trust_pickle=True)
        written.append(save_agent(model, meta, archive.parent, archive.with_suffix(".pt").name))
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents.convert", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path, metavar="RUN", help="run folders or SB3 .zip archives")
    parser.add_argument(
        "--trust-pickle",
        action="store_true",
        help="load the archives, which unpickles them and runs any code they carry (only for files you trust)",
    )
    args = parser.parse_args(argv)
    try:
        for path in args.paths:
            for out in convert(path, trust_pickle=args.trust_pickle):
                print(f"wrote {out}")
    except AgentError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
