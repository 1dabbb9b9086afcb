"""scripts/bench/bench_ab.py's figure labels and scripts/bench/bench_env.py's newest-ids measures."""

from __future__ import annotations

from helpers import load_script


def test_bench_ab_flattens_timing_figures_with_readable_labels() -> None:
    script = load_script("bench/bench_ab")
    figures = script.flatten({"results": [{"codec": "sequential", "queue_slots": 16, "steps_per_s": 10.0, "runs": 5}]})
    assert figures == {"results[sequential/16].steps_per_s": 10.0}


def test_bench_env_counts_one_simulator_step_per_commit_with_the_fast_forward() -> None:
    script = load_script("bench/bench_env")
    fast = script.run_newest("HetCluster-Tiny-v1", 300, 0, True)
    replay = script.run_newest("HetCluster-Tiny-v1", 300, 0, False)
    assert fast["sim_steps_per_commit"] == 1.0 < replay["sim_steps_per_commit"]
    assert fast["commits"] == replay["commits"] and fast["epochs_per_commit"] == replay["epochs_per_commit"]


def test_bench_env_stub_floor_has_the_newest_ids_spaces() -> None:
    import gymnasium as gym

    script = load_script("bench/bench_env")
    stub = script.StubEnv()
    real = gym.make("HetCluster-v1")
    assert stub.observation_space == real.observation_space and stub.action_space == real.action_space
    obs, info = stub.reset(seed=0)
    _, _, _, _, step_info = stub.step(0)
    assert obs.keys() == real.reset(seed=0)[0].keys() and "action_mask" in info
    assert step_info.keys() == info.keys()


def test_bench_env_flat_stub_floor_has_the_flat_ids_box_and_each_id_its_floor() -> None:
    import gymnasium as gym
    import numpy as np

    script = load_script("bench/bench_env")
    stub = script.StubEnv("HetCluster-Tiny-v2")
    real = gym.make("HetCluster-Tiny-v2")
    assert stub.observation_space == real.observation_space and stub.action_space == real.action_space
    obs, _ = stub.reset(seed=0)
    again, *_ = stub.step(0)
    assert isinstance(obs, np.ndarray) and not np.shares_memory(obs, again)
    floor_of = script.env_floor._floor_of
    assert floor_of("HetCluster-v2") == floor_of("CartPole-v1") == "HetClusterStubFloor-v2"
    assert floor_of("HetCluster-Tiny-v1") == "HetClusterStubFloor-v1"
