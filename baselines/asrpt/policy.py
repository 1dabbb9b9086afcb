"""A-SRPT: prediction-assisted, communication-aware online scheduling of mixed-parallel training jobs.

Luo, Liu, Shroff and Lee, "Prediction-Assisted Online Distributed Deep Learning Workload Scheduling in
GPU Clusters", IEEE INFOCOM 2025 (arXiv:2501.05563). User guide: ``docs/communication-policies.md``; provenance
tags and open questions: ``docs/provenance.md``. The abstract fixes the ingredients; everything else here is a
reconstruction [I], exposed as a knob:

* **Job graph and its cost** under a placement: :mod:`hetgym.sim.comm` (TP pairs, PP stage boundaries,
  DP rings; ``tau(pi) = c + sum of cut volumes / bandwidth``). The simulator charges the same cost when run
  with ``SimConfig(comm="bandwidth")``.
* **Communication-aware placement** (the simulator's ``comm-aware`` placer,
  :mod:`hetgym.sim.placement.comm_aware`, declared by this policy; the policy applies the same rule to
  decide which waiting jobs fit, and returns GPU counts only): best fit on one server when one has room;
  otherwise the fewest servers, counting on each only whole atomic units (a pipeline replica ``pp * tp``
  when that does not need more servers, else a TP group ``tp``), so a TP group that fits a server is never
  split and consecutive pipeline stages share a server; the ranks are then laid out contiguously over the
  chosen servers (the simulator's layout). The optional Kernighan-Lin refinement is not implemented: with
  contiguous layouts on whole units it has little left to gain.
* **Iteration predictor** (:class:`RandomForestPredictor`): scikit-learn random forest on log iterations,
  features of the job and statistics of earlier recurrences of its template and of its (user, model)
  key, trained on a warm-up history and refit online every ``refit_every`` completions; unseen templates
  fall back to the global median (or to the forest, ``unseen="rf"``). Also :class:`OraclePredictor` (the
  SRPT upper bound) and :class:`NoisyPredictor` (log-normal error).
* **Virtual single machine** (:class:`VirtualSRPT`): speed 1, job size
  ``v_j = g_j * n_hat_j * tau*_j / (total GPUs)`` with ``tau*_j`` the iteration time under the most
  consolidated placement; preemptive SRPT (ties by release) gives virtual completion times. Predictions
  refreshed by a refit, or raised when a running job overruns its prediction (to ``done * (1 +
  overrun_margin)``), update the remaining virtual size ("adaptive"); a job that completes for real
  leaves the virtual machine.
* **Mode A** (``mode="guided"``, default): non-preemptive list scheduling in virtual-completion order
  (virtually completed jobs by completion time, then the rest by remaining virtual size); with
  ``early_release`` a job is eligible from its release, else from its virtual completion;
  ``strict_order`` stops at the first job that does not fit (no backfilling).
* **Mode B** (``mode="preemptive"``): at every epoch jobs are ranked by their own remaining virtual size
  ``g * (n_hat - done) * tau* / (total GPUs)`` and served greedily in that order: a running job keeps its
  servers while they are free, otherwise it (or a waiting job) is placed communication-aware, first
  avoiding the GPUs of lower-ranked running jobs and only then preempting them; jobs that fit nowhere
  wait (backfilling). A job that started less than ``min_run_s`` ago is served first (not preempted).

The form of the competitive ratio the paper proves is an open question (``docs/provenance.md``); none is
claimed here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from baselines._common import TYPE_CHOICE_DOC, TYPE_CHOICES, TypeChoice, gang_counts, greedy_fill
from baselines.asrpt.predict import (
    IterationPredictor,
    make_predictor,
)
from hetgym.sim.allocation import Allocation, AllocationBuilder, JobAllocation
from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.comm import CommModel, placement_rate
from hetgym.sim.job import JobSpec
from hetgym.sim.knob_policy import KnobPolicy
from hetgym.sim.placement import comm_aware_place, place_count, random_place
from hetgym.sim.policy import register_policy
from hetgym.sim.registry import Knobs, knob
from hetgym.sim.throughput import ServerGroup, ThroughputModel
from hetgym.sim.view import ClusterView, JobView

Mode = Literal["guided", "preemptive"]
Placement = Literal["comm_aware", "default", "random"]
MODES: tuple[str, ...] = ("guided", "preemptive")
PLACEMENTS: tuple[str, ...] = ("comm_aware", "default", "random")


# ============================================================================================
# The virtual single machine


class VirtualSRPT:
    """A speed-1 machine running preemptive SRPT online on virtual sizes (ties by release, then id)."""

    def __init__(self) -> None:
        self.time_s = 0.0
        self.remaining: dict[int, float] = {}
        self.size: dict[int, float] = {}
        self.release_s: dict[int, float] = {}
        self.completed_at: dict[int, float] = {}

    def advance(self, now_s: float) -> None:
        """Process jobs up to ``now_s``, recording virtual completion times."""
        rem = self.remaining
        while rem and self.time_s < now_s:
            jid = min(rem, key=lambda j: (rem[j], self.release_s[j], j))
            dt = min(rem[jid], now_s - self.time_s)
            rem[jid] -= dt
            self.time_s += dt
            if rem[jid] <= 1e-9 * max(1.0, self.size[jid]):
                self.completed_at[jid] = self.time_s
                del rem[jid]
        self.time_s = max(self.time_s, now_s)

    def add(self, job_id: int, size: float, release_s: float) -> None:
        """Release a job of virtual size ``size`` (call :meth:`advance` to ``release_s`` first)."""
        self.size[job_id] = size
        self.release_s[job_id] = release_s
        if size > 0:
            self.remaining[job_id] = size
        else:
            self.completed_at[job_id] = release_s

    def resize(self, job_id: int, size: float) -> None:
        """Update a job's total virtual size (work already done is kept); finished jobs are unaffected."""
        if job_id not in self.remaining:
            return
        done = self.size[job_id] - self.remaining[job_id]
        self.size[job_id] = size
        left = size - done
        if left <= 1e-9 * max(1.0, size):
            self.completed_at[job_id] = self.time_s
            del self.remaining[job_id]
        else:
            self.remaining[job_id] = left

    def remove(self, job_id: int) -> None:
        """Forget a job (it completed for real)."""
        for table in (self.remaining, self.size, self.release_s, self.completed_at):
            table.pop(job_id, None)

    def guide_key(self, job_id: int) -> tuple[int, float, float, int]:
        """Virtual-completion order: completed jobs by completion time, then by remaining size."""
        if job_id in self.completed_at:
            return (0, self.completed_at[job_id], self.release_s.get(job_id, 0.0), job_id)
        return (1, self.remaining.get(job_id, math.inf), self.release_s.get(job_id, 0.0), job_id)


# ============================================================================================
# Placement


def consolidated_groups(spec: JobSpec, cluster: ClusterSpec, gpu_type: str) -> list[ServerGroup] | None:
    """The most consolidated placement of ``spec`` on an empty cluster of ``gpu_type`` (for ``tau*``)."""
    empty = np.array([s.num_gpus for s in cluster.servers], dtype=np.int64)
    if cluster.capacity[gpu_type] < spec.num_gpus:
        return None
    return comm_aware_place(spec, empty, cluster, [gpu_type])


# ============================================================================================
# Shared prediction bookkeeping


@dataclass
class _JobInfo:
    spec: JobSpec
    pred_iters: float
    tau_star_s: float
    gpu_type: str | None


class _PredictionTracker:
    """Arrivals, completions, refits and overruns shared by the prediction-assisted policies."""

    def __init__(self, predictor: IterationPredictor, history: Sequence[JobSpec] | None, overrun_margin: float):
        self.predictor = predictor
        self.history = tuple(history or ())
        self.overrun_margin = overrun_margin
        self.info: dict[int, _JobInfo] = {}
        self.at_arrival: dict[int, float] = {}
        self.refreshed = False

    def reset(self, seed: int) -> None:
        self.predictor.reset(seed)
        if self.history:
            self.predictor.fit(self.history)
        self.info = {}
        self.at_arrival = {}

    def predicted(self, spec: JobSpec) -> float:
        return max(1.0, float(self.predictor.predict(spec)))

    def update(self, view: ClusterView, tau_star: Any) -> tuple[list[int], list[int]]:
        """Record completions and arrivals; return (new job ids, completed job ids)."""
        self.refreshed = False
        completed: list[int] = []
        for jid in view.completed:
            info = self.info.pop(jid, None)
            if info is not None:
                completed.append(jid)
                if self.predictor.observe(info.spec, info.spec.total_iters):
                    self.refreshed = True
        active = view.job_index
        for jid in [j for j in self.info if j not in active]:
            del self.info[jid]  # rejected, or ended outside a completion
        new: list[int] = []
        for job in view.jobs:
            if job.job_id not in self.info:
                gpu_type, tau = tau_star(job.spec)
                pred = self.predicted(job.spec)
                self.info[job.job_id] = _JobInfo(job.spec, pred, tau, gpu_type)
                self.at_arrival[job.job_id] = pred
                new.append(job.job_id)
        if self.refreshed:
            old = [jid for jid in self.info if jid not in new]
            preds = self.predictor.predict_many([self.info[j].spec for j in old])
            for jid, pred in zip(old, preds, strict=True):
                self.info[jid].pred_iters = max(1.0, float(pred))
        for job in view.jobs:
            info = self.info[job.job_id]
            if job.done_iters >= info.pred_iters:
                info.pred_iters = max(info.pred_iters, job.done_iters * (1.0 + self.overrun_margin), 1.0)
        return new, completed

    def remaining_iters(self, job: JobView) -> float:
        return max(self.info[job.job_id].pred_iters - job.done_iters, 0.0)


def _tau_star(
    spec: JobSpec,
    cluster: ClusterSpec,
    throughput: ThroughputModel,
    comm: CommModel,
    gpu_types: Sequence[str],
) -> tuple[str | None, float]:
    """The best type and the iteration time under the most consolidated placement on it."""
    best: tuple[str | None, float] = (None, math.inf)
    for t in gpu_types:
        groups = consolidated_groups(spec, cluster, t)
        if groups is None:
            continue
        rate = placement_rate(throughput, cluster, comm, spec, groups)
        if rate > 0 and 1.0 / rate < best[1]:
            best = (t, 1.0 / rate)
    return best


# ============================================================================================
# Policies


@dataclass(frozen=True)
class ASRPTKnobs(Knobs):
    """Knobs of :class:`ASRPT` (the predictor's name is checked by :func:`make_predictor`)."""

    mode: Mode = knob("guided", choices=MODES, doc="``'guided'`` (mode A, non-preemptive) or ``'preemptive'`` (mode B)")
    predictor: str | IterationPredictor = knob(
        "rf", doc="``'rf'``, ``'oracle'``, ``'noisy'`` or an :class:`IterationPredictor`"
    )
    predictor_params: Mapping[str, Any] | None = knob(
        None,
        doc="knobs of a predictor given by name (e.g. ``{'sigma': 0.5}`` for ``noisy``, ``{'refit_every': 20}`` "
        "for ``rf``)",
    )
    history: Sequence[JobSpec] | None = knob(
        None, doc="past jobs with known iterations to warm the predictor up (e.g. a trace prefix)"
    )
    early_release: bool = knob(
        True, doc="mode A: a job is eligible at release (work-conserving) rather than at its virtual completion"
    )
    strict_order: bool = knob(False, doc="mode A: no backfilling past a job that does not fit")
    placement: Placement = knob(
        "comm_aware",
        choices=PLACEMENTS,
        doc="``'comm_aware'``, ``'default'`` (the simulator's placer, GPU-granular best fit then fewest servers) "
        "or ``'random'`` (servers in random order; communication-unaware)",
    )
    overrun_margin: float = knob(
        0.2, low=0.0, doc="a job that has run past its prediction is predicted ``done * (1 + margin)`` (reconstruction)"
    )
    min_run_s: float = knob(300.0, low=0.0, doc="mode B: a job is not preempted within this many seconds of its start")
    type_choice: TypeChoice = knob(
        "fastest", choices=TYPE_CHOICES, doc="GPU type preference in heterogeneous clusters: " + TYPE_CHOICE_DOC
    )


@register_policy()
class ASRPT(KnobPolicy[ASRPTKnobs]):
    """A-SRPT (Luo et al., "Prediction-Assisted Online Distributed Deep Learning Workload Scheduling in GPU
    Clusters", IEEE INFOCOM 2025, arXiv:2501.05563): virtual single-machine SRPT on predicted sizes
    guiding a communication-aware cluster schedule.

    Implemented (see the module docstring for each part and its provenance): the job graph and its
    cut cost, the communication-aware placement, the random-forest iteration predictor with oracle and
    noisy alternatives, the virtual preemptive SRPT machine, guided non-preemptive list scheduling (mode
    A) and the preemptive variant (mode B). Reconstructions [I]: the virtual size, both modes' details,
    the predictor's features and schedule, the overrun rule and every default below. Run it with
    ``SimConfig(comm="bandwidth")`` (and jobs carrying ``model_bytes``) for placement-dependent progress.
    """

    name = "asrpt"
    knobs = ASRPTKnobs
    placer = "comm-aware"
    round_s = 60.0

    def _configure(self) -> None:
        k = self.knob_values
        # Guided list scheduling is work-conserving when jobs are eligible at release and may backfill.
        self.keeps_gpus_busy = k.mode == "guided" and k.early_release and not k.strict_order
        self.placer = {"comm_aware": "comm-aware", "default": "default", "random": "random"}[k.placement]
        self._tracker = _PredictionTracker(
            make_predictor(k.predictor, **dict(k.predictor_params or {})), k.history, k.overrun_margin
        )
        # The predictor (all but the oracle) and the random placement are seeded by the run's generator.
        self.randomised = not (isinstance(k.predictor, str) and k.predictor == "oracle") or k.placement == "random"

    def _reset(self) -> None:
        self._tracker.reset(int(self.rng.integers(0, 2**31 - 1)))
        self.vm = VirtualSRPT()

    # ---------------------------------------------------------------------------------------
    def _types(self, view: ClusterView, job: JobView | JobSpec) -> list[str]:
        rates = view.rate_table.get(job)
        rate = dict(zip(rates.types, rates.rates.tolist(), strict=True))
        types = list(rates.allowed_types)
        if self.knob_values.type_choice == "fastest":
            types.sort(key=lambda t: -rate[t])
        return [t for t in types if rate[t] > 0]

    def _virtual_size(self, view: ClusterView, info: _JobInfo, iters: float) -> float:
        return info.spec.num_gpus * iters * info.tau_star_s / view.cluster.total_gpus

    def _place(self, view: ClusterView, job: JobView, free: np.ndarray) -> list[ServerGroup] | None:
        if self.knob_values.placement == "default":
            # Only the type and count are chosen, by the classic policies' rule (the first type with room,
            # in the type_choice order; no spanning); the simulator places them (best fit, fewest servers).
            by_type = {t: int(free[list(ids)].sum()) for t, ids in view.cluster.servers_by_type.items()}
            counts = gang_counts(view, job, by_type, job.num_gpus, self.knob_values.type_choice, span_types=False)
            return None if counts is None else _take_default(view.cluster, free, next(iter(counts)), job.num_gpus)
        types = self._types(view, job)
        if self.knob_values.placement == "random":
            return random_place(job.spec, free, view.cluster, types, self.rng)
        return comm_aware_place(job.spec, free, view.cluster, types)

    def _assign(self, builder: AllocationBuilder, job: JobView, groups: list[ServerGroup], free: np.ndarray) -> None:
        counts: dict[str, int] = {}
        for g in groups:
            counts[g.gpu_type] = counts.get(g.gpu_type, 0) + g.num_gpus
            free[g.server_id] -= g.num_gpus
        # Counts only: the declared placer (comm-aware, random or default) maps them onto servers.
        builder.assign(job.job_id, JobAllocation(counts))

    # ---------------------------------------------------------------------------------------
    def schedule(self, view: ClusterView) -> Allocation:
        comm = view.config.comm_model
        tracker = self._tracker
        self.vm.advance(view.now_s)

        def tau(spec: JobSpec) -> tuple[str | None, float]:
            return _tau_star(spec, view.cluster, view.throughput, comm, self._types(view, spec))

        before = {jid: info.pred_iters for jid, info in tracker.info.items()}
        new, completed = tracker.update(view, tau)
        for jid in completed:
            self.vm.remove(jid)
        for jid, info in tracker.info.items():
            if jid in new:
                self.vm.add(jid, self._virtual_size(view, info, info.pred_iters), view.job(jid).submit_s)
            elif info.pred_iters != before.get(jid):
                self.vm.resize(jid, self._virtual_size(view, info, info.pred_iters))
        if self.knob_values.mode == "guided":
            return self._guided(view)
        return self._preemptive(view)

    def _guided(self, view: ClusterView) -> Allocation:
        builder = AllocationBuilder(view)
        for job in view.running:
            builder.keep(job)
        free = np.array(view.free_by_server, dtype=np.int64)
        queue = [j for j in view.waiting if self.knob_values.early_release or j.job_id in self.vm.completed_at]
        queue.sort(key=lambda j: self.vm.guide_key(j.job_id))
        for job in queue:
            groups = self._place(view, job, free)
            if groups is None:
                if self.knob_values.strict_order:
                    break
                continue
            self._assign(builder, job, groups, free)
        return builder.build()

    def _preemptive(self, view: ClusterView) -> Allocation:
        tracker = self._tracker

        def rank(job: JobView) -> tuple[float, float, int]:
            info = tracker.info[job.job_id]
            return (self._virtual_size(view, info, tracker.remaining_iters(job)), job.submit_s, job.job_id)

        pinned = [
            j
            for j in view.running
            if j.last_change_s is not None and view.now_s - j.last_change_s < self.knob_values.min_run_s
        ]
        pinned_ids = {j.job_id for j in pinned}
        ordered = pinned + sorted((j for j in view.jobs if j.job_id not in pinned_ids), key=rank)
        builder = AllocationBuilder(view)
        free = np.array([s.num_gpus for s in view.cluster.servers], dtype=np.int64)
        # GPUs of running jobs not yet visited: a new job avoids them when it can, so a lower-priority
        # job is preempted only when the higher-priority one fits nowhere else.
        held = np.zeros_like(free)
        for job in view.running:
            for g in job.groups:
                held[g.server_id] += g.num_gpus
        for job in ordered:
            if job.is_running:
                for g in job.groups:
                    held[g.server_id] -= g.num_gpus
                if all(free[g.server_id] >= g.num_gpus for g in job.groups):
                    builder.keep(job)
                    for g in job.groups:
                        free[g.server_id] -= g.num_gpus
                    continue
            groups = self._place(view, job, np.maximum(free - held, 0))
            if groups is None:
                groups = self._place(view, job, free)
            if groups is not None:
                self._assign(builder, job, groups, free)
        return builder.build()

    # ---------------------------------------------------------------------------------------
    def predicted_iters(self, job_id: int) -> float:
        """The current prediction for an active job (for inspection and tests)."""
        return self._tracker.info[job_id].pred_iters

    @property
    def arrival_predictions(self) -> dict[int, float]:
        """Every job's predicted iterations at its arrival in the current run (for error reports)."""
        return dict(self._tracker.at_arrival)


def _take_default(cluster: ClusterSpec, free: np.ndarray, gpu_type: str, num_gpus: int) -> list[ServerGroup]:
    """Where the default placer would put ``num_gpus`` of ``gpu_type`` (``free`` is not modified)."""
    return place_count(cluster, free.copy(), gpu_type, num_gpus)


@dataclass(frozen=True)
class PredictedSRTFKnobs(Knobs):
    """Knobs of :class:`PredictedSRTF`."""

    predictor: str | IterationPredictor = knob("rf", doc="'rf', 'oracle', 'noisy' or an IterationPredictor")
    predictor_params: Mapping[str, Any] | None = knob(None, doc="keyword arguments of the predictor")
    history: Sequence[JobSpec] | None = knob(None, doc="finished jobs the predictor trains on first")
    overrun_margin: float = knob(0.2, low=0.0, doc="raise an overrun prediction to done x (1 + margin)")
    type_choice: TypeChoice = knob("fastest", choices=TYPE_CHOICES, doc=TYPE_CHOICE_DOC)


@register_policy()
class PredictedSRTF(KnobPolicy[PredictedSRTFKnobs]):
    """Preemptive SRTF on predicted remaining time: the prediction-assisted SRTF baseline of A-SRPT's study.

    Jobs are ranked by ``(n_hat - done) / best rate`` with the same predictors as :class:`ASRPT`
    (``predictor="oracle"`` is the classic ``srtf``) and given their requested GPUs greedily with the
    simulator's default placement. Knobs as in :class:`ASRPT`.
    """

    name = "srtf-pred"
    knobs = PredictedSRTFKnobs
    keeps_gpus_busy = True  # greedy fill with backfilling at every epoch
    in_default_comparison = False  # a baseline for A-SRPT studies: name it in --policies

    def _configure(self) -> None:
        k = self.knob_values
        self._tracker = _PredictionTracker(
            make_predictor(k.predictor, **dict(k.predictor_params or {})), k.history, k.overrun_margin
        )
        # The predictor (all but the oracle) is seeded by the run's generator.
        self.randomised = not (isinstance(k.predictor, str) and k.predictor == "oracle")

    def _reset(self) -> None:
        self._tracker.reset(int(self.rng.integers(0, 2**31 - 1)))

    @property
    def arrival_predictions(self) -> dict[int, float]:
        """Every job's predicted iterations at its arrival in the current run."""
        return dict(self._tracker.at_arrival)

    def schedule(self, view: ClusterView) -> Allocation:
        self._tracker.update(view, lambda spec: (None, math.nan))

        def remaining_s(job: JobView) -> float:
            rate = view.rate_table.best_rate(job)
            return self._tracker.remaining_iters(job) / rate if rate > 0 else math.inf

        ordered = sorted(view.jobs, key=lambda j: (remaining_s(j), j.submit_s, j.job_id))
        return greedy_fill(view, ordered, type_choice=self.knob_values.type_choice)


__all__ = [
    "ASRPT",
    "MODES",
    "PLACEMENTS",
    "ASRPTKnobs",
    "PredictedSRTF",
    "PredictedSRTFKnobs",
    "VirtualSRPT",
    "consolidated_groups",
]
