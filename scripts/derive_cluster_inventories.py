"""Re-derive the ``alibaba-pai-2020`` preset from PAI's published machine spec and check the embedded table.

Usage::

    python scripts/derive_cluster_inventories.py [path/to/pai_machine_spec.tar.gz]

Default path: ``../shared/data/alibaba_pai_gpu_v2020/pai_machine_spec.tar.gz`` (relative to the
repository root). Prints the machines per PAI GPU type and the mapped inventory; exits with status 1 if
it differs from ``hetgym/sim/inventories.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hetgym.sim.inventories import INVENTORIES
from hetgym.workloads.traces.pai import PAI_GPU_TYPES, machine_spec_counts, machine_spec_inventory

DEFAULT = (
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "alibaba_pai_gpu_v2020" / "pai_machine_spec.tar.gz"
)


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT
    counts = machine_spec_counts(path)
    print(f"{path}: {sum(counts.values())} machines")
    for (pai_type, gpus), n in sorted(counts.items()):
        mapped = PAI_GPU_TYPES.get(pai_type, "(CPU only)" if gpus == 0 else "?")
        print(f"  {pai_type:>8} x {gpus} GPUs: {n:>5} machines -> {mapped}")
    inventory = machine_spec_inventory(path)
    total = sum(n * g for n, g in inventory.values())
    print(f"inventory {inventory} ({total} GPUs)")
    embedded = INVENTORIES["alibaba-pai-2020"][1]
    if inventory != embedded:
        print(f"DIFFERS from the embedded alibaba-pai-2020 preset {embedded}", file=sys.stderr)
        return 1
    print("matches the embedded alibaba-pai-2020 preset")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
