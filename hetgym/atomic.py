"""Writing files atomically: through a temporary file in the same folder, renamed into place.

Every writer of results, checkpoints and tables goes through :func:`atomic_write`, so an interrupted or
failing write leaves neither a half-written file nor a stray temporary one behind. A folder of results
is written with :func:`atomic_dir`: into a temporary sibling folder, renamed into place once complete.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: Permissions of a written file: what ``open(path, "w")`` would give (``mkstemp`` makes files private).
FILE_MODE = 0o666 & ~_umask()


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], Any], *, keep_suffix: bool = False) -> Path:
    """Call ``write(tmp)`` on a temporary file next to ``path``, then rename it to ``path``.

    Args:
        path: The file to write; its folder is created if missing.
        write: Writes the whole file at the path it is given.
        keep_suffix: Give the temporary file ``path``'s suffix rather than ``.tmp``: for writers that infer
            the format from it or append it when it is missing (matplotlib's ``savefig``, ``numpy.savez``,
            Stable-Baselines3's ``save``).

    Returns:
        ``path``. On any error the temporary file is removed and the error propagates.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    suffix = target.suffix if keep_suffix else ".tmp"
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str], *, replace: bool = False) -> Iterator[Path]:
    """Yield a temporary folder next to ``path``; on a normal exit, rename it to ``path``.

    Args:
        path: The folder to create; its parent is created if missing.
        replace: Replace an existing folder at ``path`` (it is removed only once the new one is
            complete). Without it, an existing ``path`` raises :class:`FileExistsError` before anything
            is written.

    On any error or interruption (``KeyboardInterrupt`` included) the temporary folder is removed and
    ``path`` is left as it was.
    """
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise FileExistsError(f"{target} exists and is not a folder")
    if target.exists() and not replace:
        raise FileExistsError(f"{target} already exists")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
            old.rmdir()
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


__all__ = ["FILE_MODE", "atomic_dir", "atomic_write"]
