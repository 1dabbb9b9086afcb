"""Placers: every registered one places exactly the requested counts within the free GPUs; the engine
applies the configured (or the policy's declared) placer; the bugs found alongside stay fixed."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetgym.sim import Allocation, ClusterSpec, JobAllocation, JobSpec, SimConfig, Simulator, ThroughputModel
from hetgym.sim.errors import UnknownNameError
from hetgym.sim.placement import PlacementRequest, list_placers, make_placer

CLUSTER = ClusterSpec.from_inventory("mixed", {"v100": (3, 4), "k80": (2, 8)})
BUILTIN = ("buddy", "comm-aware", "copies", "default", "priced", "random")


def test_the_builtin_placers_are_registered() -> None:
    assert set(BUILTIN) <= set(list_placers())


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(BUILTIN),
    used=st.lists(st.integers(0, 8), min_size=5, max_size=5),
    sizes=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.sampled_from(["sync", "fork"])), max_size=5),
    tp=st.sampled_from([1, 2, 4]),
)
def test_every_placer_places_exactly_the_counts_within_the_free_gpus(
    name: str, used: list[int], sizes: list[tuple[int, int, str]], tp: int
) -> None:
    cap = np.array([s.num_gpus for s in CLUSTER.servers])
    free = np.maximum(cap - np.array(used), 0)
    left = {t: int(sum(free[s] for s in CLUSTER.servers_by_type[t])) for t in CLUSTER.gpu_types}
    requests = []
    for jid, (nv, nk, mode) in enumerate(sizes):
        nv, nk = min(nv, left["v100"]), min(nk, left["k80"])
        if nv + nk == 0:
            continue
        left["v100"] -= nv
        left["k80"] -= nk
        counts = tuple((t, n) for t, n in (("k80", nk), ("v100", nv)) if n)
        g = nv + nk
        spec = JobSpec(jid, 0.0, "resnet18", 64, 1e3, g, parallelism=(g // tp, 1, tp) if g % tp == 0 else None)
        requests.append(PlacementRequest(jid, spec, counts, mode))  # type: ignore[arg-type]
    placer = make_placer(name)
    placer.reset(CLUSTER, rng=np.random.default_rng(0))
    before = free.copy()
    out = placer.place(CLUSTER, free, requests)
    assert set(out) == {r.job_id for r in requests}
    taken = np.zeros_like(free)
    for req in requests:
        groups = out[req.job_id]
        by_type: dict[str, int] = {}
        for g in groups:
            assert CLUSTER.servers[g.server_id].gpu_type == g.gpu_type and g.num_gpus > 0
            by_type[g.gpu_type] = by_type.get(g.gpu_type, 0) + g.num_gpus
            taken[g.server_id] += g.num_gpus
        assert by_type == dict(req.counts)
        assert [g.server_id for g in groups] == sorted({g.server_id for g in groups})  # sorted, one group a server
    assert np.all(taken <= before) and np.array_equal(free, before - taken)


def test_copies_lay_a_fork_job_out_one_copy_per_node() -> None:
    spec = JobSpec(0, 0.0, "resnet18", 64, 1e3, 2)
    free = np.array([4, 4, 4, 8, 8])
    out = make_placer("copies").place(CLUSTER, free, [PlacementRequest(0, spec, (("v100", 6),), "fork")])
    assert [(g.server_id, g.num_gpus) for g in out[0]] == [(0, 2), (1, 2), (2, 2)]  # copies of W_j = 2 GPUs


def test_priced_prefers_the_least_committed_node() -> None:
    spec = JobSpec(0, 0.0, "resnet18", 64, 1e3, 2)
    free = np.array([1, 4, 3, 8, 8])
    out = make_placer("priced").place(CLUSTER, free, [PlacementRequest(0, spec, (("v100", 2),), "sync")])
    assert [(g.server_id, g.num_gpus) for g in out[0]] == [(1, 2)]


def test_an_unknown_placer_is_refused_naming_the_nearest() -> None:
    with pytest.raises(UnknownNameError, match="buddy"):
        SimConfig(placer="budy")


def test_the_configured_placer_overrides_the_policys_declaration() -> None:
    jobs = [JobSpec(0, 0.0, "resnet18", 64, 1e5, 2)]
    sim = Simulator(CLUSTER, jobs, config=SimConfig(placer="random", seed=3))
    view = sim.reset(placer="default")
    assert view is not None
    view = sim.step(Allocation({0: JobAllocation({"v100": 2})}))
    assert view is not None or sim.done
    assert type(sim._placer).__name__ == "RandomPlacer"


def test_rate_memo_keeps_fractional_counts_apart() -> None:
    model = ThroughputModel.default()
    two = model.rate("resnet50", 64, "v100", 2)
    fractional = model.rate("resnet50", 64, "v100", 2.9)
    assert fractional != two
    assert fractional == ThroughputModel.default().rate("resnet50", 64, "v100", 2.9)


def test_clock_fields_read_before_reset() -> None:
    sim = Simulator(CLUSTER, [JobSpec(0, 5.0, "resnet18", 64, 1e3, 1)])
    assert sim.now_s == 0.0 and not sim.done


def test_the_simulator_package_imports_no_policy_package() -> None:
    code = "import sys, hetgym.sim; assert 'baselines' not in sys.modules, 'hetgym.sim imported baselines'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_buddy_repeats_its_answer_for_repeated_inputs_and_packs_anew_otherwise() -> None:
    cluster = ClusterSpec.from_inventory("buddy-memo", {"a100": (2, 8), "v100": (2, 4)})

    def request(jid: int, counts: tuple[tuple[str, int], ...], previous: tuple = ()) -> PlacementRequest:
        spec = JobSpec(
            job_id=jid,
            submit_s=0.0,
            job_type="resnet50",
            batch_size=32,
            num_gpus=sum(n for _, n in counts),
            total_iters=100,
        )
        return PlacementRequest(jid, spec, counts, "sync", previous)

    first = [request(1, (("a100", 4),)), request(2, (("a100", 8), ("v100", 2)))]
    memo, fresh = make_placer("buddy"), make_placer("buddy")
    for _ in range(2):  # the second call with the same inputs is answered from the memo
        free_memo = np.array([s.num_gpus for s in cluster.servers], dtype=np.int64)
        free_fresh = free_memo.copy()
        got = memo.place(cluster, free_memo, first)
        assert got == make_placer("buddy").place(cluster, free_fresh, first)
        assert np.array_equal(free_memo, free_fresh)
    got[1] = ()  # the caller's copy: the memo is not changed by it
    free = np.array([s.num_gpus for s in cluster.servers], dtype=np.int64)
    assert memo.place(cluster, free, first)[1] != ()
    moved = [request(1, (("a100", 4),), previous=got[2]), first[1]]
    free_a = np.array([s.num_gpus for s in cluster.servers], dtype=np.int64)
    free_b = free_a.copy()
    assert memo.place(cluster, free_a, moved) == fresh.place(cluster, free_b, moved)
    assert np.array_equal(free_a, free_b)
