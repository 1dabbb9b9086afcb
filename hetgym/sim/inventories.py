"""Cluster inventories taken from real systems and published simulator configurations (data only).

Each entry is ``name -> (description, {gpu_type: (num_servers, gpus_per_server)}, source)``;
:mod:`hetgym.sim.cluster` registers every entry as a preset. The source data is not shipped with the
package; the figures below are copied from it with the source named, and
``scripts/derive_cluster_inventories.py`` re-derives the PAI one from the published file.

**Alibaba PAI 2020** (``pai_machine_spec.csv`` of alibaba/clusterdata cluster-trace-gpu-v2020, CC-BY-4.0;
Weng et al., "MLaaS in the Wild", NSDI'22). 1,897 machines: V100 104 x 8 and V100M32 135 x 8 (both
``v100`` here: the throughput table does not distinguish the 32 GB part), P100 798 x 2, T4 497 x 2,
MISC 280 x 8, and 83 CPU-only machines (left out). MISC is "GPUs of older generations, e.g. NVIDIA Tesla
K40m, K80, M60" (PAI README): mapped to ``k80``, the oldest type of the throughput table and one the
README names. 6,742 GPUs in all. ``alibaba-pai-2020-mini`` keeps the same mix at about a tenth of the
servers for quick experiments.

**Philly-like** (Gavel, stanford-futuredata/gavel ``scheduler/traces/msr/cluster_specs*.json``, MIT):
Gavel simulates the Philly per-VC traces on ``"philly": "500:0:0"`` (500 V100) and, heterogeneous,
``"300:300:300"`` (V100:P100:K80). Servers of 4 GPUs, as in Gavel's other simulations and ``gavel-108``.

**ElasticFlow** (pkusys/ElasticFlow ``scheduler/cluster_specs/n{N}g{G}.csv``, Apache-2.0): one switch,
N nodes of G GPUs; ElasticFlow's throughputs are A100 figures, so the nodes are A100 servers.
``elasticflow-n{N}g8-het`` is its heterogeneous version: the same GPU count in servers of 4, half A100 and
the other half V100 and T4 servers alternately (V100 first; V100 only for N = 1).
"""

from __future__ import annotations

#: Server counts of the ElasticFlow ``n{N}g8`` presets.
ELASTICFLOW_SERVERS: tuple[int, ...] = (1, 4, 8, 16, 32, 48, 64, 128)


def elasticflow_het_inventory(servers_of_8: int) -> dict[str, tuple[int, int]]:
    """``elasticflow-n{N}g8``'s GPUs in servers of 4: N A100 servers, then V100 and T4 servers alternately."""
    inventory = {"a100": (servers_of_8, 4), "v100": ((servers_of_8 + 1) // 2, 4)}
    if servers_of_8 // 2:
        inventory["t4"] = (servers_of_8 // 2, 4)
    return inventory


#: name -> (description, inventory, source)
INVENTORIES: dict[str, tuple[str, dict[str, tuple[int, int]], str]] = {
    "alibaba-pai-2020": (
        "Alibaba PAI 2020 (6,742 GPUs): 239x8 V100 (incl. V100M32), 798x2 P100, 497x2 T4, 280x8 MISC as K80",
        {"v100": (239, 8), "p100": (798, 2), "t4": (497, 2), "k80": (280, 8)},
        "alibaba/clusterdata cluster-trace-gpu-v2020 pai_machine_spec.csv",
    ),
    "alibaba-pai-2020-mini": (
        "Alibaba PAI 2020 mix at ~1/10 (676 GPUs): 24x8 V100, 80x2 P100, 50x2 T4, 28x8 K80",
        {"v100": (24, 8), "p100": (80, 2), "t4": (50, 2), "k80": (28, 8)},
        "alibaba-pai-2020 with server counts divided by 10 and rounded",
    ),
    "philly": (
        "Philly-like, Gavel's per-VC trace cluster: 500 V100 (servers of 4)",
        {"v100": (125, 4)},
        "stanford-futuredata/gavel scheduler/traces/msr/cluster_specs.json",
    ),
    "philly-het": (
        "Philly-like heterogeneous, Gavel's: 300 V100 + 300 P100 + 300 K80 (servers of 4)",
        {"v100": (75, 4), "p100": (75, 4), "k80": (75, 4)},
        "stanford-futuredata/gavel scheduler/traces/msr/cluster_specs_heterogeneous.json",
    ),
    **{
        f"elasticflow-n{n}g8": (
            f"ElasticFlow n{n}g8: {n} A100 servers of 8 ({8 * n} GPUs)",
            {"a100": (n, 8)},
            f"pkusys/ElasticFlow scheduler/cluster_specs/n{n}g8.csv",
        )
        for n in ELASTICFLOW_SERVERS
    },
    **{
        f"elasticflow-n{n}g8-het": (
            f"ElasticFlow n{n}g8's {8 * n:,} GPUs in servers of 4: {4 * n:,} A100, "
            + " and ".join(f"{s * 4:,} {t.upper()}" for t, (s, _) in list(elasticflow_het_inventory(n).items())[1:]),
            elasticflow_het_inventory(n),
            f"elasticflow-n{n}g8 in servers of 4, half A100, the other half V100 and T4 alternately",
        )
        for n in ELASTICFLOW_SERVERS
    },
    "elasticflow-n16g4": (
        "ElasticFlow n16g4: 16 A100 servers of 4 (64 GPUs)",
        {"a100": (16, 4)},
        "pkusys/ElasticFlow scheduler/cluster_specs/n16g4.csv",
    ),
}
