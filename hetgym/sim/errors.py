"""Exceptions raised by the simulator, each naming what is wrong and how to fix it."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class HetgymError(Exception):
    """Base class of every error hetgym raises on bad input."""


def _plural(noun: str) -> str:
    """``policy`` -> ``policies``, ``GPU type`` -> ``GPU types``, ``knob of X`` -> ``knobs of X``."""
    head, sep, tail = noun.partition(" of ")
    if sep:
        return _plural(head) + sep + tail
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return noun[:-1] + "ies"
    return noun + "s"


class UnknownNameError(HetgymError, KeyError):
    """A name (GPU type, preset, policy, job type, config key) that is not known.

    The message names the closest valid names so that a typo is easy to fix.
    """

    def __init__(self, kind: str, name: object, valid: Iterable[str], hint: str = "") -> None:
        valid_list = sorted(str(v) for v in valid)
        close = difflib.get_close_matches(str(name), valid_list, n=3, cutoff=0.5)
        msg = f"unknown {kind} {name!r}"
        if close:
            msg += f"; did you mean {' or '.join(repr(c) for c in close)}?"
        shown = ", ".join(valid_list[:20]) + (", ..." if len(valid_list) > 20 else "")
        msg += f" Valid {_plural(kind)}: {shown}."
        if hint:
            msg += f" {hint}"
        self.kind = kind
        self.name = name
        self.valid = valid_list
        self.suggestions = close
        super().__init__(msg)

    def __str__(self) -> str:  # KeyError would otherwise quote the whole message
        return str(self.args[0])


class ConfigError(HetgymError, ValueError):
    """A setting has a wrong type, a non-finite value or a value outside its allowed range.

    The message names the setting, the value given, the allowed range and how to fix it.
    """


class InvalidAllocationError(HetgymError, ValueError):
    """A policy returned an allocation the cluster cannot honour.

    Raised before anything is applied: the simulator state is unchanged.
    """


class InvalidClusterError(HetgymError, ValueError):
    """A cluster specification is malformed (no servers, a non-positive GPU count, ...)."""


class InvalidJobError(HetgymError, ValueError):
    """A job specification is malformed (negative time, zero work, unknown job type, ...).

    ``job_id`` names the job when the error is about one job (``None`` otherwise), so that a caller who
    read the jobs from a file can say where the job is (:meth:`hetgym.workloads.Workload.locate`).
    """

    def __init__(self, message: str, *, job_id: int | None = None) -> None:
        super().__init__(message)
        self.job_id = job_id
