"""``hetgym gavel``: Gavel's simulator driver, with its flags, on hetgym's Gavel compatibility mode.

Takes the flags of Gavel's ``scheduler/scripts/drivers/simulate_scheduler_with_trace.py`` (``-t``, ``-p``,
``-c``, ``--num_gpus_per_server``, ``--seed``, ``--solver``, ``--time_per_iteration``), reads the Gavel
``.trace`` file directly, runs it with ``SimConfig(compat="gavel")`` and prints the figures Gavel's driver
prints, in its format: the total duration, every job's completion time, the average job completion time
(over all jobs and per priority) and the cluster utilisation. Gavel's flags that have no counterpart here
(checkpoints, measurement windows, its interactive debug mode, another throughputs file) are refused with
a message saying why. See ``docs/fidelity.md``.

Only what a run needs is imported, when it runs: the simulator, the Gavel trace reader and the policy (not
pandas: the throughput table is read with the csv module and the figures come from the result's rows).
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hetgym.sim.cluster import ClusterSpec

#: Gavel's policy names (``utils.get_available_policies``) -> hetgym's policies that reproduce them.
GAVEL_POLICIES: dict[str, str] = {
    "fifo": "gavel-fifo",
    "max_min_fairness": "gavel-mmf-agnostic",
    "max_min_fairness_perf": "gavel-mmf",
    "finish_time_fairness": "gavel-ftf-agnostic",
    "finish_time_fairness_perf": "gavel-ftf",
    "min_total_duration": "gavel-makespan-agnostic",
    "min_total_duration_perf": "gavel-makespan",
}
#: Gavel's other policies, which hetgym does not reproduce.
UNSUPPORTED_POLICIES: tuple[str, ...] = (
    "allox",
    "fifo_perf",
    "fifo_packed",
    "finish_time_fairness_packed",
    "gandiva",
    "isolated",
    "max_min_fairness_packed",
    "max_min_fairness_water_filling",
    "max_min_fairness_water_filling_perf",
    "max_min_fairness_water_filling_packed",
    "max_sum_throughput_perf",
    "max_sum_throughput_normalized_by_cost_perf",
    "max_sum_throughput_normalized_by_cost_perf_SLOs",
    "max_sum_throughput_normalized_by_cost_packed_SLOs",
    "min_total_duration_packed",
)
#: Gavel's GPU types, in the order of ``-c`` and ``--num_gpus_per_server``.
GAVEL_TYPES: tuple[str, ...] = ("v100", "p100", "k80")
#: Gavel's driver flags that hetgym refuses, and why.
REFUSED: dict[str, str] = {
    "throughputs_file": "hetgym reads its own copy of Gavel's simulation throughputs (hetgym/data/throughputs.csv, "
    "column iters_per_s_full); another throughputs file is not supported",
    "debug": "Gavel's debug mode (its logging and stepping) has no counterpart; hetgym's own --debug, before "
    "the command, shows tracebacks",
    "checkpoint_threshold": "checkpoints of the simulator's state are not supported",
    "checkpoint_file": "checkpoints of the simulator's state are not supported",
    "window_start": "measurement windows (-s/-e) are not supported; every job of the trace is measured",
    "window_end": "measurement windows (-s/-e) are not supported; every job of the trace is measured",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "gavel",
        help="run a Gavel trace with Gavel's simulator flags and print Gavel's figures (--compat gavel)",
        description="Run a Gavel .trace file as Gavel's simulate_scheduler_with_trace.py does, with its flags, "
        "on hetgym's Gavel compatibility mode, and print the figures Gavel's driver prints. Gavel's policy "
        f"names map to hetgym's: {', '.join(f'{g} -> {h}' for g, h in GAVEL_POLICIES.items())}.",
    )
    p.add_argument("-t", "--trace_file", required=True, help="Gavel .trace file (10, 9 or 7 tab-separated columns)")
    p.add_argument("-p", "--policy", default="fifo", help="Gavel's policy name (default fifo)")
    p.add_argument(
        "-c",
        "--cluster_spec",
        default="25:0:0",
        help="GPUs per type as #v100s:#p100s:#k80s (Gavel's default 25:0:0)",
    )
    p.add_argument(
        "--num_gpus_per_server",
        default="1:1:1",
        help="GPUs per server of each type, v100:p100:k80 (Gavel's default 1:1:1)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="random seed (default 0; Gavel's driver needs one: it fails without --seed)",
    )
    p.add_argument(
        "--solver",
        choices=("ECOS", "GUROBI", "SCS"),
        default="ECOS",
        help="accepted for Gavel's command lines; hetgym solves its LPs with HiGHS whatever the value",
    )
    p.add_argument("--time_per_iteration", type=int, default=360, help="round length in seconds (default 360)")
    p.add_argument(
        "--no_job_times", action="store_true", help="leave out the per-job completion times (hetgym's own flag)"
    )
    refused = p.add_argument_group("Gavel's flags that hetgym refuses (each with the reason)")
    refused.add_argument("--throughputs_file", help=argparse.SUPPRESS)
    refused.add_argument("-d", "--debug", dest="gavel_debug", action="store_true", help=argparse.SUPPRESS)
    refused.add_argument("--checkpoint_threshold", type=int, help=argparse.SUPPRESS)
    refused.add_argument("--checkpoint_file", help=argparse.SUPPRESS)
    refused.add_argument("-s", "--window-start", dest="window_start", type=int, help=argparse.SUPPRESS)
    refused.add_argument("-e", "--window-end", dest="window_end", type=int, help=argparse.SUPPRESS)
    refused.description = (
        "--throughputs_file, -d/--debug, --checkpoint_threshold, --checkpoint_file, -s/--window-start, -e/--window-end"
    )
    p.set_defaults(func=cmd_gavel)


def hetgym_policy(gavel_name: str) -> str:
    """hetgym's policy for Gavel's policy ``gavel_name``; ``ValueError`` naming the supported ones otherwise."""
    if gavel_name in GAVEL_POLICIES:
        return GAVEL_POLICIES[gavel_name]
    supported = ", ".join(GAVEL_POLICIES)
    if gavel_name in UNSUPPORTED_POLICIES or gavel_name.startswith("allox_alpha="):
        raise ValueError(f"-p {gavel_name}: Gavel's policy {gavel_name!r} is not reproduced; supported: {supported}")
    raise ValueError(f"-p {gavel_name}: not one of Gavel's policies; supported: {supported}")


def _per_type(text: str, flag: str) -> tuple[int, ...]:
    parts = text.split(":")
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != len(GAVEL_TYPES) or any(v < 0 for v in values):
        raise ValueError(f"{flag} {text!r}: give three non-negative integers as v100:p100:k80, e.g. {flag} 36:36:36")
    return values


def gavel_cluster(cluster_spec: str, gpus_per_server: str) -> tuple[ClusterSpec, list[str]]:
    """The cluster of Gavel's ``-c`` and ``--num_gpus_per_server``, and notes on GPUs left out.

    As Gavel's simulator, each type gets ``count // per_server`` servers of ``per_server`` GPUs (the
    remainder is left out) and a type with no GPUs is absent. Types keep Gavel's flag order (V100, P100,
    K80), that of the ``gavel-108`` preset.
    """
    from hetgym.sim.cluster import ClusterSpec

    counts = _per_type(cluster_spec, "-c/--cluster_spec")
    per_server = _per_type(gpus_per_server, "--num_gpus_per_server")
    inventory: dict[str, tuple[int, int]] = {}
    notes = []
    for gpu, count, per in zip(GAVEL_TYPES, counts, per_server, strict=True):
        if count == 0:
            continue
        if per == 0:
            raise ValueError(f"--num_gpus_per_server {gpus_per_server}: {gpu} has {count} GPUs in servers of 0")
        servers = count // per
        if count % per:
            notes.append(f"{count} {gpu} GPUs in servers of {per}: {count % per} left out, as Gavel's simulator does")
        if servers:
            inventory[gpu] = (servers, per)
    if not inventory:
        raise ValueError(
            f"-c {cluster_spec} with --num_gpus_per_server {gpus_per_server} gives no server; "
            "give e.g. -c 36:36:36 --num_gpus_per_server 4:4:4"
        )
    name = "gavel-" + ":".join(str(c) for c in counts) + "/" + ":".join(str(p) for p in per_server)
    return ClusterSpec.from_inventory(name, inventory), notes


def _refused(args: argparse.Namespace) -> None:
    for dest, why in REFUSED.items():
        given = args.gavel_debug if dest == "debug" else getattr(args, dest) is not None
        if given:
            flag = {"debug": "-d/--debug", "window_start": "-s/--window-start", "window_end": "-e/--window-end"}
            raise ValueError(f"{flag.get(dest, '--' + dest)}: {why}")


def cmd_gavel(args: argparse.Namespace) -> int:
    _refused(args)
    policy_name = hetgym_policy(args.policy)
    cluster, notes = gavel_cluster(args.cluster_spec, args.num_gpus_per_server)
    from hetgym.sim.config import SimConfig

    config = SimConfig(compat="gavel", round_s=float(args.time_per_iteration), seed=args.seed)
    from hetgym.sim.engine import Simulator
    from hetgym.sim.policy import make_policy
    from hetgym.workloads.traces.pipeline import load_trace

    workload = load_trace(args.trace_file, "gavel")
    for note in notes:
        print(f"hetgym gavel: note: {note}", file=sys.stderr)
    result = Simulator(cluster, workload, config=config).run(make_policy(policy_name))
    weights = {job.job_id: job.priority_weight for job in workload}
    print(gavel_report(result, weights, job_times=not args.no_job_times), end="")
    m = result.metrics
    if result.stalled:
        print(f"hetgym gavel: error: the run stalled: {result.stall_reason}", file=sys.stderr)
        return 1
    if int(m.get("num_unfinished", 0)):
        print(f"hetgym gavel: error: {int(m['num_unfinished'])} jobs did not finish", file=sys.stderr)
        return 1
    return 0


def gavel_report(result: Any, weights: dict[int, float], *, job_times: bool = True) -> str:
    """The figures Gavel's driver prints, in its format, from a run's result.

    ``Total duration`` is the last completion (Gavel's clock starts at the first arrival, which its traces
    put at 0); the averages are over the jobs that completed (Gavel leaves failed jobs out), low priority
    being weight 1 as in Gavel; ``Cluster utilization`` is the GPU time in use over every GPU's whole run.
    Then two lines of hetgym's own: the failed jobs (Gavel logs them) and the simulation's wall time.
    """
    from hetgym.sim.metrics import JOB_COLUMNS

    # The result's rows, not its pandas table: the command never imports pandas.
    at = {name: JOB_COLUMNS.index(name) for name in ("job_id", "status", "jct_s", "finish_s")}
    rows = result.job_rows
    ids = [row[at["job_id"]] for row in rows]
    status = [row[at["status"]] for row in rows]
    jct = [float(row[at["jct_s"]]) for row in rows]
    finish = [float(row[at["finish_s"]]) for row in rows]
    done = [(int(j), float(t)) for j, s, t in zip(ids, status, jct, strict=True) if s == "completed"]
    total = float(max((f for f in finish if not math.isnan(f)), default=0.0))
    lines = [f"Total duration: {total:.3f} seconds ({total / 3600.0:.2f} hours)"]
    if done:
        if job_times:  # the heading of the per-job lines: without them it would head nothing
            lines.append("Job completion times:")
        low, high = [], []
        for job_id, t in sorted(done):
            if weights.get(job_id, 1.0) == 1.0:
                low.append(t)
                if job_times:
                    lines.append(f"Job {job_id}: {t:.3f}")
            else:
                high.append(t)
                if job_times:
                    lines.append(f"Job {job_id} (high priority): {t:.3f}")
        average = _mean([t for _, t in done])
        lines.append(f"Average job completion time: {average:.3f} seconds ({average / 3600.0:.2f} hours)")
        for label, values in (("low priority", low), ("high priority", high)):
            if values:
                mean = _mean(values)
                lines.append(f"Average job completion time ({label}): {mean:.3f} seconds ({mean / 3600.0:.2f} hours)")
    lines.append(f"Cluster utilization: {result.metrics['utilisation']:.3f}")
    failed = sorted(int(j) for j, s in zip(ids, status, strict=True) if s == "rejected")
    lines.append(f"Failed jobs: {len(failed)}" + (f" ({', '.join(map(str, failed))})" if failed else ""))
    lines.append(f"Simulation wall time: {result.wall_s:.3f} seconds")
    return "\n".join(lines) + "\n"


def _mean(values: list[float]) -> float:
    """The mean as NumPy's ``np.mean`` computes it (pairwise summation), so the printed average is Gavel's."""
    import numpy as np

    return float(np.mean(values))
