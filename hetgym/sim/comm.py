"""Placement-aware communication model (opt-in): job graphs of mixed-parallel jobs and their cut cost.

By default (``SimConfig(comm="measured")``) a job spread over several servers runs at its measured rate
times the multi-server consolidation factor of :mod:`hetgym.sim.throughput`. With
``SimConfig(comm="bandwidth")`` a job that declares ``model_bytes`` instead pays for the bytes its
placement sends between servers, following the job-graph model of A-SRPT (Luo et al., INFOCOM 2025;
user guide: ``docs/communication-policies.md``):

* **Job graph.** A job with parallelism ``(dp, pp, tp)`` (pure data parallel ``(n, 1, 1)`` when it has
  none) has one vertex per GPU rank. Ranks are numbered ``rank = (replica * pp + stage) * tp + tp_rank``
  (tensor-parallel ranks vary fastest, then pipeline stages, then replicas), the layout a launcher gives
  a host list. Edges and their per-iteration volumes, with ``D`` the model bytes (reconstructions [I]):

  - **TP**: every pair inside a TP group, ``2 V_tp / tp`` bytes each, with the group's activation
    all-reduce volume ``V_tp = tp_ratio * D / (pp * dp)`` (activations of one replica's stage);
  - **PP**: between the same TP rank of adjacent stages of a replica, ``V_pp / tp`` bytes each, with
    ``V_pp = pp_ratio * D / dp`` (activations and their gradients at a stage boundary);
  - **DP**: a ring over the replicas of each (stage, TP rank) shard, ``2 (dp - 1) / dp * D / (pp * tp)``
    bytes per ring edge (ring all-reduce of the shard's gradients).

* **Placement.** The simulator lays the ranks out contiguously over the job's server groups in the
  order given (the allocation's server order: ascending server id): the first ``n_0`` ranks on the first
  server, and so on. A policy that wants TP groups kept whole gives every server a multiple of ``tp``.

* **Iteration time.** ``tau(pi) = tau_meas + cut(pi)``, where ``tau_meas`` is one over the measured rate
  of the allocation as if it were on one server (:func:`~hetgym.sim.throughput.allocation_rate` without
  the multi-server factor) and ``cut`` is the extra time of the edges the placement cuts:
  ``sum`` aggregation (the A-SRPT formula): ``sum over cut edges of w_e (1 / b_out(e) - 1 / b_in)``;
  ``nic`` aggregation: the busiest server's NIC, ``max_s sum over cut edges at s of w_e (1/nic_s - 1/b_in)``.
  ``b_out(e)`` is the smaller NIC bandwidth of the two servers and ``b_in`` the smallest intra-server
  bandwidth of the job's servers. This equals A-SRPT's ``c_j + sum_e w_e / bw(pi(u), pi(v))`` with
  ``c_j = tau_meas - sum_e w_e / b_in``: the measured single-server rate already includes the
  intra-server traffic, so a job on one server runs exactly at its measured rate in both models.

Jobs without ``model_bytes``, and ``fork`` jobs, keep the measured model. If an allocation's GPU count
differs from ``dp * pp * tp`` (an elastic policy resized the job), the graph keeps ``pp`` and ``tp`` and
rescales ``dp`` when the count is a multiple of ``pp * tp``, and is pure data parallel otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from functools import lru_cache
from types import MappingProxyType
from typing import Any

import numpy as np

from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.errors import HetgymError
from hetgym.sim.job import JobSpec
from hetgym.sim.throughput import ExecutionMode, ServerGroup, ThroughputModel, allocation_rate

COMM_KINDS: tuple[str, ...] = ("measured", "bandwidth")
AGGREGATIONS: tuple[str, ...] = ("sum", "nic")

#: Edge kinds of a job graph.
TP_EDGE, PP_EDGE, DP_EDGE = 0, 1, 2

#: Nominal model sizes in bytes (fp32 parameters) of the throughput table's job types, for
#: communication models when a job does not give ``model_bytes``. Parameter counts of the reference
#: architectures (ResNet-50 25.6 M, ResNet-18 11.7 M, VGG-16 138 M, Inception-v3 23.8 M, BERT-base
#: 110 M, GPT-2 small 124 M, DeepSpeech2 ~38 M, YOLOv3 61.9 M, Transformer-base ~65 M, CycleGAN's two
#: generators and two discriminators ~28 M); the LSTM LM, the recommendation autoencoder, NCF and A3C
#: are rough estimates of the small models used by Gavel and Pollux.
NOMINAL_MODEL_BYTES: Mapping[str, float] = MappingProxyType(
    {
        "resnet50": 4 * 25.6e6,
        "resnet50_cifar10": 4 * 23.5e6,
        "resnet18": 4 * 11.7e6,
        "vgg16": 4 * 138.4e6,
        "inception3": 4 * 23.8e6,
        "bert": 4 * 110e6,
        "gpt2": 4 * 124e6,
        "deepspeech2": 4 * 38e6,
        "yolov3": 4 * 61.9e6,
        "transformer": 4 * 65e6,
        "cyclegan": 4 * 28.3e6,
        "lm": 4 * 30e6,
        "recommendation": 4 * 40e6,
        "ncf": 4 * 30e6,
        "a3c": 4 * 1e6,
    }
)


@dataclass(frozen=True)
class CommModel:
    """Which multi-server model the simulator uses, and its knobs.

    Attributes:
        kind: ``"measured"`` (default: measured consolidation factors) or ``"bandwidth"`` (the job-graph
            model of this module for jobs with ``model_bytes``).
        aggregation: ``"sum"`` (A-SRPT's sum over cut edges, the default) or ``"nic"`` (busiest NIC).
        tp_ratio: TP activation volume per iteration of one TP group, as a multiple of the model bytes
            of one replica's stage (reconstruction; default 16).
        pp_ratio: Activation volume per iteration at one stage boundary of one replica, as a multiple of
            ``model_bytes / dp`` (reconstruction; default 1).
    """

    kind: str = "measured"
    aggregation: str = "sum"
    tp_ratio: float = 16.0
    pp_ratio: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in COMM_KINDS:
            raise HetgymError(f"communication model kind {self.kind!r} is unknown; use one of {list(COMM_KINDS)}")
        if self.aggregation not in AGGREGATIONS:
            raise HetgymError(
                f"communication aggregation {self.aggregation!r} is unknown; use one of {list(AGGREGATIONS)}"
            )
        for name in ("tp_ratio", "pp_ratio"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise HetgymError(f"CommModel.{name} is {value}; it must be a finite number >= 0")

    @classmethod
    def coerce(cls, value: CommModel | str | Mapping[str, Any] | None) -> CommModel:
        """Build from a model, a kind name (``"bandwidth"``) or a mapping of fields; ``None`` = default."""
        if value is None:
            return cls()
        if isinstance(value, CommModel):
            return value
        if isinstance(value, str):
            return cls(kind=value)
        if isinstance(value, Mapping):
            names = [f.name for f in fields(cls)]
            unknown = [k for k in value if k not in names]
            if unknown:
                raise HetgymError(f"communication model key(s) {unknown} are unknown; valid keys are {names}")
            return cls(**value)
        raise HetgymError(
            f"SimConfig.comm is {value!r}; give 'measured', 'bandwidth', a mapping of CommModel fields or a CommModel"
        )

    @property
    def is_bandwidth(self) -> bool:
        """Whether the bandwidth (job-graph) model is in force."""
        return self.kind == "bandwidth"


# --------------------------------------------------------------------------------------------
# Job graphs


@dataclass(frozen=True)
class JobGraph:
    """The communication graph of a ``(dp, pp, tp)`` job (see the module docstring).

    Attributes:
        dp: Data-parallel replicas.
        pp: Pipeline stages.
        tp: Tensor-parallel ranks per stage.
        u: First rank of each edge.
        v: Second rank of each edge.
        kind: ``TP_EDGE``, ``PP_EDGE`` or ``DP_EDGE`` per edge.
    """

    dp: int
    pp: int
    tp: int
    u: np.ndarray
    v: np.ndarray
    kind: np.ndarray

    @property
    def num_ranks(self) -> int:
        """GPUs of the job, ``dp * pp * tp``."""
        return self.dp * self.pp * self.tp

    def weights(self, model_bytes: float, comm: CommModel | None = None) -> np.ndarray:
        """Bytes per iteration on each edge for a model of ``model_bytes`` bytes."""
        comm = comm or CommModel()
        dp, pp, tp = self.dp, self.pp, self.tp
        v_tp = comm.tp_ratio * model_bytes / (pp * dp)
        v_pp = comm.pp_ratio * model_bytes / dp
        shard = model_bytes / (pp * tp)
        per_kind = np.array(
            [
                2.0 * v_tp / tp if tp > 1 else 0.0,
                v_pp / tp,
                2.0 * (dp - 1) / dp * shard if dp > 1 else 0.0,
            ]
        )
        return per_kind[self.kind]


def rank_index(replica: int, stage: int, tp_rank: int, pp: int, tp: int) -> int:
    """Rank of a (replica, stage, TP rank) vertex: TP ranks vary fastest, then stages, then replicas."""
    return (replica * pp + stage) * tp + tp_rank


@lru_cache(maxsize=512)
def job_graph(dp: int, pp: int = 1, tp: int = 1) -> JobGraph:
    """The graph of a ``(dp, pp, tp)`` job (cached; the arrays are shared, do not modify them)."""
    if min(dp, pp, tp) < 1:
        raise HetgymError(f"parallelism ({dp}, {pp}, {tp}) is invalid; every degree must be >= 1")
    us: list[int] = []
    vs: list[int] = []
    kinds: list[int] = []
    for r in range(dp):
        for s in range(pp):
            base = rank_index(r, s, 0, pp, tp)
            for a in range(tp):
                for b in range(a + 1, tp):
                    us.append(base + a)
                    vs.append(base + b)
                    kinds.append(TP_EDGE)
            if s + 1 < pp:
                nxt = rank_index(r, s + 1, 0, pp, tp)
                for a in range(tp):
                    us.append(base + a)
                    vs.append(nxt + a)
                    kinds.append(PP_EDGE)
    if dp > 1:
        ring = range(dp) if dp > 2 else range(1)  # two replicas share one (full-duplex) ring edge
        for s in range(pp):
            for a in range(tp):
                for r in ring:
                    us.append(rank_index(r, s, a, pp, tp))
                    vs.append(rank_index((r + 1) % dp, s, a, pp, tp))
                    kinds.append(DP_EDGE)
    graph = JobGraph(
        dp,
        pp,
        tp,
        np.array(us, dtype=np.int64),
        np.array(vs, dtype=np.int64),
        np.array(kinds, dtype=np.int64),
    )
    for arr in (graph.u, graph.v, graph.kind):
        arr.setflags(write=False)
    return graph


def graph_for(spec: JobSpec, num_gpus: int | None = None) -> JobGraph:
    """The graph of ``spec`` on ``num_gpus`` GPUs (default: its request); see the module docstring."""
    n = spec.num_gpus if num_gpus is None else int(num_gpus)
    if n < 1:
        raise HetgymError(f"job {spec.job_id}: a graph needs at least one GPU, got {n}")
    if spec.parallelism is None:
        return job_graph(n, 1, 1)
    _, pp, tp = spec.parallelism
    if n % (pp * tp) == 0:
        return job_graph(n // (pp * tp), pp, tp)
    return job_graph(n, 1, 1)


def layout(groups: Sequence[ServerGroup]) -> np.ndarray:
    """Server id of every rank when ranks fill ``groups`` contiguously in the order given."""
    return np.repeat(
        np.array([g.server_id for g in groups], dtype=np.int64),
        np.array([g.num_gpus for g in groups], dtype=np.int64),
    )


def job_model_bytes(spec: JobSpec, default: Mapping[str, float] | None = NOMINAL_MODEL_BYTES) -> float | None:
    """The job's ``model_bytes``, else the nominal size of its type from ``default`` (``None`` if unknown)."""
    if spec.model_bytes is not None:
        return float(spec.model_bytes)
    if default is None:
        return None
    value = default.get(spec.job_type)
    return None if value is None else float(value)


def cut_bytes(spec: JobSpec, groups: Sequence[ServerGroup], comm: CommModel | None = None) -> float:
    """Bytes per iteration the placement ``groups`` sends between servers (0 on one server)."""
    if len(groups) <= 1:
        return 0.0
    mbytes = job_model_bytes(spec) or 0.0
    graph = graph_for(spec, sum(g.num_gpus for g in groups))
    server = layout(groups)
    cut = server[graph.u] != server[graph.v]
    return float(graph.weights(mbytes, comm)[cut].sum())


def cut_time_s(
    spec: JobSpec,
    groups: Sequence[ServerGroup],
    cluster: ClusterSpec,
    comm: CommModel | None = None,
    model_bytes: float | None = None,
) -> float:
    """Extra seconds per iteration of the placement ``groups`` over one server (see the module docstring)."""
    if len(groups) <= 1:
        return 0.0
    comm = comm or CommModel(kind="bandwidth")
    mbytes = model_bytes if model_bytes is not None else job_model_bytes(spec)
    if not mbytes:
        return 0.0
    graph = graph_for(spec, sum(g.num_gpus for g in groups))
    server = layout(groups)
    su, sv = server[graph.u], server[graph.v]
    cut = su != sv
    if not cut.any():
        return 0.0
    servers = cluster.servers
    inv_in = 1.0 / (min(servers[g.server_id].intra_bw_gb_per_s for g in groups) * 1e9)
    w = graph.weights(mbytes, comm)[cut]
    su, sv = su[cut], sv[cut]
    nic = np.array([s.nic_bw_gb_per_s for s in servers], dtype=float) * 1e9
    if comm.aggregation == "sum":
        per_edge = w * np.maximum(1.0 / np.minimum(nic[su], nic[sv]) - inv_in, 0.0)
        return float(per_edge.sum())
    # "nic": every cut edge loads the NIC of both its servers; the busiest NIC bounds the iteration.
    load: dict[int, float] = {}
    for a, b, wt in zip(su.tolist(), sv.tolist(), w.tolist(), strict=True):
        load[a] = load.get(a, 0.0) + wt
        load[b] = load.get(b, 0.0) + wt
    return max(max(0.0, bytes_ * (1.0 / nic[s] - inv_in)) for s, bytes_ in load.items())


def placement_rate(
    throughput: ThroughputModel,
    cluster: ClusterSpec,
    comm: CommModel,
    spec: JobSpec,
    groups: Sequence[ServerGroup],
    mode: ExecutionMode = "sync",
) -> float:
    """Iterations/s of ``spec`` on ``groups`` under ``comm``, exactly as the simulator computes it.

    ``fork`` jobs are not covered here (the simulator adds their aggregation overhead itself); for them
    and for jobs without ``model_bytes`` under the bandwidth model this is the measured model.
    """
    if not groups:
        return 0.0
    if not comm.is_bandwidth or spec.model_bytes is None or mode == "fork":
        return allocation_rate(throughput, spec.job_type, spec.batch_size, groups, mode)
    base = allocation_rate(throughput, spec.job_type, spec.batch_size, groups, mode, multi_server_factor=False)
    if base <= 0 or len(groups) == 1:
        return base
    extra = cut_time_s(spec, groups, cluster, comm)
    return 1.0 / (1.0 / base + extra)


__all__ = [
    "AGGREGATIONS",
    "COMM_KINDS",
    "DP_EDGE",
    "NOMINAL_MODEL_BYTES",
    "PP_EDGE",
    "TP_EDGE",
    "CommModel",
    "JobGraph",
    "cut_bytes",
    "cut_time_s",
    "graph_for",
    "job_graph",
    "job_model_bytes",
    "layout",
    "placement_rate",
    "rank_index",
]
