"""Expert iteration on the event interface: a lookahead teacher distilled into a network, round after round.

Anthony, Tian and Barber, "Thinking Fast and Slow with Deep Learning and Tree Search" (NeurIPS 2017);
the teacher is Bertsekas and Castañon's rollout algorithm (:class:`hetgym.lookahead.LookaheadTeacher`), the
student an MLP on the flat observation (SB3's MaskablePPO ``MlpPolicy``), and the loop is DAgger (Ross,
Gordon and Bagnell, AISTATS 2011):

* **Round 0.** The teacher, whose rollouts a fixed base policy finishes (``base``: ``force`` by default),
  plays the training seeds and labels every decision; the student is fitted to the labels by masked
  cross-entropy (:func:`agents.bc.fit`).
* **Round r >= 1.** The teacher's rollouts are finished by the latest student (the *iteration*: a deviation
  is scored with the policy that will follow it). The first ``teacher_episodes`` episodes of the round are
  the teacher's alone (its DSR per round, paired with its base alone on the same workload); in the others
  the student acts, the teacher's action is taken instead with probability ``beta_r``
  (:func:`agents.dagger.beta_at`), and the teacher labels every decision where it acts plus a random
  ``label_fraction`` of the student's (each label costs a lookahead: the knob bounds a round's cost). The
  labels join the aggregated set and the student is fitted further on all of it.

Every round draws its random numbers from ``(seed, round)``, so a run resumed from its checkpoint (the labels,
the round, the student's weights) continues exactly as an uninterrupted one. Training seeds follow
``train_seeds`` and skip the validation seeds and the evaluation range 1000-1019.

Per round the run folder's ``rounds.jsonl`` and TensorBoard (``tb/``) get: the teacher's and its base's DSR on
the teacher's episodes, the student's DSR on the validation seeds and its modal-action share there, the
teacher-student agreement on the round's labels (the student before the round's fit), the share of labels
deviating from the teacher's base action, and the CPU-s of labelling and of fitting. The student is saved
in the safe format (``model.pt`` + ``agent.json``), so ``hetgym evaluate RUN`` reads it like any agent.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.args import AgentError, ExItArgs
from agents.bc import RunResult, fit, make_logger, predict_actions
from agents.common import (
    AgentMeta,
    atomic_write,
    make_env,
    num_actions,
    parse_seeds,
    save_agent,
    seed_everything,
)
from agents.dagger import beta_at, later_round_seeds
from agents.demos import Transitions, model_learner
from agents.events import check_event_id
from agents.progress import progress_report
from hetgym.lookahead import LookaheadKnobs, LookaheadTeacher, resolve_base

#: Workload seeds no round labels: the held-out evaluation range.
EVAL_SEEDS = range(1000, 1020)
#: Files of a run folder besides the agent: the checkpoint (labels, weights, the loop's state), one JSON
#: line per round.
CHECKPOINT_FILE = "exit_checkpoint.npz"
ROUNDS_FILE = "rounds.jsonl"
#: Prefix of the student's weights inside the checkpoint.
WEIGHT_PREFIX = "w::"
#: Arguments a resumed run must share with the run it continues (``rounds`` may grow).
FIXED_ON_RESUME = (
    "env_id", "env", "base", "train_seeds", "val_seeds", "episodes_per_round", "teacher_episodes",
    "label_fraction", "beta_schedule", "rampdown_rounds", "decay", "beta", "k_initial", "k_step", "k_max",
    "min_gain_jobs", "horizon_h", "horizon_arrivals", "hidden", "epochs", "epochs_per_round", "batch_size",
    "lr", "ent_weight", "seed",
)  # fmt: skip
#: Labels after which the run's cost is estimated and printed.
ESTIMATE_AFTER_LABELS = 3


class _FlatPolicy:
    """An SB3 policy on a flat ``Box`` observation seen through :func:`agents.bc.fit`'s ``{key: array}``
    batches: the one key's array is what the policy reads."""

    def __init__(self, policy: Any) -> None:
        self._policy = policy

    def __getattr__(self, name: str) -> Any:
        return getattr(self._policy, name)

    def extract_features(self, obs: dict[str, Any], *args: Any) -> Any:
        (value,) = obs.values()
        return self._policy.extract_features(value, *args)


@dataclass
class Labels:
    """The aggregated labels: one row per labelled decision."""

    obs: np.ndarray
    acts: np.ndarray
    masks: np.ndarray
    base_acts: np.ndarray
    rounds: np.ndarray
    seeds: np.ndarray

    @classmethod
    def empty(cls, obs_dim: int, num_actions: int) -> Labels:
        return cls(
            np.zeros((0, obs_dim), np.float32),
            np.zeros(0, np.int64),
            np.zeros((0, num_actions), bool),
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
        )

    def __len__(self) -> int:
        return len(self.acts)

    def extend(self, other: Labels) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, np.concatenate([getattr(self, f.name), getattr(other, f.name)]))

    def select(self, index: np.ndarray) -> Labels:
        return Labels(*(getattr(self, f.name)[index] for f in dataclasses.fields(self)))

    def transitions(self) -> Transitions:
        """The labels as :func:`agents.bc.fit` takes them (no returns: the critic is not fitted)."""
        zeros = np.zeros(len(self), np.float32)
        return Transitions({"obs": self.obs}, self.acts, self.masks, zeros, zeros.astype(bool), zeros)


def fixed_base(text: str) -> Any:
    """Round 0's base policy from its text: an action number, or a name :func:`resolve_base` knows."""
    value: Any = int(text) if str(text).strip().isdigit() else str(text).strip()
    try:
        resolve_base(value)
    except Exception as exc:
        raise AgentError(f"base={text!r}: {exc}") from exc
    return value


def teacher_knobs(args: ExItArgs) -> LookaheadKnobs:
    """The teacher's knobs from the recipe's arguments (checked by :class:`LookaheadKnobs`)."""
    try:
        return LookaheadKnobs(
            k_initial=args.k_initial,
            k_step=args.k_step,
            k_max=args.k_max,
            min_gain_jobs=args.min_gain_jobs,
            horizon_h=args.horizon_h,
            horizon_arrivals=args.horizon_arrivals,
            workers=args.workers,
        )
    except Exception as exc:
        raise AgentError(f"teacher knobs: {exc}") from exc


def teacher_for_round(args: ExItArgs, round_index: int, student: Any) -> LookaheadTeacher:
    """Round ``round_index``'s teacher: its rollouts finished by the fixed base in round 0, by ``student``
    (the latest one) from round 1 on."""
    base = fixed_base(args.base) if round_index == 0 else student
    return LookaheadTeacher(base, teacher_knobs(args))


def round_seeds(args: ExItArgs) -> list[list[int]]:
    """Each round's workload seeds: round 0's are ``train_seeds``; later rounds take the seeds after them,
    skipping the validation seeds and the evaluation range."""
    train = parse_seeds(args.train_seeds)
    held_out = set(parse_seeds(args.val_seeds)) | set(EVAL_SEEDS)
    if set(train) & held_out:
        raise AgentError(f"train_seeds {sorted(set(train) & held_out)} are held out (val_seeds or 1000-1019)")
    return [train, *later_round_seeds(max(train) + 1, args.rounds, args.episodes_per_round, held_out)]


def check_args(args: ExItArgs) -> None:
    """Refuse bad arguments before anything is written, naming the fix."""
    if args.rounds < 0 or args.episodes_per_round < 1:
        raise AgentError(f"rounds={args.rounds}, episodes_per_round={args.episodes_per_round}: need >= 0 and >= 1")
    if not 0 <= args.teacher_episodes <= args.episodes_per_round:
        raise AgentError(f"teacher_episodes={args.teacher_episodes}: give 0 to episodes_per_round")
    if not 0.0 <= args.label_fraction <= 1.0:
        raise AgentError(f"label_fraction={args.label_fraction}: give a share in [0, 1]")
    if args.epochs < 1 or args.epochs_per_round < 0 or args.hidden < 1:
        raise AgentError(f"epochs={args.epochs}, epochs_per_round={args.epochs_per_round}, hidden={args.hidden}")
    if set(parse_seeds(args.val_seeds)) & set(EVAL_SEEDS):
        raise AgentError("val_seeds must be training-range seeds: 1000-1019 are the evaluation's")
    beta_at(1, args.beta_schedule, rampdown_rounds=args.rampdown_rounds, decay=args.decay, beta=args.beta)
    fixed_base(args.base)
    teacher_knobs(args)


def env_kwargs_of(args: ExItArgs) -> dict[str, Any]:
    return {**dict(args.env), "flatten": True}


def new_student(env: Any, args: ExItArgs) -> Any:
    """An untrained MaskablePPO with an ``MlpPolicy`` of two layers of ``2 * hidden`` on the flat observation."""
    from sb3_contrib import MaskablePPO

    width = 2 * args.hidden
    kwargs = {"net_arch": {"pi": [width, width], "vf": [width, width]}}
    return MaskablePPO("MlpPolicy", env, policy_kwargs=kwargs, seed=args.seed, device="cpu", verbose=0)


def _check_event_env(env: Any) -> Any:
    u = env.unwrapped
    if not (hasattr(u, "actions") and hasattr(u, "action_masks") and hasattr(u, "sim")):
        raise AgentError(
            f"expert iteration acts in an event-driven environment (HetClusterEvents-*), not {type(u).__name__}"
        )
    return u


def play(env: Any, seed: int, act: Callable[[Any, np.ndarray], int]) -> tuple[float, list[int]]:
    """One episode of workload ``seed`` played by ``act(obs, mask)``: its DSR and the actions taken."""
    obs, info = env.reset(seed=seed, options={"workload_seed": seed})
    actions = []
    while True:
        action = int(act(obs, np.asarray(info["action_mask"], dtype=bool)))
        actions.append(action)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return float(info["metrics"]["dsr"]), actions


def labelled_episode(
    env: Any,
    seed: int,
    teacher: LookaheadTeacher,
    student: Callable[[Any, np.ndarray], int] | None,
    *,
    beta: float,
    label_fraction: float,
    rng: np.random.Generator,
    on_label: Callable[[float], None] | None = None,
) -> dict[str, Any]:
    """One episode in which the teacher acts with probability ``beta`` (else ``student``) and labels every
    decision where it acts and a ``label_fraction`` of the others.

    Returns the episode's DSR, decisions, the labels (:class:`Labels`), how many decisions the teacher took,
    and the student's action at each labelled decision (``-1`` where the student was not asked).
    """
    obs, info = env.reset(seed=seed, options={"workload_seed": seed})
    rows: dict[str, list[Any]] = {"obs": [], "acts": [], "masks": [], "base_acts": [], "student": []}
    decisions = teacher_acted = 0
    while True:
        mask = np.asarray(info["action_mask"], dtype=bool)
        # Two draws at every decision whatever happens, so the stream does not depend on earlier labels.
        draw_teacher, draw_label = rng.random(2)
        teacher_acts = student is None or draw_teacher < beta
        label_here = teacher_acts or draw_label < label_fraction
        mine = int(student(obs, mask)) if student is not None else -1
        action = mine
        if label_here:
            t0 = time.process_time()
            label = int(teacher.decide(env, obs))
            record = teacher.records[-1]
            rows["obs"].append(np.asarray(obs, np.float32).copy())
            rows["acts"].append(label)
            rows["masks"].append(mask.copy())
            rows["base_acts"].append(int(record.base_action))
            rows["student"].append(mine)
            if on_label is not None:
                on_label(time.process_time() - t0 + record.worker_cpu_s)
            if teacher_acts:
                action = label
        decisions += 1
        teacher_acted += int(teacher_acts)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    n = len(rows["acts"])
    labels = Labels(
        np.asarray(rows["obs"], np.float32).reshape(n, -1),
        np.asarray(rows["acts"], np.int64),
        np.asarray(rows["masks"], bool).reshape(n, mask.shape[0]),
        np.asarray(rows["base_acts"], np.int64),
        np.zeros(n, np.int64),
        np.full(n, seed, np.int64),
    )
    return {
        "dsr": float(info["metrics"]["dsr"]),
        "decisions": decisions,
        "teacher_acted": teacher_acted,
        "labels": labels,
        "student_actions": np.asarray(rows["student"], np.int64),
    }


def modal_share(actions: list[int]) -> float:
    """The share of ``actions`` that are the most frequent one (NaN when there are none)."""
    if not actions:
        return math.nan
    return float(np.bincount(np.asarray(actions)).max() / len(actions))


def decision_cpu_us(model: Any, labels: Labels, repeats: int = 200) -> float:
    """The student's CPU-µs per decision (``predict`` with the mask, one observation at a time)."""
    if len(labels) == 0:
        return math.nan
    n = min(len(labels), repeats)
    t0 = time.process_time()
    for i in range(n):
        model.predict(labels.obs[i], deterministic=True, action_masks=labels.masks[i])
    return (time.process_time() - t0) / n * 1e6


class _Estimate:
    """Counts labels and their CPU-s; after the first few, prints the estimated cost of the run."""

    def __init__(self, bar: Any, expected_labels: float) -> None:
        self.bar = bar
        self.expected = expected_labels
        self.count = 0
        self.cpu_s = 0.0

    def __call__(self, cpu_s: float) -> None:
        self.count += 1
        self.cpu_s += cpu_s
        self.bar.advance(1)
        if self.count == ESTIMATE_AFTER_LABELS:
            per = self.cpu_s / self.count
            self.bar.log(
                f"estimate: {per:.2f} CPU-s per label (first {self.count}); about {self.expected:.0f} labels "
                f"to go, ~{per * self.expected / 60:.1f} CPU-min of labelling (rollouts a student finishes "
                "cost more than a rule's)"
            )


def expected_labels(args: ExItArgs, seeds: list[list[int]], start: int, decisions_per_episode: float) -> float:
    """Labels the rounds from ``start`` on will take, with ``decisions_per_episode`` per episode."""
    total = 0.0
    for r in range(start, len(seeds)):
        n = len(seeds[r])
        if r == 0:
            total += n
            continue
        beta = beta_at(r, args.beta_schedule, rampdown_rounds=args.rampdown_rounds, decay=args.decay, beta=args.beta)
        alone = min(args.teacher_episodes, n)
        total += alone + (n - alone) * (beta + (1 - beta) * args.label_fraction)
    return total * decisions_per_episode


def _load_resume(folder: Path, args: ExItArgs, env: Any) -> tuple[dict[str, Any], Labels, Any]:
    path = folder / CHECKPOINT_FILE
    if not path.is_file():
        raise AgentError(f"--resume: {folder} has no {CHECKPOINT_FILE}; start the run without --resume")
    import torch as th

    with np.load(path) as data:
        state = json.loads(str(data["state_json"]))
        labels = Labels(*(np.asarray(data[f.name]) for f in dataclasses.fields(Labels)))
        weights = {k[len(WEIGHT_PREFIX) :]: th.as_tensor(data[k]) for k in data.files if k.startswith(WEIGHT_PREFIX)}
    before = state["args"]
    changed = [k for k in FIXED_ON_RESUME if before.get(k) != _plain(getattr(args, k))]
    if changed:
        raise AgentError(f"--resume: {folder} was run with other {changed}; give the same values or a new --run-name")
    model = new_student(env, args)
    model.policy.load_state_dict(weights)
    return state, labels, model


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _worker_cpu_s(state: dict[str, Any], start: int) -> float:
    """The CPU-s rollout worker processes spent in this session's rounds (``state['cpu_s']`` has earlier ones)."""
    return float(sum(entry.get("worker_cpu_s", 0.0) for entry in state["rounds"] if entry["round"] >= start))


def _rule_player(env: Any, base: str) -> Callable[[Any, np.ndarray], int]:
    """The fixed base policy as :func:`play` calls it."""
    rule = resolve_base(fixed_base(base))
    return lambda obs, _mask: int(rule(obs, env.unwrapped))


def train(args: ExItArgs, *, progress: bool = False) -> RunResult:
    """Run expert iteration (see the module docstring); checkpointed after every round."""
    seed_everything(args.seed, args.torch_threads)
    check_args(args)
    seeds = round_seeds(args)
    env_kwargs = env_kwargs_of(args)
    check_event_id(args.env_id, "expert iteration")
    env = make_env(args.env_id, env_kwargs)
    u = _check_event_env(env)
    name = args.run_name or f"exit-{args.env_id}-{args.base}-s{args.seed}"
    folder = Path(args.out_dir) / name
    if args.resume:
        state, labels, model = _load_resume(folder, args, env)
    else:
        if (folder / CHECKPOINT_FILE).exists():
            raise AgentError(f"{folder} holds a run already: give --resume to continue it, or another --run-name")
        state = {"next_round": 0, "rounds": [], "cpu_s": 0.0}
        obs_dim = int(np.prod(env.observation_space.shape or (0,)))
        labels = Labels.empty(obs_dim, num_actions(env))
        model = new_student(env, args)
    val_seeds = parse_seeds(args.val_seeds)
    logger = make_logger(folder / "tb", args.track)
    meta = AgentMeta(
        env_id=args.env_id,
        env_kwargs=env_kwargs,
        teacher="lookahead",
        reference="elasticflow",
        recipe="exit",
        algo="maskable-ppo",
        arch="mlp",
        seed=args.seed,
        args=dataclasses.asdict(args),
    )
    session_t0 = time.process_time()
    student_act = model_learner(model)
    start = int(state["next_round"])
    with progress_report(progress) as bar:
        estimate = _Estimate(bar, expected_labels(args, seeds, start, float(u.config.workload.num_jobs)))
        for r in range(start, args.rounds + 1):
            entry = _run_round(args, r, seeds[r], env, model, student_act, labels, val_seeds, bar, estimate)
            state["rounds"].append(entry)
            state["next_round"] = r + 1
            for key, value in entry.items():
                if isinstance(value, (int, float)) and math.isfinite(float(value)):
                    logger.record(f"exit/{key}", value)
            logger.dump(r)
            cpu_s = float(state["cpu_s"]) + time.process_time() - session_t0 + _worker_cpu_s(state, start)
            _checkpoint(folder, args, state, labels, model, meta, cpu_s)
    cpu_s = float(state["cpu_s"]) + time.process_time() - session_t0 + _worker_cpu_s(state, start)
    meta.results = {
        "stage": "trained",
        "kind": "learned",
        "cpu_hours": cpu_s / 3600,
        "student_decision_cpu_us": decision_cpu_us(model, labels),
        "rounds": state["rounds"],
    }
    save_agent(model, meta, folder)
    logger.close()
    env.close()
    return RunResult(folder, model, meta)


def _run_round(
    args: ExItArgs,
    r: int,
    seeds: list[int],
    env: Any,
    model: Any,
    student_act: Callable[[Any, np.ndarray], int],
    labels: Labels,
    val_seeds: list[int],
    bar: Any,
    estimate: _Estimate,
) -> dict[str, Any]:
    """Round ``r``: label, aggregate, fit, validate; the round's log entry."""
    rng = np.random.default_rng([args.seed, r])
    beta = beta_at(r, args.beta_schedule, rampdown_rounds=args.rampdown_rounds, decay=args.decay, beta=args.beta)
    teacher = teacher_for_round(args, r, model)
    base_act = _rule_player(env, args.base) if r == 0 else None
    bar.task(f"round {r}: labels (beta {beta:.2f})", None, unit="labels")
    t0 = time.process_time()
    teacher_dsr, base_dsr, mixed_dsr = [], [], []
    new = Labels.empty(labels.obs.shape[1], labels.masks.shape[1])
    student_at_labels: list[np.ndarray] = []
    with teacher:
        for i, seed in enumerate(seeds):
            alone = r == 0 or i < args.teacher_episodes
            ep = labelled_episode(
                env,
                seed,
                teacher,
                None if alone else student_act,
                beta=1.0 if alone else beta,
                label_fraction=1.0 if alone else args.label_fraction,
                rng=rng,
                on_label=estimate,
            )
            new.extend(ep["labels"])
            student_at_labels.append(ep["student_actions"])
            if alone:
                teacher_dsr.append(ep["dsr"])
                base_dsr.append(play(env, seed, student_act if base_act is None else base_act)[0])
            else:
                mixed_dsr.append(ep["dsr"])
            bar.log(f"round {r}: workload {seed} {'teacher' if alone else 'mixed'} DSR {ep['dsr']:.3f}, "
                    f"{len(ep['labels'])} labels of {ep['decisions']} decisions")  # fmt: skip
    worker_cpu_s = sum(rec.worker_cpu_s for rec in teacher.records)
    label_cpu_s = time.process_time() - t0 + worker_cpu_s
    new.rounds[:] = r
    # The student before this round's fit, on this round's labels: how far it is from its teacher now.
    before = predict_actions(_FlatPolicy(model.policy), new.transitions()) if len(new) else np.zeros(0)
    labels.extend(new)
    t1 = time.process_time()
    epochs = args.epochs if r == 0 else args.epochs_per_round
    data = labels.transitions()
    bar.task(f"round {r}: fitting {len(labels)} labels", epochs * len(labels), unit="states")
    fit(
        _FlatPolicy(model.policy),
        data,
        epochs=epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        ent_weight=args.ent_weight,
        seed=args.seed + r,
        on_batch=bar.advance,
    )
    fit_cpu_s = time.process_time() - t1
    after = predict_actions(_FlatPolicy(model.policy), data)
    val_dsr, val_actions = [], []
    for seed in val_seeds:
        dsr, actions = play(env, seed, student_act)
        val_dsr.append(dsr)
        val_actions.extend(actions)
    entry = {
        "round": r,
        "beta": beta,
        "seeds": seeds,
        "teacher_base": "student" if r else f"{args.base} (fixed)",
        "labels": len(new),
        "labels_total": len(labels),
        "deviation_share": float(np.mean(new.acts != new.base_acts)) if len(new) else math.nan,
        "agreement_before_fit": float(np.mean(before == new.acts)) if len(new) else math.nan,
        "train_agreement": float(np.mean(after == labels.acts)),
        "teacher_dsr": float(np.mean(teacher_dsr)) if teacher_dsr else math.nan,
        "teacher_base_dsr": float(np.mean(base_dsr)) if base_dsr else math.nan,
        "mixed_dsr": float(np.mean(mixed_dsr)) if mixed_dsr else math.nan,
        "student_val_dsr": float(np.mean(val_dsr)) if val_dsr else math.nan,
        "student_modal_action_share": modal_share(val_actions),
        "label_cpu_s": label_cpu_s,
        "worker_cpu_s": worker_cpu_s,
        "label_cpu_s_per_label": label_cpu_s / len(new) if len(new) else math.nan,
        "fit_cpu_s": fit_cpu_s,
        "teacher_futures": int(sum(rec.futures for rec in teacher.records)),
    }
    bar.log(
        f"round {r} done: {len(new)} labels ({entry['deviation_share']:.0%} off the base), teacher DSR "
        f"{entry['teacher_dsr']:.3f} vs base {entry['teacher_base_dsr']:.3f}, student val DSR "
        f"{entry['student_val_dsr']:.3f} (modal action {entry['student_modal_action_share']:.0%}), agreement "
        f"{entry['agreement_before_fit']:.2f} before fit, {label_cpu_s:.0f} CPU-s labelling, {fit_cpu_s:.0f} fitting"
    )
    return entry


def _checkpoint(
    folder: Path, args: ExItArgs, state: dict[str, Any], labels: Labels, model: Any, meta: AgentMeta, cpu_s: float
) -> None:
    """Save what resuming needs as one file written at once (the labels, the student's weights and the
    loop's state: a run cut at any point resumes from the last complete round), then the student in the
    safe format for ``hetgym evaluate`` and ``rounds.jsonl``."""
    folder.mkdir(parents=True, exist_ok=True)
    saved = {**state, "cpu_s": cpu_s, "args": _plain(dataclasses.asdict(args))}
    arrays: dict[str, Any] = dict(dataclasses.asdict(labels))
    arrays["state_json"] = np.array(json.dumps(saved))
    for key, tensor in model.policy.state_dict().items():
        arrays[WEIGHT_PREFIX + key] = tensor.detach().cpu().numpy()
    atomic_write(folder / CHECKPOINT_FILE, lambda p: np.savez(p, **arrays))
    meta.results = {"stage": "checkpoint", "kind": "learned", "cpu_hours": cpu_s / 3600, "rounds": state["rounds"]}
    save_agent(model, meta, folder)
    lines = "".join(json.dumps(entry) + "\n" for entry in state["rounds"])
    atomic_write(folder / ROUNDS_FILE, lambda p: p.write_text(lines))


__all__ = ["ExItArgs", "Labels", "labelled_episode", "round_seeds", "teacher_for_round", "train"]
