"""HadarE: Hadar plus job forking, so that idle nodes train copies of unfinished jobs.

Sultana, Pakka, Xu, Yuan, Chen, Tzeng, "Resource Heterogeneity-Aware and Utilization-Enhanced
Scheduling for Deep Learning Clusters", arXiv:2503.10918 (2025), extending Hadar (IEEE IPDPS 2024).

Confirmed by the abstract: each job is forked into multiple copies that train concurrently on
separate available nodes (possibly of different GPU types); a job tracker aggregates their
parameters; against Hadar, cluster utilisation rises 1.45x and the total time duration falls by
50% (AWS) / 80% (lab cluster). The mechanics below are a reconstruction (user guide:
``docs/heterogeneity-policies.md``; open questions: ``docs/provenance.md``):

1. Hadar-Round (:class:`~baselines.hadar.Hadar`) decides the primary allocation of every job.
2. **Forking**: every node with idle GPUs takes copies of unfinished jobs, one copy of a job per node
   at most and at most ``max_copies_per_job`` server groups per job, all within the job's
   ``max_gpus``, a first copy with at least its ``min_gpus``. Each copy takes
   ``n = min(idle GPUs, W_j)`` GPUs of the node and never spans nodes. A node picks, among the jobs
   with a positive rate there, first a job that holds no GPUs yet in this round (so every unfinished
   job runs somewhere before any job gets an extra copy), then a job that already had a copy on this
   node (no restart), then the largest ``gain = rate_j(type(h), n) / remaining_j``
   (``copy_rule="gain"``, default) or the shortest remaining time (``copy_rule="srpt"``). Jobs that
   did not fit as a gang thus start on fewer GPUs than they asked for (the "all-or-nothing" problem
   the paper motivates).
   The policy returns GPU counts per type; the simulator's ``copies`` placer, which it declares
   (:mod:`hetgym.sim.placement.priced`), lays ``fork`` jobs out as one copy per node of at most ``W_j``
   GPUs, its previous nodes first (a reconstruction of the same rule from counts alone).
3. Each job runs in the simulator's ``fork`` mode: every server group is an independent copy, and
   per round the job progresses by ``fork_efficiency * sum_copies rate(type, n) * (round -
   aggregation)``, with ``aggregation = model_bytes / NIC bandwidth`` charged when there are two or
   more copies (``SimConfig.fork_efficiency`` is the statistical efficiency of averaging the copies,
   ``eta_agg``, a reconstructed knob with default 1.0, and ``SimConfig.fork_aggregation`` switches the
   overhead). A job whose only allocation is a
   multi-node primary gang runs in ``fork`` or ``sync`` mode, whichever the simulator rates faster.

Copies are re-decided at round boundaries only (``fork_between_rounds=False``); inside a round,
waiting jobs still take free GPUs as in Hadar. Every change of a job's nodes costs the restart
penalty, as for any policy. The models' inference quality (the paper's other claim) is out of scope.

Model sizes: the Gavel-Philly jobs carry no ``model_bytes``, so without them the aggregation
overhead is zero. :data:`GAVEL_MODEL_BYTES` gives approximate FP32 parameter sizes per job type
(reconstructions, see its comment) and :func:`with_model_bytes` fills them in; at the default 12.5
GB/s NIC even the largest (about 0.2 GB) costs under 20 ms per 360 s round, so the overhead barely
matters either way; ``fork_efficiency`` is the knob that does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import ClassVar

from baselines.hadar.knobs import HadarKnobs
from baselines.hadar.policy import Hadar, _Decision, _merge, groups_to_server_groups
from hetgym.sim.allocation import Allocation, JobAllocation
from hetgym.sim.job import JobSpec
from hetgym.sim.policy import register_policy
from hetgym.sim.registry import knob
from hetgym.sim.throughput import ExecutionMode, allocation_rate
from hetgym.sim.view import ClusterView, JobView

#: Approximate model sizes in bytes (FP32 parameters x 4) of the Gavel job types; estimates from the
#: usual architectures, not measurements: ResNet-18 (CIFAR-10) 11.2 M parameters, ResNet-50 25.6 M,
#: Transformer (Multi30k, base-size) about 50 M, LM (2-layer LSTM, WikiText-2) about 14 M,
#: Recommendation (autoencoder on ML-20M) about 10 M, A3C (Atari) about 1 M, CycleGAN about 28 M.
GAVEL_MODEL_BYTES: Mapping[str, float] = {
    "resnet18": 44.7e6,
    "resnet50": 102.2e6,
    "transformer": 200e6,
    "lm": 56e6,
    "recommendation": 40e6,
    "a3c": 4e6,
    "cyclegan": 113e6,
}


def with_model_bytes(jobs: Iterable[JobSpec], sizes: Mapping[str, float] = GAVEL_MODEL_BYTES) -> list[JobSpec]:
    """The jobs with ``model_bytes`` filled in from ``sizes`` by job type where it was missing."""
    out = []
    for job in jobs:
        if job.model_bytes is None and job.job_type in sizes:
            job = dataclasses.replace(job, model_bytes=float(sizes[job.job_type]))
        out.append(job)
    return out


@dataclasses.dataclass(frozen=True)
class HadarEKnobs(HadarKnobs):
    """Knobs of :class:`HadarE`: Hadar's, and how copies are made."""

    max_copies_per_job: int | None = knob(
        None,
        low=1,
        integer=True,
        optional=True,
        doc="most server groups (primary included) per job (``None``: the number of nodes)",
    )
    copy_rule: str = knob(
        "gain", choices=("gain", "srpt"), doc="``'gain'`` (rate / remaining) or ``'srpt'`` (shortest remaining time)"
    )
    fork_between_rounds: bool = knob(False, doc="also fork onto nodes freed inside a round")


@register_policy()
class HadarE(Hadar):
    """HadarE (arXiv:2503.10918): Hadar-Round plus forking copies of jobs onto idle nodes.

    Sultana et al., "Resource Heterogeneity-Aware and Utilization-Enhanced Scheduling for Deep
    Learning Clusters", arXiv:2503.10918, 2025. Implemented: Hadar's allocation, then copies of
    unfinished jobs on every node with idle GPUs, run in the simulator's ``fork`` mode (summed copy
    progress less the aggregation overhead). Reconstructions: the copy size, the node-to-job choice
    rule and stickiness, the per-round re-decision (see the module docstring).
    """

    name: ClassVar[str] = "hadare"
    knobs = HadarEKnobs
    placer = "copies"
    modes = ("sync", "fork")

    knob_values: HadarEKnobs

    # ----------------------------------------------------------------------------------------
    def _copy_key(
        self, view: ClusterView, job: JobView, rate: float, had_copy: bool, unplaced: bool
    ) -> tuple[float, ...]:
        remaining = max(job.remaining_iters, 1e-12)
        if self.knob_values.copy_rule == "gain":
            score = rate / remaining
        else:
            best = float(self.job_rates(view, job).max()) or rate
            score = -remaining / best
        return (float(unplaced), float(had_copy), score, -job.submit_s, -job.job_id)

    def fork(self, view: ClusterView, decision: _Decision) -> None:
        """Place copies of unfinished jobs on every node with idle GPUs (updates ``decision`` in place)."""
        assert self.cluster is not None and decision.pool is not None
        pool = decision.pool
        servers = self.cluster.servers
        limit = self.knob_values.max_copies_per_job or len(servers)
        nodes_of: dict[int, set[int]] = {jid: {h for h, _ in g} for jid, g in decision.groups.items()}
        totals: dict[int, int] = {jid: sum(n for _, n in g) for jid, g in decision.groups.items()}
        previous: dict[int, set[int]] = {j.job_id: {g.server_id for g in j.groups} for j in view.jobs}
        jobs = list(view.jobs)
        order = sorted(
            (h for h in range(len(servers)) if pool.free(h) > 0),
            key=lambda h: (-pool.free(h), -view.throughput.speed_index.get(servers[h].gpu_type, 0.0), h),
        )
        for h in order:
            gpu_type = servers[h].gpu_type
            while pool.free(h) > 0:
                best: tuple[tuple[float, ...], JobView, int] | None = None
                for job in jobs:
                    nodes = nodes_of.get(job.job_id, set())
                    if h in nodes or len(nodes) >= limit or gpu_type not in view.allowed_types(job):
                        continue
                    # All copies together stay within max_gpus, and a job's first copy takes at least
                    # its min_gpus (the simulator refuses allocations outside the job's bounds).
                    spec = job.spec
                    room = job.num_gpus if spec.max_gpus is None else spec.max_gpus - totals.get(job.job_id, 0)
                    n = min(pool.free(h), job.num_gpus, room)
                    if n <= 0 or (not nodes and n < spec.min_gpus):
                        continue
                    rate = view.rate(job, gpu_type, n)
                    if rate <= 0:
                        continue
                    key = self._copy_key(view, job, rate, h in previous[job.job_id], not nodes)
                    if best is None or key > best[0]:
                        best = (key, job, n)
                if best is None:
                    break
                _, job, n = best
                pool.take(h, n)
                decision.groups.setdefault(job.job_id, []).append((h, n))
                nodes_of.setdefault(job.job_id, set()).add(h)
                totals[job.job_id] = totals.get(job.job_id, 0) + n

    def decide(self, view: ClusterView) -> _Decision:
        round_start = view.is_tick or view.epoch == 0
        decision = super().decide(view)
        if round_start or self.knob_values.fork_between_rounds:
            self.fork(view, decision)
        return decision

    def to_allocation(self, view: ClusterView, decision: _Decision) -> Allocation:
        """``fork`` GPU counts per job (copies), or ``sync`` for a lone gang when faster.

        The declared ``copies`` placer maps them onto nodes (one copy per node); a job whose counts are
        unchanged keeps its exact allocation, mode included (no restart).
        """
        assert self.cluster is not None
        out: dict[int, JobAllocation] = {}
        servers = self.cluster.servers
        cfg = view.config
        for jid, groups in decision.groups.items():
            job = view.job(jid)
            merged = _merge(groups)
            counts = self.counts_of(merged.items())
            if job.allocation is not None and job.allocation.as_dict() == counts:
                out[jid] = job.allocation  # same GPUs: keep the mode and the nodes too (no restart)
                continue
            mode: ExecutionMode = "fork"
            primary = decision.offers.get(jid)
            if len(merged) > 1 and primary is not None and sorted(primary.groups) == sorted(merged.items()):
                sg = groups_to_server_groups(self.cluster, merged.items())
                agg_s = 0.0
                if cfg.fork_aggregation and job.spec.model_bytes:
                    nic = min(servers[h].nic_bw_gb_per_s for h in merged)
                    agg_s = job.spec.model_bytes / 1e9 / nic
                fork_rate = allocation_rate(
                    view.throughput,
                    job.job_type,
                    job.batch_size,
                    sg,
                    "fork",
                    aggregation_s=agg_s,
                    round_s=view.round_s,
                    fork_efficiency=cfg.fork_efficiency,
                )
                sync_rate = allocation_rate(view.throughput, job.job_type, job.batch_size, sg, "sync")
                if sync_rate > fork_rate or (
                    sync_rate == fork_rate and job.allocation is not None and job.allocation.mode == "sync"
                ):
                    mode = "sync"
            out[jid] = JobAllocation(counts, mode=mode)
        return Allocation(out)
