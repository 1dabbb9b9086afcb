"""ElasticFlow: hand-checked minimum satisfactory shares, MSS monotone in deadline looseness,
admitted jobs meeting their deadlines without overheads, leftover GPUs and buddy placement."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import toy_model
from hypothesis import given, settings
from hypothesis import strategies as st

from baselines._deadline import job_options
from baselines.elasticflow import ElasticFlow, Timeline, job_levels, mss_plan
from hetgym.sim import ClusterSpec, JobSpec, SimConfig, Simulator, make_policy
from hetgym.sim.placement import buddy_place
from hetgym.sim.throughput import ServerGroup
from hetgym.workloads import WorkloadConfig

NO_PENALTY = SimConfig(restart_penalty_s=0.0)


def toy_levels(cluster: ClusterSpec, work: float = 100.0):  # type: ignore[no-untyped-def]
    """Levels of a toy job "a" (1 it/s per V100, 0.5 per K80, linear up to a 2-GPU server)."""
    model = toy_model()
    spec = JobSpec(0, 0.0, "a", 1, work, 1, deadline_s=1e6, max_gpus=4)
    opts = job_options(model, spec, cluster)
    speed = np.array([model.speed_index[t] for t in cluster.gpu_types])
    cap = np.array([cluster.capacity[t] for t in cluster.gpu_types])
    return job_levels(opts, speed, cap), opts, cap


def test_levels_are_in_share_order(two_by_two: ClusterSpec) -> None:
    levels, opts, _ = toy_levels(two_by_two)
    # Counts of 4 span two servers at half speed, no faster than 2: dropped. Shares (count x speed index):
    # k80x1 = 0.5, v100x1 = 1 (rate 1) before k80x2 = 1 (rate 1, later in the cluster order), v100x2 = 2.
    order = [opts.as_dict(o) for o in levels.order]
    assert order == [{"k80": 1}, {"v100": 1}, {"k80": 2}, {"v100": 2}]


@pytest.mark.parametrize(
    ("work", "deadline", "share", "counts", "end"),
    [
        # 100 iterations by 150 s: K80x1 does 75; V100x1 does 150 -> the share; it runs from t=0 and
        # ends at 100 s, aligned to the 60 s slot: 120.
        (100.0, 150.0, {"v100": 1}, [1, 1], 120.0),
        # By 90 s, V100x1 and K80x2 do 90: V100x2 (180) is the minimum satisfactory share.
        (100.0, 90.0, {"v100": 2}, [2], 60.0),
        # 40 iterations by 150 s: K80x1 (0.5 it/s) suffices walking back from the deadline, which it
        # reaches in the interval starting at 60 s; nothing before (no lower K80 level); ends at 140 -> 180.
        (40.0, 150.0, {"k80": 1}, [0, 1, 1], 180.0),
    ],
)
def test_minimum_satisfactory_share_by_hand(
    two_by_two: ClusterSpec, work: float, deadline: float, share: dict[str, int], counts: list[int], end: float
) -> None:
    levels, opts, cap = toy_levels(two_by_two, work)
    timeline = Timeline(0.0, cap, 60.0, np.array([60.0, 120.0, 180.0]))
    plan = mss_plan(timeline, levels, work, deadline)
    assert opts.as_dict(plan.option) == share
    assert plan.counts.tolist() == counts
    assert plan.end_s == pytest.approx(end)


def test_plan_takes_gpus_from_the_timeline(two_by_two: ClusterSpec) -> None:
    levels, _, cap = toy_levels(two_by_two)
    timeline = Timeline(0.0, cap, 60.0, np.array([60.0, 120.0, 180.0]))
    mss_plan(timeline, levels, 100.0, 90.0)  # V100x2 in [0, 60)
    assert timeline.free[:, 0].tolist() == [2, 4]
    assert timeline.free[:, 1].tolist() == [4, 4]
    assert mss_plan(timeline, levels, 100.0, 90.0).option >= 0  # the other two V100s
    assert timeline.free[:, 0].tolist() == [0, 4]
    # A third identical job finds no V100 in the first slot, and K80s cannot do 100 iterations by 90 s.
    assert mss_plan(timeline, levels, 100.0, 90.0).option == -1
    assert (timeline.free >= 0).all()


def test_infeasible_job_is_declined(two_by_two: ClusterSpec) -> None:
    jobs = [JobSpec(0, 0.0, "a", 1, 1000.0, 1, deadline_s=300.0, max_gpus=4)]  # needs 500 s at 2 it/s
    result = Simulator(two_by_two, jobs, config=NO_PENALTY, throughput=toy_model()).run(make_policy("elasticflow"))
    assert result.jobs.loc[0, "status"] == "rejected"
    jobs = [JobSpec(0, 0.0, "a", 1, 1000.0, 1, deadline_s=600.0, max_gpus=4)]
    result = Simulator(two_by_two, jobs, config=NO_PENALTY, throughput=toy_model()).run(make_policy("elasticflow"))
    assert bool(result.jobs.loc[0, "met_deadline"])


@st.composite
def timelines(draw):  # type: ignore[no-untyped-def]
    num = draw(st.integers(1, 8))
    cuts = sorted(set(draw(st.lists(st.integers(1, 40), min_size=num, max_size=num))))
    free = [draw(st.lists(st.integers(0, 4), min_size=len(cuts), max_size=len(cuts))) for _ in range(2)]
    return np.array(cuts, dtype=float) * 60.0, np.array(free, dtype=np.int64)


@settings(max_examples=80, deadline=None)
@given(
    tl=timelines(),
    work=st.floats(10.0, 3000.0),
    d1=st.floats(30.0, 2400.0),
    extra=st.floats(0.0, 2400.0),
)
def test_mss_is_monotone_in_deadline_looseness(tl, work: float, d1: float, extra: float) -> None:  # type: ignore[no-untyped-def]
    """A looser deadline never needs a larger share (ElasticFlow's MSS)."""
    cluster = ClusterSpec.from_inventory("2x2", {"v100": (2, 2), "k80": (2, 2)})
    levels, _, cap = toy_levels(cluster, work)
    cuts, free = tl

    def share_rank(deadline: float) -> int:
        timeline = Timeline(0.0, cap, 60.0, cuts)
        timeline.free[:, : free.shape[1]] = np.minimum(free, cap[:, None])[:, : timeline.free.shape[1]]
        plan = mss_plan(timeline, levels, work, deadline, commit=False)
        return len(levels.order) if plan.option < 0 else int(np.flatnonzero(levels.order == plan.option)[0])

    tight, loose = share_rank(d1), share_rank(d1 + extra)
    assert loose <= tight


def _short_jobs(seed: int, n: int) -> list[JobSpec]:
    cluster = ClusterSpec.from_inventory("single", {"v100": (1, 4), "k80": (1, 4)})
    wl = WorkloadConfig(recipe="elasticflow", num_jobs=n * 4, target_utilisation=1.5, max_gpus_per_job=4)
    return [j for j in wl.build(cluster, seed=seed).jobs if (j.duration_s or 0) <= 3 * 3600][:n]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_admitted_jobs_meet_deadlines_without_overheads(seed: int) -> None:
    cluster = ClusterSpec.from_inventory("single", {"v100": (1, 4), "k80": (1, 4)})
    result = Simulator(cluster, _short_jobs(seed, 14), config=NO_PENALTY).run(make_policy("elasticflow"))
    admitted = result.jobs[result.jobs["status"] != "rejected"]
    assert len(admitted) > 0
    assert admitted["met_deadline"].all(), admitted[~admitted["met_deadline"]][["job_id", "deadline_s", "finish_s"]]


def test_leftover_gpus_go_to_idle_jobs_then_by_speedup() -> None:
    cluster = ClusterSpec.from_inventory("one", {"v100": (1, 8)})
    # Two loose jobs: their shares are 1 GPU each, so 6 GPUs are left over right away.
    jobs = [JobSpec(i, 0.0, "a", 1, 100.0, 1, deadline_s=10_000.0, max_gpus=8) for i in range(2)]
    seen = []

    class Spy(ElasticFlow):
        def schedule(self, view):  # type: ignore[no-untyped-def]
            out = super().schedule(view)
            seen.append({j: a.total_gpus for j, a in out.jobs.items()})
            return out

    policy = Spy()
    Simulator(cluster, jobs, config=NO_PENALTY, throughput=toy_model()).run(policy)
    first = seen[0]
    # Job "a" scales linearly on one V100 server in the toy table (rates at 1, 2, 4 GPUs; 8 follows the
    # power law): both jobs start and share the 8 GPUs.
    assert set(first) == {0, 1}
    assert sum(first.values()) == 8


@st.composite
def power_of_two_requests(draw):  # type: ignore[no-untyped-def]
    sizes = draw(st.lists(st.sampled_from([1, 2, 4, 8, 16]), min_size=1, max_size=12))
    kept, used = [], 0
    for n in sorted(sizes, reverse=True):
        if used + n <= 32:
            kept.append(n)
            used += n
    return kept


@settings(max_examples=100, deadline=None)
@given(sizes=power_of_two_requests(), shuffle=st.randoms())
def test_buddy_placement_never_fragments(sizes: list[int], shuffle) -> None:  # type: ignore[no-untyped-def]
    cluster = ClusterSpec.from_inventory("4x8", {"a100": (4, 8)})
    ids = list(range(len(sizes)))
    shuffle.shuffle(ids)
    requests = {jid: {"a100": n} for jid, n in zip(ids, sizes, strict=True)}
    # Arbitrary previous placements (stickiness must not break the invariant).
    previous = {jid: (ServerGroup(shuffle.randrange(4), "a100", 1),) for jid in ids}
    out = buddy_place(cluster, requests, previous)
    load = [0] * 4
    for jid, servers in out.items():
        n = requests[jid]["a100"]
        assert sum(servers.values()) == n
        if n <= 8:
            assert len(servers) == 1
        else:
            assert all(v == 8 for v in servers.values())
        for s, v in servers.items():
            load[s] += v
    assert max(load) <= 8


def test_best_effort_variant_keeps_declined_jobs() -> None:
    cluster = ClusterSpec.from_inventory("one", {"v100": (1, 2)})
    jobs = [JobSpec(i, 0.0, "a", 1, 600.0, 1, deadline_s=700.0, max_gpus=2) for i in range(4)]
    result = Simulator(cluster, jobs, config=NO_PENALTY, throughput=toy_model()).run(
        make_policy("elasticflow", rejected_jobs="best_effort")
    )
    assert (result.jobs["status"] == "completed").all()
    assert result.jobs["met_deadline"].sum() >= 2


def test_bad_knobs_are_refused() -> None:
    with pytest.raises(ValueError, match="leftover_rule"):
        ElasticFlow(leftover_rule="random")
    with pytest.raises(ValueError, match="placement"):
        make_policy("elasticflow", placement="spread")
