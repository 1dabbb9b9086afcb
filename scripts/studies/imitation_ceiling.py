"""The imitation ceiling: how often each action codec reproduces an expert's decision exactly.

Usage::

    python scripts/studies/imitation_ceiling.py                                  # every policy, seeds 1000-1002
    python scripts/studies/imitation_ceiling.py --policies dancer,srtf --seeds 1000 --envs HetCluster-Tiny-v0

A learner that imitates an expert through a codec can at best reproduce the decisions the codec can
express. Every expert runs under its own physics (``gym.make(env_id, codec=..., **expert_env_kwargs(policy))``,
i.e. ``policy_compat``), and a decision counts as reproduced when the codec's inverse map of the expert's
allocation is exact (:class:`~hetgym.envs.exactness.Encoding`: committing the actions leaves the simulator
exactly as the allocation would). Two trajectories (``--trajectories``):

* ``common``: one episode per environment, policy and seed, driven by the ``--driver`` codec's commits
  (default the one-shot ``multidiscrete``); at every decision epoch, before any action, every codec in
  ``--codecs`` encodes the expert's allocation on the env's own
  :class:`~hetgym.envs.state.DecisionState` (each restores the draft), so all are scored on the same epochs;
* ``own``: one episode per codec, the expert acting through it (what ``ExpertAgent`` and ``labelled_env``
  see when collecting demonstrations); an inexact decision is executed as expressed, so the episode can
  drift from the expert's own run.

Shares are given over all epochs and over the epochs at which the expert changed something (a window
job's GPUs or mode, or a rejection). Writes ``imitation_ceiling.csv`` (one row per environment,
trajectory, policy, seed and codec, with the misses by cause) and ``imitation_ceiling.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import gymnasium as gym
import pandas as pd

import hetgym  # noqa: F401  (registers the ids)
from hetgym.atomic import atomic_write
from hetgym.envs.codecs import CODECS, ActionCodec, make_codec
from hetgym.experts import ExpertTracker, expert_env_kwargs
from hetgym.seeds import parse_seeds
from hetgym.sim import Allocation, list_policies
from hetgym.sim.view import ClusterView

REPO_ROOT = Path(__file__).resolve().parents[2]

CODEC_NAMES = ("sequential", "multidiscrete", "jobwise", "jobwise-types", "score")
ENV_IDS = ("HetCluster-Tiny-v0", "HetCluster-v0")
#: Substrings of :func:`hetgym.envs.exactness.explain_gap` reasons (and codec notes) -> a short cause.
CAUSES = (
    ("GPU types;", "multi-type"),
    ("not on the count levels", "count levels"),
    ("execution mode", "mode"),
    ("-slot window", "window"),
    ("explicit server placements", "placement"),
    ("per-epoch cap", "action cap"),
    ("allow_reject=False", "rejection"),
)


def cause_of(reasons: tuple[str, ...]) -> str:
    """The main cause among an inexact encoding's reasons: the first of :data:`CAUSES` any names (or ``other``)."""
    for key, cause in CAUSES:
        if any(key in reason for reason in reasons):
            return cause
    return "other"


def changes_something(view: ClusterView, target: Allocation) -> bool:
    """Whether ``target`` rejects a job or changes an active job's GPU counts or mode."""
    if target.reject:
        return True
    for job in view.jobs:
        now, then = job.allocation or None, target.jobs.get(job.job_id) or None
        if (now is None) != (then is None):
            return True
        if now is not None and then is not None and (now.counts != then.counts or now.mode != then.mode):
            return True
    return False


def measure(env_id: str, policy: str, seed: int, driver: str, scored: tuple[str, ...]) -> list[dict[str, Any]]:
    """One expert episode driven through ``driver``; per codec in ``scored``, the epochs it reproduces exactly."""
    env = gym.make(env_id, **{**expert_env_kwargs(policy), "codec": driver})
    base = env.unwrapped
    settings = base.config.settings(base.throughput)
    scorers: dict[str, ActionCodec | None] = {}
    for name in scored:
        # The driver's own encoding is the tracker's; the others get their own instance on the env's state
        # (with their default knobs, an alias's preset ones added).
        scorers[name] = None if name == driver else make_codec(name, base.state, settings)
    tally = {name: Counter[str]() for name in scored}
    tracker = ExpertTracker(policy)
    env.reset(seed=seed)
    last_key = None
    epochs = changing = 0
    t0 = time.perf_counter()
    while True:
        action = tracker.label(env)  # at a new epoch: the expert's schedule() and the driver's encoding
        if base.view is not None and base.decision_key != last_key:
            last_key = base.decision_key
            target, own = tracker.target, tracker.encoding
            assert target is not None and own is not None
            changed = changes_something(base.view, target)
            epochs += 1
            changing += changed
            for name, codec in scorers.items():
                enc = own if codec is None else codec.encode(base.state, target)  # restores the draft
                t = tally[name]
                if enc.exact:
                    t["exact"] += 1
                    t["changing_exact"] += changed
                else:
                    t[f"cause:{cause_of(enc.reasons)}"] += 1
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    wall_s = time.perf_counter() - t0
    rows = []
    for name in scored:
        t = tally[name]
        causes = {k.split(":", 1)[1]: v for k, v in t.items() if k.startswith("cause:")}
        rows.append(
            {
                "env_id": env_id,
                "trajectory": "own" if scored == (driver,) else "common",
                "driver": driver,
                "policy": policy,
                "seed": seed,
                "codec": name,
                "epochs": epochs,
                "exact": t["exact"],
                "changing_epochs": changing,
                "changing_exact": t["changing_exact"],
                "misses_by_cause": ";".join(f"{k}={v}" for k, v in sorted(causes.items())),
                "stop": info["stop_reason"],
                "dsr": info["metrics"]["dsr"],
                "wall_s": round(wall_s, 2),
            }
        )
    what = "own" if scored == (driver,) else "common"
    print(f"{env_id} {policy} seed {seed} {what} via {driver}: {epochs} epochs, {wall_s:.1f} s", flush=True)
    return rows


def _share(num: int, den: int) -> str:
    return "n/a" if den == 0 else f"{100.0 * num / den:.1f}%"


def _cell(r: pd.Series) -> str:
    return (
        f"{_share(int(r['exact']), int(r['epochs']))} / {_share(int(r['changing_exact']), int(r['changing_epochs']))}"
    )


def _merge_causes(items: pd.Series) -> str:
    total: Counter[str] = Counter()
    for text in items:
        for part in str(text).split(";") if isinstance(text, str) else ():
            if part:
                key, value = part.split("=")
                total[key] += int(value)
    return ", ".join(f"{k} {v}" for k, v in total.most_common())


def table(part: pd.DataFrame, codecs: list[str]) -> str:
    """Per policy: epochs, and per codec the share reproduced over all epochs / over changing epochs."""
    keys = ["policy", "codec"]
    sums = part.groupby(keys, sort=False)[["epochs", "exact", "changing_epochs", "changing_exact"]].sum()
    causes = part.groupby(keys, sort=False)["misses_by_cause"].apply(_merge_causes)
    own = part["trajectory"].iloc[0] == "own"
    head = "| policy | " + ("" if own else "epochs (changing) | ") + " | ".join(f"`{c}`" for c in codecs)
    lines = [head + " | misses by main cause |", "|---|" + ("" if own else "---|") + "---|" * len(codecs) + "---|"]
    for policy in dict.fromkeys(part["policy"]):
        first = sums.loc[(policy, codecs[0])]
        epochs = "" if own else f"{int(first['epochs'])} ({int(first['changing_epochs'])}) | "
        why = "; ".join(f"`{c}`: {causes[(policy, c)]}" for c in codecs if causes[(policy, c)])
        cells = " | ".join(_cell(sums.loc[(policy, c)]) for c in codecs)
        lines.append(f"| {policy} | {epochs}{cells} | {why or '-'} |")
    total = sums.groupby(level="codec", sort=False).sum()
    t0 = total.loc[codecs[0]]
    epochs = "" if own else f"{int(t0['epochs'])} ({int(t0['changing_epochs'])}) | "
    lines.append(f"| **all** | {epochs}" + " | ".join(_cell(total.loc[c]) for c in codecs) + " | |")
    return "\n".join(lines)


def run(
    env_ids: list[str], policies: list[str], seeds: list[int], codecs: list[str], trajectories: list[str], driver: str
) -> pd.DataFrame:
    """Every measurement: per environment, policy and seed, the common trajectory and/or one per codec."""
    rows: list[dict[str, Any]] = []
    for env_id in env_ids:
        for policy in policies:
            for seed in seeds:
                if "common" in trajectories:
                    rows += measure(env_id, policy, seed, driver, tuple(codecs))
                if "own" in trajectories:
                    for codec in codecs:
                        rows += measure(env_id, policy, seed, codec, (codec,))
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policies", default="all", help="comma-separated policy names, or 'all' (every registered)")
    p.add_argument("--seeds", default="1000-1002")
    p.add_argument("--envs", default=",".join(ENV_IDS))
    p.add_argument("--codecs", default=",".join(CODEC_NAMES))
    p.add_argument("--trajectories", default="common,own", help="'common', 'own' or both (see the docstring)")
    p.add_argument("--driver", default="multidiscrete", help="the codec that drives the common trajectory")
    p.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "results")
    p.add_argument("--render", action="store_true", help="run nothing: rewrite the page from --out's CSV")
    args = p.parse_args(argv)
    if args.render:
        if not (args.out / "imitation_ceiling.csv").exists():
            p.error(f"--render: {args.out / 'imitation_ceiling.csv'} does not exist; run the study first")
        print(render(args.out))
        return 0
    policies = list(list_policies()) if args.policies == "all" else args.policies.split(",")
    seeds, env_ids, codecs = parse_seeds(args.seeds), args.envs.split(","), args.codecs.split(",")
    trajectories = args.trajectories.split(",")
    if not trajectories or any(t not in ("common", "own") for t in trajectories):
        p.error(f"--trajectories {args.trajectories!r}: give 'common', 'own' or 'common,own'")
    for name in [*codecs, args.driver]:
        CODECS.entry(name)  # an unknown codec fails now, naming the nearest
    t0 = time.perf_counter()
    frame = run(env_ids, policies, seeds, codecs, trajectories, args.driver)
    wall_s = time.perf_counter() - t0
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write(args.out / "imitation_ceiling.csv", lambda tmp: frame.to_csv(tmp, index=False))
    command = "python scripts/studies/imitation_ceiling.py " + " ".join(argv if argv is not None else sys.argv[1:])
    provenance = (
        f"Produced by `{command.strip()}`: {wall_s:.0f} s wall time, one process, on {platform.machine()} with "
        f"Python {platform.python_version()}."
    )
    text = page(frame, args.seeds, provenance)
    atomic_write(args.out / "imitation_ceiling.md", lambda tmp: tmp.write_text(text))
    print(text)
    return 0


def render(out: Path) -> str:
    """The page rewritten from ``out/imitation_ceiling.csv`` alone (no episode runs)."""
    frame = pd.read_csv(out / "imitation_ceiling.csv")
    seeds = sorted(int(s) for s in frame["seed"].unique())
    contiguous = seeds == list(range(seeds[0], seeds[-1] + 1))
    seeds_text = f"{seeds[0]}-{seeds[-1]}" if contiguous and len(seeds) > 1 else ",".join(map(str, seeds))
    episodes = frame.drop_duplicates(["env_id", "trajectory", "driver", "policy", "seed"])
    provenance = (
        "Measured by `python scripts/studies/imitation_ceiling.py --out docs/results` (its episodes: "
        f"{episodes['wall_s'].sum():,.0f} s in one process); this page rewritten from the CSV by `--render`."
    )
    text = page(frame, seeds_text, provenance)
    atomic_write(out / "imitation_ceiling.md", lambda tmp: tmp.write_text(text))
    return text


def _totals(frame: pd.DataFrame) -> pd.DataFrame:
    keys = ["env_id", "trajectory", "codec"]
    return frame.groupby(keys, sort=False)[["epochs", "exact", "changing_epochs", "changing_exact"]].sum()


def answer(frame: pd.DataFrame, codecs: list[str]) -> str:
    """The page's first lines: which codecs reproduce every decision, and where the others fall short."""
    sums = frame.groupby(["codec", "policy"], sort=False)[["epochs", "exact"]].sum()
    full = [c for c in codecs if (sums.loc[c, "exact"] == sums.loc[c, "epochs"]).all()]
    parts = []
    if full:
        parts.append(
            f"{', '.join(f'`{c}`' for c in full)} reproduce every decision of every policy measured, on every "
            "environment and both trajectories"
        )
    rest = [c for c in codecs if c not in full]
    if rest:
        totals = _totals(frame)
        short = []
        for c in rest:
            missed = [
                p for p in dict.fromkeys(frame["policy"]) if sums.loc[(c, p), "exact"] < sums.loc[(c, p), "epochs"]
            ]
            worst = totals.xs(c, level="codec")
            share = (worst["changing_exact"] / worst["changing_epochs"].where(worst["changing_epochs"] > 0)).min()
            causes = _merge_causes(frame.loc[frame["codec"] == c, "misses_by_cause"])
            short.append(
                f"`{c}` misses decisions of {len(missed)} of {frame['policy'].nunique()} policies "
                f"({', '.join(missed)}; causes: {causes or '-'}), down to {100 * share:.1f}% of the changing epochs "
                "of one environment and trajectory"
            )
        parts.append("; ".join(short))
    return "**Answer**: " + "; ".join(parts) + "."


def summary_table(frame: pd.DataFrame, codecs: list[str]) -> str:
    """Per environment and trajectory, per codec: the share reproduced over all epochs / over changing epochs."""
    totals = _totals(frame)
    lines = [
        "| environment | trajectory | " + " | ".join(f"`{c}`" for c in codecs) + " |",
        "|---|---|" + "---|" * len(codecs),
    ]
    for (env_id, trajectory), _ in frame.groupby(["env_id", "trajectory"], sort=False):
        cells = " | ".join(
            _cell(totals.loc[(env_id, trajectory, c)]) for c in codecs if (env_id, trajectory, c) in totals.index
        )
        lines.append(f"| `{env_id}` | {trajectory} | {cells} |")
    return "\n".join(lines)


def page(frame: pd.DataFrame, seeds: str, provenance: str) -> str:
    """The results page of ``frame`` (the rows of :func:`run`): the answer and a summary table, then per
    environment and trajectory the policies that some codec does not reproduce in full."""
    codecs = list(dict.fromkeys(frame["codec"]))
    driver = (
        str(frame.loc[frame["trajectory"] == "common", "driver"].iloc[0])
        if (frame["trajectory"] == "common").any()
        else ""
    )
    sections = []
    for (env_id, trajectory), part in frame.groupby(["env_id", "trajectory"], sort=False):
        title = "each codec on its own trajectory" if trajectory == "own" else f"common trajectory ({driver})"
        per_codec = part.groupby(["policy", "codec"], sort=False)[["epochs", "exact"]].sum()
        missed = [
            p for p in dict.fromkeys(part["policy"]) if (per_codec.loc[p, "exact"] < per_codec.loc[p, "epochs"]).any()
        ]
        total = part["policy"].nunique()
        note = f"The other {total - len(missed)} of {total} policies: 100.0% / 100.0% with every codec."
        body = (
            table(part[part["policy"].isin(missed)], codecs).replace("| **all** |", "| **these policies** |")
            if missed
            else "Every policy: 100.0% / 100.0% with every codec."
        )
        sections.append(f"### `{env_id}`: {title}\n\n{body}\n\n{note if missed else ''}".rstrip())
    tables = "\n\n".join(sections)
    return f"""# The imitation ceiling of each action codec

{answer(frame, codecs)}

{summary_table(frame, codecs)}

Cells: the share of the expert's decisions each codec reproduces exactly, over all decision epochs / over the
epochs at which the expert changed something (a job's GPUs or mode, or a rejection; at the other epochs it keeps
every allocation), epochs summed over every policy and seed. Per environment, trajectory, policy, seed and codec
(with the episode's DSR and stop reason): [imitation_ceiling.csv](imitation_ceiling.csv). {provenance}

## What is measured

The share of an expert's decisions (its allocation at a decision epoch) that each action codec reproduces
exactly: the codec's inverse map `encode(state, target)` gives actions whose commit leaves the simulator
exactly as the expert's allocation would (`hetgym.envs.exactness`). A learner that imitates the expert
through that codec can match it at most at these epochs.

Every registered policy runs under its own physics (`policy_compat`: its round, placer and execution
modes, every count level, a window holding every job), workload seeds {seeds}, two ways:

* **common trajectory**: one episode per policy and seed, driven by the `{driver}` codec's commits
  (where its column reads 100%, every decision was expressed and the episode is the expert's own run); at
  every epoch, before any action, every codec is asked for the expert's allocation on the same decision
  state, so all codecs are scored on the same epochs.
* **own trajectory**: one episode per policy, seed and codec, the expert acting through that codec
  (`ExpertAgent` / `labelled_env`, as when collecting demonstrations): when the codec cannot express a
  decision, the env runs what it could express and the episode goes its own way.

The last column of the tables below counts the epochs each codec missed by main cause (`multi-type`: the
expert puts a job on several GPU types, which `jobwise` and `score` cannot start and `jobwise-types` can;
`placement`: an explicit server placement other than keeping a job where it is).

## The policies some codec does not reproduce in full

{tables}
"""


if __name__ == "__main__":
    raise SystemExit(main())
