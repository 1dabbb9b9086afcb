"""Determinism across processes: a policy, a workload and a seed give byte-identical per-job results in
fresh interpreters whose hash seeds differ (so no result depends on set or dict-of-str iteration order,
object ids or anything else that changes from one process to the next).

Each run prints a SHA-256 digest of every policy's per-job table; two runs with ``PYTHONHASHSEED`` 1 and
2 must agree policy by policy. The everyday run checks three policies that draw random numbers or
iterate over many sets (``jps``, ``gavel-mmf-agnostic``, ``hadare``); the run marked ``slow`` checks every
registered policy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hetgym.sim.policy import list_policies

REPO = Path(__file__).resolve().parents[2]

#: Run as ``python -c DIGESTS POLICY...``: the per-job table digest of each policy on one workload.
DIGESTS = """
import hashlib, json, sys
from hetgym.sim import SimConfig, Simulator, make_policy
from hetgym.sim.cluster import get_cluster
from hetgym.workloads.generators import elasticflow

cluster = get_cluster("tiny")
jobs = list(elasticflow(16, seed=7, cluster=cluster, max_gpus_per_job=4).jobs)
digests = {}
for name in sys.argv[1:]:
    result = Simulator(cluster, jobs, config=SimConfig(seed=3, restart_penalty_s=10.0)).run(make_policy(name))
    table = result.jobs.to_csv(index=False)
    digests[name] = [hashlib.sha256(table.encode()).hexdigest(), int((result.jobs.status == "completed").sum())]
print(json.dumps(digests))
"""


def digests(policies: list[str], hash_seeds: tuple[int, ...]) -> list[dict[str, list[object]]]:
    """``{policy: [digest, completed jobs]}`` from one fresh interpreter per ``PYTHONHASHSEED`` (run at once)."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", DIGESTS, *policies],
            cwd=REPO,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in hash_seeds
    ]
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=900)
        assert proc.returncode == 0, stderr[-3000:]
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def check_same_across_processes(policies: list[str]) -> None:
    first, second = digests(policies, (1, 2))
    assert sorted(first) == sorted(policies)
    # The workload is not trivial: every policy completes some jobs.
    assert all(int(completed) > 0 for _, completed in first.values()), first  # type: ignore[call-overload]
    differ = {name: (first[name], second[name]) for name in policies if first[name] != second[name]}
    assert not differ, f"per-job results differ between processes: {differ}"


def test_a_few_policies_give_the_same_results_in_two_processes() -> None:
    check_same_across_processes(["jps", "gavel-mmf-agnostic", "hadare"])


@pytest.mark.slow
def test_every_policy_gives_the_same_results_in_two_processes() -> None:
    check_same_across_processes(sorted(list_policies()))
