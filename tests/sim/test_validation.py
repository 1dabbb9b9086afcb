"""Every setting is checked once, in the config dataclasses: wrong type, non-finite and out-of-range values
raise one :class:`ConfigError` naming the setting, the value, the allowed range and a fix; nothing is
silently reinterpreted."""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import pytest

from hetgym.envs.config import EnvConfigError
from hetgym.sim import ConfigError, SimConfig
from hetgym.sim.config import MAX_RESTART_PENALTY_S, MIN_ROUND_S
from hetgym.workloads import WorkloadConfig
from hetgym.workloads.generators import Load, elasticflow, gavel_philly


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (
            {"restart_penalty_s": math.inf},
            "restart_penalty_s=inf is not finite; give a finite number of seconds in [0,",
        ),
        ({"restart_penalty_s": -1.0}, "restart_penalty_s=-1.0 is out of range"),
        ({"restart_penalty_s": MAX_RESTART_PENALTY_S * 2}, "restart_penalty_s=1209600.0 is out of range"),
        ({"restart_penalty_s": "30"}, "restart_penalty_s='30' is a str, not a number"),
        ({"restart_penalty_by_type": {"bert": math.nan}}, "restart_penalty_by_type['bert']=nan is not a number"),
        ({"round_s": 1e-9}, "round_s=1e-09 is out of range; give a finite number of seconds in [1, 1e+07]"),
        ({"round_s": math.inf}, "round_s=inf is not finite"),
        ({"round_s": 0.0}, "round_s=0.0 is out of range"),
        ({"max_time_s": math.nan}, "max_time_s=nan is not a number; give a number of seconds in (0, inf]"),
        ({"max_time_s": -5.0}, "max_time_s=-5.0 is out of range"),
        ({"max_time_s": 0.0}, "max_time_s=0.0 is out of range"),
        ({"max_epochs": 0}, "max_epochs=0 is out of range; give an integer >= 1"),
        ({"max_epochs": 2.5}, "max_epochs=2.5 is not an integer"),
        ({"stall_epochs": True}, "stall_epochs=True is a bool, not a number"),
        ({"stall_epochs": "3"}, "stall_epochs='3' is a str"),
        ({"seed": -1}, "seed=-1 is out of range; give an integer >= 0"),
        ({"fork_efficiency": 0.0}, "fork_efficiency=0.0 is out of range; give a finite number in (0, 1]"),
        ({"max_job_run_s": math.inf}, "max_job_run_s=inf is not finite"),
        ({"charge_first_start": "yes"}, "charge_first_start='yes' is not a bool"),
    ],
)
def test_bad_sim_settings_raise_one_clear_error(kwargs: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        SimConfig(**kwargs)
    message = str(info.value)
    assert expected in message
    assert "SimConfig." in message and "give " in message


def test_good_sim_settings_are_kept_and_normalised() -> None:
    cfg = SimConfig(round_s=MIN_ROUND_S, restart_penalty_s=0, max_time_s=math.inf, max_epochs=3, seed=2)
    assert cfg.round_s == 1.0 and cfg.restart_penalty_s == 0.0 and isinstance(cfg.restart_penalty_s, float)
    assert cfg.max_time_s == math.inf and cfg.max_epochs == 3 and cfg.seed == 2
    assert SimConfig(max_epochs=4.0).max_epochs == 4 and isinstance(SimConfig(max_epochs=4.0).max_epochs, int)


def test_an_unknown_oversize_policy_names_the_choices() -> None:
    with pytest.raises(KeyError, match="did you mean 'reject'"):
        SimConfig(oversize_jobs="rejct")


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"num_jobs": "50"}, "num_jobs='50' is a str, not a number; give an integer in [1, 1e+09]"),
        ({"num_jobs": 0}, "num_jobs=0 is out of range"),
        ({"num_jobs": 2.5}, "num_jobs=2.5 is not an integer"),
        ({"target_utilisation": 0.0}, "target_utilisation=0.0 is out of range; give a finite number in (0, 10]"),
        ({"target_utilisation": math.nan}, "target_utilisation=nan is not a number"),
        ({"arrival_rate_per_h": math.inf}, "arrival_rate_per_h=inf is not finite"),
        ({"tightness": -1.0}, "tightness=-1.0 is out of range"),
        ({"max_gpus_per_job": 0}, "max_gpus_per_job=0 is out of range; give an integer >= 1"),
        ({"max_gpus_per_job": -3}, "max_gpus_per_job=-3 is out of range"),
        ({"static": 1}, "static=1 is not a bool"),
    ],
)
def test_bad_workload_settings_raise_one_clear_error(kwargs: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        WorkloadConfig(**kwargs)
    assert expected in str(info.value) and "WorkloadConfig." in str(info.value)


def test_zero_is_never_read_as_the_default() -> None:
    # None is the documented default; a positive value is kept as given.
    assert WorkloadConfig().load() == Load(target_utilisation=0.8)
    assert WorkloadConfig(target_utilisation=0.3).load() == Load(target_utilisation=0.3)
    with pytest.raises(ConfigError):
        WorkloadConfig(target_utilisation=0)
    with pytest.raises(ConfigError):
        WorkloadConfig(max_gpus_per_job=0)


@pytest.mark.parametrize("recipe", [elasticflow, gavel_philly])
def test_generators_check_their_cap_and_size(recipe: Any) -> None:
    with pytest.raises(ConfigError, match=r"max_gpus_per_job=-3 is out of range; give an integer >= 1"):
        recipe(5, cluster="tiny", max_gpus_per_job=-3)
    with pytest.raises(ConfigError, match=r"num_jobs='5' is a str"):
        recipe("5", cluster="tiny")
    capped = recipe(40, cluster="tiny", max_gpus_per_job=1)
    assert max(j.num_gpus for j in capped.jobs) == 1


def test_load_rejects_non_finite_rates() -> None:
    with pytest.raises(ConfigError, match=r"Load.target_utilisation=inf is not finite"):
        Load(target_utilisation=math.inf)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_env_shares_the_same_checks() -> None:
    with pytest.raises(ConfigError, match=r"SimConfig.restart_penalty_s=inf is not finite"):
        gym.make("HetCluster-Tiny-v0", sim={"restart_penalty_s": math.inf})
    with pytest.raises(ConfigError, match=r"WorkloadConfig.num_jobs='50' is a str"):
        gym.make("HetCluster-Tiny-v0", workload={"num_jobs": "50"})
    with pytest.raises(ConfigError, match=r"max_time_s=nan is not a number"):
        gym.make("HetCluster-Tiny-v0", max_time_s=math.nan)
    with pytest.raises(EnvConfigError, match=r"time_scale_s='1h' is a str"):
        gym.make("HetCluster-Tiny-v0", time_scale_s="1h")


def test_a_policy_round_below_the_bound_is_refused_at_reset() -> None:
    from hetgym.sim import Allocation, JobSpec, Simulator
    from tests.helpers import Scripted, toy_model

    policy = Scripted(lambda v: Allocation())
    policy.round_s = 0.001  # type: ignore[assignment]
    sim = Simulator("tiny", [JobSpec(0, 0.0, "a", 1, 10.0, 1)], throughput=toy_model())
    with pytest.raises(ConfigError, match=r"the policy's round_s=0.001 is out of range; give a round in \[1, 1e\+07\]"):
        sim.run(policy)
    # SimConfig.round_s, when set, is the round in force whatever the policy says.
    result = Simulator(
        "tiny", [JobSpec(0, 0.0, "a", 1, 10.0, 1)], config=SimConfig(round_s=60.0), throughput=toy_model()
    )
    assert result.reset(round_s=0.001) is not None and result.round_s == 60.0
