"""Trace input checks: unknown columns named with the nearest known one, rows numbered alike everywhere,
bounded lines and fields, bad metadata, and output paths checked before any work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from trace_fixtures import HELIOS_HEADER, write_helios, write_pai

import hetgym  # noqa: F401  (registers the ids)
from hetgym.cli import main
from hetgym.sim import InvalidJobError, Simulator, get_cluster
from hetgym.workloads import TraceError, read_trace
from hetgym.workloads.schema import MAX_FIELD_CHARS, MAX_LINE_CHARS, REQUIRED_COLUMNS
from hetgym.workloads.traces import load_trace

HEADER = ",".join(REQUIRED_COLUMNS)
ROWS = ["0,0,resnet50,64,100,1", "1,10,resnet50,64,100,1", "2,20,resnet50,64,100,1"]


def canonical(path: Path, header: str = HEADER, rows: list[str] = ROWS, extra: str = "") -> Path:
    path.write_text("\n".join([header + extra, *[r + (",5000" if extra else "") for r in rows]]) + "\n")
    return path


# --------------------------------------------------------------------------------------------
# Unknown columns


def test_a_deadline_column_is_an_error_naming_deadline_s(tmp_path: Path) -> None:
    path = canonical(tmp_path / "t.csv", extra=",deadline")
    with pytest.raises(TraceError) as err:
        read_trace(path)
    text = str(err.value)
    assert f"unknown column 'deadline' in {path}; did you mean 'deadline_s'?" in text
    assert "known columns: job_id, submit_s" in text and "feat_" in text
    # The same through the CLI: one line, exit status 2, no traceback.
    proc = subprocess.run(
        [sys.executable, "-m", "hetgym.cli", "simulate", "--trace", str(path), "--policy", "fifo"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "did you mean 'deadline_s'" in proc.stderr and "Traceback" not in proc.stderr
    # With the right name every deadline is kept; feat_ columns stay features.
    good = canonical(tmp_path / "g.csv", extra=",deadline_s")
    assert [j.deadline_s for j in read_trace(good)] == [5000.0] * 3
    feat = canonical(tmp_path / "f.csv", extra=",feat_deadline")
    assert [j.features["deadline"] for j in read_trace(feat)] == [5000] * 3


def test_a_parquet_trace_with_an_unknown_column_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    table = pa.table({**{c: [1] for c in REQUIRED_COLUMNS}, "job_type": ["resnet50"], "num_gpu": [2]})
    pq.write_table(table, path)
    with pytest.raises(TraceError, match=r"unknown column 'num_gpu' in .*t.parquet; did you mean 'num_gpus'\?"):
        read_trace(path)


def test_public_csv_readers_name_unknown_columns(tmp_path: Path) -> None:
    ef = tmp_path / "cluster1.csv"
    ef.write_text("job_id,submission_time,duration,num_gpu,num_gpus\n1,0,100,1,1\n")
    with pytest.raises(TraceError, match=r"unknown column 'num_gpus' in .*cluster1.csv \(header\); did you mean"):
        load_trace(ef, "elasticflow")
    helios = write_helios(tmp_path / "cluster_log.csv", header=HELIOS_HEADER + ",deadline")
    with pytest.raises(TraceError, match=r"unknown column 'deadline' in .*cluster_log.csv \(header\)"):
        load_trace(helios, "helios")
    # The published Helios columns that are not read (cpu_num, node_num, queue) stay accepted.
    (tmp_path / "ok").mkdir()
    assert len(load_trace(write_helios(tmp_path / "ok" / "cluster_log.csv"), "helios")) > 0
    pai = write_pai(
        tmp_path / "pai",
        jobs=["job_name,inst_id,user,status,start_time,end_time,statuss", "j1,1,u,Terminated,0,100,x"],
    )
    with pytest.raises(TraceError, match=r"unknown column 'statuss' in .*; did you mean 'status'\?"):
        load_trace(pai, "pai")


# --------------------------------------------------------------------------------------------
# Row numbering


def test_a_bad_row_is_numbered_alike_by_every_entry_point(tmp_path: Path) -> None:
    rows = [*ROWS[:2], "2,20,nosuchmodel,64,100,1"]  # the third data row (line 4)
    path = canonical(tmp_path / "t.csv", rows=rows)
    expected = f"{path}: row 3, field 'job_type'"
    with pytest.raises(TraceError) as err:
        from hetgym.sim.throughput import ThroughputModel

        read_trace(path, throughput=ThroughputModel.default())
    assert str(err.value).startswith(expected)
    with pytest.raises(TraceError) as err:
        gym.make("HetCluster-v0", trace=str(path))
    assert str(err.value).startswith(expected)
    proc = subprocess.run(
        [sys.executable, "-m", "hetgym.cli", "simulate", "--trace", str(path), "--policy", "fifo"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and expected in proc.stderr
    # The simulator, which has no file, names the job by id (no row of its own numbering).
    with pytest.raises(InvalidJobError) as sim_err:
        Simulator(get_cluster("tiny"), list(read_trace(path)))
    assert str(sim_err.value).startswith("job 2: field 'job_type'") and "row" not in str(sim_err.value)
    # A public reader: the same row number, and the line in the file.
    ef = tmp_path / "cluster1.csv"
    ef.write_text("job_id,submission_time,duration,num_gpu\n1,0,100,1\n2,5,100,1\n3,9,100,x\n")
    with pytest.raises(TraceError, match=r"cluster1.csv: row 3 \(line 4\), field 'num_gpu'"):
        load_trace(ef, "elasticflow")


# --------------------------------------------------------------------------------------------
# Bounded lines and fields


def test_a_huge_line_in_a_canonical_csv_names_the_file_row_and_line(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("# hetgym-trace {}\n" + HEADER + "\n" + ROWS[0] + "\n1,10,resnet50," + "9" * (MAX_LINE_CHARS + 10))
    with pytest.raises(TraceError, match=rf"{path}: row 2 \(line 4\): longer than {MAX_LINE_CHARS} bytes"):
        read_trace(path)


def test_a_huge_field_in_a_public_csv_names_the_file_and_row(tmp_path: Path) -> None:
    ef = tmp_path / "cluster1.csv"
    ef.write_text("job_id,submission_time,duration,num_gpu\n1,0,100,1\n2,5,100," + "7" * (MAX_LINE_CHARS + 1) + "\n")
    with pytest.raises(TraceError, match=r"cluster1.csv: row 2 \(line 3\): longer than"):
        load_trace(ef, "elasticflow")
    # A quoted field spanning many short lines hits the CSV field limit instead.
    field = "\n".join(["x" * 100] * (MAX_FIELD_CHARS // 100 + 10))
    ef.write_text(f'job_id,submission_time,duration,num_gpu\n1,0,100,1\n2,5,100,"{field}"\n')
    with pytest.raises(TraceError, match=r"cluster1.csv: row 2 \(line \d+\): malformed CSV \(field larger than"):
        load_trace(ef, "elasticflow")


def test_a_64_mb_field_is_not_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    with open(path, "w") as fh:
        fh.write(HEADER + "\n0,0,resnet50,64,100,")
        chunk = "1" * (1 << 20)
        for _ in range(64):
            fh.write(chunk)
        fh.write("\n")
    code = textwrap.dedent(
        f"""
        import resource, sys
        from hetgym.workloads import TraceError, read_trace
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            read_trace({str(path)!r})
        except TraceError as exc:
            print("error", exc)
        print("grew_kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "longer than" in out
    grew_kib = int(out.split("grew_kib")[1])
    assert grew_kib < 16 * 1024  # a whole-field read would take 64 MB or more


# --------------------------------------------------------------------------------------------
# Metadata


@pytest.mark.parametrize("meta", [[1, 2], "text", 3])
def test_metadata_that_is_not_an_object_is_a_clear_error(tmp_path: Path, meta: object) -> None:
    path = tmp_path / "t.parquet"
    table = pa.table({c: [0] for c in REQUIRED_COLUMNS}).replace_schema_metadata({b"hetgym": json.dumps(meta)})
    pq.write_table(table, path)
    with pytest.raises(TraceError, match=r"the parquet metadata key 'hetgym' holds a JSON \w+, not an object"):
        read_trace(path)
    csv = tmp_path / "t.csv"
    csv.write_text(f"# hetgym-trace {json.dumps(meta)}\n{HEADER}\n{ROWS[0]}\n")
    with pytest.raises(TraceError, match=r"line 1 \(the metadata comment\) holds a JSON \w+, not an object"):
        read_trace(csv)


# --------------------------------------------------------------------------------------------
# Output paths of `hetgym trace convert` / `trace sample`


def _convert(src: Path, out: Path | str, *extra: str) -> list[str]:
    return ["trace", "convert", str(src), "-f", "helios", "--out", str(out), *extra]


def test_convert_never_overwrites_its_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    src = write_helios(tmp_path / "cluster_log.csv")
    original = src.read_bytes()
    link = tmp_path / "link.csv"
    link.symlink_to(src)
    hard = tmp_path / "hard.csv"
    os.link(src, hard)
    monkeypatch.chdir(tmp_path)
    for out in (src, link, hard, Path("cluster_log.csv"), Path("sub/../cluster_log.csv")):
        for force in ((), ("--force",)):
            assert main(_convert(src, out, *force)) == 2
            err = capsys.readouterr().err
            assert "is the source" in err and "would destroy the trace" in err and "Traceback" not in err
    assert src.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cluster_log.csv", "hard.csv", "link.csv"]


def test_convert_and_sample_refuse_an_existing_out_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = write_helios(tmp_path / "cluster_log.csv")
    out = tmp_path / "out.csv"
    out.write_text("keep me\n")
    assert main(_convert(src, out)) == 2
    assert "exists; choose another name, or add --force" in capsys.readouterr().err
    assert out.read_text() == "keep me\n"
    # A failing conversion with --force leaves the existing file as it was.
    (tmp_path / "bad").mkdir()
    bad = write_helios(tmp_path / "bad" / "cluster_log.csv", header=HELIOS_HEADER + ",oops")
    assert main(_convert(bad, out, "--force")) == 2
    assert "unknown column 'oops'" in capsys.readouterr().err
    assert out.read_text() == "keep me\n"
    assert main(_convert(src, out, "--force")) == 0
    assert len(read_trace(out)) > 0
    sample = ["trace", "sample", "--num-jobs", "5", "--out", str(out)]
    assert main(sample) == 2
    assert "exists" in capsys.readouterr().err
    assert main([*sample, "--force"]) == 0
    assert len(read_trace(out)) == 5
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.parametrize("command", ["convert", "sample"])
def test_a_directory_or_a_file_as_folder_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    src = write_helios(tmp_path / "cluster_log.csv")
    folder = tmp_path / "results.csv"
    folder.mkdir()
    under_file = src / "x.csv"
    for out, message in ((folder, "is a directory"), (under_file, "is a file, not a folder")):
        argv = _convert(src, out, "--force") if command == "convert" else ["trace", "sample", "--out", str(out)]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err
    assert folder.is_dir() and not any(folder.iterdir())
