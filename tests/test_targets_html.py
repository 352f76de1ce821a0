"""Two targets' report in the HTML page: the by-target table and the case-by-case matrix, checked
in the page's text and in headless Chromium's DOM."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from command_line import Project, exit_code_of, localeval
from test_html_browser import CHROMIUM, chromium
from test_targets import TWO_TARGETS, project, run  # noqa: F401 -- project is a fixture

from localeval.cli.exits import EXIT_ERRORED
from localeval.errors import BackendError
from localeval.testing import ScriptedJudge

XSS = "<img src=x onerror=alert(1)>"


@pytest.fixture
def page(project: Project, monkeypatch: pytest.MonkeyPatch) -> Path:  # noqa: F811
    (project / "eval.toml").write_text(TWO_TARGETS)
    a, b = ScriptedJudge(texts=["Paris", "4"]), ScriptedJudge(texts=[XSS, BackendError("timed out")])
    run(project, {"a": a, "b": b}, monkeypatch, run_dir=project / "run")
    return project / "run" / "report.html"


def matrix_rows(dom: str) -> list[list[str]]:
    """The matrix's rows as the text of their cells (tags dropped, entities read, spaces folded)."""
    table = re.search(r'<table class="matrix">.*?</table>', dom, re.S)
    assert table is not None
    rows = re.findall(r"<tr>(.*?)</tr>", table.group(0), re.S)
    return [[_text(cell) for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)] for row in rows]


def _text(cell: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", cell)).split())


def test_the_page_has_the_by_target_table_and_the_outputs_side_by_side(page: Path) -> None:
    text = page.read_text()
    assert '<section class="targets"' in text and '<table class="by-target">' in text
    rows = matrix_rows(text)
    assert rows[0] == ["golden", "a", "b"]
    assert rows[1] == ["fr Capital of France?", "Paris exact_match: 1.000 pass", f"{XSS} exact_match: 0.000 fail"]
    assert rows[2] == ["sum 2 + 2?", "4 exact_match: 1.000 pass",
                       "exact_match: the target failed: timed out (target b)"]
    assert XSS not in text  # an output is text, never markup
    assert re.findall(r'<span class="name" data-sort="[^"]*">([^<]*)<', text)[:2] == ["fr @ a", "fr @ b"]


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs headless Chromium at /usr/bin/chromium")
def test_chromium_shows_the_matrix(page: Path, tmp_path: Path) -> None:
    dom = chromium(tmp_path, page.as_uri(), "--dump-dom")
    rows = matrix_rows(dom)
    assert [r[0] for r in rows] == ["golden", "fr Capital of France?", "sum 2 + 2?", "given Colour of the sky?"]
    assert rows[1][1:] == ["Paris exact_match: 1.000 pass", f"{XSS} exact_match: 0.000 fail"]
    assert "<img" not in dom.split('<table class="matrix">')[1]


@pytest.mark.model
@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs headless Chromium at /usr/bin/chromium")
def test_the_compare_models_example_report_shows_both_models_side_by_side(tmp_path: Path) -> None:
    """The real example: both shipped models answer, the default model judges, Chromium renders the matrix."""
    example = Path(__file__).resolve().parents[1] / "examples" / "compare-models"
    done = localeval("run", "-c", str(example / "eval.toml"), "--run-dir", str(tmp_path / "run"),
                     env={"LOCALEVAL_CACHE_DIR": str(tmp_path / "cache")})
    assert (tmp_path / "run" / "report.json").exists(), done.stderr
    goldens = [json.loads(line) for line in (example / "goldens.jsonl").read_text().splitlines()]
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert done.returncode == exit_code_of(report) != EXIT_ERRORED, done.stderr
    assert [t["name"] for t in report["targets"]] == ["smollm2-135m", "gemma-3-270m"]
    dom = chromium(tmp_path, (tmp_path / "run" / "report.html").as_uri(), "--dump-dom")
    rows = matrix_rows(dom)
    assert rows[0] == ["golden", "smollm2-135m", "gemma-3-270m"]
    assert len(rows) == 1 + len(goldens)
    outputs = {(c["name"], c["target"]): c["inputs"]["actual_output"] for c in report["cases"]}
    for row, golden in zip(rows[1:], goldens):
        for cell, target in zip(row[1:], ("smollm2-135m", "gemma-3-270m")):
            assert " ".join(outputs[(golden["name"], target)].split()) in cell
