"""Readers of public GPU-cluster traces, turning each format into the canonical job schema.

Formats (``hetgym trace formats``): ``philly`` (Microsoft Philly ``cluster_job_log``), ``helios``
(SenseTime Helios ``cluster_log.csv``), ``pai`` (Alibaba PAI cluster-trace-gpu-v2020), ``elasticflow``
(ElasticFlow's ITP traces, raw and extended) and ``gavel`` (Gavel ``.trace`` files). Every format goes
through the same pipeline (:mod:`hetgym.workloads.traces.pipeline`): streaming read, cleaning with a
report of what was dropped and why, named seeded samplers for missing fields, canonical output.

>>> from hetgym.workloads.traces import CleanOptions, load_trace
>>> wl = load_trace("elasticflow-traces.tar.gz", "elasticflow", members=("cluster10.csv",),
...                 clean=CleanOptions(max_gpus=8))  # doctest: +SKIP
"""

from __future__ import annotations

from hetgym.workloads.traces.pipeline import (
    FORMATS,
    CleanOptions,
    FillOptions,
    convert_trace,
    load_trace,
    make_reader,
)
from hetgym.workloads.traces.records import DropReport, RawJob, Reader
from hetgym.workloads.traces.stats import offered_load, summarize

__all__ = [
    "FORMATS",
    "CleanOptions",
    "DropReport",
    "FillOptions",
    "RawJob",
    "Reader",
    "convert_trace",
    "load_trace",
    "make_reader",
    "offered_load",
    "summarize",
]
