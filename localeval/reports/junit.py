"""The run as JUnit XML, for CI test-report views (GitLab, Jenkins, GitHub actions).

One ``<testsuite>`` per metric, one ``<testcase>`` per case in it: a failed
result is a ``<failure>`` whose message states the score, the threshold and
the rule that decided it, with the judge's reason as its text (a composite's
names each part that failed on its own, and the aggregate when it fell short); an
errored one is an ``<error>``. A conversation is one ``<testcase>`` per metric, and a failure
lists the verdict on each judged turn under the reason. Each suite's ``<properties>`` name the run and the
model, and give the metric's pass rate and mean score with their 95% intervals' bounds
(``pass_rate_ci95_low``, ``pass_rate_ci95_high``, and the same for ``mean_score``).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from localeval.data.results import CaseResult, MetricResult, MetricSummary, RunReport
from localeval.reports.rules import case_label, failure_message, pass_rule, turn_verdicts

# Characters XML 1.0 cannot hold at all, not even escaped; a judge's reply may contain them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
#: The longest ``message`` attribute; the full text is the element's body.
MAX_MESSAGE = 500


def junit_xml(report: RunReport) -> str:
    """The report as a JUnit XML document (UTF-8 declared)."""
    root = ET.Element("testsuites", name="localeval")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    total_time = 0.0
    for summary in report.summary:
        pairs = [(c, r) for c in report.cases for r in c.results if r.metric == summary.metric]
        suite = _suite(report, summary, pairs)
        root.append(suite)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
        total_time += sum(r.duration_s for _, r in pairs)
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{total_time:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _suite(report: RunReport, summary: MetricSummary, pairs: list[tuple[CaseResult, MetricResult]]) -> ET.Element:
    results = [r for _, r in pairs]
    suite = ET.Element(
        "testsuite",
        name=_clean(summary.metric),
        tests=str(len(results)),
        failures=str(sum(1 for r in results if r.passed is False)),
        errors=str(sum(1 for r in results if r.errored)),
        skipped="0",
        time=f"{sum(r.duration_s for r in results):.3f}",
    )
    properties = ET.SubElement(suite, "properties")
    backend = report.backend
    for name, value in (
        ("run_id", report.run_id),
        ("created_at", report.created_at),
        ("localeval_version", report.localeval_version),
        ("backend", backend.kind if backend else None),
        ("model", backend.model if backend else None),
        ("model_sha256", backend.model_sha256 if backend else None),
        ("metric_kind", results[0].kind if results else None),
        ("threshold", f"{results[0].threshold:g}" if results else None),
        ("passes_at", f"score {pass_rule(results[0])} threshold" if results else None),
        ("dataset_sha256", report.dataset.sha256 if report.dataset else None),
        ("prompt_tokens", str(_tokens(results, "prompt_tokens"))),
        ("completion_tokens", str(_tokens(results, "completion_tokens"))),
        *_figures(summary),
    ):
        if value is not None:
            ET.SubElement(properties, "property", name=name, value=_clean(value))
    for case, result in pairs:
        suite.append(_testcase(case, result))
    return suite


def _figures(summary: MetricSummary) -> list[tuple[str, str | None]]:
    """The pass rate and mean score with their 95% intervals' bounds, where the report has them."""
    found: list[tuple[str, str | None]] = []
    for name, value, interval in (("pass_rate", summary.pass_rate, summary.pass_rate_interval),
                                  ("mean_score", summary.mean_score, summary.mean_score_interval)):
        found.append((name, _number(value)))
        if interval is not None:
            found += [(f"{name}_ci95_low", _number(interval.low)), (f"{name}_ci95_high", _number(interval.high))]
    return found


def _number(value: float | None) -> str | None:
    return None if value is None else f"{value:.6g}"


def _tokens(results: list[MetricResult], name: str) -> int:
    return sum(getattr(r.usage, name) for r in results if r.usage is not None)


def _testcase(case: CaseResult, result: MetricResult) -> ET.Element:
    element = ET.Element(
        "testcase",
        classname=_clean(f"localeval.{result.metric}"),
        name=_clean(case_label(case)),
        time=f"{result.duration_s:.3f}",
    )
    if case.location:  # "data.jsonl:3" -> file and line, as pytest writes them
        path, colon, line = case.location.rpartition(":")
        element.set("file", _clean(path if colon and line.isdigit() else case.location))
        if colon and line.isdigit():
            element.set("line", line)
    if result.errored:
        error = result.error or ""
        kind, colon, _ = error.partition(":")
        child = ET.SubElement(element, "error", message=_message(error), type=_clean(kind if colon else "error"))
        child.text = _clean(error)
    elif result.passed is False:
        child = ET.SubElement(element, "failure", message=_message(failure_message(result)), type="threshold")
        turns = "".join(f"\nturn {number}: {verdict}" for number, verdict in turn_verdicts(result))
        child.text = _clean(result.reason + turns)
    return element


def _message(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return _clean(first if len(first) <= MAX_MESSAGE else first[: MAX_MESSAGE - 1] + "…")


def _clean(text: str) -> str:
    return _NOT_XML.sub("\N{REPLACEMENT CHARACTER}", text)
