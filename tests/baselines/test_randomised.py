"""Every registered policy's ``randomised`` declaration: one that declares it is not randomised gives the
same run for every seed of a fixed workload (``hetgym compare`` on a canonical trace then runs it once)."""

from __future__ import annotations

import pytest

from hetgym.sim import SimConfig, Simulator, make_policy
from hetgym.sim.policy import list_policies
from hetgym.workloads.scenario import get_scenario

# The tiny scenario's workload, fixed: the policies that shuffle GPU types by the seed differ on it.
_SCENARIO = get_scenario("tiny")
_WORKLOAD = _SCENARIO.workload.build(_SCENARIO.cluster_spec(), seed=0)


def _jobs_csv(policy: str, seed: int) -> str:
    result = Simulator(_SCENARIO.cluster_spec(), _WORKLOAD, config=SimConfig(seed=seed)).run(make_policy(policy))
    return result.jobs.to_csv(index=False)


@pytest.mark.parametrize("policy", [p for p in list_policies() if not make_policy(p).randomised])
def test_a_policy_that_is_not_randomised_repeats_its_run_under_another_seed(policy: str) -> None:
    assert _jobs_csv(policy, 0) == _jobs_csv(policy, 1)


def test_the_policies_that_shuffle_by_the_seed_declare_it() -> None:
    # Found by running every policy with two seeds on this workload: these differ.
    for policy in ("gavel-fifo", "gavel-mmf-agnostic", "gavel-ftf-agnostic", "gavel-makespan-agnostic"):
        assert make_policy(policy).randomised
        assert _jobs_csv(policy, 0) != _jobs_csv(policy, 1)
    assert make_policy("jps").randomised and not make_policy("gavel-mmf").randomised
    assert make_policy("asrpt").randomised and not make_policy("asrpt", predictor="oracle").randomised
