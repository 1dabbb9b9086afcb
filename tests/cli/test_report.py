"""``hetgym report RESULTS_DIR``: one self-contained page from a compare, sweep or evaluate folder."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hetgym.cli import main

REPO = Path(__file__).resolve().parents[2]
CHROMIUMS = ("chromium", "chromium-browser", "google-chrome")


def _compare_folder(tmp_path: Path) -> Path:
    out = tmp_path / "cmp"
    argv = ["compare", "--scenario", "tiny", "--policies", "fifo,srtf", "--seeds", "0,1", "--out", str(out),
            "--no-progress", "-P", "srtf:type_choice=order"]  # fmt: skip
    assert main(argv) == 0
    return out


def _assert_self_contained(page: str, num_images: int) -> None:
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert len(re.findall(r'<img [^>]*src="data:image/png;base64,[A-Za-z0-9+/=]{100,}"', page)) == num_images
    assert not re.search(r"(href|src)=\"(?!data:)", page)  # no link or source outside the page
    assert "http://" not in page and "https://" not in page and "<script" not in page


def test_a_compare_folder_becomes_one_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _compare_folder(tmp_path)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert main(["report", str(out)]) == 0
    assert "report.html" in capsys.readouterr().out
    page = (out / "report.html").read_text()
    _assert_self_contained(page, num_images=3)  # dsr, jct_cdf, utilisation
    assert page.count("<table>") == 2  # the metrics and the timings
    assert "<td>fifo</td>" in page and "<td>srtf</td>" in page and "knobs: srtf:type_choice=order" in page
    markdown = (out / "report.md").read_text()
    assert "| policy | DSR |" in markdown and "![dsr](dsr.png)" in markdown
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name in before} == before  # results untouched
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_a_sweep_folder_becomes_one_page_with_its_figures(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    argv = ["sweep", "--policies", "fifo,srtf", "--scenarios", "tiny", "--seeds", "0,1", "--backend", "sequential",
            "--no-progress", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    assert main(["report", str(out), "--format", "html"]) == 0
    page = (out / "report.html").read_text()
    _assert_self_contained(page, num_images=2)  # DSR and JCT, drawn for the page
    assert "<td>fifo</td>" in page and "2 / 0" in page and not (out / "report.md").exists()


def test_an_evaluate_folder_becomes_one_page(tmp_path: Path) -> None:
    source = REPO / "docs" / "results" / "agents"
    folder = tmp_path / "eval"
    folder.mkdir()
    for name in ("evaluation.csv", "evaluation.png"):
        shutil.copy(source / name, folder / name)
    target = tmp_path / "pages" / "page.html"
    assert main(["report", str(folder), "--out", str(target)]) == 0
    page = target.read_text()
    _assert_self_contained(page, num_images=1)
    assert "<td>dancer</td>" in page and "expert" in page
    assert "](../eval/evaluation.png)" in target.with_suffix(".md").read_text()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "missing", "does not exist"),
        (lambda p: p, "holds no results"),
    ],
)
def test_a_folder_with_no_results_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: object, message: str
) -> None:
    folder = make(tmp_path)  # type: ignore[operator]
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "report.html").exists()


def _chromium() -> str | None:
    return next((path for name in CHROMIUMS if (path := shutil.which(name))), None)


@pytest.mark.slow
@pytest.mark.skipif(
    _chromium() is None, reason=f"no headless Chromium binary on PATH (looked for {', '.join(CHROMIUMS)})"
)
def test_the_page_opens_in_headless_chromium(tmp_path: Path) -> None:
    out = _compare_folder(tmp_path)
    assert main(["report", str(out), "--format", "html"]) == 0
    shot = tmp_path / "report.png"
    cmd = [str(_chromium()), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           f"--screenshot={shot}", "--window-size=1200,1600", (out / "report.html").resolve().as_uri()]  # fmt: skip
    subprocess.run(cmd, capture_output=True, timeout=120, check=True)
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000
