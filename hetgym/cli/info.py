"""``hetgym policies`` and ``hetgym presets``: what can be run."""

from __future__ import annotations

import argparse

from hetgym.cli._common import console


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("policies", help="list the registered scheduling policies and their knobs")
    p.add_argument("--knobs", action="store_true", help="show each policy's knobs and defaults")
    p.set_defaults(func=cmd_policies)
    s = sub.add_parser("presets", help="list cluster presets, scenarios, workload recipes and job types")
    s.set_defaults(func=cmd_presets)


def cmd_policies(args: argparse.Namespace) -> int:
    import inspect

    from rich.table import Table

    from hetgym.sim.policy import list_policies, policy_class

    table = Table(title="Registered policies (make_policy(name, **knobs); hetgym compare --policies ...)")
    table.add_column("name", style="bold")
    table.add_column("description")
    if args.knobs:
        table.add_column("placer")
        table.add_column("modes")
        table.add_column("knobs (defaults)")
    for name, doc in list_policies().items():
        row = [name, doc]
        if args.knobs:
            cls = policy_class(name)
            sig = inspect.signature(cls.__init__)
            row.append(cls.placer)
            row.append(",".join(cls.modes))
            row.append(", ".join(f"{k}={v.default!r}" for k, v in sig.parameters.items() if k != "self"))
        table.add_row(*row)
    console.print(table)
    if args.knobs:
        from hetgym.sim.placement import list_placers

        placers = Table(title="Placers (SimConfig(placer=...); a policy declares its own)")
        placers.add_column("name", style="bold")
        placers.add_column("description")
        for pname, pdoc in list_placers().items():
            placers.add_row(pname, pdoc)
        console.print(placers)
    return 0


def cmd_presets(args: argparse.Namespace) -> int:
    from rich.table import Table

    from hetgym.sim.cluster import get_cluster, list_clusters
    from hetgym.sim.throughput import ThroughputModel
    from hetgym.workloads.deadlines import deadline_model_names
    from hetgym.workloads.generators import RECIPES
    from hetgym.workloads.scenario import SCENARIOS

    clusters = Table(title="Cluster presets (--cluster)")
    clusters.add_column("name", style="bold")
    clusters.add_column("GPUs", justify="right")
    clusters.add_column("inventory")
    for name in list_clusters():
        spec = get_cluster(name)
        clusters.add_row(name, str(spec.total_gpus), spec.describe())
    console.print(clusters)

    scenarios = Table(title="Scenarios (--scenario)")
    scenarios.add_column("name", style="bold")
    scenarios.add_column("cluster")
    scenarios.add_column("description")
    for name, sc in SCENARIOS.items():
        scenarios.add_row(name, sc.cluster, sc.description)
    console.print(scenarios)

    console.print(f"Workload recipes (--recipe): {', '.join(RECIPES)}")
    console.print(f"Deadline models (--deadline): {', '.join(deadline_model_names())}")
    model = ThroughputModel.default()
    types = Table(title="Job types (throughput table; batch sizes are global)")
    types.add_column("job type", style="bold")
    types.add_column("batch sizes")
    types.add_column("measured on")
    for jt in model.job_types:
        types.add_row(jt, ", ".join(str(b) for b in model.batch_sizes(jt)), ", ".join(model.measured_gpu_types(jt)))
    console.print(types)
    console.print(
        "GPU types and speed index (v100 = 1): " + ", ".join(f"{t} {s:g}" for t, s in model.speed_index.items())
    )
    return 0
