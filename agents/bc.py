"""Behaviour cloning from an expert: the loss, the training loop, action agreement, and the BC recipe.

**Loss.** For the sequential codec (a ``Discrete`` space) the policy's logits are masked with the
environment's action mask at that state (invalid actions get a logit of -1e8, so they have probability 0
and carry no gradient) and the loss is the cross-entropy of the teacher's action. For the one-shot codec
(``MultiDiscrete``) each dimension's logits are masked with that dimension's mask and the loss is the sum
of the per-dimension cross-entropies. As in the ``imitation`` library's BC, an entropy bonus
(``ent_weight``) and an L2 penalty (``l2_weight``) are optional. ``value_weight`` also fits the critic to
the teacher's discounted returns to go, so that PPO fine-tuning starts from a critic that knows the
teacher's values rather than from a random one (which would push the cloned actor around with noisy
advantages at first).

**Agreement.** :func:`action_agreement` is the share of states where the policy's deterministic action
(masks applied; the slot policy's two-stage decoding, see :func:`agents.policies.two_stage_argmax`)
equals the teacher's (and, for the one-shot codec, where every dimension does), overall and split
into the teacher's commits and its edits.

**The recipe** (:class:`BCArgs`, :func:`train`; ``hetgym train --algo bc``): collect the teacher's
episodes on the training workload seeds, clone them into the policy of the algorithm it will be
fine-tuned with (so the saved weights load straight into ``MaskablePPO`` or ``PPO``), measure the
agreement on held-out states (the teacher's episodes on other seeds) and the agent's DSR and average JCT
on held-out workloads against the teacher's, log it all to TensorBoard, and save the checkpoint.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch as th
from gymnasium import spaces
from torch.nn import functional as F

from agents.args import BCArgs, DAggerArgs, ImitationArgs, check_lr_schedule
from agents.common import (
    AgentError,
    AgentMeta,
    agent_env_kwargs,
    algorithm_class,
    make_env,
    parse_seeds,
    run_name,
    save_agent,
    save_meta,
    seed_everything,
)
from agents.demos import Demonstrations, Transitions, check_obs_dtype, demonstration_seeds, load_demonstrations
from agents.progress import collect_with_progress, progress_report

_MASKED = -1e8


# --------------------------------------------------------------------------------------------
# Loss and agreement


def _obs_tensor(obs: dict[str, np.ndarray], index: np.ndarray | slice) -> dict[str, th.Tensor]:
    return {k: th.as_tensor(np.asarray(v[index], dtype=np.float32)) for k, v in obs.items()}


def forward_logits(policy: Any, obs: dict[str, th.Tensor]) -> tuple[th.Tensor, th.Tensor]:
    """``(action logits, values)`` of an SB3 actor-critic policy (PPO's or MaskablePPO's)."""
    features = policy.extract_features(obs)
    if policy.share_features_extractor:
        latent_pi, latent_vf = policy.mlp_extractor(features)
    else:
        pi_features, vf_features = features
        latent_pi = policy.mlp_extractor.forward_actor(pi_features)
        latent_vf = policy.mlp_extractor.forward_critic(vf_features)
    return policy.action_net(latent_pi), policy.value_net(latent_vf).squeeze(-1)


def _dimension_groups(nvec: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Runs of equal-sized dimensions: ``(first dim, number of dims, logit offset, size)``."""
    groups = []
    d, offset = 0, 0
    while d < len(nvec):
        size = int(nvec[d])
        e = d
        while e < len(nvec) and int(nvec[e]) == size:
            e += 1
        groups.append((d, e - d, offset, size))
        offset += (e - d) * size
        d = e
    return groups


@dataclass
class LossParts:
    """The terms of one batch's loss."""

    loss: th.Tensor
    cross_entropy: float
    entropy: float
    value_loss: float
    agreement: float


def bc_loss(
    policy: Any,
    obs: dict[str, th.Tensor],
    acts: th.Tensor,
    masks: th.Tensor,
    returns: th.Tensor | None = None,
    *,
    ent_weight: float = 0.0,
    l2_weight: float = 0.0,
    value_weight: float = 0.0,
) -> LossParts:
    """Masked cross-entropy (sequential) or summed per-dimension masked cross-entropy (one-shot)."""
    logits, values = forward_logits(policy, obs)
    space = policy.action_space
    if isinstance(space, spaces.Discrete):
        masked = logits.masked_fill(~masks, _MASKED)
        logp = F.log_softmax(masked, dim=1)
        ce = F.nll_loss(logp, acts.long())
        ent = -(logp.exp() * logp.masked_fill(~masks, 0.0)).sum(dim=1).mean()
        agree = (masked.argmax(dim=1) == acts).float().mean()
    elif isinstance(space, spaces.MultiDiscrete):
        nvec = np.asarray(space.nvec).reshape(-1)
        ce = logits.new_zeros(())
        ent = logits.new_zeros(())
        all_ok = th.ones(len(acts), dtype=th.bool)
        for first, count, offset, size in _dimension_groups(nvec):
            block = logits[:, offset : offset + count * size].reshape(-1, count, size)
            mblock = masks[:, offset : offset + count * size].reshape(-1, count, size)
            masked = block.masked_fill(~mblock, _MASKED)
            logp = F.log_softmax(masked, dim=2)
            target = acts[:, first : first + count].long()
            ce = ce + F.nll_loss(logp.reshape(-1, size), target.reshape(-1), reduction="sum") / len(acts)
            ent = ent - (logp.exp() * logp.masked_fill(~mblock, 0.0)).sum(dim=(1, 2)).mean()
            all_ok &= (masked.argmax(dim=2) == target).all(dim=1)
        agree = all_ok.float().mean()
    else:  # pragma: no cover - the environment has only these two codecs
        raise AgentError(f"behaviour cloning supports Discrete and MultiDiscrete actions, not {space}")
    loss = ce - ent_weight * ent
    vloss = th.zeros(())
    if value_weight > 0 and returns is not None:
        vloss = F.mse_loss(values, returns)
        loss = loss + value_weight * vloss
    if l2_weight > 0:
        loss = loss + l2_weight * sum((p**2).sum() for p in policy.parameters())
    return LossParts(loss, float(ce.detach()), float(ent.detach()), float(vloss.detach()), float(agree.detach()))


def predict_actions(policy: Any, data: Transitions, batch_size: int = 2048) -> np.ndarray:
    """The policy's deterministic action at every state of ``data`` (its own decoding, masks applied)."""
    out = []
    space = policy.action_space
    policy.set_training_mode(False)
    with th.no_grad():
        for start in range(0, len(data), batch_size):
            idx = slice(start, start + batch_size)
            logits, _ = forward_logits(policy, _obs_tensor(data.obs, idx))
            masks = th.as_tensor(data.masks[idx])
            if isinstance(space, spaces.Discrete):
                masked = logits.masked_fill(~masks, _MASKED)
                decide = getattr(policy, "deterministic_from_logits", None)
                out.append((decide(masked) if decide is not None else masked.argmax(dim=1)).numpy())
            else:
                nvec = np.asarray(space.nvec).reshape(-1)
                parts = []
                for _, count, offset, size in _dimension_groups(nvec):
                    block = logits[:, offset : offset + count * size].reshape(-1, count, size)
                    mblock = masks[:, offset : offset + count * size].reshape(-1, count, size)
                    parts.append(block.masked_fill(~mblock, _MASKED).argmax(dim=2).numpy())
                out.append(np.concatenate(parts, axis=1))
    return np.concatenate(out) if out else np.zeros((0,), dtype=np.int64)


def agrees(pred: np.ndarray, acts: np.ndarray) -> np.ndarray:
    """Per state, whether the predicted action is the label (every dimension of a one-shot codec's)."""
    ok = pred == acts
    return ok if ok.ndim == 1 else ok.all(axis=1)


def action_agreement(
    policy: Any, data: Transitions, batch_size: int = 2048, *, pred: np.ndarray | None = None
) -> dict[str, float]:
    """How often the policy's deterministic action is the teacher's (``pred``: those actions, when
    :func:`predict_actions` has already given them).

    Returns:
        ``agreement`` (all states), ``agreement_commit`` / ``agreement_edit`` (states where the teacher
        commits / edits the draft; sequential codec), ``agreement_per_dim`` (one-shot codec: share of
        dimensions), ``edit_share`` (share of states where the teacher edits), ``states``, and, when
        the demonstrations record it, ``agreement_changing`` / ``changing_share`` (the states of epochs
        at which the teacher's decision changes anything in force: a one-shot codec's "keep everything"
        epochs, most of a run, are easy to agree on).
    """
    if len(data) == 0:
        raise AgentError("no states to measure agreement on")
    if pred is None:
        pred = predict_actions(policy, data, batch_size)
    acts = data.acts
    out: dict[str, float] = {"states": float(len(data))}
    ok = agrees(pred, acts)
    if isinstance(policy.action_space, spaces.Discrete):
        commit = acts == int(policy.action_space.n) - 1
        out["agreement"] = float(ok.mean())
        out["edit_share"] = float((~commit).mean())
        out["agreement_commit"] = float(ok[commit].mean()) if commit.any() else math.nan
        out["agreement_edit"] = float(ok[~commit].mean()) if (~commit).any() else math.nan
    else:
        ok_dims = pred == acts
        out["agreement"] = float(ok.mean())
        out["agreement_per_dim"] = float(ok_dims.mean())
    if data.changing is not None:
        changing = np.asarray(data.changing, dtype=bool)
        out["changing_share"] = float(changing.mean())
        out["agreement_changing"] = float(ok[changing].mean()) if changing.any() else math.nan
    return out


def fit(
    policy: Any,
    data: Transitions,
    *,
    epochs: int,
    batch_size: int = 256,
    lr: float = 1e-3,
    lr_schedule: str = "constant",
    ent_weight: float = 1e-3,
    l2_weight: float = 0.0,
    value_weight: float = 0.0,
    seed: int = 0,
    on_batch: Callable[[int], None] | None = None,
    on_epoch: Callable[[int, dict[str, float]], None] | None = None,
) -> list[dict[str, float]]:
    """Train ``policy`` on ``data`` by behaviour cloning (Adam; a fresh optimiser on every call).

    Labels that the stored mask marks invalid are left out (the teacher's actions are always valid for
    the environment's own codecs; this guards hand-made data). With ``lr_schedule="cosine"`` the learning
    rate falls from ``lr`` to 0 over the call's minibatches along a half cosine (Loshchilov and Hutter,
    ICLR 2017, without restarts); ``"constant"`` keeps ``lr``.

    Returns:
        One dict of mean loss terms per epoch.
    """
    if len(data) == 0:
        raise AgentError("no demonstrations to clone; collect at least one episode")
    if epochs < 0 or batch_size < 1 or not lr > 0:
        raise AgentError(f"epochs={epochs}, batch_size={batch_size}, lr={lr}: need epochs >= 0, batch >= 1, lr > 0")
    check_lr_schedule(lr_schedule)
    keep = _valid_labels(policy.action_space, data)
    # The rows whose label the mask allows, by index: a copy of the data without the others would hold a
    # second copy of every observation for the whole fit (about 6 GB for 60 HetCluster-v1 workloads).
    rows = np.flatnonzero(keep)
    if len(rows) == 0:
        raise AgentError("no demonstration's label is allowed by its action mask; nothing to clone")
    optimizer = th.optim.Adam(policy.parameters(), lr=lr)
    gen = th.Generator().manual_seed(int(seed))
    history = []
    policy.set_training_mode(True)
    acts_all = th.as_tensor(data.acts)
    masks_all = th.as_tensor(data.masks)
    returns_all = th.as_tensor(data.returns)
    total_batches = epochs * math.ceil(len(rows) / batch_size)
    done_batches = 0
    for epoch in range(epochs):
        perm = th.randperm(len(rows), generator=gen).numpy()
        sums = {"loss": 0.0, "cross_entropy": 0.0, "entropy": 0.0, "value_loss": 0.0, "batch_agreement": 0.0}
        n_batches = 0
        for start in range(0, len(rows), batch_size):
            idx = rows[np.sort(perm[start : start + batch_size])]  # rows is increasing: idx is sorted
            parts = bc_loss(
                policy,
                _obs_tensor(data.obs, idx),
                acts_all[idx],
                masks_all[idx],
                returns_all[idx],
                ent_weight=ent_weight,
                l2_weight=l2_weight,
                value_weight=value_weight,
            )
            if lr_schedule == "cosine":
                for group in optimizer.param_groups:
                    group["lr"] = lr * 0.5 * (1.0 + math.cos(math.pi * done_batches / total_batches))
            done_batches += 1
            optimizer.zero_grad()
            parts.loss.backward()
            th.nn.utils.clip_grad_norm_(policy.parameters(), 5.0)
            optimizer.step()
            sums["loss"] += float(parts.loss.detach())
            sums["cross_entropy"] += parts.cross_entropy
            sums["entropy"] += parts.entropy
            sums["value_loss"] += parts.value_loss
            sums["batch_agreement"] += parts.agreement
            n_batches += 1
            if on_batch is not None:
                on_batch(len(idx))
        stats = {k: v / max(n_batches, 1) for k, v in sums.items()}
        stats["dropped_labels"] = float((~keep).sum())
        history.append(stats)
        if on_epoch is not None:
            on_epoch(epoch, stats)
    policy.set_training_mode(False)
    return history


def _valid_labels(space: spaces.Space[Any], data: Transitions) -> np.ndarray:
    if isinstance(space, spaces.Discrete):
        return data.masks[np.arange(len(data)), data.acts.astype(np.int64)]
    if not isinstance(space, spaces.MultiDiscrete):
        raise AgentError(f"labels of a {type(space).__name__} action space: the recipes take Discrete or MultiDiscrete")
    nvec = np.asarray(space.nvec).reshape(-1)
    offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])
    cols = offsets[None, :] + data.acts.astype(np.int64)
    return data.masks[np.arange(len(data))[:, None], cols].all(axis=1)


# --------------------------------------------------------------------------------------------
# The recipe


@dataclass
class RunResult:
    """What a recipe returns: the run folder, the model and its metadata."""

    path: Path
    model: Any
    meta: AgentMeta


def new_model(
    algo: str,
    env: Any,
    arch: str,
    hidden: int,
    attention_layers: int,
    seed: int,
    *,
    decoding: str | None = None,
    **algo_kwargs: Any,
) -> Any:
    """An untrained ``algo`` model with the chosen policy network on ``env`` (``decoding``: the set
    network's deterministic decoding, ``None`` for argmax)."""
    from agents.policies import policy_spec

    cls = algorithm_class(algo)
    try:
        policy, policy_kwargs = policy_spec(
            env,
            arch,
            maskable=(algo == "maskable-ppo"),
            hidden=hidden,
            attention_layers=attention_layers,
            decoding=decoding or "argmax",
        )
    except ValueError as exc:
        raise AgentError(str(exc)) from exc
    return cls(policy, env, policy_kwargs=policy_kwargs, seed=seed, device="cpu", verbose=0, **algo_kwargs)


def model_from_args(args: BCArgs | DAggerArgs, env: Any) -> Any:
    """An untrained model with the network a BC or DAgger recipe's arguments ask for (:func:`new_model`)."""
    return new_model(
        args.algo,
        env,
        args.arch,
        args.hidden,
        args.attention_layers,
        args.seed,
        decoding=args.decoding,
        gamma=args.gamma,
    )


def check_network(
    env_id: str, env_kwargs: dict[str, Any], arch: str, attention_layers: int, decoding: str | None
) -> None:
    """Refuse, before any collection, a network the environment cannot take (an unknown ``arch`` or
    ``decoding``, a decoding the architecture has not)."""
    from agents.policies import policy_spec

    env = make_env(env_id, env_kwargs)
    try:
        policy_spec(env, arch, attention_layers=attention_layers, decoding=decoding or "argmax")
    except ValueError as exc:
        raise AgentError(str(exc)) from exc
    finally:
        env.close()


def make_logger(folder: Path, track: bool) -> Any:
    """SB3's logger writing TensorBoard events (and a CSV) into ``folder``; silent when not tracking."""
    from stable_baselines3.common.logger import configure

    return configure(str(folder), ["tensorboard", "csv"] if track else [])


def evaluate_against_teacher(
    model: Any,
    env_id: str,
    env_kwargs: dict[str, Any],
    teacher: str | None,
    seeds: list[int],
    *,
    max_steps: int | None,
    on_step: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """The agent's and the teacher's mean DSR and average JCT on ``seeds`` (and per seed).

    ``teacher`` is the expert the agent is measured against (a PPO run's reference); the result names it
    under ``reference`` and keeps its figures under the ``teacher_*`` keys.
    """
    from agents.evaluation import evaluate_expert, evaluate_model

    if not seeds:
        return {}
    mine = evaluate_model(model, env_id, env_kwargs, seeds, max_steps=max_steps, on_step=on_step)
    out: dict[str, Any] = {
        "seeds": seeds,
        "dsr": float(mine["dsr"].mean()),
        "jct_mean_s": float(mine["jct_mean_s"].mean()),
        "utilisation": float(mine["utilisation"].mean()),
        "per_seed_dsr": mine["dsr"].round(6).tolist(),
        "per_seed_jct_mean_s": mine["jct_mean_s"].round(3).tolist(),
        "episodes_cut": int(mine["truncated_by_eval"].sum()),  # at max_steps: their figures are partial
    }
    if teacher:
        ref = evaluate_expert(teacher, env_id, env_kwargs, seeds)
        out["reference"] = teacher
        out["teacher_dsr"] = float(ref["dsr"].mean())
        out["teacher_jct_mean_s"] = float(ref["jct_mean_s"].mean())
        out["teacher_per_seed_dsr"] = ref["dsr"].round(6).tolist()
        out["dsr_gap"] = out["dsr"] - out["teacher_dsr"]
        out["dsr_ratio"] = out["dsr"] / out["teacher_dsr"] if out["teacher_dsr"] > 0 else math.nan
    return out


def log_evaluation(logger: Any, result: dict[str, Any], step: int, prefix: str = "eval") -> None:
    """Record an :func:`evaluate_against_teacher` result (DSR, JCT in hours, utilisation, gaps)."""
    if not result:
        return
    logger.record(f"{prefix}/dsr", result["dsr"])
    logger.record(f"{prefix}/jct_mean_h", result["jct_mean_s"] / 3600)
    logger.record(f"{prefix}/utilisation", result["utilisation"])
    if "teacher_dsr" in result:
        # "reference": the expert the agent is measured against (BC's and DAgger's teacher, PPO's --reference)
        logger.record(f"{prefix}/dsr_gap_to_reference", result["dsr_gap"])
        logger.record(f"{prefix}/jct_gap_to_reference_h", (result["jct_mean_s"] - result["teacher_jct_mean_s"]) / 3600)
    logger.dump(step)


class ImitationInputs(NamedTuple):
    """What BC and DAgger read off their arguments before anything is written (:func:`imitation_inputs`)."""

    folder: Path
    env_kwargs: dict[str, Any]
    demos: Demonstrations | None
    train_seeds: list[int]
    val_seeds: list[int]
    eval_seeds: list[int]


def imitation_inputs(args: ImitationArgs, recipe: str) -> ImitationInputs:
    """The run folder, the environment's overrides, the loaded demonstrations (``args.demos``; they bring
    their own training seeds, else ``args.train_seeds``), and the validation and evaluation seeds."""
    folder = Path(args.out_dir) / (args.run_name or run_name(args.env_id, recipe, args.teacher, args.seed))
    env_kwargs = agent_env_kwargs(args.teacher, args.env, args.env_id)
    check_obs_dtype(args.obs_dtype)
    demos = (
        load_demonstrations(args.demos, args.teacher, args.env_id, env_kwargs, args.obs_dtype) if args.demos else None
    )
    train_seeds = demonstration_seeds(demos) if demos is not None else parse_seeds(args.train_seeds)
    eval_seeds = parse_seeds(args.eval_seeds) if str(args.eval_seeds).strip() else []
    return ImitationInputs(folder, env_kwargs, demos, train_seeds, parse_seeds(args.val_seeds), eval_seeds)


def train(args: BCArgs, *, progress: bool = False) -> RunResult:
    """Run the behaviour-cloning recipe (see the module docstring)."""
    started = time.perf_counter()
    # Seeding block.
    seed_everything(args.seed, args.torch_threads)
    if args.algo not in ("ppo", "maskable-ppo"):
        raise AgentError(f"algo={args.algo!r}: the clone is saved as 'ppo' or 'maskable-ppo'")
    check_lr_schedule(args.lr_schedule)
    # Checked before anything is written.
    folder, env_kwargs, demos, train_seeds, val_seeds, eval_seeds = imitation_inputs(args, "bc")
    overlap = set(train_seeds) & (set(val_seeds) | set(eval_seeds))
    if overlap:
        raise AgentError(f"seeds {sorted(overlap)} are both training and held-out seeds; keep them apart")
    check_network(args.env_id, env_kwargs, args.arch, args.attention_layers, args.decoding)
    logger = make_logger(folder / "tb", args.track)
    with progress_report(progress) as bar:
        if demos is None:
            demos = collect_with_progress(
                bar, args.env_id, env_kwargs, args.teacher, train_seeds, "demonstrations", args.obs_dtype
            )
        if args.save_demos:
            demos.save(folder / "demos.npz")
        val = collect_with_progress(bar, args.env_id, env_kwargs, args.teacher, val_seeds, "held-out states")
        # Training needs only the flattened pairs: flattening releases each episode once copied, so the
        # observations are never held twice (one copy of 100 HetCluster-v1 workloads' is 8-10 GB).
        teacher_train_episodes = demos.episode_metrics()
        data = demos.transitions(args.gamma, release=True)
        val_data = val.transitions(args.gamma, release=True)
        del demos, val
        env = make_env(args.env_id, env_kwargs)
        model = model_from_args(args, env)
        model.set_logger(logger)
        bar.task(
            f"cloning {args.teacher}: {args.epochs} epoch{'s' * (args.epochs != 1)} of {len(data)} states",
            args.epochs * len(data),
            unit="states",
        )

        def on_epoch(epoch: int, stats: dict[str, float]) -> None:
            for key, value in stats.items():
                logger.record(f"bc/{key}", value)
            agree = action_agreement(model.policy, val_data)
            for key, value in agree.items():
                if key != "states" and math.isfinite(value):
                    logger.record(f"bc/val_{key}", value)
            logger.dump(epoch + 1)
            bar.log(
                f"epoch {epoch + 1}: loss {stats['loss']:.4f}, held-out agreement {agree['agreement']:.4f}"
                + (f" (edits {agree['agreement_edit']:.3f})" if "agreement_edit" in agree else "")
            )

        history = fit(
            model.policy,
            data,
            epochs=args.epochs,
            batch_size=args.batch_size,
            lr=args.lr,
            lr_schedule=args.lr_schedule,
            ent_weight=args.ent_weight,
            l2_weight=args.l2_weight,
            value_weight=args.value_weight,
            seed=args.seed,
            on_batch=bar.advance,
            on_epoch=on_epoch,
        )
        agreement = action_agreement(model.policy, val_data)
        train_agreement = action_agreement(model.policy, data.take(np.arange(0, len(data), 7)))
        meta = AgentMeta(
            env_id=args.env_id,
            env_kwargs=env_kwargs,
            teacher=args.teacher,
            recipe="bc",
            algo=args.algo,
            arch=args.arch,
            seed=args.seed,
            args=dataclasses.asdict(args),
            results={
                "stage": "trained",
                "agreement": agreement,
                "train_agreement_sample": train_agreement,
                "train_states": len(data),
                "teacher_train_episodes": teacher_train_episodes,
                "history": history,
            },
            reference=args.teacher,
        )
        save_agent(model, meta, folder)  # before the evaluation: an interrupted one leaves a usable agent
        if eval_seeds:
            bar.task("evaluating on held-out workloads", None)
        evaluation = evaluate_against_teacher(
            model, args.env_id, env_kwargs, args.teacher, eval_seeds, max_steps=args.max_steps, on_step=bar.advance
        )
        log_evaluation(logger, evaluation, args.epochs)
    meta.results.update(stage="evaluated", evaluation=evaluation, wall_s=time.perf_counter() - started)
    save_meta(meta, folder)
    logger.close()
    return RunResult(folder, model, meta)


__all__ = [
    "BCArgs",
    "LossParts",
    "RunResult",
    "action_agreement",
    "bc_loss",
    "demonstration_seeds",
    "evaluate_against_teacher",
    "fit",
    "forward_logits",
    "imitation_inputs",
    "load_demonstrations",
    "new_model",
    "predict_actions",
    "train",
]
