"""Pickling support for the simulator's read-only mappings.

The simulator's frozen records (:class:`~hetgym.sim.job.JobSpec` features,
:class:`~hetgym.sim.allocation.Allocation` jobs, :class:`~hetgym.sim.config.SimConfig` penalties, a view's
``jobs_by_id``) hold :class:`types.MappingProxyType` views, which the standard library cannot pickle or
deep-copy. Registering a reducer here (imported by :mod:`hetgym.sim`) lets a simulator, and an environment
around it, be pickled and copied by state: the proxy is rebuilt over a copy of the mapping it shows, which
is all a read-only view can expose.
"""

from __future__ import annotations

import copyreg
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any


def _mappingproxy(items: Mapping[Any, Any]) -> MappingProxyType[Any, Any]:
    return MappingProxyType(dict(items))


def _reduce_mappingproxy(proxy: MappingProxyType[Any, Any]) -> tuple[Any, tuple[dict[Any, Any]]]:
    return _mappingproxy, (dict(proxy),)


copyreg.pickle(MappingProxyType, _reduce_mappingproxy)
