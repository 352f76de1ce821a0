"""The HTML report's table of cases × metrics, each case expandable to its inputs and evidence.

Each case is a ``<details id="case-N">`` whose ``<summary>`` is one row of the
table, so a case opens without JavaScript; the data attributes are what the
page's script filters and sorts by.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import PurePath
from typing import Any

from localeval.data.results import CaseResult, MetricResult, RunReport
from localeval.reports.evidence import render_evidence
from localeval.reports.rules import (
    case_anchor,
    case_label,
    case_number,
    composite_failure,
    pass_rule,
    verdict_text,
    verdict_word,
)
from localeval.reports.transcript_html import is_conversation, render_transcript

#: How a pass rule reads on the page.
_SYMBOL = {">=": "≥", "<=": "≤"}

#: An opened case shows these first, in this order: what went in, what came out and what should have;
#: then what the case is called and tagged. The other fields follow in the case's own order.
READING_ORDER = ("input", "actual_output", "expected_output", "name", "tags")


def render_cases(report: RunReport) -> str:
    """The filter controls and the table of every case of ``report``."""
    metrics = [s.metric for s in report.summary]
    head = "".join(
        f'<button type="button" class="sort" data-col="{i}" data-type="{kind}" title="sort by {escape(label)}">'
        f'{escape(label).replace("_", "_<wbr>")}</button>'
        for i, (label, kind) in enumerate([("#", "number"), ("case", "text")] + [(m, "number") for m in metrics])
    )
    rows = "".join(_case(case, metrics) for case in report.cases)
    total = len(report.cases)
    return (
        '<div class="controls">'
        '<input type="search" id="filter-text" placeholder="Filter by name or inputs" aria-label="filter cases">'
        '<select id="filter-status" aria-label="status filter">'
        '<option value="all">all cases</option><option value="failed">any failed</option>'
        '<option value="errored">any errored</option></select>'
        f'<span id="shown" aria-live="polite">{total} of {total} cases</span>'
        '<span class="grow"></span>'
        '<button type="button" id="expand-all">expand all</button>'
        '<button type="button" id="collapse-all">collapse all</button></div>'
        f'<div class="grid" id="cases" style="--metrics: {len(metrics)}">'
        f'<div class="head">{head}</div>{rows}</div>'
    )


def short_location(location: str) -> str:
    """A case's 'file:line' as a reader scans it: the file's name and the line, no folders (the whole path is
    in the header's fold and in the element's title)."""
    path, sep, line = location.rpartition(":")
    return f"{PurePath(path).name}:{line}" if sep and line.isdigit() else PurePath(location).name


def _case(case: CaseResult, metrics: list[str]) -> str:
    by_metric = {r.metric: r for r in case.results}
    failed = any(r.passed is False for r in case.results)
    errored = any(r.errored for r in case.results)
    label = case_label(case)
    where = f'<small title="{escape(case.location)}">{escape(short_location(case.location))}</small>' if case.location else ""
    cells = "".join(_cell(by_metric.get(m), m) for m in metrics)
    extra = [r for r in case.results if r.metric not in metrics]
    results = "".join(_result(r) for r in [*(by_metric[m] for m in metrics if m in by_metric), *extra])
    anchor = case_anchor(case)
    return (
        f'<details class="case" id="{anchor}" data-failed="{int(failed)}" data-errored="{int(errored)}">'
        f'<summary><span class="num" data-sort="{case_number(case)}">{case_number(case)}</span>'
        f'<span class="name" data-sort="{escape(label.lower())}">{escape(label)}{where}</span>{cells}</summary>'
        f'<div class="{"body conversation" if is_conversation(case.inputs) else "body"}"><section class="inputs"><h4>inputs <a class="link" href="#{anchor}">#{anchor}</a></h4>'
        f"{_inputs(case.inputs, case.results)}</section>"
        f'<section class="results">{results}</section></div></details>'
    )


def _cell(result: MetricResult | None, metric: str) -> str:
    if result is None:
        return f'<span class="cell missing" data-sort="" title="{escape(metric)}: no result">–</span>'
    word = verdict_word(result)
    if result.score is None:
        tip = f"{metric}: error: {result.error or ''}"
        return f'<span class="cell error" data-sort="" title="{escape(tip)}">error</span>'
    said = verdict_text(result)
    tip = f"{metric}: {result.score:.4g} {said}" + ("" if said != word else f" (threshold {result.threshold:g})")
    why = composite_failure(result)
    tip += f": {why}" if why else ""
    return (
        f'<span class="cell {word}" data-sort="{result.score!r}" title="{escape(tip)}">'
        f"{result.score:.3f}<i>{escape(said)}</i></span>"
    )


def _inputs(inputs: dict[str, Any], results: list[MetricResult]) -> str:
    if not inputs:
        return '<p class="empty">No inputs recorded.</p>'
    transcript = render_transcript(inputs["turns"], results) if is_conversation(inputs) else ""
    rest = {k: v for k, v in inputs.items() if not (transcript and k == "turns")}
    first = {k: rest[k] for k in READING_ORDER if k in rest}
    ordered = first | {k: v for k, v in rest.items() if k not in first}
    fields = "".join(f"<div><dt>{escape(k)}</dt><dd>{_input_value(v)}</dd></div>" for k, v in ordered.items())
    return transcript + (f'<dl class="fields">{fields}</dl>' if fields else "")


def _input_value(value: Any) -> str:
    if isinstance(value, str):
        return f'<div class="text">{escape(value)}</div>'
    if isinstance(value, list):
        items = "".join(f"<li>{_input_value(v)}</li>" for v in value)
        return f'<ol class="items">{items}</ol>'
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return f'<pre class="json">{escape(text)}</pre>'


def _result(result: MetricResult) -> str:
    word = verdict_word(result)
    facts = [("score", f"{result.score:.4g}")] if result.score is not None else []
    said = verdict_text(result)
    if said != word:  # an arena: its outcome, not a threshold, is the verdict
        facts.append(("outcome", said))
    else:
        facts.append(("passes at", f"score {_SYMBOL[pass_rule(result)]} {result.threshold:g}"))
    facts.append(("took", _duration(result.duration_s)))
    dl = "".join(f"<div><dt>{k}</dt><dd>{escape(v)}</dd></div>" for k, v in facts)
    kind = f' <span class="kind">{escape(result.kind)}</span>' if result.kind != result.metric else ""
    why = composite_failure(result)
    reason = f'<p class="failure">{escape(why)}</p>' if why else ""
    reason += f'<p class="reason">{escape(result.reason)}</p>' if result.reason else ""
    details = dict(result.details)
    note = details.pop("reason_error", None)
    if note is not None:
        reason += f'<p class="note">No reason from the judge: {escape(str(note))}</p>'
    error = f'<pre class="error-text">{escape(result.error)}</pre>' if result.error else ""
    evidence = render_evidence(details) if details else ""
    return (
        f'<article class="result {word}"><header><span class="badge {word}">{word}</span>'
        f'<h4>{escape(result.metric)}{kind}</h4><dl class="facts">{dl}</dl></header>'
        f'{reason}{error}<div class="evidence">{evidence}</div></article>'
    )


def _duration(seconds: float) -> str:
    if seconds < 0.001:
        return "< 1 ms"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"
