"""Demonstrations (collection, storage, DAgger mixing) and the behaviour-cloning loss and loop."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th

import hetgym  # noqa: F401
from agents.args import AgentError, parse_seeds
from agents.bc import action_agreement, bc_loss, fit, forward_logits, new_model, predict_actions
from agents.common import agent_env_kwargs, make_env
from agents.dagger import beta_at
from agents.demos import Demonstrations, Transitions, collect_demonstrations, model_learner, rollout
from agents.evaluation import evaluate_expert

TINY = "HetCluster-Tiny-v0"


@pytest.fixture(scope="module")
def edf_demos() -> Demonstrations:
    return collect_demonstrations(TINY, agent_env_kwargs("edf", env_id=TINY), "edf", [0, 1])


def test_demonstrations_have_imitation_shapes_and_valid_labels(edf_demos: Demonstrations) -> None:
    assert edf_demos.teacher == "edf" and len(edf_demos.trajectories) == 2
    for traj in edf_demos.trajectories:
        n = len(traj)
        assert n > 0 and traj.terminal and traj.metrics
        for key, arr in traj.obs.items():
            assert arr.shape[0] == n + 1, key
        assert traj.acts.shape == (n,) and traj.masks.shape[0] == n and traj.rews.shape == (n,)
        assert traj.masks[np.arange(n), traj.acts].all()  # every label is a valid action
        assert traj.infos["expert_acted"].all() and traj.infos["expert_exact"].all()
        np.testing.assert_array_equal(traj.infos["executed"], traj.acts)
    # The teacher acting through the env scores exactly as on the simulator.
    ref = evaluate_expert("edf", TINY, agent_env_kwargs("edf", env_id=TINY), [0, 1])
    assert [t.metrics["dsr"] for t in edf_demos.trajectories] == ref["dsr"].tolist()
    assert edf_demos.trajectories[0].workload_seed == 0


def test_save_and_load_round_trip(edf_demos: Demonstrations, tmp_path: Path) -> None:
    path = edf_demos.save(tmp_path / "demos.npz")
    again = Demonstrations.load(path)
    assert again.teacher == edf_demos.teacher and again.env_kwargs == edf_demos.env_kwargs
    for a, b in zip(again.trajectories, edf_demos.trajectories, strict=True):
        np.testing.assert_array_equal(a.acts, b.acts)
        np.testing.assert_array_equal(a.masks, b.masks)
        assert a.terminal == b.terminal and a.metrics == b.metrics and a.workload_seed == b.workload_seed
        for key in b.obs:
            np.testing.assert_array_equal(a.obs[key], b.obs[key])
    t1, t2 = again.transitions(0.9), edf_demos.transitions(0.9)
    np.testing.assert_allclose(t1.returns, t2.returns)
    assert t1.dones.sum() == 2 and len(t1) == len(edf_demos)
    assert [p.name for p in tmp_path.iterdir()] == ["demos.npz"]  # no temporary file left behind


def test_bad_files_and_arguments_fail_clearly(edf_demos: Demonstrations, tmp_path: Path) -> None:
    with pytest.raises(AgentError, match=r"\.npz"):
        edf_demos.save(tmp_path / "demos.pkl")
    with pytest.raises(AgentError, match="no demonstrations file"):
        Demonstrations.load(tmp_path / "missing.npz")
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(AgentError, match="lacks"):
        Demonstrations.load(tmp_path / "other.npz")
    env = make_env(TINY, agent_env_kwargs("edf", env_id=TINY))
    with pytest.raises(AgentError, match="ExpertLabelWrapper"):
        rollout(env, [0])
    labelled = make_env(TINY, agent_env_kwargs("edf", env_id=TINY), teacher="edf")
    with pytest.raises(AgentError, match="learner"):
        rollout(labelled, [0], beta=0.5)
    with pytest.raises(AgentError, match="rng"):
        rollout(labelled, [0], beta=0.5, learner=lambda obs, mask: 0)
    with pytest.raises(AgentError, match="backwards"):
        parse_seeds("5-2")
    with pytest.raises(AgentError, match="integer"):
        parse_seeds("a,b")
    assert parse_seeds("0-2,7") == [0, 1, 2, 7]
    with pytest.raises(AgentError, match="HETGYM_MAX_RUNS"):  # counted, not built: answers at once
        parse_seeds("0-999999999")
    with pytest.raises(AgentError, match="100,001 workloads"):
        parse_seeds("1,0-99999")


def test_dagger_mixing_labels_every_state_the_learner_reaches() -> None:
    kwargs = agent_env_kwargs("srtf", env_id=TINY)
    env = make_env(TINY, kwargs, teacher="srtf")
    model = new_model("maskable-ppo", make_env(TINY, kwargs), "slot", 16, 0, seed=0)
    trajs = rollout(env, [3], learner=model_learner(model), beta=0.0, max_steps=400)
    traj = trajs[0]
    assert not traj.infos["expert_acted"].any()
    assert traj.masks[np.arange(len(traj)), traj.acts].all()  # the teacher's labels, valid where the learner is
    mixed = rollout(env, [3], learner=model_learner(model), beta=0.5, rng=np.random.default_rng(0), max_steps=400)
    share = mixed[0].infos["expert_acted"].mean()
    assert 0.3 < share < 0.7


def test_beta_schedules() -> None:
    assert [beta_at(r, "linear", rampdown_rounds=2) for r in range(4)] == [1.0, 0.5, 0.0, 0.0]
    assert [beta_at(r, "exponential", decay=0.5) for r in range(3)] == [1.0, 0.5, 0.25]
    assert beta_at(3, "constant", beta=0.3) == 0.3
    with pytest.raises(AgentError, match="schedule"):
        beta_at(1, "cosine")


def _fake_transitions(env: gym.Env[Any, Any], n: int, label: int, rng: np.random.Generator) -> Transitions:
    """Observations from the env with a fixed label (valid at each), for loss mechanics."""
    obs, info = env.reset(seed=0)
    rows: dict[str, list[np.ndarray]] = {k: [] for k in obs}
    masks = []
    for _ in range(n):
        for k, v in obs.items():
            rows[k].append(v)
        masks.append(info["action_mask"])
        obs, _, term, trunc, info = env.step(env.unwrapped.noop_action())  # type: ignore[attr-defined]
        if term or trunc:
            obs, info = env.reset(seed=int(rng.integers(1000)))
    m = np.stack(masks)
    acts = np.full(n, label)
    return Transitions({k: np.stack(v) for k, v in rows.items()}, acts, m, np.zeros(n), np.zeros(n, bool), np.zeros(n))


def test_masked_cross_entropy_ignores_masked_logits() -> None:
    env = make_env(TINY, agent_env_kwargs("edf", env_id=TINY))
    model = new_model("maskable-ppo", env, "slot-flat", 16, 0, seed=0)
    data = _fake_transitions(env, 8, int(env.action_space.n) - 1, np.random.default_rng(0))
    obs = {k: th.as_tensor(v) for k, v in data.obs.items()}
    logits_seen: list[th.Tensor] = []
    handle = model.policy.action_net.register_forward_hook(lambda _m, _i, out: logits_seen.append(out))
    parts = bc_loss(model.policy, obs, th.as_tensor(data.acts), th.as_tensor(data.masks))
    handle.remove()
    logits_seen[0].retain_grad()
    parts.loss.backward()
    grad = logits_seen[0].grad
    assert grad is not None
    masks = th.as_tensor(data.masks)
    assert float(grad[~masks].abs().max()) == 0.0  # no gradient reaches an invalid action
    assert float(grad[masks].abs().max()) > 0.0


def test_fit_is_reproducible_and_learns_the_teacher_on_its_states(edf_demos: Demonstrations) -> None:
    data = edf_demos.transitions()
    env = make_env(TINY, agent_env_kwargs("edf", env_id=TINY))
    runs = []
    for _ in range(2):
        model = new_model("maskable-ppo", env, "slot", 64, 0, seed=3)
        before = action_agreement(model.policy, data)
        history = fit(model.policy, data, epochs=8, batch_size=64, seed=3, value_weight=0.5)
        runs.append(model)
    after = action_agreement(runs[0].policy, data)
    # Most states are commits, which an untrained policy already takes; the edits are what is learned.
    assert before["agreement_edit"] < 0.2 < 0.35 < after["agreement_edit"]
    assert history[-1]["cross_entropy"] < history[0]["cross_entropy"]
    assert history[-1]["value_loss"] < history[0]["value_loss"]
    for (k1, v1), (k2, v2) in zip(
        runs[0].policy.state_dict().items(), runs[1].policy.state_dict().items(), strict=True
    ):
        assert k1 == k2 and th.equal(v1, v2), k1


def test_one_shot_codec_uses_per_dimension_cross_entropy() -> None:
    kwargs = agent_env_kwargs("edf", {"codec": "multidiscrete", "queue_slots": 4}, env_id=TINY)
    demos = collect_demonstrations(TINY, kwargs, "edf", [0])
    data = demos.transitions()
    assert data.acts.ndim == 2 and data.masks.shape[1] == int(np.sum(make_env(TINY, kwargs).action_space.nvec))
    model = new_model("maskable-ppo", make_env(TINY, kwargs), "slot", 32, 0, seed=0)
    before = action_agreement(model.policy, data)
    fit(model.policy, data, epochs=4, batch_size=64)
    after = action_agreement(model.policy, data)
    assert after["agreement_per_dim"] > before["agreement_per_dim"]
    assert after["agreement_per_dim"] > 0.95
    with th.no_grad():
        logits, values = forward_logits(model.policy, {k: th.as_tensor(v[:3]) for k, v in data.obs.items()})
    assert logits.shape == (3, data.masks.shape[1]) and values.shape == (3,)


def test_invalid_labels_are_left_out(edf_demos: Demonstrations) -> None:
    data = edf_demos.transitions()
    bad = data.take(np.arange(20))
    bad.masks = bad.masks.copy()
    bad.masks[0, bad.acts[0]] = False  # a hand-made label the mask forbids
    model = new_model("maskable-ppo", make_env(TINY, agent_env_kwargs("edf", env_id=TINY)), "slot", 16, 0, seed=0)
    history = fit(model.policy, bad, epochs=1, batch_size=8)
    assert history[0]["dropped_labels"] == 1.0
    with pytest.raises(AgentError, match="no demonstrations"):
        fit(model.policy, bad.take(np.arange(0)), epochs=1)
    forbidden = bad.take(np.arange(1))
    with pytest.raises(AgentError, match="no demonstration's label is allowed"):
        fit(model.policy, forbidden, epochs=1)


def test_leaving_out_invalid_labels_trains_as_on_the_data_without_them(edf_demos: Demonstrations) -> None:
    # fit skips the forbidden rows by index instead of copying the rest: the same batches, the same weights.
    data = edf_demos.transitions().take(np.arange(60))
    data.masks = data.masks.copy()
    for row in (0, 7, 31, 59):
        data.masks[row, data.acts[row]] = False
    kept = data.take(np.setdiff1d(np.arange(60), [0, 7, 31, 59]))
    weights = []
    for d in (data, kept):
        model = new_model("maskable-ppo", make_env(TINY, agent_env_kwargs("edf", env_id=TINY)), "slot", 16, 0, seed=0)
        fit(model.policy, d, epochs=2, batch_size=8, seed=3)
        weights.append([p.detach().clone() for p in model.policy.parameters()])
    assert all(th.equal(a, b) for a, b in zip(*weights, strict=True))


def test_demonstrations_mark_the_epochs_at_which_the_teacher_changes_something() -> None:
    # Tiresias re-decides at every round tick and mostly keeps everything: both kinds of epoch occur.
    kwargs = agent_env_kwargs("tiresias", {"codec": "multidiscrete"}, env_id=TINY)
    demos = collect_demonstrations(TINY, kwargs, "tiresias", [0])
    traj = demos.trajectories[0]
    changes = traj.infos["expert_changes"]
    assert changes.dtype == bool and 0 < changes.sum() < len(changes)
    # A "keep everything" epoch's label is the codec's no-op for that state; a changing one's is not.
    env = make_env(TINY, kwargs, teacher="tiresias")
    _, info = env.reset(options={"workload_seed": 0})
    for step in range(len(traj)):
        noop = env.unwrapped.noop_action()  # type: ignore[attr-defined]
        assert info["expert_changes"] == changes[step]
        assert np.array_equal(info["expert_action"], noop) != bool(changes[step]), step
        _, _, term, trunc, info = env.step(info["expert_action"])
        if term or trunc:
            break
    data = demos.transitions()
    assert data.changing is not None and data.changing.tolist() == changes.tolist()
    assert data.take(np.arange(5)).changing.tolist() == changes[:5].tolist()  # type: ignore[union-attr]
    model = new_model("maskable-ppo", make_env(TINY, kwargs), "slot", 16, 0, seed=0)
    agree = action_agreement(model.policy, data)
    whole = (predict_actions(model.policy, data) == data.acts).all(axis=1)
    assert agree["changing_share"] == pytest.approx(changes.mean())
    assert agree["agreement_changing"] == pytest.approx(whole[changes].mean())


@pytest.mark.parametrize("schedule", ["constant", "cosine"])
def test_fit_follows_its_learning_rate_schedule(
    edf_demos: Demonstrations, schedule: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rates: list[float] = []

    class Recording(th.optim.Adam):
        def step(self, closure: Any = None) -> Any:
            rates.append(self.param_groups[0]["lr"])
            return super().step(closure)

    monkeypatch.setattr(th.optim, "Adam", Recording)
    data = edf_demos.transitions()
    model = new_model("maskable-ppo", make_env(TINY, agent_env_kwargs("edf", env_id=TINY)), "slot", 16, 0, seed=0)
    fit(model.policy, data, epochs=3, batch_size=64, lr=2e-3, lr_schedule=schedule)
    assert len(rates) == 3 * -(-len(data) // 64)  # one step per minibatch
    if schedule == "constant":
        assert rates == [2e-3] * len(rates)
    else:
        assert rates[0] == 2e-3 and all(b < a for a, b in itertools.pairwise(rates))
        assert rates[-1] < 2e-3 * 0.01  # down to (almost) 0 at the last minibatch


def test_an_unknown_learning_rate_schedule_is_refused_before_any_work(
    edf_demos: Demonstrations, tmp_path: Path
) -> None:
    from agents.args import BCArgs, DAggerArgs
    from agents.bc import train as bc_train
    from agents.dagger import train as dagger_train

    for train, args in (
        (bc_train, BCArgs(env_id=TINY, teacher="edf", lr_schedule="step", out_dir=str(tmp_path))),
        (dagger_train, DAggerArgs(env_id=TINY, teacher="edf", lr_schedule="step", out_dir=str(tmp_path))),
    ):
        with pytest.raises(AgentError, match="lr_schedule='step': choose one of constant, cosine"):
            train(args)  # type: ignore[operator]
    assert list(tmp_path.iterdir()) == []
    model = new_model("maskable-ppo", make_env(TINY, agent_env_kwargs("edf", env_id=TINY)), "slot", 16, 0, seed=0)
    before = [t.clone() for t in model.policy.parameters()]
    with pytest.raises(AgentError, match="choose one of constant, cosine"):
        fit(model.policy, edf_demos.transitions(), epochs=1, lr_schedule="linear")
    assert all(th.equal(a, b) for a, b in zip(before, model.policy.parameters(), strict=True))


def test_flattening_with_release_gives_the_same_pairs_and_empties_the_demonstrations(
    edf_demos: Demonstrations,
) -> None:
    import copy

    demos = copy.deepcopy(edf_demos)
    kept, released = edf_demos.transitions(0.9), demos.transitions(0.9, release=True)
    assert demos.trajectories == [] and len(edf_demos.trajectories) == 2
    for name in ("acts", "masks", "rews", "dones", "returns", "changing"):
        np.testing.assert_array_equal(getattr(released, name), getattr(kept, name), err_msg=name)
    assert released.obs.keys() == kept.obs.keys()
    for key in kept.obs:
        assert released.obs[key].dtype == kept.obs[key].dtype
        np.testing.assert_array_equal(released.obs[key], kept.obs[key], err_msg=key)
    with pytest.raises(AgentError, match="no demonstrations to flatten"):
        demos.transitions()


def test_float16_storage_halves_the_observations_and_rounds_them_within_its_precision(
    edf_demos: Demonstrations, tmp_path: Path
) -> None:
    half = collect_demonstrations(TINY, agent_env_kwargs("edf", env_id=TINY), "edf", [0, 1], obs_dtype="float16")
    assert half.obs_dtypes() == {"float16"} and edf_demos.obs_dtypes() == {"float32"}
    for a, b in zip(half.trajectories, edf_demos.trajectories, strict=True):
        np.testing.assert_array_equal(a.acts, b.acts)  # the teacher's episodes are the same
        for key in b.obs:
            assert a.obs[key].nbytes * 2 == b.obs[key].nbytes, key
            # float16 rounds to the nearest of its values: half a unit in the last place.
            np.testing.assert_array_equal(a.obs[key], b.obs[key].astype(np.float16), err_msg=key)
            held = np.abs(b.obs[key]) >= 6e-8  # float16's smallest subnormal: signs above it survive
            np.testing.assert_array_equal(np.sign(a.obs[key][held]), np.sign(b.obs[key][held]), err_msg=key)
    # Saved as float16, read back as float16, or widened exactly to float32; a float32 file read as float16.
    path = half.save(tmp_path / "half.npz")
    for dtype in (None, "float16"):
        back = Demonstrations.load(path, obs_dtype=dtype)
        assert back.obs_dtypes() == {"float16"}
    wide = Demonstrations.load(path, obs_dtype="float32")
    assert wide.obs_dtypes() == {"float32"}
    key = next(iter(half.trajectories[0].obs))
    np.testing.assert_array_equal(wide.trajectories[0].obs[key], half.trajectories[0].obs[key].astype(np.float32))
    narrowed = Demonstrations.load(edf_demos.save(tmp_path / "full.npz"), obs_dtype="float16")
    np.testing.assert_array_equal(narrowed.trajectories[1].obs[key], half.trajectories[1].obs[key])
    # Flattened pairs keep the storage dtype; agreement reads float16 as float32 minibatches.
    flat = half.transitions(0.9)
    assert all(v.dtype == np.float16 for v in flat.obs.values()) and len(flat) == len(edf_demos)
    # The two precisions do not mix silently.
    with pytest.raises(AgentError, match="same obs_dtype"):
        Demonstrations.load(path).extend(Demonstrations.load(tmp_path / "full.npz"))


def test_float16_storage_refuses_what_it_cannot_hold_and_unknown_dtypes() -> None:
    from agents.demos import cast_obs, check_obs_dtype

    with pytest.raises(AgentError, match=r"obs_dtype='float64': use one of \('float32', 'float16'\)"):
        check_obs_dtype("float64")
    with pytest.raises(AgentError, match="obs_dtype"):
        collect_demonstrations(TINY, agent_env_kwargs("edf", env_id=TINY), "edf", [0], obs_dtype="int8")
    f16 = np.dtype(np.float16)
    with pytest.raises(AgentError, match="'queue' holds values float16 cannot store"):
        cast_obs(np.array([0.5, 7e4], dtype=np.float32), f16, "queue")
    with pytest.raises(AgentError, match="'clock' holds values float16 cannot store"):
        cast_obs(np.array([np.nan], dtype=np.float32), f16, "clock")
    same = np.zeros(3, dtype=np.float32)
    assert cast_obs(same, np.dtype(np.float32), "x") is same  # no copy when the dtype is already right
    assert cast_obs(np.zeros((0, 4), dtype=np.float32), f16, "x").dtype == f16
