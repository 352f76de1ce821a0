"""Report writers (JSON, per-case JSON Lines, HTML, JUnit XML) and the comparison of two runs.

``write_reports(report, run_dir)`` writes every format (:mod:`~localeval.reports.formats`) into a folder;
``compare(a, b)`` says what changed between two runs, and
``print_comparison`` shows it in the terminal.
"""

from __future__ import annotations

from localeval.reports.compare import (
    Change,
    ChangeKind,
    Comparison,
    MetricComparison,
    classify,
    compare,
)
from localeval.reports.formats import FORMATS, REPORT_FILES, ReportFormat, write_reports
from localeval.reports.html import render_html
from localeval.reports.jsonl import cases_jsonl, read_cases
from localeval.reports.junit import junit_xml
from localeval.reports.terminal import comparison_table, print_comparison, summary_table

__all__ = [
    "FORMATS",
    "REPORT_FILES",
    "Change",
    "ChangeKind",
    "Comparison",
    "MetricComparison",
    "ReportFormat",
    "cases_jsonl",
    "classify",
    "compare",
    "comparison_table",
    "junit_xml",
    "print_comparison",
    "read_cases",
    "render_html",
    "summary_table",
    "write_reports",
]
