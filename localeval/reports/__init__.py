"""Report writers (JSON, per-case JSON Lines, HTML, JUnit XML, CSV) and the comparison of two runs.

``write_reports(report, run_dir)`` writes every format (:mod:`~localeval.reports.formats`) into a folder;
``compare(a, b)`` says what changed between two runs and whether the change is real;
``print_comparison`` shows it in the terminal, ``comparison_html`` as a page.
"""

from __future__ import annotations

from localeval.reports.compare import (
    CaseComparison,
    Change,
    ChangeKind,
    Comparison,
    ResultChange,
    classify,
    compare,
)
from localeval.reports.compare_html import comparison_html
from localeval.reports.formats import FORMATS, REPORT_FILES, ReportFormat, write_reports
from localeval.reports.html import render_html
from localeval.reports.jsonl import cases_jsonl, read_cases
from localeval.reports.junit import junit_xml
from localeval.reports.results_csv import results_csv
from localeval.reports.terminal import comparison_table, print_comparison, summary_table
from localeval.reports.verdict import MetricComparison, Verdict

__all__ = [
    "FORMATS",
    "REPORT_FILES",
    "CaseComparison",
    "Change",
    "ChangeKind",
    "Comparison",
    "MetricComparison",
    "ReportFormat",
    "ResultChange",
    "Verdict",
    "cases_jsonl",
    "classify",
    "compare",
    "comparison_html",
    "comparison_table",
    "junit_xml",
    "print_comparison",
    "read_cases",
    "render_html",
    "results_csv",
    "summary_table",
    "write_reports",
]
