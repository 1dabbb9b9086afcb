"""Windows of a trace (``WorkloadConfig(trace_window=True)``): seeded, consecutive, rebased, renumbered,
deadlines by the named rule, the parsed trace cached, the errors, and an event-env episode on windows."""

from __future__ import annotations

import io
import itertools
import math
import os
import tarfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from hetgym.sim import JobSpec
from hetgym.sim.errors import ConfigError
from hetgym.workloads import WorkloadConfig, elasticflow_window_workload, write_trace
from hetgym.workloads import windows as windows_mod

# A raw ElasticFlow trace (submission_time, duration, num_gpu), rows out of submission order on purpose.
RAW_ROWS = [
    (120, 1800, 2),
    (0, 600, 1),
    (300, 900, 1),
    (900, 3600, 4),
    (1500, 1200, 1),
    (2400, 2400, 2),
    (3000, 600, 1),
    (3600, 1500, 2),
    (4200, 900, 1),
    (4800, 3000, 4),
    (5400, 1200, 1),
    (6000, 600, 2),
]


def _raw_csv(path: Path) -> Path:
    lines = ["job_id,submission_time,duration,num_gpu"]
    lines += [f"job{i:02d},{s},{d},{g}" for i, (s, d, g) in enumerate(RAW_ROWS)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _canonical(path: Path, n: int = 10) -> Path:
    jobs = [
        JobSpec(
            job_id=100 + i,
            submit_s=1000.0 + 60.0 * i,
            job_type="resnet50",
            batch_size=64,
            total_iters=500.0 + 10 * i,
            num_gpus=1 + i % 2,
            deadline_s=1000.0 + 60.0 * i + 7200.0 if i % 3 else math.inf,
            duration_s=300.0 + 30 * i,
        )
        for i in range(n)
    ]
    return write_trace(jobs, path)


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    windows_mod.clear_trace_cache()


def test_window_is_seeded_consecutive_rebased_and_renumbered(tmp_path: Path) -> None:
    trace = _canonical(tmp_path / "t.csv")
    cfg = WorkloadConfig(trace=str(trace), trace_window=True, num_jobs=4)
    whole = WorkloadConfig(trace=str(trace), num_jobs=10).build("tiny").jobs
    starts = set()
    for seed in range(12):
        wl = cfg.build("tiny", seed=seed)
        assert wl.jobs == cfg.build("tiny", seed=seed).jobs  # seeded
        start = wl.metadata["window"]["start"]
        assert start == int(np.random.default_rng(seed).integers(0, 10 - 4 + 1))
        starts.add(start)
        assert [j.job_id for j in wl.jobs] == [0, 1, 2, 3]
        assert wl.jobs[0].submit_s == 0.0
        t0 = whole[start].submit_s
        for job, orig in zip(wl.jobs, whole[start : start + 4], strict=True):
            assert job.submit_s == orig.submit_s - t0
            assert (job.total_iters, job.num_gpus, job.duration_s) == (orig.total_iters, orig.num_gpus, orig.duration_s)
            # No deadline model: the trace's own deadlines, shifted with the submissions.
            shifted = orig.deadline_s - t0 if math.isfinite(orig.deadline_s) else math.inf
            assert job.deadline_s == shifted
        assert wl.locate(0) == f"{trace}: row {start + 1}"
    assert len(starts) > 3  # different seeds, different windows


def test_deadlines_follow_the_named_rule_from_the_same_generator(tmp_path: Path) -> None:
    trace = _canonical(tmp_path / "t.csv")
    cfg = WorkloadConfig(trace=str(trace), trace_window=True, num_jobs=5, deadline="elasticflow")
    wl = cfg.build("tiny", seed=7)
    rng = np.random.default_rng(7)
    rng.integers(0, 10 - 5 + 1)
    factors = rng.uniform(0.5, 1.5, size=5)
    for job, f in zip(wl.jobs, factors, strict=True):
        assert job.deadline_s == pytest.approx(job.submit_s + f * job.duration_s)
    tight = WorkloadConfig(trace=str(trace), trace_window=True, num_jobs=5, deadline="elasticflow", tightness=2.0)
    for a, b in zip(wl.jobs, tight.build("tiny", seed=7).jobs, strict=True):
        assert b.deadline_s - b.submit_s == pytest.approx((a.deadline_s - a.submit_s) / 2)


@pytest.mark.parametrize("archive", [False, True])
def test_raw_elasticflow_windows_from_a_csv_or_an_archive_member(tmp_path: Path, archive: bool) -> None:
    folder = tmp_path / "raw"
    folder.mkdir()
    _raw_csv(folder / "cluster03.csv")
    source: Path = folder
    if archive:
        source = tmp_path / "raw-traces.tar.gz"
        with tarfile.open(source, "w:gz") as tf:
            tf.add(folder / "cluster03.csv", arcname="raw-traces/cluster03.csv")
            data = b"job_id,submission_time,duration,num_gpu\nx,0,600,1\n"
            info = tarfile.TarInfo("raw-traces/cluster04.csv")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    override = elasticflow_window_workload(source, "cluster03", num_jobs=5)
    assert ("trace_member" in override) is archive
    cfg = WorkloadConfig.from_dict(override)
    jobs = cfg.build("elasticflow-n1g8-het", seed=3).jobs
    assert [j.job_id for j in jobs] == list(range(5)) and jobs[0].submit_s == 0.0
    ordered = sorted(RAW_ROWS)
    gaps = {b[0] - a[0] for a, b in itertools.pairwise(ordered)}
    for prev, job in itertools.pairwise(jobs):
        assert job.submit_s - prev.submit_s in gaps
    for job in jobs:
        assert (job.duration_s, job.num_gpus) in {(d, g) for _, d, g in RAW_ROWS}
        assert 0.5 <= (job.deadline_s - job.submit_s) / job.duration_s <= 1.5


def test_the_parsed_trace_is_cached_until_the_file_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = _canonical(tmp_path / "t.csv")
    reads: list[Path] = []
    real = windows_mod.read_trace

    def counting(path: Path, **kw: object) -> object:
        reads.append(path)
        return real(path, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(windows_mod, "read_trace", counting)
    cfg = WorkloadConfig(trace=str(trace), trace_window=True, num_jobs=3)
    for seed in range(5):
        cfg.build("tiny", seed=seed)
    assert len(reads) == 1
    _canonical(trace, n=8)
    stat = trace.stat()
    os.utime(trace, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert cfg.build("tiny", seed=0).metadata["window"]["start"] <= 8 - 3
    assert len(reads) == 2


def test_window_errors_name_the_sizes_and_the_missing_field(tmp_path: Path) -> None:
    trace = _canonical(tmp_path / "t.csv")
    with pytest.raises(ConfigError, match=r"num_jobs=11 .*10 jobs"):
        WorkloadConfig(trace=str(trace), trace_window=True, num_jobs=11).build("tiny")
    with pytest.raises(ConfigError, match="trace_window=True needs trace"):
        WorkloadConfig(trace_window=True)
    with pytest.raises(ConfigError, match=r"trace_member='cluster01\.csv' needs trace_format"):
        WorkloadConfig(trace=str(trace), trace_member="cluster01.csv")
    with pytest.raises(ConfigError, match="not a bool"):
        WorkloadConfig(trace=str(trace), trace_window="yes")  # type: ignore[arg-type]


def test_without_the_flag_a_trace_is_still_read_from_its_start(tmp_path: Path) -> None:
    trace = _canonical(tmp_path / "t.csv")
    jobs = WorkloadConfig(trace=str(trace), num_jobs=3).build("tiny", seed=5).jobs
    assert [j.job_id for j in jobs] == [100, 101, 102] and jobs[0].submit_s == 1000.0


def test_event_env_episode_on_trace_windows(tmp_path: Path) -> None:
    from hetgym.envs.events import AUTO_ACTION

    folder = tmp_path / "raw"
    folder.mkdir()
    _raw_csv(folder / "cluster03.csv")
    env = gym.make(
        "HetClusterEvents-v0",
        cluster="elasticflow-n1g8-het",
        workload=elasticflow_window_workload(folder, "cluster03", num_jobs=6),
    )
    try:
        _, info = env.reset(options={"workload_seed": 4})
        jobs = env.unwrapped.jobs
        assert len(jobs) == 6 and jobs[0].submit_s == 0.0
        expected = WorkloadConfig.from_dict(elasticflow_window_workload(folder, "cluster03", num_jobs=6))
        assert jobs == expected.build("elasticflow-n1g8-het", seed=4).jobs
        done = False
        steps = 0
        while not done:
            _, _, terminated, truncated, info = env.step(AUTO_ACTION)
            done = terminated or truncated
            steps += 1
        assert terminated and steps >= 1
        assert 0.0 <= info["metrics"]["dsr"] <= 1.0
    finally:
        env.close()


def test_hetcluster_v1_draws_the_same_windows(tmp_path: Path) -> None:
    folder = tmp_path / "raw"
    folder.mkdir()
    _raw_csv(folder / "cluster03.csv")
    override = elasticflow_window_workload(folder, "cluster03", num_jobs=6)
    env = gym.make("HetCluster-v1", cluster="elasticflow-n1g8-het", workload=override)
    try:
        env.reset(options={"workload_seed": 2})
        expected = WorkloadConfig.from_dict(override).build("elasticflow-n1g8-het", seed=2).jobs
        assert env.unwrapped.jobs == expected
    finally:
        env.close()


def test_windows_of_the_published_raw_archive(shared_data: Path) -> None:
    override = elasticflow_window_workload(shared_data / "elasticflow_traces" / "raw-traces.tar.gz", "cluster09")
    assert override["trace_member"] == "cluster09.csv"
    cfg = WorkloadConfig.from_dict(override)
    a, b = (cfg.build("elasticflow-n4g8-het", seed=s) for s in (1000, 1001))
    assert len(a) == len(b) == 40
    assert a.metadata["window"]["start"] != b.metadata["window"]["start"]
    assert all(j.num_gpus <= 32 and 0.5 <= (j.deadline_s - j.submit_s) / j.duration_s <= 1.5 for j in a.jobs)
