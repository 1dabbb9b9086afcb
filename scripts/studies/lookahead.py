"""The lookahead teacher against the rules it improves on: DSR per workload, paired, and its cost per decision.

Per workload seed (each written to ``--checkpoint`` as soon as it is done, so an interrupted run resumes):
the DSR of ElasticFlow (action 0) and of the "force" rule through the event interface, of the lookahead
teacher over the base policy ``--base`` (sampled futures), and, unless ``--no-oracle``, of the same
lookahead with the true future: "oracle (hindsight)", a reference, never a policy result.

Usage::

    python scripts/studies/lookahead.py run --env-id HetClusterEvents-Tiny-v0 --seeds 1000-1019 \\
        --base force --checkpoint /tmp/la-tiny-force
    python scripts/studies/lookahead.py summary /tmp/la-tiny-force /tmp/la-tiny-ef \\
        --out docs/results/lookahead_probe.json
    # a scenario of the suite (its gym.make kwargs), here a real-trace window, over ElasticFlow's action 0
    python scripts/studies/lookahead.py run --suite trace-cluster09 --seeds 1000-1004 --base elasticflow \\
        --checkpoint /tmp/la-c09-ef

``summary`` pairs each seed's teacher with both rules (mean difference, 95% t interval, wins/ties/losses in
jobs) and reports the CPU-s per decision (this process plus its rollout workers).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from hetgym.atomic import atomic_write
from hetgym.lookahead import ORACLE_LABEL, LookaheadKnobs, LookaheadTeacher, play_lookahead, play_rule
from hetgym.lookahead.episodes import hindsight_oracle
from hetgym.stats import paired_interval
from hetgym.sweep.checks import parse_seeds

RULES = {"elasticflow": 0, "force": "force"}
KNOB_ARGS = ("k_initial", "k_step", "k_max", "min_gain_jobs", "test", "alpha", "close_gain_jobs", "horizon_h")


def _write_json(path: Path, data: dict[str, Any]) -> None:
    text = json.dumps(data, indent=1) + "\n"
    atomic_write(path, lambda tmp: tmp.write_text(text))


def _environment(args: argparse.Namespace) -> tuple[str, dict[str, Any] | None]:
    """The env id and ``gym.make`` kwargs: ``--env-id`` alone, or a suite scenario's (``--suite``)."""
    if args.suite is None:
        if args.action_set is not None:
            raise SystemExit("--action-set goes with --suite (an id names its own action set)")
        return args.env_id, None
    from hetgym.suite import get

    scenario = get(args.suite)
    scenario.check_data()
    kwargs = scenario.kwargs("HetClusterEvents-v0")
    if args.action_set is not None:
        kwargs["action_set"] = args.action_set
    return "HetClusterEvents-v0", kwargs


def _row_path(folder: Path, seed: int) -> Path:
    return folder / f"seed-{seed}.json"


def run(args: argparse.Namespace) -> int:
    folder: Path = args.checkpoint
    folder.mkdir(parents=True, exist_ok=True)
    knobs = {k: getattr(args, k) for k in KNOB_ARGS if getattr(args, k) is not None}
    if args.prune_to is not None:
        knobs["prune_to"] = None if args.prune_to == 0 else args.prune_to
    knobs["workers"] = args.workers
    LookaheadKnobs.make(**knobs)  # a bad knob fails before any work
    env_id, env_kwargs = _environment(args)
    setup = {
        "env_id": env_id,
        "suite": args.suite,
        "env_kwargs": env_kwargs,
        "base": args.base,
        "knobs": knobs,
        "command": shlex.join(sys.argv),
    }
    setup_path = folder / "setup.json"
    if setup_path.exists():
        old = json.loads(setup_path.read_text())
        same = ("env_id", "suite", "env_kwargs", "base", "knobs")
        if {k: old.get(k) for k in same} != {k: setup[k] for k in same}:
            print(f"{folder} holds a run with other settings ({old['command']}); give another --checkpoint")
            return 2
    else:
        _write_json(setup_path, setup)
    seeds = parse_seeds(args.seeds)
    todo = [s for s in seeds if not _row_path(folder, s).exists()]
    print(f"{len(seeds) - len(todo)} of {len(seeds)} seeds done in {folder}; {len(todo)} to run", flush=True)
    base = RULES[args.base]
    for seed in todo:
        t0 = time.process_time()
        row: dict[str, Any] = {"seed": seed}
        for name, rule in RULES.items():
            row[f"rule_{name}"] = play_rule(env_id, env_kwargs, seed, rule)
        if not args.no_teacher:
            with LookaheadTeacher(base, LookaheadKnobs.make(**knobs)) as teacher:
                row["teacher"] = _brief(play_lookahead(env_id, env_kwargs, seed, teacher))
        if not args.no_oracle:
            oracle_knobs = {k: v for k, v in knobs.items() if k in ("min_gain_jobs", "horizon_h", "workers")}
            row["oracle"] = _brief(hindsight_oracle(env_id, env_kwargs, seed, base_action=base, **oracle_knobs))
        _write_json(_row_path(folder, seed), row)
        oracle = row.get("oracle", {}).get("dsr", float("nan"))
        out = row.get("teacher", {"dsr": float("nan"), "deviations": 0, "decisions": 0})
        print(
            f"seed {seed}: teacher {out['dsr']:.4f} ({out['deviations']} deviations in {out['decisions']} decisions), "
            f"rule {row[f'rule_{args.base}']['dsr']:.4f}, {ORACLE_LABEL} {oracle:.4f}; "
            f"{time.process_time() - t0:.1f} CPU-s here",
            flush=True,
        )
    return 0


def _brief(out: dict[str, Any]) -> dict[str, Any]:
    """An episode's result without the full records: what the summary reads, per decision in short."""
    records = out["records"]
    return {
        "label": out["label"],
        "dsr": out["dsr"],
        "cpu_s": out["cpu_s"],
        "decisions": out["decisions"],
        "deviations": out["deviations"],
        "futures": out["futures"],
        "chosen": [int(r["chosen"]) for r in records],
        "decision_cpu_s": [round(r["cpu_s"], 4) for r in records],
        "deviated_at": [
            {k: r[k] for k in ("decision", "base_action", "chosen", "margin_jobs", "futures")}
            for r in records
            if r["deviated"]
        ],
    }


def _paired(a: list[float], b: list[float], jobs_per_dsr: float) -> dict[str, Any]:
    ci = paired_interval(a, b)
    diff_jobs = np.round((np.asarray(a) - np.asarray(b)) * jobs_per_dsr, 6)
    return {
        "mean": ci.mean,
        "ci95_low": ci.low,
        "ci95_high": ci.high,
        "wins": int((diff_jobs > 0).sum()),
        "ties": int((diff_jobs == 0).sum()),
        "losses": int((diff_jobs < 0).sum()),
        "per_seed_jobs": diff_jobs.tolist(),
    }


def summary(args: argparse.Namespace) -> int:
    out: dict[str, Any] = {"runs": []}
    for folder in args.checkpoints:
        setup = json.loads((folder / "setup.json").read_text())
        rows = sorted((json.loads(p.read_text()) for p in folder.glob("seed-*.json")), key=lambda r: r["seed"])
        if not rows:
            continue
        import gymnasium as gym

        import hetgym  # noqa: F401  (registers the ids)

        env: Any = gym.make(setup["env_id"], **(setup.get("env_kwargs") or {})).unwrapped
        jobs_per_dsr = float(env.config.workload.num_jobs)
        env.close()
        entry: dict[str, Any] = {**setup, "seeds": [r["seed"] for r in rows], "dsr": {}, "per_seed": {}}
        for name in RULES:
            values = [r[f"rule_{name}"]["dsr"] for r in rows]
            entry["dsr"][name] = float(np.mean(values))
            entry["per_seed"][name] = values
        if all("teacher" in r for r in rows):
            teacher = [r["teacher"]["dsr"] for r in rows]
            per_decision = np.concatenate([r["teacher"]["decision_cpu_s"] for r in rows])
            entry["teacher_label"] = rows[0]["teacher"]["label"]
            entry["dsr"]["teacher"] = float(np.mean(teacher))
            entry["per_seed"]["teacher"] = teacher
            entry["teacher_minus"] = {name: _paired(teacher, entry["per_seed"][name], jobs_per_dsr) for name in RULES}
            entry["deviations_per_episode"] = float(np.mean([r["teacher"]["deviations"] for r in rows]))
            entry["futures_per_decision"] = float(
                np.sum([r["teacher"]["futures"] for r in rows]) / np.sum([r["teacher"]["decisions"] for r in rows])
            )
            entry["cpu_s_per_decision"] = {
                "median": float(np.median(per_decision)),
                "mean": float(per_decision.mean()),
                "max": float(per_decision.max()),
            }
            entry["cpu_s_per_episode_teacher"] = float(np.mean([r["teacher"]["cpu_s"] for r in rows]))
        if all("oracle" in r for r in rows):
            oracle = [r["oracle"]["dsr"] for r in rows]
            entry["dsr"][ORACLE_LABEL] = float(np.mean(oracle))
            entry["per_seed"][ORACLE_LABEL] = oracle
            entry["oracle_minus_base_rule"] = _paired(oracle, entry["per_seed"][setup["base"]], jobs_per_dsr)
            entry["oracle_deviations_per_episode"] = float(np.mean([r["oracle"]["deviations"] for r in rows]))
        out["runs"].append(entry)
    if args.append and args.out is not None and args.out.exists():
        # Keep the file's other runs (a run made again replaces its earlier entry); notes are joined.
        old = json.loads(args.out.read_text())
        fresh = {r["command"] for r in out["runs"]}
        out["runs"] = [r for r in old.get("runs", []) if r.get("command") not in fresh] + out["runs"]
        out["note"] = " ".join(n for n in (old.get("note", ""), args.note or "") if n)
    else:
        out["note"] = args.note or ""
    text = json.dumps(out, indent=1) + "\n"
    if args.out:
        atomic_write(args.out, lambda p: p.write_text(text))
    print(text)
    return 0


def _chosen(brief: dict[str, Any], base: str) -> list[int]:
    """The action taken at each decision: recorded, or (older rows of an action-0 base) rebuilt from the
    deviations, every other decision having taken the base action 0."""
    if "chosen" in brief:
        return [int(a) for a in brief["chosen"]]
    if RULES[base] != 0:
        raise SystemExit("this run's rows predate the per-decision record; rerun it to publish its modal action")
    chosen = [0] * int(brief["decisions"])
    for d in brief["deviated_at"]:
        chosen[int(d["decision"])] = int(d["chosen"])
    return chosen


def _recipe(setup: dict[str, Any]) -> str:
    knobs = setup["knobs"]
    k = f"K={knobs.get('k_initial', 4)}..{knobs.get('k_max', 10)}"
    horizon = f", {knobs['horizon_h']:g} h" if knobs.get("horizon_h") is not None else ""
    actions = (setup.get("env_kwargs") or {}).get("action_set")
    table = f", {actions} actions" if actions else ""
    test = f", {knobs['test']} test" if knobs.get("test", "t") != "t" else ""
    return f"lookahead(sampled; base {setup['base']}, {k}{test}{horizon}{table})"


def publish(args: argparse.Namespace) -> int:
    """Teacher rows (``kind: teacher``) of suite runs against the best expert and the best constant rule."""
    from agents.leaderboard import KEY, constant_rule_dsrs, make_row, markdown, read_rows
    from hetgym.suite import get
    from hetgym.suite.scores import EXPERTS, expert_scores

    rows = []
    for folder in args.checkpoints:
        setup = json.loads((folder / "setup.json").read_text())
        if setup.get("suite") is None:
            raise SystemExit(f"{folder}: not a --suite run; publish compares suite scenarios only")
        done = sorted((json.loads(p.read_text()) for p in folder.glob("seed-*.json")), key=lambda r: r["seed"])
        done = [r for r in done if "teacher" in r]
        seeds = [int(r["seed"]) for r in done]
        if len(seeds) < 2:
            raise SystemExit(f"{folder}: {len(seeds)} seeds with a teacher; a paired interval needs 2 or more")
        scenario = get(setup["suite"])
        experts = {name: dict(zip(seeds, expert_scores(scenario, name, seeds)[0], strict=True)) for name in EXPERTS}
        rules = constant_rule_dsrs(setup["env_id"], setup["env_kwargs"], seeds)
        chosen = np.concatenate([np.asarray(_chosen(r["teacher"], setup["base"]), dtype=np.int64) for r in done])
        per_decision = np.concatenate([r["teacher"]["decision_cpu_s"] for r in done])
        row = make_row(
            env_id=setup["env_id"],
            scenario=setup["suite"],
            recipe=_recipe(setup),
            train_seed=0,
            agent={int(r["seed"]): float(r["teacher"]["dsr"]) for r in done},
            experts=experts,
            rules=rules,
            modal_action_share=float(np.bincount(chosen).max() / len(chosen)),
            kind="teacher",
            cpu_hours=sum(float(r["teacher"]["cpu_s"]) for r in done) / 3600,
        )
        row["cpu_s_per_decision"] = float(per_decision.mean())
        row["deviations"] = int(sum(r["teacher"]["deviations"] for r in done))
        row["decisions"] = len(chosen)
        row["command"] = setup["command"]
        rows.append(row)
    # Like agents.leaderboard.upsert, keeping the fields it does not know (CPU-s per decision, the command).
    kept = {tuple(r[k] for k in KEY): r for r in read_rows(args.out)}
    for row in rows:
        kept[tuple(row[k] for k in KEY)] = row
    out = sorted(kept.values(), key=lambda r: (r["scenario"], r["env_id"], r["recipe"], r["train_seed"]))
    text = json.dumps(out, indent=1) + "\n"
    atomic_write(args.out, lambda p: p.write_text(text))
    print(markdown(rows), end="")
    for row in rows:
        print(f"{row['recipe']}: {row['cpu_s_per_decision']:.2f} CPU-s per decision, {row['deviations']} deviations")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run", help="play the rules, the teacher and the oracle per seed (checkpointed)")
    p.add_argument("--env-id", default="HetClusterEvents-Tiny-v0")
    p.add_argument("--seeds", default="1000-1019")
    p.add_argument("--base", choices=sorted(RULES), default="force", help="the base policy of the teacher")
    p.add_argument("--checkpoint", type=Path, required=True, help="folder of per-seed results (resumed)")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--no-oracle", action="store_true")
    p.add_argument("--no-teacher", action="store_true", help="the rules and the oracle only (its headroom)")
    p.add_argument("--suite", help="a scenario of hetgym.suite: its gym.make kwargs on HetClusterEvents-v0")
    p.add_argument("--action-set", help="with --suite: the event action table (admission = v0, share = v1)")
    p.add_argument("--prune-to", type=int, help="leaders kept for added futures (0: all)")
    for knob in KNOB_ARGS:
        kind = str if knob == "test" else (int if knob.startswith("k_") else float)
        p.add_argument("--" + knob.replace("_", "-"), type=kind, dest=knob)
    s = sub.add_parser("summary", help="pair the checkpointed seeds and write the JSON")
    s.add_argument("checkpoints", type=Path, nargs="+")
    s.add_argument("--out", type=Path)
    s.add_argument("--note", help="a sentence stored with the result")
    s.add_argument("--append", action="store_true", help="keep the other runs already in --out")
    b = sub.add_parser("publish", help="teacher rows of --suite runs into beat_the_experts.json")
    b.add_argument("checkpoints", type=Path, nargs="+")
    b.add_argument("--out", type=Path, default=Path("docs/results/beat_the_experts.json"))
    args = parser.parse_args(argv)
    return {"run": run, "summary": summary, "publish": publish}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
