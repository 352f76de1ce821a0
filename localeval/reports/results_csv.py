"""The run as CSV for spreadsheets: one row per case and metric, with the case's texts beside its scores.

Columns: ``case`` (its number, from 1, as ``report.html#case-N``), ``name``, ``location``, ``target``
(only when the run had several targets), ``metric``, ``score``, ``threshold``, ``passes_at`` (``>=`` or
``<=``), ``passed`` and ``errored`` (``true``/``false``; ``passed`` is empty for an errored result),
``error``, ``reason``, then the case's ``input``, ``actual_output`` and ``expected_output`` (empty for a
conversation, whose turns are in ``cases.jsonl``). Numbers are written in full (``repr``).

A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula, and some treat a
leading tab or carriage return the same way, so a case's text could run ``=HYPERLINK(...)`` or worse
when the file is opened. Such a cell is written with a ``'`` in front: spreadsheets show it as text.
A script reading the file gets that ``'`` too; ``cases.jsonl`` and ``report.json`` keep every text as it was.
"""

from __future__ import annotations

import csv
import io

from localeval.data.results import CaseResult, MetricResult, RunReport
from localeval.reports.rules import case_number, pass_rule

#: What a spreadsheet may run as a formula when a cell starts with it (OWASP's list of CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

_TEXTS = ("input", "actual_output", "expected_output")


def results_csv(report: RunReport) -> str:
    """The report as CSV text (``\\r\\n`` line ends, as RFC 4180 and the ``csv`` module write them)."""
    with_target = any(case.target for case in report.cases)
    header = ["case", "name", "location", *(["target"] if with_target else []), "metric", "score", "threshold",
              "passes_at", "passed", "errored", "error", "reason", *_TEXTS]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    for case in report.cases:
        for result in case.results:
            writer.writerow([inert(cell) for cell in _row(case, result, with_target)])
    return out.getvalue()


def inert(cell: str) -> str:
    """``cell`` as a spreadsheet shows it without running it: a ``'`` before a formula's first character."""
    return "'" + cell if cell.startswith(FORMULA_STARTS) else cell


def _row(case: CaseResult, result: MetricResult, with_target: bool) -> list[str]:
    texts = [_text(case.inputs.get(field)) for field in _TEXTS]
    return [
        str(case_number(case)), case.name or "", case.location or "", *([case.target or ""] if with_target else []),
        result.metric, _number(result.score), _number(result.threshold), pass_rule(result),
        _flag(result.passed), _flag(result.errored), result.error or "", result.reason, *texts,
    ]


def _number(value: float | None) -> str:
    return "" if value is None else repr(value)


def _flag(value: bool | None) -> str:
    return "" if value is None else str(value).lower()


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
