"""The metrics built without pandas equal the table-based :func:`~hetgym.sim.metrics.compute_metrics`, to the bit.

An episode's end (and every ``Simulator.result``) computes the scalar metrics straight from the per-job rows
and the usage records (:func:`~hetgym.sim.metrics.metrics_from_rows`); the ``pandas`` tables are built only
when read. Each case runs random masked episodes of an env configuration to their end and compares the
final ``info["metrics"]`` with ``compute_metrics`` over the episode's tables, every key, exactly (a NaN
equals a NaN); the charge for unfinished jobs with the same charge computed from the table; and a few
simulator runs' metrics likewise.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import hetgym  # noqa: F401  (registers the ids)
from hetgym.envs.env import WALL_CLOCK_METRICS, HetClusterEnv
from hetgym.sim import Simulator, make_policy
from hetgym.sim.metrics import JOB_COLUMNS, compute_metrics
from hetgym.workloads.scenario import get_scenario


def _bits(metrics: dict[str, float]) -> dict[str, str]:
    """Each value's exact binary form (so that NaN equals NaN and 0.0 differs from -0.0)."""
    return {k: float(v).hex() for k, v in metrics.items()}


def _table_charge(frame: pd.DataFrame) -> tuple[float, float, float]:
    """The unfinished jobs' charge (``RewardComponents.unfinished_*``) from the per-job table."""
    left = frame[frame["status"] == "unfinished"]
    if left.empty:
        return 0.0, 0.0, 0.0
    share = left["remaining_iters"].to_numpy(dtype=float) / left["total_iters"].to_numpy(dtype=float)
    need_s = left["ideal_s"].to_numpy(dtype=float) * share
    gpus = left["num_gpus"].to_numpy(dtype=float)
    ok = np.isfinite(need_s)
    return float(need_s[ok].sum()), float(need_s[ok].max()) if ok.any() else 0.0, float((need_s[ok] * gpus[ok]).sum())


CASES: tuple[tuple[str, dict[str, Any], int], ...] = (
    ("HetCluster-Tiny-v1", {}, 0),
    ("HetCluster-Tiny-v1", {"reward": "jct"}, 1),
    ("HetCluster-v1", {}, 2),
    ("HetCluster-v1", {"max_decisions": 40, "reward": "utilisation"}, 3),  # truncated: jobs left unfinished
    ("HetCluster-v0", {"max_decisions": 25}, 4),
)


@pytest.mark.parametrize(("env_id", "overrides", "seed"), CASES)
def test_episode_metrics_equal_the_tables(env_id: str, overrides: dict[str, Any], seed: int) -> None:
    env = HetClusterEnv(**{**gym.spec(env_id).kwargs, **overrides})
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    episodes = unfinished = 0
    while episodes < 3:
        _, _, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        if not (terminated or truncated):
            continue
        result = env.result()
        assert env.sim is not None
        expected = compute_metrics(result.jobs, result.timeline, env.cluster, env.sim.decision_latencies_s)
        expected["num_not_arrived"] = float(len(env.jobs) - len(result.jobs))
        expected["num_oversize"] = result.metrics["num_oversize"]
        assert _bits(result.metrics) == _bits(expected)
        final = {k: v for k, v in expected.items() if k not in WALL_CLOCK_METRICS}
        final["num_decisions"] = float(result.num_epochs)
        assert _bits(info["metrics"]) == _bits(final)
        comps = info["reward_components"]
        charge = (comps["unfinished_s"], comps["unfinished_max_s"], comps["unfinished_gpu_s"])
        assert [x.hex() for x in charge] == [x.hex() for x in _table_charge(result.jobs)]
        unfinished += int(expected["num_unfinished"] > 0)
        # The rows the metrics came from are the table's rows.
        assert list(result.jobs.columns) == list(JOB_COLUMNS)
        assert len(result.job_rows) == len(result.jobs)
        episodes += 1
        _, info = env.reset()
    if overrides.get("max_decisions"):
        assert unfinished > 0  # the charge was compared on a non-empty set


@pytest.mark.parametrize("policy", ["edf", "fifo", "srtf"])
@pytest.mark.parametrize("scenario", ["tiny", "default"])
def test_simulator_metrics_equal_the_tables(policy: str, scenario: str) -> None:
    spec = get_scenario(scenario)
    cluster = spec.cluster_spec()
    sim = Simulator(cluster, spec.workload.build(cluster, seed=1), config=spec.sim)
    result = sim.run(make_policy(policy))
    expected = compute_metrics(result.jobs, result.timeline, sim.cluster, sim.decision_latencies_s)
    for key in ("num_not_arrived", "num_oversize"):
        expected[key] = result.metrics[key]
    assert _bits(result.metrics) == _bits(expected)
    assert not math.isnan(result.metrics["dsr"])


def test_tables_are_built_on_first_access_and_kept() -> None:
    spec = get_scenario("tiny")
    cluster = spec.cluster_spec()
    sim = Simulator(cluster, spec.workload.build(cluster, seed=0), config=spec.sim)
    result = sim.run(make_policy("edf"))
    assert result._jobs is None and result._timeline is None
    jobs, timeline = result.jobs, result.timeline
    assert result.jobs is jobs and result.timeline is timeline
    assert list(timeline.columns) == ["time_s", *sim.cluster.gpu_types]
    assert [tuple(r) for r in jobs.itertuples(index=False, name=None)] == [tuple(r) for r in result.job_rows]


def test_percentiles_equal_numpys() -> None:
    """The metrics' percentiles, computed in Python floats, are numpy's ``np.percentile`` to the bit."""
    from hetgym.sim.metrics import _pcts

    rng = np.random.default_rng(0)
    qs = (0, 1, 25, 50, 95, 99, 100)
    for trial in range(4000):
        n = int(rng.integers(1, 300))
        scale = float(rng.choice([1e-3, 1.0, 3600.0, 1e7]))
        values = rng.random(n) * scale
        if trial % 3 == 0:
            values = np.round(values)  # ties and whole seconds
        if trial % 7 == 0:
            values = -values
        expected = [float(np.percentile(values, q)) for q in qs]
        assert [x.hex() for x in _pcts(values, qs)] == [x.hex() for x in expected]
    edge = np.array([1.0, math.inf, 2.0])  # inf - inf: numpy's NaN where it interpolates next to an inf
    with np.errstate(invalid="ignore"):
        expected = [str(float(np.percentile(edge, q))) for q in qs]
    assert [str(x) for x in _pcts(edge, qs)] == expected
    assert all(math.isnan(x) for x in _pcts(np.array([]), qs))
