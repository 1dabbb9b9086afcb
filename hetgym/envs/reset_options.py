"""The ``options`` of ``env.reset``, checked the same way by every env of the project.

``options`` is ``None`` or a mapping of the env's reset options: ``workload_seed`` (an integer >= 0: the
workload that seed draws) and ``jobs`` (a sequence of :class:`~hetgym.sim.job.JobSpec`: this workload).
Anything else (a string, a list, a float seed, a job that is no ``JobSpec``) is refused with an error
naming the option, rather than failing later inside ``dict()`` or the simulator.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hetgym.sim.errors import UnknownNameError
from hetgym.sim.job import JobSpec


def check_reset_options(options: Any, allowed: Sequence[str]) -> dict[str, Any]:
    """``options`` as a new dict, after checking each option named in ``allowed``.

    Raises:
        ValueError: ``options`` is no mapping, or an option's value is of the wrong kind.
        UnknownNameError: an option not in ``allowed``.
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ValueError(
            f"reset options={options!r} is a {type(options).__name__}, not a dict; give None or a dict of "
            f"{', '.join(allowed)}, e.g. env.reset(options={{'workload_seed': 3}})"
        )
    out = dict(options)
    for key in out:
        if key not in allowed:
            raise UnknownNameError("reset option", key, allowed)
    if "workload_seed" in out:
        seed = out["workload_seed"]
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
            raise ValueError(
                f"reset option 'workload_seed'={seed!r} is not an integer >= 0; give the seed of the workload to draw"
            )
        out["workload_seed"] = int(seed)
    if "jobs" in out:
        jobs = out["jobs"]
        if isinstance(jobs, str | bytes | Mapping) or not isinstance(jobs, Iterable):
            raise ValueError(f"reset option 'jobs' is a {type(jobs).__name__}; give a sequence of JobSpec")
        jobs = tuple(jobs)
        for i, job in enumerate(jobs):
            if not isinstance(job, JobSpec):
                raise ValueError(f"reset option 'jobs': item {i} is a {type(job).__name__}, not a JobSpec")
        if not jobs:
            raise ValueError("reset option 'jobs' is empty; give at least one JobSpec, or leave it out to draw jobs")
        out["jobs"] = jobs
    return out
