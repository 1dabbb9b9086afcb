"""The set network of the job-at-a-time codec: logits in the codec's layout, invariance to the slots' order,
masked distributions, behaviour cloning, MaskablePPO training, and save/load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO

import hetgym  # noqa: F401
from agents.args import AgentError, BCArgs
from agents.bc import action_agreement, fit, forward_logits, new_model
from agents.bc import train as bc_train
from agents.common import AgentMeta, agent_env_kwargs, load_agent, save_agent, set_decoding
from agents.demos import collect_demonstrations
from agents.policies import SlotLayout, policy_spec
from agents.set_policy import (
    MaskableSetActorCriticPolicy,
    SetActorCriticPolicy,
    SetExtractor,
    jobwise_num_actions,
    kind_first_argmax,
)

TINY = "HetCluster-Tiny-v0"
VARIANTS = [
    {"observation": "window-levels"},
    {"observation": "window"},
    {"observation": "window-levels", "reward": "jct"},  # no reject action
    {"observation": "window", "modes": ["sync", "proportional", "fork"]},
]


def _batch(obs: dict[str, np.ndarray]) -> dict[str, th.Tensor]:
    return {k: th.as_tensor(np.asarray(v, dtype=np.float32)[None]) for k, v in obs.items()}


def _forward(model: Any, obs: dict[str, np.ndarray]) -> tuple[th.Tensor, th.Tensor]:
    with th.no_grad():
        logits, value = forward_logits(model.policy, _batch(obs))
    return logits[0], value[0]


def _busy_state(env: gym.Env[Any, Any], min_jobs: int = 4, seed: int = 0) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """An observation with at least ``min_jobs`` window jobs whose cursor is past the first slot."""
    keep = env.unwrapped.codec.keep  # type: ignore[attr-defined]
    obs, info = env.reset(seed=seed)
    for _ in range(3000):
        cursor = int(np.argmax(obs["slot_cursor"])) if obs["slot_cursor"].any() else -1
        if obs["slot_used"].sum() >= min_jobs and cursor >= 1:
            return obs, np.asarray(info["action_mask"], dtype=bool)
        obs, _, term, trunc, info = env.step(keep)
        assert not (term or trunc)
    raise AssertionError("no busy state reached")


def _permute_slots(obs: dict[str, np.ndarray], perm: np.ndarray) -> dict[str, np.ndarray]:
    k = len(obs["slot_used"])
    out = {}
    for key, value in obs.items():
        if key.startswith("job_") or key in ("slot_used", "slot_cursor"):
            out[key] = value.reshape(k, -1)[perm].reshape(-1).copy()
        else:
            out[key] = value.copy()
    return out


def _randomise(model: Any, seed: int = 0) -> None:
    """Weights of a visible size (the output layers start at gain 0.01), so that differences show."""
    gen = th.Generator().manual_seed(seed)
    with th.no_grad():
        for p in model.policy.parameters():
            p.copy_(th.randn(p.shape, generator=gen) * 0.3)


@pytest.mark.parametrize("attention", [0, 1])
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(str(x) for x in v.values()))
def test_logits_follow_the_codec_layout_and_masked_prediction_is_valid(variant: dict[str, Any], attention: int) -> None:
    env = gym.make(TINY, codec="jobwise", **variant)
    model = new_model("maskable-ppo", env, "set", 16, attention, seed=0)
    assert isinstance(model.policy, MaskableSetActorCriticPolicy)
    layout = SlotLayout.of_env(env)
    n = int(env.action_space.n)
    assert jobwise_num_actions(layout) == n
    extractor = model.policy.features_extractor
    assert isinstance(extractor, SetExtractor)
    levels = 2 if variant["observation"] == "window-levels" else 0
    t = layout.num_types
    assert extractor.pair_dim == 4 + 3 + levels + t + layout.num_levels  # cluster, job-type, job-level, static
    obs, mask = _busy_state(env, min_jobs=2)
    logits, value = _forward(model, obs)
    assert logits.shape == (n,) and th.isfinite(logits).all() and th.isfinite(value)
    action, _ = model.predict(obs, deterministic=True, action_masks=mask)
    assert mask[int(action)]


def test_set_actions_are_scored_per_type_level_and_mode_in_the_codecs_order() -> None:
    env = gym.make(TINY, codec="jobwise", observation="window-levels", modes=["sync", "fork"])
    model = new_model("maskable-ppo", env, "set", 16, 0, seed=0)
    _randomise(model, 3)
    codec = env.unwrapped.codec
    obs, _ = _busy_state(env, min_jobs=2)
    policy = model.policy
    with th.no_grad():
        features = policy.extract_features(_batch(obs))
        logits = policy.action_net(policy.mlp_extractor.forward_actor(features))[0]
        net = policy.action_net
        pairs = features[0, 2 * net.hidden :].reshape(net.num_pairs, net.pair_dim)
        job = features[0, : 2 * net.hidden]
        levels = len(codec.levels)
        for type_idx in range(codec.num_types):
            for level_idx in range(1, levels):
                row = type_idx * (levels - 1) + level_idx - 1
                scores = net.pair_head(th.cat([job, pairs[row]]))
                for mode_idx in range(len(codec.modes)):
                    a = codec.set_action(type_idx, level_idx, mode_idx)
                    assert float(logits[a]) == pytest.approx(float(scores[mode_idx]), abs=1e-5)
        tail = net.job_head(job)
        assert codec.allow_reject
        for i, a in enumerate([codec.none, codec.keep, codec.reject_action, codec.done]):
            assert float(logits[a]) == pytest.approx(float(tail[i]), abs=1e-5)


@pytest.mark.parametrize("attention", [0, 2])
def test_permuting_the_other_slots_leaves_logits_and_value_unchanged(attention: int) -> None:
    env = gym.make("HetCluster-v0", codec="jobwise", observation="window-levels", queue_slots=8)
    model = new_model("maskable-ppo", env, "set", 16, attention, seed=0)
    _randomise(model)
    obs, _ = _busy_state(env, min_jobs=5, seed=1)
    k = len(obs["slot_used"])
    current = int(np.argmax(obs["slot_cursor"]))
    logits, value = _forward(model, obs)
    rng = np.random.default_rng(0)
    others = np.array([s for s in range(k) if s != current])
    for _ in range(5):
        # The current job stays in its slot; every other slot (used or empty) moves.
        perm = np.arange(k)
        perm[others] = rng.permutation(others)
        assert not np.array_equal(perm, np.arange(k))
        logits2, value2 = _forward(model, _permute_slots(obs, perm))
        th.testing.assert_close(logits2, logits, atol=1e-5, rtol=1e-5)
        th.testing.assert_close(value2, value, atol=1e-5, rtol=1e-5)
        # All slots move, the cursor with its job: the same set of jobs, the same decision.
        logits3, _ = _forward(model, _permute_slots(obs, rng.permutation(k)))
        th.testing.assert_close(logits3, logits, atol=1e-5, rtol=1e-5)
    # The network does read the cursor: deciding another job of the window gives other logits.
    moved = dict(obs, slot_cursor=np.roll(obs["slot_cursor"], 1 if current == 0 else -1))
    assert (_forward(model, moved)[0] - logits).abs().max() > 1e-3


def test_masked_distribution_gives_invalid_actions_no_probability() -> None:
    env = gym.make(TINY, codec="jobwise", observation="window-levels")
    model = new_model("maskable-ppo", env, "set", 16, 0, seed=0)
    _randomise(model, 1)
    codec = env.unwrapped.codec
    obs, info = env.reset(seed=0)
    for _ in range(500):  # the largest valid set action each time, until a job cannot take every one
        mask = np.asarray(info["action_mask"], dtype=bool)
        if obs["slot_cursor"].any() and not mask.all():
            break
        valid = np.flatnonzero(mask[: codec.num_set])
        obs, _, _, _, info = env.step(int(valid[-1]) if len(valid) else codec.keep)
    assert not mask.all() and mask[codec.done]
    with th.no_grad():
        dist = model.policy.get_distribution(_batch(obs), action_masks=mask[None])
        probs = dist.distribution.probs[0].numpy()
    assert probs[~mask].max() == 0.0 and probs.sum() == pytest.approx(1.0, abs=1e-6)
    assert (probs[mask] > 0).all()
    only_done = np.zeros_like(mask)
    only_done[codec.done] = True
    with th.no_grad():
        dist = model.policy.get_distribution(_batch(obs), action_masks=only_done[None])
    assert float(dist.distribution.probs[0, codec.done]) == pytest.approx(1.0)
    for _ in range(20):
        action, _ = model.predict(obs, deterministic=False, action_masks=mask)
        assert mask[int(action)]


def test_behaviour_cloning_runs_and_lowers_the_loss() -> None:
    kwargs = agent_env_kwargs("edf", {"codec": "jobwise", "max_decisions": 120}, env_id=TINY)
    data = collect_demonstrations(TINY, kwargs, "edf", [0, 1, 2]).transitions(0.99)
    assert 200 <= len(data) <= 1000
    env = gym.make(TINY, **kwargs)
    model = new_model("maskable-ppo", env, "slot", 32, 1, seed=0)  # 'slot' picks the set network for jobwise
    assert isinstance(model.policy, MaskableSetActorCriticPolicy)
    history = fit(model.policy, data, epochs=6, batch_size=64, lr=3e-3, value_weight=0.5, seed=0)
    assert all(np.isfinite(h["loss"]) for h in history)
    assert history[-1]["cross_entropy"] < history[0]["cross_entropy"]
    agreement = action_agreement(model.policy, data)
    assert 0.0 <= agreement["agreement"] <= 1.0 and agreement["states"] == len(data)


def test_the_set_network_clones_hadare_through_jobwise_types() -> None:
    # jobwise-types numbers its actions as jobwise does: the same network, on an expert spreading jobs over types.
    kwargs = agent_env_kwargs(
        "hadare", {"codec": "jobwise-types", "observation": "window-levels", "max_decisions": 80}, env_id=TINY
    )
    data = collect_demonstrations(TINY, kwargs, "hadare", [0, 1])
    assert all(t.infos["expert_exact"].all() for t in data.trajectories)
    flat = data.transitions(0.99)
    env = gym.make(TINY, **kwargs)
    model = new_model("maskable-ppo", env, "slot", 32, 0, seed=0)  # 'slot' picks the set network here too
    assert isinstance(model.policy, MaskableSetActorCriticPolicy)
    history = fit(model.policy, flat, epochs=4, batch_size=64, lr=3e-3, value_weight=0.5, seed=0)
    assert history[-1]["cross_entropy"] < history[0]["cross_entropy"]
    obs, mask = _busy_state(env, min_jobs=2)
    action, _ = model.predict(obs, deterministic=True, action_masks=mask)
    assert mask[int(action)]


def test_maskable_ppo_and_ppo_learn_a_few_steps() -> None:
    env = gym.make(TINY, codec="jobwise", observation="window-levels")
    model = new_model("maskable-ppo", env, "set", 16, 1, seed=0, n_steps=128, batch_size=64, n_epochs=2)
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(256)
    assert model.num_timesteps == 256
    assert any(not th.equal(a, b) for a, b in zip(before, model.policy.parameters(), strict=True))
    plain = new_model("ppo", env, "set", 16, 0, seed=0, n_steps=64, batch_size=32, n_epochs=1)
    assert isinstance(plain.policy, SetActorCriticPolicy)
    plain.learn(64)


def test_save_load_round_trip_and_weights_move_to_ppo(tmp_path: Path) -> None:
    env = gym.make(TINY, codec="jobwise", observation="window-levels")
    cls, kwargs = policy_spec(env, "set", hidden=16, attention_layers=1)
    model = MaskablePPO(cls, env, policy_kwargs=kwargs, seed=0, device="cpu", n_steps=64, batch_size=32)
    model.learn(64)
    model.save(tmp_path / "model.zip")
    again = MaskablePPO.load(tmp_path / "model.zip", device="cpu")
    assert isinstance(again.policy, MaskableSetActorCriticPolicy)
    assert again.policy.slot_attention_layers == 1 and again.policy.slot_hidden == 16
    obs, info = env.reset(seed=4)
    for _ in range(40):
        mask = np.asarray(info["action_mask"], dtype=bool)
        assert th.equal(_forward(model, obs)[0], _forward(again, obs)[0])
        a1, _ = model.predict(obs, deterministic=True, action_masks=mask)
        a2, _ = again.predict(obs, deterministic=True, action_masks=mask)
        assert int(a1) == int(a2)
        obs, _, _, _, info = env.step(int(a1))
    ppo_cls, ppo_kwargs = policy_spec(env, "set", maskable=False, hidden=16, attention_layers=1)
    plain = PPO(ppo_cls, env, policy_kwargs=ppo_kwargs, device="cpu")
    plain.policy.load_state_dict(model.policy.state_dict(), strict=True)
    th.testing.assert_close(_forward(plain, obs)[0], _forward(model, obs)[0])


def test_the_set_network_refuses_other_codecs_and_observations_without_a_cursor() -> None:
    with pytest.raises(ValueError, match="codec='jobwise'"):
        policy_spec(gym.make(TINY), "set")
    layout = SlotLayout.of_env(gym.make(TINY, codec="jobwise"))
    plain_obs = gym.make(TINY).observation_space
    with pytest.raises(ValueError, match="slot_cursor"):
        SetExtractor(plain_obs, layout)
    # 'slot' keeps the slot network for the codecs it has heads for.
    cls, _ = policy_spec(gym.make(TINY), "slot")
    assert cls.__name__ == "MaskableSlotActorCriticPolicy"


def test_kind_first_argmax_takes_the_likeliest_kind_then_its_likeliest_action() -> None:
    # Three set actions, then none, keep, reject, done.
    probs = th.tensor(
        [
            [0.20, 0.20, 0.10, 0.05, 0.35, 0.05, 0.05],  # set actions 0.50 > keep 0.35: the likeliest set action
            [0.10, 0.10, 0.10, 0.05, 0.55, 0.05, 0.05],  # keep 0.55 > set 0.30: keep
            [0.04, 0.30, 0.05, 0.00, 0.20, 0.00, 0.41],  # done 0.41 > set 0.39: done
            [0.00, 0.00, 0.00, 0.10, 0.80, 0.05, 0.05],  # every set action masked
        ]
    )
    logits = probs.clamp_min(1e-12).log()
    assert kind_first_argmax(logits, 3).tolist() == [0, 4, 6, 4]
    assert logits.argmax(dim=-1).tolist() == [4, 4, 6, 4]  # the flat argmax keeps in the first row
    with pytest.raises(ValueError, match="num_set"):
        kind_first_argmax(logits, 7)


def test_decoding_is_saved_with_the_policy_and_can_be_replaced_on_load(tmp_path: Path) -> None:
    env = gym.make(TINY, codec="jobwise", observation="window-levels")
    model = new_model("maskable-ppo", env, "set", 16, 0, seed=0, decoding="kind-first")
    assert model.policy.decoding == "kind-first"
    _randomise(model)
    meta = AgentMeta(TINY, {"codec": "jobwise", "observation": "window-levels"}, None, "bc", "maskable-ppo", "set", 0)
    save_agent(model, meta, tmp_path)
    again, _ = load_agent(tmp_path)
    assert again.policy.decoding == "kind-first"
    plain, _ = load_agent(tmp_path, decoding="argmax")
    assert plain.policy.decoding == "argmax"
    # A decoding replaced on load is saved with the model (as DAgger from --init saves it).
    save_agent(plain, meta, tmp_path / "again")
    assert load_agent(tmp_path / "again")[0].policy.decoding == "argmax"
    save_agent(load_agent(tmp_path / "again", decoding="kind-first")[0], meta, tmp_path / "third")
    assert load_agent(tmp_path / "third")[0].policy.decoding == "kind-first"
    layout = SlotLayout.of_env(env)
    num_set = layout.num_types * (layout.num_levels - 1) * layout.num_modes
    obs, info = env.reset(seed=3)
    for _ in range(30):
        mask = np.asarray(info["action_mask"], dtype=bool)
        logits = _forward(again, obs)[0].masked_fill(~th.as_tensor(mask), -1e8)
        a_kind, _ = again.predict(obs, deterministic=True, action_masks=mask)
        a_arg, _ = plain.predict(obs, deterministic=True, action_masks=mask)
        assert int(a_kind) == int(kind_first_argmax(logits[None], num_set)[0])
        assert int(a_arg) == int(logits.argmax())
        obs, _, term, trunc, info = env.step(int(a_kind))
        assert not (term or trunc)
    with pytest.raises(AgentError, match="unknown decoding 'greedy'"):
        load_agent(tmp_path, decoding="greedy")


def test_decodings_other_than_argmax_need_the_set_network(tmp_path: Path) -> None:
    env = gym.make(TINY, codec="jobwise")
    with pytest.raises(ValueError, match="needs the set network"):
        policy_spec(env, "mlp", decoding="kind-first")
    with pytest.raises(ValueError, match="needs the set network"):
        policy_spec(gym.make(TINY), "slot", decoding="kind-first")
    with pytest.raises(ValueError, match="unknown decoding"):
        policy_spec(env, "set", decoding="sample")
    mlp = new_model("maskable-ppo", env, "mlp", 16, 0, seed=0)
    set_decoding(mlp, "argmax")  # leaves a policy of another kind as it is
    with pytest.raises(AgentError, match="needs the set network"):
        set_decoding(mlp, "kind-first")
    args = BCArgs(
        env_id=TINY,
        env={"codec": "jobwise"},
        teacher="edf",
        arch="mlp",
        decoding="kind-first",
        train_seeds="0",
        val_seeds="100",
        eval_seeds="",
        out_dir=str(tmp_path),
        run_name="refused",
    )
    with pytest.raises(AgentError, match="needs the set network"):
        bc_train(args)
    assert not (tmp_path / "refused").exists()
