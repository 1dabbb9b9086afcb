"""Writing files atomically: through a temporary file in the same folder, renamed into place.

Every writer of results, checkpoints and tables goes through :func:`atomic_write`, so an interrupted or
failing write leaves neither a half-written file nor a stray temporary one behind. A folder of results
is written with :func:`atomic_dir`: into a temporary sibling folder, renamed into place once complete.
"""

from __future__ import annotations

import contextlib
import errno
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
        ``path``. On any error the temporary file is removed and the error propagates; an ``OSError``
        about the temporary file (none can be created in that folder, the disk is full) names ``path``
        instead, with the same type, number and reason.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    suffix = target.suffix if keep_suffix else ".tmp"
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    except OSError as exc:  # e.g. a folder no file can be created in (/proc, /sys, read-only, no permission)
        raise _naming(exc, target, exc.filename) from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _naming(exc, target, tmp) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def _naming(exc: OSError, target: Path, tmp: object) -> OSError:
    """``exc`` naming ``target`` (the path the caller gave) where it named the temporary file ``tmp``.

    The temporary file is an implementation detail the user never asked for; the error keeps its type,
    number and reason. An error about another path (a writer's own input, a missing folder) is kept as it is.
    """
    if tmp is None or exc.errno is None or str(exc.filename) != str(tmp):
        return exc
    try:
        return type(exc)(exc.errno, exc.strerror, str(target))
    except TypeError:  # a subclass with a constructor of its own
        return OSError(exc.errno, exc.strerror, str(target))


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str], *, replace: bool = False) -> Iterator[Path]:
    """Yield a temporary folder next to ``path``; on a normal exit, rename it to ``path``.

    Args:
        path: The folder to create; its parent is created if missing.
        replace: Replace an existing folder at ``path`` (it is removed only once the new one is
            complete). Without it, ``path`` is claimed before anything is written: created if missing (an
            existing empty folder is taken) and marked with a claim file created exclusively, so that of
            two writers of the same ``path`` at once one raises :class:`FileExistsError` at the start; the
            final rename replaces only an empty folder, so a writer that comes between the claim's end
            and the rename fails there. A non-empty ``path`` raises at once.

    On any error or interruption (``KeyboardInterrupt`` included) the temporary folder and the claim are
    removed and ``path`` is left as it was.
    """
    target = Path(path)
    if target.name in ("", ".", ".."):
        raise ValueError(f"{str(path)!r} names no new folder; give the path of a folder to create")
    if target.exists() and not target.is_dir():
        raise FileExistsError(f"{target} exists and is not a folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    created = claimed = False
    if not replace:
        created, claimed = _claim(target)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    except OSError as exc:
        _release(target, created, claimed)
        raise _naming(exc, target, exc.filename) from None
    except BaseException:
        _release(target, created, claimed)
        raise
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())
        if replace and target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
            old.rmdir()
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            if claimed:
                (target / CLAIM_NAME).unlink()
                claimed = False
            try:
                os.rename(tmp, target)  # over an empty folder only: fails if another run filled it meanwhile
            except OSError as exc:
                if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    raise FileExistsError(f"{target} was written by another run meanwhile") from None
                raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        _release(target, created, claimed)
        raise


#: The file that marks a folder as claimed by a writer (:func:`atomic_dir`) until its results replace it.
CLAIM_NAME = ".hetgym-writing"


def _claim(target: Path) -> tuple[bool, bool]:
    """Claim the folder ``target``: create it if missing, then create its claim file exclusively.

    Returns whether the folder was created here, and that the claim is held. Raises
    :class:`FileExistsError` if ``target`` holds anything (another writer's claim included).
    """
    created = False
    try:
        os.mkdir(target)
        created = True
    except FileExistsError:
        if not target.is_dir():
            raise FileExistsError(f"{target} exists and is not a folder") from None
    entries = [p.name for p in target.iterdir()]
    if entries == [CLAIM_NAME]:
        raise FileExistsError(f"{target} is being written by another run")
    if entries:
        raise FileExistsError(f"{target} already exists")
    try:
        os.close(os.open(target / CLAIM_NAME, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        raise FileExistsError(f"{target} is being written by another run") from None
    except BaseException:
        _release(target, created, False)
        raise
    return created, True


def _release(target: Path, created: bool, claimed: bool) -> None:
    """Give up a claim taken by :func:`_claim`: its file, and the folder if it was created for it and is empty."""
    with contextlib.suppress(OSError):
        if claimed:
            (target / CLAIM_NAME).unlink()
        if created:
            target.rmdir()


__all__ = ["CLAIM_NAME", "FILE_MODE", "atomic_dir", "atomic_write"]
