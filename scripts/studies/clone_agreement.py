"""How often saved clones take their teacher's action, on the teacher's own episodes of held-out workloads.

Usage::

    python scripts/studies/clone_agreement.py runs/bc-tiny-v1-hadare-md-every --seeds 100000-100019
    python scripts/studies/clone_agreement.py RUN [RUN ...] --seeds 100000-100019 \
        --out docs/results/agents_v1/agreement.json

For each run folder (a ``hetgym train --algo bc`` or ``dagger`` run, whose ``agent.json`` names its teacher
and environment) the teacher acts alone in the run's own environment on the given workload seeds, labelling
every state (:func:`agents.demos.collect_demonstrations`), and the clone's deterministic action is compared
with each label (:func:`agents.bc.action_agreement`): the agreement over all states, on the teacher's edits
and commits (one-job-at-a-time codecs), and at the epochs where the teacher's decision changes anything in
force (``agreement_changing``, with ``changing_share`` the share of such states: with a one-shot codec under
``decisions="every-epoch"`` most states are round ticks at which the teacher keeps everything, so the
overall figure says little about the decisions that matter). Beside them, ``teacher_dsr_in_env``: the
DSR the teacher meets by following its own labels in that env (what a perfect clone would meet, which may
be less than the teacher's run on the simulator when the env does not ask at every epoch the teacher
decides at). ``agreement_ci95`` is a 95% interval of the overall agreement from a bootstrap over the workloads
(states of one episode are not independent, so whole episodes are resampled; 2,000 resamples, seed 0).
Seeds a run trained on are refused.

With ``--breakdown`` (job-at-a-time codecs, ``codec="jobwise"``) the states are also split by what the
teacher did to the job being decided, relative to what that job held before the decision: ``keep``,
``none``, ``reject`` and ``done`` as the codec names them; for a (type, count) action ``start`` (it held no
GPUs), ``same`` (the type and count it held: it had lost them in the draft), ``grow`` or ``shrink`` (the
same type, more or fewer GPUs), ``move`` (another type) and ``forked`` (any type, for a job that held GPUs
of two or more types, as HadarE's forked jobs do under ``codec="jobwise-types"``). Per kind: its share of the
states, the clone's agreement there and the kinds of the clone's actions, so a gap can be traced to the
decisions it misses; for the (type, count) kinds also ``clone_same_type``, the share of their states where
the clone names the teacher's GPU type (whatever the count). The breakdown also splits the states by the
round-tick flag of the observation (``clock``'s ``tick`` entry): ``tick_share``, and ``agreement_at_ticks``
/ ``agreement_off_ticks`` (NaN where there are no such states), since round-based teachers (Hadar, HadarE)
change allocations only at round ticks.

With ``--decoding argmax,kind-first`` each run is measured under each listed deterministic decoding of the
set network (:func:`agents.set_policy.kind_first_argmax`) on the same teacher episodes; without it, under
the decoding each run was saved with.

Prints one line per run and, with ``--out``, writes the figures as JSON (through a temporary file).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from agents.args import AgentError, parse_seeds
from agents.bc import action_agreement, agrees, predict_actions
from agents.common import load_agent, make_env
from agents.demos import Demonstrations, collect_demonstrations
from agents.set_policy import DECODINGS, check_decoding
from hetgym.atomic import atomic_write
from hetgym.envs.codecs.jobwise import JobwiseCodec
from hetgym.envs.observations import CLOCK_FEATURES

REPO_ROOT = Path(__file__).resolve().parents[2]


def workload_interval(
    ok: np.ndarray, dones: np.ndarray, *, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """95% percentile interval of the share of ``ok`` states, resampling whole episodes (``dones`` ends them)."""
    episode = np.concatenate([[0], np.cumsum(dones[:-1])]).astype(np.int64)
    hits = np.bincount(episode, weights=ok.astype(float))
    states = np.bincount(episode).astype(float)
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(states), size=(resamples, len(states)))
    shares = hits[pick].sum(axis=1) / states[pick].sum(axis=1)
    lo, hi = np.percentile(shares, [2.5, 97.5])
    return float(lo), float(hi)


#: The kinds of a job-at-a-time action (see the module docstring), in report order.
DECISION_KINDS = ("keep", "start", "grow", "shrink", "move", "same", "forked", "none", "reject", "done")
#: The kinds of a (type, count) action.
SET_KINDS = ("start", "grow", "shrink", "move", "same", "forked")


def decision_kinds(
    codec: JobwiseCodec, capacity: np.ndarray, obs: dict[str, np.ndarray], actions: np.ndarray
) -> np.ndarray:
    """The kind of each of ``actions`` (one of :data:`DECISION_KINDS`) in the states ``obs``.

    What the current job held before the decision is read from the observation: ``job_current`` (GPUs per
    type over the type's ``capacity``) at the slot ``slot_cursor`` marks.
    """
    acts = np.asarray(actions).reshape(-1)
    n, types = len(acts), len(capacity)
    cursor = np.asarray(obs["slot_cursor"]).reshape(n, -1).argmax(axis=1)
    current = np.asarray(obs["job_current"]).reshape(n, -1, types)[np.arange(n), cursor]
    held = np.rint(current * np.asarray(capacity)).astype(np.int64)
    out = np.empty(n, dtype=object)
    for i, a in enumerate(acts.tolist()):
        kind, t, count, _ = codec.decode(a)
        if kind == "set":
            total = int(held[i].sum())
            if total == 0:
                kind = "start"
            elif int((held[i] > 0).sum()) > 1:
                kind = "forked"
            elif held[i, t] != total:
                kind = "move"
            else:
                kind = "same" if count == total else "grow" if count > total else "shrink"
        out[i] = kind
    return out


def same_set_type(codec: JobwiseCodec, teacher: np.ndarray, clone: np.ndarray) -> np.ndarray:
    """Per state: both actions are (type, count) actions naming the same GPU type (the count may differ)."""
    out = np.zeros(len(teacher), dtype=bool)
    pairs = zip(np.asarray(teacher).reshape(-1).tolist(), np.asarray(clone).reshape(-1).tolist(), strict=True)
    for i, (a, b) in enumerate(pairs):
        ka, ta, _, _ = codec.decode(a)
        kb, tb, _, _ = codec.decode(b)
        out[i] = ka == "set" and kb == "set" and ta == tb
    return out


def breakdown(
    teacher: np.ndarray, clone: np.ndarray, agree: np.ndarray, same_type: np.ndarray | None = None
) -> dict[str, dict[str, Any]]:
    """Per kind of the teacher's action: ``share`` of the states, the clone's ``agreement`` there, and the
    ``clone`` kinds' shares of those states (kinds as :func:`decision_kinds` gives them). With ``same_type``
    (:func:`same_set_type`), kinds of (type, count) actions also get ``clone_same_type``: the share of their
    states where the clone names the teacher's type, with the teacher's count or another."""
    out: dict[str, dict[str, Any]] = {}
    n = len(teacher)
    for kind in DECISION_KINDS:
        sel = teacher == kind
        m = int(sel.sum())
        if m == 0:
            continue
        did = Counter(clone[sel].tolist())
        out[kind] = {
            "states": m,
            "share": m / n,
            "agreement": float(agree[sel].mean()),
            "clone": {k: did[k] / m for k in DECISION_KINDS if did[k]},
        }
        if same_type is not None and kind in SET_KINDS:
            out[kind]["clone_same_type"] = float(same_type[sel].mean())
    return out


def tick_split(obs: dict[str, np.ndarray], ok: np.ndarray) -> dict[str, float]:
    """The share of states at round ticks (``clock``'s ``tick`` entry) and the agreement ``ok`` at and off them."""
    n = len(ok)
    tick = np.asarray(obs["clock"]).reshape(n, -1)[:, CLOCK_FEATURES.index("tick")] > 0.5
    ok = np.asarray(ok, dtype=bool)
    return {
        "tick_share": float(tick.mean()) if n else float("nan"),
        "agreement_at_ticks": float(ok[tick].mean()) if tick.any() else float("nan"),
        "agreement_off_ticks": float(ok[~tick].mean()) if (~tick).any() else float("nan"),
    }


def measure(
    run: Path,
    seeds: list[int],
    episodes: dict[str, Demonstrations] | None = None,
    *,
    by_kind: bool = False,
    decoding: str | None = None,
) -> dict[str, Any]:
    """The clone of ``run`` against its teacher on ``seeds`` (see the module docstring).

    ``episodes`` keeps the teacher's episodes between calls: runs with the same teacher and environment
    are measured on one collection of them. ``by_kind`` adds ``breakdown`` (:func:`breakdown`) for a
    job-at-a-time codec; for another codec it is refused. ``decoding`` replaces the set network's
    deterministic decoding (``None``: the run's own).
    """
    model, meta = load_agent(run, decoding=decoding)
    if not meta.teacher:
        raise AgentError(f"{run} has no teacher (trained by {meta.recipe}); agreement needs one")
    given = meta.args.get("train_seeds")  # a run trained on saved demonstrations may name none
    trained = set(parse_seeds(given)) if given else set()
    if trained & set(seeds):
        raise AgentError(f"{run} trained on seeds {sorted(trained & set(seeds))[:5]}...; give held-out seeds")
    env = make_env(meta.env_id, meta.env_kwargs)
    codec = env.unwrapped.codec  # type: ignore[attr-defined]
    if by_kind and not isinstance(codec, JobwiseCodec):
        raise AgentError(f"{run} uses the {codec.name!r} codec; the breakdown by kind needs codec='jobwise'")
    model.set_env(env)
    key = json.dumps([meta.env_id, meta.env_kwargs, meta.teacher, seeds], sort_keys=True)
    episodes = {} if episodes is None else episodes
    if key not in episodes:
        episodes[key] = collect_demonstrations(meta.env_id, meta.env_kwargs, meta.teacher, seeds)
    demos = episodes[key]
    data = demos.transitions()
    pred = predict_actions(model.policy, data)
    agree: dict[str, Any] = dict(action_agreement(model.policy, data, pred=pred))
    ok = agrees(pred, data.acts)
    agree["agreement_ci95"] = list(workload_interval(ok, data.dones))
    if by_kind:
        capacity = env.unwrapped.state.capacity  # type: ignore[attr-defined]
        kinds = [decision_kinds(codec, capacity, data.obs, a) for a in (data.acts, pred)]
        agree["breakdown"] = breakdown(kinds[0], kinds[1], ok, same_set_type(codec, data.acts, pred))
        agree.update(tick_split(data.obs, ok))
    dsrs = [m["dsr"] for m in demos.episode_metrics() if "dsr" in m]
    teacher_dsr = float(sum(dsrs) / len(dsrs)) if dsrs else float("nan")
    return {
        "run": str(run),
        "decoding": getattr(model.policy, "decoding", "argmax"),
        "teacher": meta.teacher,
        "env_id": meta.env_id,
        "seeds": seeds,
        "teacher_dsr_in_env": teacher_dsr,
        **agree,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", type=Path, help="run folders (bc or dagger)")
    p.add_argument("--seeds", default="100000-100019", help="held-out workload seeds, e.g. '100000-100019'")
    p.add_argument("--out", type=Path, default=None, help="write the figures to this JSON file")
    p.add_argument(
        "--breakdown", action="store_true", help="split the states by the kind of the teacher's action (jobwise codec)"
    )
    p.add_argument(
        "--decoding",
        default=None,
        help="comma-separated deterministic decodings of the set network to measure each run under "
        f"(of {DECODINGS}; default: the run's own)",
    )
    args = p.parse_args(argv)
    try:
        seeds = parse_seeds(args.seeds)
        decodings: list[str | None] = [None]
        if args.decoding is not None:
            decodings = [check_decoding(d.strip()) for d in args.decoding.split(",")]
        for run in args.runs:  # every run loads (and takes every decoding) before any collection
            for decoding in decodings:
                load_agent(run, decoding=decoding)
        episodes: dict[str, Demonstrations] = {}
        rows = [
            measure(run, seeds, episodes, by_kind=args.breakdown, decoding=decoding)
            for run in args.runs
            for decoding in decodings
        ]
    except (AgentError, FileNotFoundError, ValueError) as err:
        p.error(str(err))
    for row in rows:
        parts = [
            f"{row['run']} ({row['decoding']}): agreement {100 * row['agreement']:.1f}% "
            f"[{100 * row['agreement_ci95'][0]:.1f}, {100 * row['agreement_ci95'][1]:.1f}] "
            f"over {row['states']:.0f} states of {len(row['seeds'])} workloads",
            f"the teacher following its labels meets DSR {row['teacher_dsr_in_env']:.3f}",
        ]
        if "agreement_edit" in row:
            parts.append(f"edits {100 * row['agreement_edit']:.1f}% / commits {100 * row['agreement_commit']:.1f}%")
        if "agreement_changing" in row:
            share = 100 * row["changing_share"]
            parts.append(f"at changing epochs {100 * row['agreement_changing']:.1f}% ({share:.1f}% of states)")
        print(", ".join(parts))
        if "tick_share" in row:
            print(
                f"  at round ticks ({100 * row['tick_share']:.1f}% of states) {100 * row['agreement_at_ticks']:.1f}%, "
                f"elsewhere {100 * row['agreement_off_ticks']:.1f}%"
            )
        for kind, b in row.get("breakdown", {}).items():
            did = ", ".join(f"{k} {100 * v:.0f}%" for k, v in sorted(b["clone"].items(), key=lambda kv: -kv[1]))
            share, agreement = 100 * b["share"], 100 * b["agreement"]
            typed = f"; the teacher's type {100 * b['clone_same_type']:.0f}%" if "clone_same_type" in b else ""
            print(f"  teacher {kind}: {share:.1f}% of states, clone agrees {agreement:.1f}% ({did}{typed})")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(rows, indent=1, sort_keys=True) + "\n"
        atomic_write(args.out, lambda tmp: tmp.write_text(text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
