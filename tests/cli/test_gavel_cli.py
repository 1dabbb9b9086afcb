"""``hetgym gavel``: Gavel's driver flags on the compat mode, its figures against ``hetgym simulate --compat
gavel`` and Gavel's own (``tests/data/gavel/reference.json``), and clear errors for flags it cannot honour."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hetgym.cli import main
from hetgym.cli.gavel import GAVEL_POLICIES, gavel_cluster, hetgym_policy

DATA = Path(__file__).resolve().parents[1] / "data" / "gavel"
TRACE = DATA / "t0-60.trace"
#: Gavel's own command line for the reference figures, less ``-t`` and ``-p``.
GAVEL_FLAGS = [
    "-c", "36:36:36", "--num_gpus_per_server", "4:4:4", "--seed", "0", "--solver", "ECOS",
    "--time_per_iteration", "360",
]  # fmt: skip


def _gavel(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["gavel", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _figures(text: str) -> dict[str, float]:
    """The numbers of the report's lines, by name (``job <id>`` for the completion times)."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        if m := re.match(r"Job (\d+)(?: \(high priority\))?: ([0-9.]+)$", line):
            found[f"job {m.group(1)}"] = float(m.group(2))
        elif m := re.match(r"(Total duration|Average job completion time|Cluster utilization): ([0-9.]+)", line):
            found[m.group(1)] = float(m.group(2))
        elif m := re.match(r"Failed jobs: (\d+)", line):
            found["failed"] = float(m.group(1))
    return found


def test_the_report_has_gavels_lines_in_its_format(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _gavel(capsys, "-t", str(TRACE), "-p", "fifo", *GAVEL_FLAGS)
    assert code == 0
    lines = out.splitlines()
    assert re.fullmatch(r"Total duration: \d+\.\d{3} seconds \(\d+\.\d{2} hours\)", lines[0])
    assert lines[1] == "Job completion times:"
    assert re.fullmatch(r"Job 0: \d+\.\d{3}", lines[2])
    assert any(re.fullmatch(r"Average job completion time: \d+\.\d{3} seconds \(\d+\.\d{2} hours\)", x) for x in lines)
    assert any(x.startswith("Average job completion time (low priority): ") for x in lines)
    assert any(re.fullmatch(r"Cluster utilization: \d\.\d{3}", x) for x in lines)
    _, short, _ = _gavel(capsys, "-t", str(TRACE), "-p", "fifo", *GAVEL_FLAGS, "--no_job_times")
    assert not any(x.startswith("Job 0:") for x in short.splitlines())
    assert "Job completion times:" not in short  # no heading left over the per-job lines it leaves out
    assert short.splitlines()[1].startswith("Average job completion time: ")
    assert _figures(short)["Average job completion time"] == _figures(out)["Average job completion time"]


@pytest.mark.parametrize("gavel_policy", ["fifo", "max_min_fairness_perf", "max_min_fairness", "finish_time_fairness"])
def test_figures_match_gavels_reference_on_the_smallest_trace(
    gavel_policy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = json.loads((DATA / "reference.json").read_text())["traces"]["t0-60"]["results"][gavel_policy]
    code, out, _ = _gavel(capsys, "-t", str(TRACE), "-p", gavel_policy, *GAVEL_FLAGS)
    assert code == 0
    got = _figures(out)
    assert got["Average job completion time"] == pytest.approx(ref["avg_jct_s"], rel=0.02)
    assert got["Total duration"] == pytest.approx(ref["makespan_s"], rel=0.05)
    assert got["failed"] == len(ref["failed"])
    if gavel_policy == "fifo":  # every job completes at Gavel's time, to the printed millisecond
        assert {k: v for k, v in got.items() if k.startswith("job ")} == {
            f"job {j}": pytest.approx(t, abs=0.0015) for j, t in ref["jct_s"].items()
        }


def test_figures_equal_hetgym_simulate_compat_gavel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = DATA / "poisson-200-900s.trace"
    code, out, _ = _gavel(capsys, "-t", str(trace), "-p", "max_min_fairness_perf", *GAVEL_FLAGS)
    assert code == 0
    got = _figures(out)
    args = ["simulate", "--policy", "gavel-mmf", "--trace", str(trace), "--trace-format", "gavel"]
    args += ["--cluster", "gavel-108", "--compat", "gavel", "--no-progress", "--out", str(tmp_path / "sim")]
    assert main(args) == 0
    capsys.readouterr()
    metrics = json.loads((tmp_path / "sim" / "metrics.json").read_text())
    assert got["Average job completion time"] == float(f"{metrics['jct_mean_s']:.3f}")
    assert got["Total duration"] == float(f"{metrics['makespan_s']:.3f}")
    assert got["Cluster utilization"] == float(f"{metrics['utilisation']:.3f}")
    assert got["failed"] == metrics["num_rejected"]
    import csv

    with open(tmp_path / "sim" / "jobs.csv") as fh:
        done = {f"job {r['job_id']}": float(f"{float(r['jct_s']):.3f}") for r in csv.DictReader(fh) if r["jct_s"]}
    assert {k: v for k, v in got.items() if k.startswith("job ")} == done


def test_the_cluster_follows_gavels_flags() -> None:
    cluster, notes = gavel_cluster("36:36:36", "4:4:4")
    assert cluster.gpu_types == ("v100", "p100", "k80") and cluster.total_gpus == 108
    assert {s.num_gpus for s in cluster.servers} == {4} and not notes
    cluster, notes = gavel_cluster("25:0:0", "1:1:1")  # Gavel's defaults: a type with no GPU is absent
    assert cluster.gpu_types == ("v100",) and len(cluster.servers) == 25
    cluster, notes = gavel_cluster("10:0:6", "4:4:4")  # as Gavel, count // per_server servers
    assert cluster.total_gpus == 12 and len(notes) == 2 and "2 left out" in notes[0]


def test_every_mapped_policy_is_registered() -> None:
    from hetgym.sim.policy import list_policies

    assert set(GAVEL_POLICIES.values()) <= set(list_policies())
    assert hetgym_policy("max_min_fairness_perf") == "gavel-mmf"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-p", "gandiva"], "Gavel's policy 'gandiva' is not reproduced; supported: fifo, max_min_fairness"),
        (["-p", "fiffo"], "-p fiffo: not one of Gavel's policies; supported: fifo"),
        (["-c", "36:36"], "-c/--cluster_spec '36:36': give three non-negative integers as v100:p100:k80"),
        (["-c", "a:b:c"], "give three non-negative integers"),
        (["--num_gpus_per_server", "0:4:4"], "v100 has 25 GPUs in servers of 0"),
        (["-c", "3:0:0", "--num_gpus_per_server", "4:4:4"], "gives no server"),
        (["--throughputs_file", "simulation_throughputs.json"], "--throughputs_file: hetgym reads its own copy"),
        (["-d"], "-d/--debug: Gavel's debug mode"),
        (["--checkpoint_file", "x"], "--checkpoint_file: checkpoints of the simulator's state are not supported"),
        (["-s", "0", "-e", "10"], "-s/--window-start: measurement windows (-s/-e) are not supported"),
    ],
)
def test_bad_or_unsupported_flags_are_named(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _gavel(capsys, "-t", str(TRACE), *argv)
    assert code == 2 and not out
    assert err.startswith("hetgym gavel: error: ") and message in err, err


def test_a_missing_trace_and_a_bad_solver_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _gavel(capsys, "-t", str(tmp_path / "none.trace"), *GAVEL_FLAGS)
    assert code == 2 and "none.trace" in err
    with pytest.raises(SystemExit) as exit_:
        main(["gavel", "-t", str(TRACE), "--solver", "CPLEX"])
    assert exit_.value.code == 2
    assert "invalid choice: 'CPLEX'" in capsys.readouterr().err


def test_the_process_imports_only_what_the_run_needs() -> None:
    code = (
        "import contextlib, io, json, sys\n"
        "from hetgym.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['gavel', '-t', {str(TRACE)!r}, '-c', '36:36:36', '--num_gpus_per_server', '4:4:4'])\n"
        "heavy = ('pandas', 'pyarrow', 'scipy', 'matplotlib', 'torch', 'gymnasium', 'rich', 'hetgym.experiments',"
        " 'hetgym.sweep', 'agents')\n"
        "print(json.dumps([m for m in heavy if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
