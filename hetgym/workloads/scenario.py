"""Scenarios: a cluster preset, a workload recipe (or trace file) and simulator knobs, by name.

:class:`WorkloadConfig` describes a workload declaratively (recipe, size, load, deadlines, or a trace
file) so the same description drives ``hetgym compare``, sweeps and the Gym environment. A
:class:`Scenario` adds the cluster and the simulator configuration; :data:`SCENARIOS` holds the
embedded ones (``default`` is what ``hetgym compare`` runs with no arguments).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hetgym.limits import JOBS_ENV, max_drawn_jobs
from hetgym.sim.cluster import ClusterSpec, get_cluster
from hetgym.sim.config import SimConfig, check_number, config_from_dict
from hetgym.sim.errors import ConfigError, UnknownNameError
from hetgym.sim.throughput import ThroughputModel
from hetgym.workloads.deadlines import make_deadline_model
from hetgym.workloads.generators import DEADLINE_DEFAULTS, RECIPES, Load
from hetgym.workloads.schema import Workload, read_trace

#: Most jobs a workload may ask for (a trace is read whole up to this many).
MAX_NUM_JOBS = 10**9
#: Largest offered utilisation accepted (ten times the cluster's capacity).
MAX_UTILISATION = 10.0
#: Largest arrival rate accepted, in jobs per hour (one job per 3.6 ms).
MAX_ARRIVAL_RATE_PER_H = 1e6
#: Largest deadline tightness accepted.
MAX_TIGHTNESS = 1e6


@dataclass(frozen=True)
class WorkloadConfig:
    """A workload, declaratively.

    Attributes:
        recipe: ``elasticflow`` or ``gavel-philly`` (ignored when ``trace`` is set).
        num_jobs: Jobs to draw, an integer in [1, :data:`~hetgym.limits.MAX_DRAWN_JOBS`] (a trace's jobs
            to read, up to 1e9, when ``trace`` is set).
        arrival_rate_per_h: Load as mean arrivals per hour, in (0, 1e6] (exclusive with
            ``target_utilisation``).
        target_utilisation: Load as offered utilisation of the cluster, in (0, 10]; ``None`` (and no
            rate) means 0.8. Zero is an error, not the default.
        static: Submit every job at time 0.
        deadline: Deadline model name (``elasticflow``, ``gavel-slo``, ``none``); ``None`` = recipe default.
        tightness: Deadline tightness (slack divided by it; 1 = the recipe), in (0, 1e6].
        max_gpus_per_job: Cap on requested GPUs, an integer >= 1, or ``None`` for no cap (zero is an
            error, not "no cap").
        trace: Path of a trace file to use instead of a recipe (its first ``num_jobs`` jobs when
            ``num_jobs`` is smaller than the trace): a canonical ``.csv``/``.parquet`` file, or a public
            trace in ``trace_format``.
        trace_format: Read ``trace`` as a public trace of this format (``philly``, ``helios``, ``pai``,
            ``elasticflow``, ``gavel``) with the default cleaning, the fill samplers seeded by the
            workload seed; ``None`` (default): ``trace`` is canonical. Convert with
            ``hetgym trace convert`` for cleaning options.
        trace_member: The member of a ``trace`` archive to read (e.g. ``cluster08.csv`` of ElasticFlow's
            ``raw-traces.tar.gz``); needs ``trace_format``. ``None``: the format reader's default members.
        trace_window: Replay a window of ``trace`` instead of its first jobs: workload seed ``s`` draws the
            start of ``num_jobs`` consecutive jobs, rebased to time 0 and renumbered 0..n-1, and, with
            ``deadline`` set, their deadlines by that model (see :mod:`hetgym.workloads.windows`).
    """

    recipe: str = "elasticflow"
    num_jobs: int = 100
    arrival_rate_per_h: float | None = None
    target_utilisation: float | None = None
    static: bool = False
    deadline: str | None = None
    tightness: float = 1.0
    max_gpus_per_job: int | None = None
    trace: str | None = None
    trace_format: str | None = None
    trace_member: str | None = None
    trace_window: bool = False

    def __post_init__(self) -> None:
        if self.trace is None and self.recipe not in RECIPES:
            raise UnknownNameError("workload recipe", self.recipe, RECIPES, "Or pass trace='file.csv'.")
        if self.trace_format is not None:
            from hetgym.workloads.traces import FORMATS

            if self.trace is None:
                raise ValueError("WorkloadConfig.trace_format needs trace, the file to read")
            if self.trace_format not in FORMATS:
                raise UnknownNameError("trace format", self.trace_format, FORMATS)
        object.__setattr__(
            self,
            "num_jobs",
            check_number(
                "WorkloadConfig.num_jobs",
                self.num_jobs,
                low=1,
                high=MAX_NUM_JOBS,
                integer=True,
                fix="the number of jobs to draw or read",
            ),
        )
        if self.trace is None:
            bound = max_drawn_jobs()
            object.__setattr__(
                self,
                "num_jobs",
                check_number(
                    "WorkloadConfig.num_jobs",
                    self.num_jobs,
                    low=1,
                    high=bound,
                    integer=True,
                    fix=f"a recipe's jobs are all drawn and held in memory before the run starts; for more, with "
                    f"the memory and time for them, raise the bound with {JOBS_ENV}=N",
                ),
            )
        if self.arrival_rate_per_h is not None:
            object.__setattr__(
                self,
                "arrival_rate_per_h",
                check_number(
                    "WorkloadConfig.arrival_rate_per_h",
                    self.arrival_rate_per_h,
                    low=0.0,
                    low_open=True,
                    high=MAX_ARRIVAL_RATE_PER_H,
                    unit="jobs per hour",
                    fix="or None",
                ),
            )
        if self.target_utilisation is not None:
            object.__setattr__(
                self,
                "target_utilisation",
                check_number(
                    "WorkloadConfig.target_utilisation",
                    self.target_utilisation,
                    low=0.0,
                    low_open=True,
                    high=MAX_UTILISATION,
                    fix="e.g. 0.8, or None for the default 0.8",
                ),
            )
        object.__setattr__(
            self,
            "tightness",
            check_number(
                "WorkloadConfig.tightness",
                self.tightness,
                low=0.0,
                low_open=True,
                high=MAX_TIGHTNESS,
                fix="1 = the recipe's deadlines",
            ),
        )
        if self.max_gpus_per_job is not None:
            object.__setattr__(
                self,
                "max_gpus_per_job",
                check_number(
                    "WorkloadConfig.max_gpus_per_job",
                    self.max_gpus_per_job,
                    low=1,
                    integer=True,
                    fix="None, or leave out --max-gpus-per-job, for no cap",
                ),
            )
        for flag in ("static", "trace_window"):
            if not isinstance(getattr(self, flag), bool):
                raise ConfigError(f"WorkloadConfig.{flag}={getattr(self, flag)!r} is not a bool; give true or false")
        if self.trace_window and self.trace is None:
            raise ConfigError("WorkloadConfig.trace_window=True needs trace, the file whose windows are replayed")
        if self.trace_member is not None and self.trace_format is None:
            raise ConfigError(
                f"WorkloadConfig.trace_member={self.trace_member!r} needs trace_format (members are read from a "
                "public trace's archive, e.g. trace_format='elasticflow')"
            )
        if self.trace_window and self.deadline is not None:
            make_deadline_model(self.deadline, tightness=self.tightness)  # an unknown name raises here
        for name in ("recipe", "deadline", "trace", "trace_format", "trace_member"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ConfigError(f"WorkloadConfig.{name}={value!r} is a {type(value).__name__}; give a string")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> WorkloadConfig:
        """Build from a mapping; unknown keys raise an error naming the nearest valid key."""
        return config_from_dict(cls, values, what="workload")

    def load(self) -> Load:
        """The :class:`Load` this configuration describes."""
        if self.static:
            return Load(static=True)
        if self.arrival_rate_per_h is not None:
            return Load(arrival_rate_per_h=self.arrival_rate_per_h)
        return Load(target_utilisation=0.8 if self.target_utilisation is None else self.target_utilisation)

    def _window(self, seed: int, throughput: ThroughputModel) -> Workload:
        """Window ``seed`` of the trace (see :mod:`hetgym.workloads.windows`)."""
        from hetgym.workloads.windows import cached_trace, draw_window

        assert self.trace is not None
        trace = cached_trace(
            self.trace,
            self.trace_format,
            member=self.trace_member,
            throughput=throughput,
            fill_deadlines=self.deadline is None,
            tightness=self.tightness,
        )
        model = None if self.deadline is None else make_deadline_model(self.deadline, tightness=self.tightness)
        return draw_window(trace, self.num_jobs, seed, model)

    def build(self, cluster: ClusterSpec | str, seed: int = 0, throughput: ThroughputModel | None = None) -> Workload:
        """Draw (or read) the workload for ``cluster`` with ``seed``."""
        cluster = get_cluster(cluster)
        if self.trace is not None:
            # Job types are checked against the table the simulator will use (the embedded one when none
            # is given), so a bad row is reported with its file and row, not later by job id.
            throughput = throughput if throughput is not None else ThroughputModel.default()
            if self.trace_window:
                return self._window(seed, throughput)
            if self.trace_format is not None:
                from hetgym.workloads.traces import FillOptions, load_trace

                members: dict[str, Any] = {} if self.trace_member is None else {"members": (self.trace_member,)}
                workload = load_trace(
                    self.trace, self.trace_format, fill=FillOptions(seed=seed), throughput=throughput, **members
                )
            else:
                workload = read_trace(Path(self.trace), throughput=throughput)
            if self.num_jobs < len(workload):
                workload = Workload(
                    workload.jobs[: self.num_jobs],
                    {**workload.metadata, "truncated_to": self.num_jobs},
                    rows=workload.rows,
                )
            return workload
        name = self.deadline
        if name is None:
            deadline = DEADLINE_DEFAULTS[self.recipe](tightness=self.tightness)
        else:
            deadline = make_deadline_model(name, tightness=self.tightness)
        return RECIPES[self.recipe](
            self.num_jobs,
            seed=seed,
            cluster=cluster,
            load=self.load(),
            deadline=deadline,
            max_gpus_per_job=self.max_gpus_per_job,
            throughput=throughput,
        )


@dataclass(frozen=True)
class Scenario:
    """A named experiment setting: cluster, workload and simulator knobs."""

    name: str
    cluster: str
    workload: WorkloadConfig
    sim: SimConfig = field(default_factory=SimConfig)
    description: str = ""

    def cluster_spec(self) -> ClusterSpec:
        """The cluster."""
        return get_cluster(self.cluster)

    def with_overrides(self, **changes: Any) -> Scenario:
        """A copy with fields of the scenario, its workload (``workload=dict``) or sim (``sim=dict``) replaced."""
        wl = changes.pop("workload", None)
        sim = changes.pop("sim", None)
        out = replace(self, **changes)
        if wl:
            out = replace(out, workload=WorkloadConfig.from_dict({**out.workload.__dict__, **wl}))
        if sim:
            out = replace(out, sim=SimConfig.from_dict({**out.sim.__dict__, **sim}))
        return out


SCENARIOS: dict[str, Scenario] = {
    "default": Scenario(
        "default",
        "default",
        WorkloadConfig(recipe="elasticflow", num_jobs=120, arrival_rate_per_h=12.0, max_gpus_per_job=16),
        description="ElasticFlow deadline recipe: 120 jobs arriving at 12 per hour on the 64-GPU, 4-type cluster",
    ),
    "tiny": Scenario(
        "tiny",
        "tiny",
        WorkloadConfig(recipe="elasticflow", num_jobs=12, target_utilisation=0.9, max_gpus_per_job=4),
        description="12 ElasticFlow jobs on the 8-GPU tiny cluster (tests, quick checks)",
    ),
    "gavel": Scenario(
        "gavel",
        "gavel-108",
        WorkloadConfig(recipe="gavel-philly", num_jobs=300, target_utilisation=0.8),
        description="Gavel-Philly recipe, 300 jobs at utilisation 0.8 on gavel-108 (JCT, no deadlines)",
    ),
    "gavel-static": Scenario(
        "gavel-static",
        "gavel-108",
        WorkloadConfig(recipe="gavel-philly", num_jobs=150, static=True),
        description="A static batch of 150 Gavel-Philly jobs on gavel-108 (total time duration / makespan)",
    ),
}


def get_scenario(name: str | Scenario) -> Scenario:
    """The embedded scenario ``name``."""
    if isinstance(name, Scenario):
        return name
    if name not in SCENARIOS:
        raise UnknownNameError("scenario", name, SCENARIOS)
    return SCENARIOS[name]
