"""``hetgym train`` (every recipe: BC, DAgger, PPO, MaskablePPO, expert iteration and the event interface's
PPO, kickstarting and curriculum) and ``hetgym evaluate MODEL``.

The ``agents`` package contributes both commands to the ``hetgym`` command through the ``hetgym.commands``
entry point (``pyproject.toml``), as ``baselines`` contributes policies through ``hetgym.policies``: the
``hetgym`` package never imports ``agents``. Both commands import torch and the learning modules only when
they run.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

from hetgym.cli._common import console, parse_value
from hetgym.progress import ProgressReport

#: The recipes of the event-driven interface (flat observations, an MLP; ``--preset`` picks an event id).
EVENT_RECIPES = ("exit", "events-ppo", "kickstart", "curriculum")
RECIPES = ("bc", "dagger", "ppo", "maskable-ppo", *EVENT_RECIPES)
#: ``--preset`` names of the event-driven recipes (:data:`EVENT_RECIPES`).
EVENT_PRESET_IDS = {"default": "HetClusterEvents-v0", "tiny": "HetClusterEvents-Tiny-v0"}
#: ``--preset`` names: the newest ids, those of the interface built for learning (``interface="v1"``).
PRESET_IDS = {"default": "HetCluster-v1", "tiny": "HetCluster-Tiny-v1"}
#: The expert bc and dagger learn from when no ``--teacher`` is given, and ppo's default ``--reference``.
DEFAULT_EXPERT = "dancer"


#: The packages ``train`` and ``evaluate`` need beyond hetgym's own (the ``rl`` extra).
RL_PACKAGES = ("torch", "stable_baselines3", "sb3_contrib")


def require_rl(command: str) -> None:
    """Raise a ``ValueError`` naming the install command when the ``rl`` extra's packages are missing."""
    import importlib.util

    missing = [name for name in RL_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        # Plain pip on Linux resolves PyPI's CUDA build of torch: a machine without a GPU wants the CPU-only
        # build from PyTorch's own index, so the hint names both (docs/install.md says the same).
        torch_step = (
            "first torch 2.13.0: on Linux without a GPU the CPU-only build, python -m pip install torch==2.13.0 "
            "--index-url https://download.pytorch.org/whl/cpu; with an NVIDIA GPU, or on macOS or Windows, "
            "python -m pip install -c constraints.txt torch==2.13.0 (PyPI's build); then "
            if "torch" in missing
            else ""
        )
        raise ValueError(
            f"hetgym {command} needs {', '.join(missing)} (the rl extra): {torch_step}"
            "python -m pip install -c constraints.txt -e '.[rl]' (see docs/install.md)"
        )


def gap_role(metas: Any, policy: str | None) -> str:
    """``teacher`` when every agent (their :class:`~agents.common.AgentMeta` records) learned from ``policy``
    (bc, dagger, a clone fine-tuned against it), else ``reference``: PPO from scratch learns from no teacher
    and is only measured against its reference, and the evaluation's legend must not call that a teacher."""
    metas = list(metas)
    return "teacher" if metas and policy is not None and all(m.teacher == policy for m in metas) else "reference"


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``train`` and ``evaluate`` to the ``hetgym`` command's subcommands."""
    from agents.args import RECIPE_ARGS
    from agents.cli_args import add_dataclass_options

    p = sub.add_parser(
        "train",
        help="train an agent: behaviour cloning, DAgger, PPO or MaskablePPO (from scratch or from a clone), "
        "expert iteration, and the event interface's PPO, kickstarting and curriculum",
        description=f"Train an agent in {PRESET_IDS['default']} (--preset tiny: {PRESET_IDS['tiny']}) and save "
        "it (model.pt, its weights, + agent.json) in a run folder. bc and dagger learn from --teacher; ppo and "
        "maskable-ppo train from scratch, or fine-tune a saved clone given with --init, and are measured against "
        f"--reference. {', '.join(EVENT_RECIPES)} act in {EVENT_PRESET_IDS['default']} (--preset tiny: "
        f"{EVENT_PRESET_IDS['tiny']}): expert iteration; MaskablePPO from scratch; kickstarted from --teacher's "
        "clone; through a curriculum of --stages (the last three resume with --resume --run-name NAME). --smoke "
        "checks any recipe end to end in under a minute of CPU time. docs/agents.md gives a larger "
        "configuration. Progress goes to standard output (a bar on a terminal, else a line every "
        "HETGYM_PROGRESS_S=10 seconds), losses and episode metrics to TensorBoard (RUN/tb).",
    )
    p.add_argument("--algo", choices=RECIPES, default="bc", help="the recipe (default: bc)")
    p.add_argument(
        "--teacher",
        metavar="NAME[:KEY=VALUE,...]",
        help="bc/dagger: the expert to learn from, with its knobs if any, e.g. dancer:memory=observed (the label "
        f"DAgger wants: a function of the state; see docs/agents.md) (default: {DEFAULT_EXPERT}); kickstart: "
        "elasticflow, force-any or a registered policy's closest choices (default: force-any)",
    )
    p.add_argument(
        "--reference",
        metavar="NAME[:KEY=VALUE,...]",
        help="ppo/maskable-ppo: the expert the agent is measured against (DSR gap); from scratch its round "
        f"length also sets the environment's (default: {DEFAULT_EXPERT}). bc and dagger are measured against "
        "their teacher",
    )
    p.add_argument("--preset", choices=sorted(PRESET_IDS), help="shorthand for --env-id (default or tiny)")
    p.add_argument(
        "-e",
        "--env",
        action="append",
        metavar="KEY=VALUE",
        help="a gym.make override, e.g. queue_slots=16 or sim.round_s=120 (repeatable)",
    )
    p.add_argument(
        "--save-as",
        choices=("maskable-ppo", "ppo"),
        help="bc/dagger: the algorithm the clone is saved for (default: maskable-ppo)",
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars (or lines, off a terminal)")
    p.add_argument(
        "--smoke",
        action="store_true",
        help="tiny budgets that run any recipe end to end in under a minute of one core's time (one teacher "
        "episode, one epoch, one DAgger round, 512 PPO steps, one held-out workload; agents.args.SMOKE_BUDGETS); "
        "options given explicitly win; saved under runs/smoke unless --out-dir is given",
    )
    add_dataclass_options(p, RECIPE_ARGS, "recipe options")
    p.set_defaults(func=cmd_train)

    e = sub.add_parser(
        "evaluate",
        help="evaluate saved agents and the experts on the same held-out seeds (table + figure)",
        description="Run each saved agent (a run folder, or a model's .pt weights with agent.json beside it) "
        "and every expert (or a chosen list) on the same held-out workload seeds, or on a trace; print one "
        "table and write evaluation.csv/.md, the per-seed runs and evaluation.png. Saved agents are rebuilt "
        "from weights and JSON, never unpickled; an SB3 .zip archive loads only with --trust-pickle.",
    )
    e.add_argument(
        "models",
        nargs="*",
        type=Path,
        metavar="MODEL",
        help="run folders or model files (.pt; .zip with --trust-pickle)",
    )
    e.add_argument("--seeds", help="held-out workload seeds (default 1000-1004; with --suite, 1000-1019)")
    e.add_argument("--experts", default="all", help="'all' (default), 'none', or a comma-separated list")
    e.add_argument("--trace", help="evaluate on this canonical trace instead of drawn workloads")
    e.add_argument("--labels", help="comma-separated names of the models in the table")
    e.add_argument("--preset", choices=sorted(PRESET_IDS), help="with no MODEL: the environment of the experts")
    e.add_argument("--out", type=Path, help="output folder (default results/evaluate)")
    e.add_argument(
        "--random", action="store_true", help="add a uniformly random masked agent (the floor) on the same workloads"
    )
    e.add_argument(
        "--trust-pickle",
        action="store_true",
        help="load SB3 .zip archives (a run folder's model.zip of an earlier version, or any SB3 model): their "
        "data is pickle, and unpickling runs any code the file carries, so give it only for files you made or "
        "trust (docs/security.md); python -m agents.convert turns one into the safe format",
    )
    e.add_argument("--algo", help="for a model .zip without agent.json: its SB3 algorithm (ppo or maskable-ppo)")
    e.add_argument("--env-id", help="for a model .zip without agent.json: the registered env id it acts in")
    e.add_argument(
        "--env",
        action="append",
        metavar="KEY=VALUE",
        help="gym.make override of the env of models without agent.json (sim.round_s=60 nests); repeatable",
    )
    e.add_argument(
        "--decoding",
        help="deterministic decoding of the set network's actions for every MODEL: argmax or kind-first (the "
        "likeliest kind of action, then the likeliest action of that kind; docs/agents.md); default: each "
        "model's own",
    )
    e.add_argument(
        "--ensemble",
        action="store_true",
        help="the MODELs act as one agent on the mean of their action probabilities (agents.ensemble; one "
        "env for all; --labels then names it)",
    )
    e.add_argument(
        "--beat-the-experts",
        type=Path,
        metavar="FILE.json",
        help="also write one row per MODEL against the best of the --experts (paired DSR difference, 95%% "
        "interval) into this JSON list, replacing the rows of the same env, scenario, recipe and training seed "
        "(agents.leaderboard; docs/results/beat_the_experts.json)",
    )
    e.add_argument("--max-steps", type=int, default=400_000, help="step limit of an agent's episode")
    e.add_argument("--no-plots", action="store_true", help="skip the figure")
    e.add_argument("--no-progress", action="store_true", help="hide the progress bar (or lines, off a terminal)")
    from agents.suite_cli import add_suite_options

    add_suite_options(e)
    e.set_defaults(func=cmd_evaluate)


def parse_env_overrides(items: list[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` items (``sim.round_s=60`` nests) into ``gym.make`` overrides (YAML values)."""
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"--env {item!r} is not KEY=VALUE (e.g. queue_slots=16 or sim.round_s=120)")
        key, text = item.split("=", 1)
        value = parse_value(text)
        parts = key.strip().split(".")
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"--env {item!r}: {part!r} was already given a value")
        node[parts[-1]] = value
    return out


def cmd_train(args: argparse.Namespace) -> int:
    require_rl("train")
    from agents.args import RECIPE_ARGS, BCArgs, DAggerArgs, PPOArgs, RunArgs, smoke_options
    from agents.cli_args import dataclass_from_options

    classes = list(RECIPE_ARGS)
    env = parse_env_overrides(args.env)
    if args.preset and getattr(args, "env_id", None):
        raise ValueError("give --preset or --env-id, not both")
    fixed: dict[str, Any] = {"env": env}
    recipe_class: type[RunArgs] = next((c for c in classes if c.choice == args.algo), PPOArgs)
    if args.algo in EVENT_RECIPES:
        return _train_events(args, recipe_class, classes, fixed)
    if args.algo in ("bc", "dagger"):
        if args.reference is not None:
            raise ValueError(
                f"--reference applies to ppo and maskable-ppo; {args.algo} is measured against its --teacher"
            )
        fixed["teacher"] = args.teacher or DEFAULT_EXPERT
    else:
        if args.teacher is not None and args.reference is not None:
            raise ValueError("give --reference (PPO learns from no teacher); --teacher is its older name")
        if args.teacher is not None:
            print(
                f"note: --teacher with --algo {args.algo}: PPO imitates no teacher; {args.teacher} is the "
                f"reference (--reference {args.teacher})",
                file=sys.stderr,
            )
        fixed["reference"] = args.reference or args.teacher or DEFAULT_EXPERT
        _refuse_event_id(getattr(args, "env_id", None), args.algo)
    if args.preset:
        fixed["env_id"] = PRESET_IDS[args.preset]
    if args.smoke:
        for key, value in smoke_options(recipe_class, vars(args)).items():
            setattr(args, key, value)
    started = time.perf_counter()
    if args.algo == "bc":
        from agents import bc

        fixed["algo"] = args.save_as or "maskable-ppo"
        result = bc.train(dataclass_from_options(BCArgs, args, classes, **fixed), progress=not args.no_progress)
    elif args.algo == "dagger":
        from agents import dagger

        fixed["algo"] = args.save_as or "maskable-ppo"
        result = dagger.train(dataclass_from_options(DAggerArgs, args, classes, **fixed), progress=not args.no_progress)
    else:
        if args.save_as:
            raise ValueError("--save-as applies to bc and dagger; ppo runs are saved as their own algorithm")
        fixed["algo"] = args.algo
        ppo_args = dataclass_from_options(PPOArgs, args, classes, **fixed)  # checks --n-envs and --vec first
        from agents import ppo

        result = ppo.train(ppo_args, progress=not args.no_progress)
    print_run_summary(result.meta, result.path, time.perf_counter() - started, smoke=args.smoke)
    return 0


def _refuse_event_id(env_id: str | None, algo: str) -> None:
    """``--algo ppo|maskable-ppo`` acts in the window ids; on an event id, name the recipes that act there."""
    if env_id is not None and str(env_id).startswith("HetClusterEvents"):
        raise ValueError(
            f"--algo {algo} trains the window interface (HetCluster-*); on {env_id} give --algo events-ppo "
            "(MaskablePPO from scratch), kickstart, curriculum or exit"
        )


def _train_events(args: argparse.Namespace, recipe_class: type, classes: list[type], fixed: dict[str, Any]) -> int:
    """The event-driven recipes (:data:`EVENT_RECIPES`): expert iteration (:mod:`agents.exit`) and the PPO
    recipes of :mod:`agents.event_recipes`."""
    from agents.args import smoke_options
    from agents.cli_args import dataclass_from_options

    takes_teacher = args.algo == "kickstart"
    if (args.teacher is not None and not takes_teacher) or args.reference is not None or args.save_as is not None:
        drop = "--reference and --save-as" if takes_teacher else "--teacher, --reference and --save-as"
        raise ValueError(f"--algo {args.algo} takes no {drop}: drop them")
    if takes_teacher and args.teacher is not None:
        fixed["teacher"] = args.teacher
    if args.preset:
        fixed["env_id"] = EVENT_PRESET_IDS[args.preset]
    if args.smoke:
        for key, value in smoke_options(recipe_class, vars(args)).items():
            setattr(args, key, value)
    recipe_args = dataclass_from_options(recipe_class, args, classes, **fixed)
    started = time.perf_counter()
    if args.algo == "exit":
        from agents import exit as expert_iteration

        result = expert_iteration.train(recipe_args, progress=not args.no_progress)
    else:
        from agents import event_recipes

        result = event_recipes.train(recipe_args, progress=not args.no_progress)
    print_run_summary(result.meta, result.path, time.perf_counter() - started, smoke=args.smoke)
    return 0


def _pct(x: Any) -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{100 * float(x):.1f}%"


def print_run_summary(meta: Any, path: Path, wall_s: float, *, smoke: bool = False) -> None:
    """The figures a run measured, as a table (``smoke``: says that they check the pipeline only)."""
    from rich.table import Table

    res = meta.results
    reference = getattr(meta, "reference", None)
    who = f"teacher: {meta.teacher}" if meta.teacher else "no teacher"
    if reference and reference != meta.teacher:
        who += f", reference: {reference}"
    table = Table(
        title=f"{meta.recipe} on {meta.env_id} ({who}), saved to {path}",
        caption="--smoke budgets: these figures check that the pipeline runs, not what the recipe learns"
        if smoke
        else None,
    )
    table.add_column("figure")
    table.add_column("value", justify="right")
    agree = res.get("agreement")
    if agree:
        table.add_row("action agreement with the teacher, held-out states", _pct(agree.get("agreement")))
        if "agreement_edit" in agree:
            table.add_row(
                "  on the teacher's edits / commits",
                f"{_pct(agree['agreement_edit'])} / {_pct(agree['agreement_commit'])}",
            )
        if "agreement_changing" in agree:
            table.add_row(
                f"  at epochs where the teacher changes something ({_pct(agree['changing_share'])} of states)",
                _pct(agree["agreement_changing"]),
            )
    ev = res.get("evaluation") or {}
    if ev:
        table.add_row(f"DSR on held-out seeds {ev['seeds']}", f"{ev['dsr']:.3f}")
        if "jct_mean_s" in ev:
            table.add_row("average JCT (h)", f"{ev['jct_mean_s'] / 3600:.2f}")
        for expert, paired in (ev.get("experts") or {}).items():
            low, high = paired["ci"]
            table.add_row(
                f"DSR - {expert}'s ({paired['dsr']:.3f}), paired, 95% interval",
                f"{paired['diff_mean']:+.3f} [{low:+.3f}, {high:+.3f}]",
            )
        if ev.get("episodes_cut"):
            table.add_row(
                "episodes cut at --max-steps (figures partial)", f"{ev['episodes_cut']} of {len(ev['seeds'])}"
            )
        if "teacher_dsr" in ev:
            role = "teacher" if ev.get("reference", meta.teacher) == meta.teacher else "reference"
            table.add_row(
                f"{role}'s DSR / average JCT (h)", f"{ev['teacher_dsr']:.3f} / {ev['teacher_jct_mean_s'] / 3600:.2f}"
            )
            table.add_row(f"DSR gap to the {role}", f"{ev['dsr_gap']:+.3f}")
    if "timesteps" in res:
        table.add_row("environment steps", str(res["timesteps"]))
    table.add_row("wall time (s)", f"{wall_s:.0f}")
    console.print(table)
    console.print(f"evaluate it: hetgym evaluate {path}    TensorBoard: tensorboard --logdir {path / 'tb'}")


def cmd_evaluate(args: argparse.Namespace) -> int:
    require_rl("evaluate")
    if args.suite:
        from agents.suite_cli import cmd_evaluate_suite

        return cmd_evaluate_suite(args)
    for flag, given in (("--policies", args.policies), ("--rules", args.rules)):
        if given:
            raise ValueError(f"{flag} scores on the suite's scenarios: give --suite NAME|all with it")
    from rich.table import Table

    from agents.args import AgentError, parse_seeds
    from agents.common import load_agent, make_env, seed_everything, simulated
    from agents.evaluation import CELL_NOTE, TABLE_METRICS, compare_on_seeds, metric_cell
    from agents.leaderboard import scenario_name
    from hetgym.experiments import default_policies
    from hetgym.sim.policy import policy_class

    seed_everything(0)
    seeds = parse_seeds(args.seeds or "1000-1004")
    if args.decoding is not None:
        from agents.set_policy import check_decoding

        check_decoding(args.decoding)
    agents: dict[str, tuple[Any, str, dict[str, Any]]] = {}
    metas: dict[str, Any] = {}
    scenarios: dict[str, str] = {}
    labels = [s.strip() for s in args.labels.split(",")] if args.labels else []
    if args.ensemble and len(args.models) < 2:
        raise ValueError(f"--ensemble needs at least two MODELs, got {len(args.models)}")
    wanted = 1 if args.ensemble else len(args.models)
    if labels and len(labels) != wanted:
        raise ValueError(f"--labels names {len(labels)} agents but {wanted} were given")
    ensemble_label = labels.pop() if args.ensemble and labels else None
    teacher = None
    workloads = None
    if (args.env or args.env_id) and not args.algo:
        raise ValueError("--env-id and --env describe a model without agent.json: give its --algo too")
    if args.algo is not None:
        from agents.common import ALGORITHMS

        if args.algo not in ALGORITHMS:
            raise ValueError(f"--algo {args.algo!r} is not one of {sorted(ALGORITHMS)}")
    external_env = parse_env_overrides(args.env)
    for i, path in enumerate(args.models):
        model, meta = load_agent(
            path,
            algo=args.algo,
            env_id=args.env_id,
            env_kwargs=external_env,
            decoding=args.decoding,
            trust_pickle=args.trust_pickle,
        )
        env_kwargs = dict(meta.env_kwargs)
        if args.trace:
            env_kwargs["trace"] = str(args.trace)
        config = simulated(make_env(meta.env_id, env_kwargs)).config
        key = (config.cluster, config.workload, getattr(config, "trace", None), config.sim)
        if workloads is None:
            workloads = key
        elif key != workloads:
            raise AgentError(f"{path} runs on another cluster, workload or simulator setting than the first model")
        label = labels[i] if labels else f"{meta.recipe}" + (f"({meta.teacher})" if meta.teacher else "")
        if not labels and getattr(model.policy, "decoding", "argmax") != "argmax":
            label += f" [{model.policy.decoding}]"
        while label in agents:
            label += "'"
        if args.ensemble and agents and (meta.env_id, env_kwargs) != next(iter(agents.values()))[1:]:
            raise AgentError(f"{path} acts in another env than the first MODEL; an ensemble needs one env for all")
        agents[label] = (model, meta.env_id, env_kwargs)
        metas[label] = meta
        scenarios[label] = Path(args.trace).stem if args.trace else scenario_name(config)
        teacher = teacher or meta.reference or meta.teacher
    if args.beat_the_experts is not None and (args.ensemble or not agents or args.experts == "none"):
        raise ValueError("--beat-the-experts compares each MODEL (no --ensemble) with some --experts")
    if args.ensemble:
        from agents.ensemble import EnsembleAgent

        members = list(agents.values())
        ensemble = EnsembleAgent([m for m, _, _ in members], decoding=args.decoding)
        name = ensemble_label or "ensemble of " + " + ".join(agents)
        agents = {name: (ensemble, members[0][1], members[0][2])}
    if args.trace:
        seeds = [0]  # a trace is one workload
    if args.beat_the_experts is not None and len(seeds) < 2:
        raise ValueError(
            f"--beat-the-experts pairs the agents and experts per seed: give at least 2 --seeds, not {seeds}"
        )
    if args.experts == "all":
        experts = default_policies()
    elif args.experts == "none":
        experts = []
    else:
        experts = [s.strip() for s in args.experts.split(",") if s.strip()]
        for name in experts:
            policy_class(name)
    reference = None
    if not agents:
        if not experts and not args.random:
            raise ValueError("nothing to evaluate: give a MODEL, --random or some --experts")
        from agents.common import agent_env_kwargs

        preset_id = PRESET_IDS[args.preset or "default"]
        env_kwargs = agent_env_kwargs(None, {"trace": str(args.trace)} if args.trace else {}, preset_id)
        reference = (preset_id, env_kwargs)
    if args.random:
        from agents.random_agent import RandomMaskedAgent

        if agents:
            _, env_id, env_kwargs = next(iter(agents.values()))
        else:
            assert reference is not None
            env_id, env_kwargs = reference
        space = make_env(env_id, env_kwargs).action_space
        agents["random"] = (RandomMaskedAgent(space, seed=0), env_id, env_kwargs)
    total = len(seeds) * (len(agents) + len(experts))
    with ProgressReport(enabled=not args.no_progress, console=console) as progress:
        progress.task("evaluate", total, unit="runs")
        evaluation = compare_on_seeds(
            agents,
            experts,
            seeds,
            teacher=teacher if (teacher in experts) else None,
            role=gap_role(metas.values(), teacher),
            reference_env=reference,
            max_steps=args.max_steps,
            on_run=lambda name, seed: progress.update(advance=1, detail=f"{name} seed {seed}"),
            title=f"held-out seeds {seeds}" if not args.trace else f"trace {args.trace}",
        )
    agg = evaluation.aggregate()
    table = Table(title=evaluation.title, caption=CELL_NOTE if len(seeds) > 1 else None)
    table.add_column("policy", no_wrap=True)
    table.add_column("kind")
    for _, label, _, _ in TABLE_METRICS:
        table.add_column(label, justify="right")
    if "dsr_gap" in agg.columns:
        table.add_column(f"DSR − {evaluation.teacher}", justify="right")
    for policy, row in agg.iterrows():
        cells = [str(policy), str(row["kind"])]
        for metric, _, scale, fmt in TABLE_METRICS:
            cells.append(metric_cell(row, metric, scale, fmt, len(seeds)))
        if "dsr_gap" in agg.columns:
            gap = float(row.get("dsr_gap", math.nan))
            cells.append("-" if not math.isfinite(gap) else f"{gap:+.3f}")
        style = "bold" if row["kind"] == "agent" else None
        table.add_row(*cells, style=style)
    console.print(table)
    truncated = evaluation.runs.get("truncated_by_eval")
    if truncated is not None and truncated.fillna(False).astype(bool).any():
        console.print(f"[yellow]some agent episodes were cut at --max-steps {args.max_steps}[/yellow]")
    out = args.out or Path("results") / "evaluate"
    written = evaluation.save(out, plots=not args.no_plots)
    if args.beat_the_experts is not None:
        from agents.leaderboard import constant_rule_dsrs, markdown, rows_for, upsert

        _, first_id, first_kwargs = next(iter(agents.values()))
        probe = make_env(first_id, first_kwargs).unwrapped
        # The event interface's constant rules, played on the same seeds: a row beats them too, or says by how much not.
        rules = constant_rule_dsrs(first_id, first_kwargs, seeds) if hasattr(probe, "actions") else None
        rows = rows_for(evaluation, metas, scenarios, rules)
        upsert(args.beat_the_experts, rows)
        console.print(markdown(rows), markup=False)
        written.append(args.beat_the_experts)
    console.print("wrote " + ", ".join(str(p) for p in written))
    return 0
