"""The lookahead teacher of an expert-iteration run on held-out seeds, and its row beside the student's.

``teacher`` plays the run's teacher (the run's knobs; its rollouts finished by the run's final student, or by
a rule with ``--base``) on each workload seed, writing one JSON line per seed to ``--checkpoint`` as soon as
it is done (an interrupted run resumes). ``rows`` turns those lines into a ``kind: teacher`` row of
``docs/results/beat_the_experts.json`` (:func:`agents.leaderboard.make_row`): against the best expert and the
best constant event rule on the same seeds, paired, with 95% intervals. The student's row comes from
``hetgym evaluate RUN --seeds ... --beat-the-experts FILE``.

Usage::

    python scripts/studies/exit_eval.py teacher RUN --seeds 1000-1019 --checkpoint /tmp/exit-teacher.jsonl
    python scripts/studies/exit_eval.py rows RUN /tmp/exit-teacher.jsonl --out docs/results/beat_the_experts.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from agents.args import ExItArgs
from agents.common import load_agent, make_env
from agents.evaluation import evaluate_expert
from agents.exit import fixed_base, teacher_knobs
from agents.leaderboard import constant_rule_dsrs, make_row, markdown, scenario_name, upsert
from hetgym.experiments import default_policies
from hetgym.lookahead import LookaheadTeacher, play_lookahead
from hetgym.sweep.checks import parse_seeds


def _run_args(run: Path) -> ExItArgs:
    meta = json.loads((run / "agent.json").read_text())
    return ExItArgs(**meta["args"])


def cmd_teacher(ns: argparse.Namespace) -> int:
    args = _run_args(ns.run)
    model, meta = load_agent(ns.run)
    base: Any = model if ns.base == "student" else fixed_base(ns.base)
    done = set()
    if ns.checkpoint.exists():
        done = {json.loads(line)["seed"] for line in ns.checkpoint.open()}
    for seed in parse_seeds(ns.seeds):
        if seed in done:
            continue
        t0 = time.process_time()
        with LookaheadTeacher(base, teacher_knobs(args)) as teacher:
            out = play_lookahead(meta.env_id, meta.env_kwargs, seed, teacher)
        chosen = [r["chosen"] for r in out["records"]]
        line = {
            "seed": seed,
            "base": ns.base,
            "dsr": out["dsr"],
            "decisions": out["decisions"],
            "deviations": out["deviations"],
            "cpu_s": out["cpu_s"],
            "cpu_s_process": time.process_time() - t0,
            "chosen": chosen,
        }
        with ns.checkpoint.open("a") as fh:
            fh.write(json.dumps(line) + "\n")
        print(json.dumps({k: v for k, v in line.items() if k != "chosen"}), flush=True)
    return 0


def cmd_rows(ns: argparse.Namespace) -> int:
    _, meta = load_agent(ns.run)
    lines = [json.loads(line) for line in ns.checkpoint.open()]
    seeds = sorted(int(x["seed"]) for x in lines)
    experts = {}
    for name in default_policies():
        runs = evaluate_expert(name, meta.env_id, meta.env_kwargs, seeds)
        experts[name] = {int(s): float(d) for s, d in zip(runs["seed"], runs["dsr"], strict=True)}
    rules = constant_rule_dsrs(meta.env_id, meta.env_kwargs, seeds)
    chosen = np.concatenate([np.asarray(x["chosen"], dtype=np.int64) for x in lines])
    base = lines[0]["base"]
    decisions = sum(int(x["decisions"]) for x in lines)
    row = make_row(
        env_id=meta.env_id,
        scenario=scenario_name(make_env(meta.env_id, meta.env_kwargs).unwrapped.config),
        recipe=f"exit-teacher(lookahead over {base})",
        train_seed=int(meta.seed),
        agent={int(x["seed"]): float(x["dsr"]) for x in lines},
        experts=experts,
        rules=rules,
        modal_action_share=float(np.bincount(chosen).max() / len(chosen)),
        kind="teacher",
        cpu_hours=sum(float(x["cpu_s"]) for x in lines) / 3600,
    )
    upsert(ns.out, [row])
    print(markdown([row]), end="")
    print(f"teacher CPU-s per decision: {row['cpu_hours'] * 3600 / decisions:.2f} over {decisions} decisions")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("teacher", help="play the run's teacher on the seeds, one JSON line per seed")
    t.add_argument("run", type=Path)
    t.add_argument("--seeds", default="1000-1019")
    t.add_argument("--base", default="student", help="student (the run's final one), force, elasticflow or N")
    t.add_argument("--checkpoint", type=Path, required=True)
    t.set_defaults(func=cmd_teacher)
    r = sub.add_parser("rows", help="the teacher's row against the best expert and the best constant rule")
    r.add_argument("run", type=Path)
    r.add_argument("checkpoint", type=Path)
    r.add_argument("--out", type=Path, default=Path("docs/results/beat_the_experts.json"))
    r.set_defaults(func=cmd_rows)
    ns = parser.parse_args(argv)
    return int(ns.func(ns))


if __name__ == "__main__":
    raise SystemExit(main())
