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
from localeval.data.results import CaseResult, MetricResult
from localeval.errors import BackendError
from localeval.reports.targets_html import better_target
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
    assert rows[0] == ["golden", "expected output", "a", "b"]
    assert rows[1] == ["fr Capital of France?", "Paris", "better Paris exact_match: 1.000 pass",
                       f"{XSS} exact_match: 0.000 fail"]
    assert rows[2] == ["sum 2 + 2?", "4", "4 exact_match: 1.000 pass",  # b has no output: nothing to prefer
                       "exact_match: the target failed: timed out (target b)"]
    assert rows[3] == ["given Colour of the sky?", "blue", "blue exact_match: 1.000 pass",  # a tie: no mark
                       "blue exact_match: 1.000 pass"]
    assert XSS not in text  # an output is text, never markup
    assert re.findall(r'<span class="name" data-sort="[^"]*">([^<]*)<', text)[:2] == ["fr @ a", "fr @ b"]


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs headless Chromium at /usr/bin/chromium")
def test_chromium_shows_the_matrix(page: Path, tmp_path: Path) -> None:
    dom = chromium(tmp_path, page.as_uri(), "--dump-dom")
    rows = matrix_rows(dom)
    assert [r[0] for r in rows] == ["golden", "fr Capital of France?", "sum 2 + 2?", "given Colour of the sky?"]
    assert rows[1][1:] == ["Paris", "better Paris exact_match: 1.000 pass", f"{XSS} exact_match: 0.000 fail"]
    assert "<img" not in dom.split('<table class="matrix">')[1]
    assert re.findall(r'<td id="(case-\d-target)" class="better">', dom) == ["case-1-target"]


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs headless Chromium at /usr/bin/chromium")
def test_chromium_aligns_each_figures_header_with_its_column(page: Path, tmp_path: Path) -> None:
    """A numeric column is right-aligned, its header too: each target's name stands over its figures."""
    probe = """<script>
      var cells = document.querySelectorAll(
        "table.by-target tr > *:nth-child(2), table.identities tr > *:nth-child(6)");
      document.body.setAttribute("data-probe", JSON.stringify(Array.prototype.map.call(cells, function (c) {
        var box = c.getBoundingClientRect(), range = document.createRange();
        range.selectNodeContents(c);
        return [c.tagName, getComputedStyle(c).textAlign, Math.round(box.right - range.getBoundingClientRect().right)];
      })));
    </script>"""
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", probe + "</body>"), encoding="utf-8")
    dom = chromium(tmp_path, probed.as_uri(), "--dump-dom")
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, "the probe did not run"
    cells = json.loads(html.unescape(found.group(1)))
    assert [tag for tag, _, _ in cells] == ["TH", "TD", "TD", "TH", "TD"]  # identities' generated; by-target's a
    assert {align for _, align, _ in cells} == {"right"}
    gaps = {gap for _, _, gap in cells}  # from each cell's right edge to its text's: the padding, the same for all
    assert len(gaps) == 1 and 0 < gaps.pop() <= 12


def test_the_better_output_has_the_highest_mean_with_lower_is_better_turned_and_errors_out() -> None:
    def case(target: str, *scores: float | None, lower: bool = False) -> CaseResult:
        results = [MetricResult(metric=f"m{i}", kind="k", score=s, passed=None if s is None else True, threshold=0.5,
                                lower_is_better=lower and i == 1, error=None if s is not None else "down")
                   for i, s in enumerate(scores)]
        return CaseResult(index=0, name="g", results=results, target=target)

    assert better_target({"a": case("a", 0.9, 0.5), "b": case("b", 0.6, 0.6)}) == "a"  # 0.7 against 0.6
    # the second metric is better lower: a's 0.9 there is worse than b's 0.1
    assert better_target({"a": case("a", 0.9, 0.9, lower=True), "b": case("b", 0.8, 0.1, lower=True)}) == "b"
    assert better_target({"a": case("a", 0.5, 0.7), "b": case("b", 0.7, 0.5)}) is None  # a tie
    assert better_target({"a": case("a", 1.0, None), "b": case("b", 0.2, 0.2)}) is None  # only b scored both
    trio = {"a": case("a", 1.0, None), "b": case("b", 0.2, 0.2), "c": case("c", 0.3, 0.2)}
    assert better_target(trio) == "c"  # among those with every metric scored


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
    assert rows[0] == ["golden", "expected output", "smollm2-135m", "gemma-3-270m"]
    assert len(rows) == 1 + len(goldens)
    outputs = {(c["name"], c["target"]): c["inputs"]["actual_output"] for c in report["cases"]}
    for row, golden in zip(rows[1:], goldens):
        assert row[1] == " ".join(golden.get("expected_output", "–").split())
        for cell, target in zip(row[2:], ("smollm2-135m", "gemma-3-270m")):
            assert " ".join(outputs[(golden["name"], target)].split()) in cell
