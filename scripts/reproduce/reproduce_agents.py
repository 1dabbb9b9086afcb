"""Learning agents against their teacher and the experts on held-out workloads: the measured results table.

Usage::

    python scripts/reproduce/reproduce_agents.py                 # the default preset, reduced budgets (~1 h on 2 cores)
    python scripts/reproduce/reproduce_agents.py --preset tiny   # the Tiny preset (minutes)
    python scripts/reproduce/reproduce_agents.py --quick         # a smoke run of the whole pipeline (a few minutes)
    python scripts/reproduce/reproduce_agents.py --train-seeds 0-15 --epochs 20 --rounds 8 --ppo-steps 1000000 \\
        --eval-seeds 1000-1019                                   # a larger configuration (many hours)

The pipeline, each step one of the ``agents`` recipes (what ``hetgym train`` runs):

1. **BC-from-teacher**: the teacher's episodes on ``--train-seeds``, cloned (``agents.bc``); the action
   agreement is measured on the teacher's states on ``--val-seeds``.
2. **DAgger-from-teacher**: starting from that clone, ``--rounds`` rounds of one learner-driven episode
   each (linear beta schedule), the teacher labelling every state (``agents.dagger``).
3. **PPO fine-tuned**: MaskablePPO from the DAgger agent's weights for ``--ppo-steps`` steps (``agents.ppo``).
4. **PPO from scratch**: MaskablePPO from a random slot network, same steps.

Then every agent and every expert of the default comparison run on the same held-out workload seeds
(``--eval-seeds``, never used in training) and the table, the per-seed runs and the figure are written to
``--out`` (default ``results/agents``) as ``evaluation.*``, with ``summary.json`` holding the agreement
figures, the DAgger rounds, the training curves' end points, the commands and the machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

from agents import bc, dagger, ppo
from agents.args import BCArgs, DAggerArgs, PPOArgs, parse_seeds
from agents.common import atomic_write, load_agent, seed_everything
from agents.evaluation import compare_on_seeds
from hetgym.experiments import default_policies
from hetgym.progress import ProgressReport

REPO_ROOT = Path(__file__).resolve().parents[2]

PRESETS = {"default": "HetCluster-v0", "tiny": "HetCluster-Tiny-v0"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", choices=sorted(PRESETS), default="default")
    p.add_argument("--teacher", default="dancer")
    p.add_argument("--train-seeds", default="0-3")
    p.add_argument("--val-seeds", default="100")
    p.add_argument("--eval-seeds", default="1000-1004")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--epochs-per-round", type=int, default=3)
    p.add_argument("--ppo-steps", type=int, default=50_000)
    p.add_argument("--experts", default="all", help="'all' (the default comparison) or a comma-separated list")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--runs", type=Path, default=Path("runs") / "reproduce-agents")
    p.add_argument("--out", type=Path, default=Path("results") / "agents")
    p.add_argument("--quick", action="store_true", help="tiny budgets, Tiny preset: checks the pipeline runs")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    if args.quick:
        args.preset, args.train_seeds, args.val_seeds, args.eval_seeds = "tiny", "0-1", "100", "1000-1001"
        args.epochs, args.rounds, args.epochs_per_round, args.ppo_steps = 2, 1, 1, 1024
        args.experts = "dancer,edf"
    env_id = PRESETS[args.preset]
    progress = not args.no_progress
    seed_everything(args.seed)
    started = time.perf_counter()
    stamp = f"{args.preset}-{args.teacher}-s{args.seed}"
    runs = args.runs
    timings: dict[str, float] = {}

    def timed(name: str, fn: Any) -> Any:
        t0 = time.perf_counter()
        out = fn()
        timings[name] = round(time.perf_counter() - t0, 1)
        print(f"{name}: {timings[name]:.0f} s -> {out.path}", flush=True)
        return out

    shared = {"env_id": env_id, "seed": args.seed, "out_dir": str(runs), "eval_seeds": ""}
    common = {**shared, "teacher": args.teacher}
    bc_run = timed(
        "bc",
        lambda: bc.train(
            BCArgs(
                **common,
                train_seeds=args.train_seeds,
                val_seeds=args.val_seeds,
                epochs=args.epochs,
                run_name=f"bc-{stamp}",
            ),
            progress=progress,
        ),
    )
    dagger_run = timed(
        "dagger",
        lambda: dagger.train(
            DAggerArgs(
                **common,
                init=str(bc_run.path),
                train_seeds=args.train_seeds,
                val_seeds=args.val_seeds,
                rounds=args.rounds,
                epochs_per_round=args.epochs_per_round,
                run_name=f"dagger-{stamp}",
            ),
            progress=progress,
        ),
    )
    ft_run = timed(
        "ppo_finetune",
        lambda: ppo.train(
            PPOArgs(
                **shared,
                reference=args.teacher,
                init=str(dagger_run.path),
                total_timesteps=args.ppo_steps,
                run_name=f"ppo-ft-{stamp}",
            ),
            progress=progress,
        ),
    )
    scratch_run = timed(
        "ppo_scratch",
        lambda: ppo.train(
            PPOArgs(**shared, reference=args.teacher, total_timesteps=args.ppo_steps, run_name=f"ppo-scratch-{stamp}"),
            progress=progress,
        ),
    )
    experts = default_policies() if args.experts == "all" else [s for s in args.experts.split(",") if s]
    seeds = parse_seeds(args.eval_seeds)
    agents: dict[str, tuple[Any, str, dict[str, Any]]] = {}
    for label, run in (
        (f"BC ({args.teacher})", bc_run),
        (f"DAgger ({args.teacher})", dagger_run),
        (f"MaskablePPO fine-tuned (from DAgger, {args.ppo_steps} steps)", ft_run),
        (f"MaskablePPO from scratch ({args.ppo_steps} steps)", scratch_run),
    ):
        model, meta = load_agent(run.path)  # evaluate what was saved, as `hetgym evaluate` would
        agents[label] = (model, meta.env_id, meta.env_kwargs)
    t0 = time.perf_counter()
    with ProgressReport(enabled=progress, live=False, interval_s=0) as report:  # a line per run, with an ETA
        report.task("evaluate", len(seeds) * (len(agents) + len(experts)), unit="runs")
        evaluation = compare_on_seeds(
            agents,
            experts,
            seeds,
            teacher=args.teacher,
            max_steps=400_000,
            on_run=lambda name, seed: report.update(advance=1, detail=f"{name} seed {seed}"),
            title=f"{env_id}: agents from {args.teacher} and the experts, held-out seeds {seeds}",
        )
    timings["evaluation"] = round(time.perf_counter() - t0, 1)
    written = evaluation.save(args.out)
    print(evaluation.markdown())
    summary = {
        "command": "python scripts/reproduce/reproduce_agents.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "env_id": env_id,
        "env_kwargs": bc_run.meta.env_kwargs,
        "teacher": args.teacher,
        "train_seeds": parse_seeds(args.train_seeds),
        "val_seeds": parse_seeds(args.val_seeds),
        "eval_seeds": seeds,
        "bc": {k: bc_run.meta.results[k] for k in ("agreement", "train_agreement_sample", "train_states", "history")},
        "dagger": {"agreement": dagger_run.meta.results["agreement"], "rounds": dagger_run.meta.results["rounds"]},
        "ppo_finetune": {"timesteps": ft_run.meta.results["timesteps"], "episodes": ft_run.meta.results["episodes"]},
        "ppo_scratch": {
            "timesteps": scratch_run.meta.results["timesteps"],
            "episodes": scratch_run.meta.results["episodes"],
        },
        "timings_s": {**timings, "total": round(time.perf_counter() - started, 1)},
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "processor": platform.machine(),
        },
        "runs": {k: str(v.path) for k, v in (("bc", bc_run), ("dagger", dagger_run), ("ppo_ft", ft_run))},
    }
    atomic_write(args.out / "summary.json", lambda p: p.write_text(json.dumps(summary, indent=2, default=str)))
    print("wrote", ", ".join(str(w) for w in written), "and", args.out / "summary.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
