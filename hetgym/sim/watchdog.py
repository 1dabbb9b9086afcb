"""The watchdog of a run: when a run stalls, when a job held at zero rate stops it, and the bounds on run times.

A policy may leave jobs waiting for ever, reconfigure them faster than their restart penalty, or place a job
where it runs at zero rate; the simulator must then stop with a reason rather than loop. :class:`Watchdog`
holds what decides it (one per simulator, its per-run counters reset with the run):

* the stall counter: epochs in a row at which no job made progress with none left to arrive; the run stops
  once it reaches ``SimConfig.stall_epochs`` and either no job is paying a restart penalty or the time without
  work exceeds the patience (the longest restart penalty plus a round);
* the jobs holding GPUs at zero rate (:attr:`Placements.idle_holders <hetgym.sim.apply.Placements.idle_holders>`):
  the run stops once one has held them for the patience;
* the epoch bound, derived from the workload (ten times the epochs of running every job one after another).

The same counters bound how far a fast-forward over quiet ticks may go (:mod:`hetgym.sim.events`), and the
bounds on a job's run time serve the workload's admission checks (:mod:`hetgym.sim.admission`).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.config import MAX_RESTART_PENALTY_S, SimConfig
from hetgym.sim.job import JobSpec
from hetgym.sim.runtime import JobRecord
from hetgym.sim.throughput import ThroughputModel


class Watchdog:
    """Stall detection, the zero-rate watchdog and the epoch bound of one simulator (see the module).

    Args:
        cluster, config, throughput: The simulator's.

    Attributes:
        stall_count: Epochs in a row without work (none left to arrive).
        last_work_s: The last epoch at which work was done (or a job arrived).
        stalled: Whether the run was stopped by the watchdog; ``reason`` says why.
        epoch_limit: The most decision epochs the run may take (:meth:`epoch_bound`).
        round_s: The run's round length (the patience adds one).
    """

    def __init__(self, cluster: ClusterSpec, config: SimConfig, throughput: ThroughputModel) -> None:
        self.cluster = cluster
        self.config = config
        self.throughput = throughput
        self.best_rates: dict[tuple[Any, ...], float] = {}  # a pure function of its key: shared by forks
        self.start(0.0, 1)  # (a run sets its own at reset)

    def start(self, round_s: float, epoch_limit: int) -> None:
        """A run starts (or restarts) with this round and epoch bound: nothing stalled."""
        self.round_s = round_s
        self.epoch_limit = epoch_limit
        self.stall_count = 0
        self.last_work_s = 0.0
        self.stalled = False
        self.reason = ""

    def stop(self, reason: str) -> None:
        """The run stops as stalled, for ``reason``."""
        self.stalled = True
        self.reason = reason

    def at_epoch(
        self, now_s: float, *, pending: bool, completed: bool, arrived: bool, running: Collection[JobRecord]
    ) -> str | None:
        """At a decision epoch at ``now_s``: count it as work or as a stall; the reason to stop the run, if any.

        ``pending``: a job is still to arrive; ``completed`` / ``arrived``: a job completed / arrived at this
        epoch; ``running``: the running jobs.
        """
        if pending or completed or any(j.rate > 0 and j.penalty_until_s < now_s for j in running):
            self.worked(now_s)
            return None
        self.stall_count += 1
        if arrived:
            self.last_work_s = now_s  # a new job: give the policy time to start it
        # A restart penalty delays work without stopping it: wait it out before giving up.
        if self.stall_count >= self.config.stall_epochs and (
            now_s - self.last_work_s > self.patience_s
            or not any(j.rate > 0 and j.penalty_until_s >= now_s for j in running)
        ):
            return (
                f"no job made progress in simulated work for {self.stall_count} epochs "
                f"({now_s - self.last_work_s:.0f} s) with none left to arrive: the policy leaves the "
                "remaining jobs waiting, or reconfigures them faster than their restart penalty"
            )
        return None

    def worked(self, now_s: float) -> None:
        """An epoch at ``now_s`` at which work was done or is still to come: the stall count starts again."""
        self.stall_count = 0
        self.last_work_s = now_s

    def epoch_limit_reason(self, epoch: int) -> str | None:
        """The reason to stop a run that has taken ``epoch`` epochs, if that is the bound."""
        if epoch < self.epoch_limit:
            return None
        return (
            f"the run reached {self.epoch_limit} decision epochs, the bound derived from the workload "
            "(ten times the epochs of running every job one after another on its slowest allowed GPU "
            "type); the policy is not finishing its jobs"
        )

    @property
    def patience_s(self) -> float:
        """Simulated time without work the watchdog allows: the longest restart penalty plus a round."""
        return self.max_penalty_s() + self.round_s

    def idle_holders_until_s(self, holders: Mapping[int, float]) -> float:
        """When the watchdog stops the run for the jobs holding GPUs at zero rate (``inf`` if none)."""
        return min(holders.values()) + self.patience_s if holders else math.inf

    def idle_holders_reason(
        self, holders: Mapping[int, float], running: Mapping[int, JobRecord], now_s: float
    ) -> str | None:
        """The reason to stop the run at ``now_s`` if a job has held GPUs at zero rate for the patience, else ``None``.

        A placement's rate is fixed until the policy moves the job, so a job placed where it cannot run
        (a GPU type or count at which the throughput table gives 0) would hold its GPUs for ever while the
        others progress; the watchdog gives the policy the longest restart penalty plus a round to move it
        (an epoch is due then: :meth:`idle_holders_until_s` is one of the engine's event times).
        """
        if now_s < self.idle_holders_until_s(holders):
            return None
        named = []
        for jid, since_s in sorted(holders.items(), key=lambda item: (item[1], item[0]))[:5]:
            job = running[jid]
            counts = ", ".join(f"{n} {t}" for t, n in (job.alloc.counts if job.alloc is not None else ()))
            gpus = f"{job.num_gpus_now} GPU{'' if job.num_gpus_now == 1 else 's'}"
            named.append(f"job {jid} holds {gpus} ({counts}) at zero throughput since t={since_s:.0f} s")
        more = f" and {len(holders) - 5} more jobs likewise" if len(holders) > 5 else ""
        return (
            "; ".join(named) + more + ": the rate of its placement is 0 iterations/s (a GPU type or count the "
            f"throughput table cannot run it on), and the policy kept it there for more than {self.patience_s:.0f} s "
            "(the longest restart penalty plus a round); a policy must move or stop a job it placed where it "
            "cannot run"
        )

    # ----------------------------------------------------------------------------------------
    # Bounds on a job's run time

    def max_penalty_s(self) -> float:
        """The longest restart penalty in force (capped at the longest a configuration accepts)."""
        cfg = self.config
        return min(max([cfg.restart_penalty_s, *cfg.restart_penalty_by_type.values()]), MAX_RESTART_PENALTY_S)

    def epoch_bound(self, specs: tuple[JobSpec, ...], round_s: float) -> int:
        """The most decision epochs a run of ``specs`` may take: ten times the epochs of running the jobs one
        after another, each on ``min_gpus`` GPUs of its slowest allowed type and paying the longest restart
        penalty, after the last arrival (two epochs per job plus one per round)."""
        if not specs:
            return 1
        penalty_s = self.max_penalty_s()
        serial_s = sum(self.slowest_run_s(s) + penalty_s for s in specs)
        horizon_s = specs[-1].submit_s + serial_s
        return int(10 * (2 * len(specs) + horizon_s / round_s)) + 1000

    def slowest_run_s(self, spec: JobSpec) -> float:
        """An upper bound on a sensible run time: the job's work at its slowest allowed type's rate on
        ``min_gpus`` GPUs (0 when no type runs it)."""
        rates = [
            self.throughput.rate(spec.job_type, spec.batch_size, t, spec.min_gpus)
            for t in self.cluster.gpu_types
            if spec.gpu_types is None or t in spec.gpu_types
        ]
        slowest = min((r for r in rates if r > 0), default=0.0)
        return spec.total_iters / slowest if slowest > 0 else 0.0

    def fastest_run_s(self, spec: JobSpec) -> float:
        """A lower bound on the job's run time: its work at the sum over allowed types of the best rate
        on that type (at one GPU, or at as many as the type holds up to ``max_gpus``)."""
        key = (spec.job_type, spec.batch_size, spec.gpu_types, spec.max_gpus)
        best = self.best_rates.get(key)
        if best is None:
            best = 0.0
            for t, cap in self.cluster.capacity.items():
                if spec.gpu_types is not None and t not in spec.gpu_types:
                    continue
                n = cap if spec.max_gpus is None else min(cap, spec.max_gpus)
                best += max(self.throughput.rate(spec.job_type, spec.batch_size, t, k) for k in {1, n})
            self.best_rates[key] = best
        return spec.total_iters / best if best > 0 else math.inf
