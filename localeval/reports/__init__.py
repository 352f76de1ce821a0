"""Report writers (JSON, per-case JSON Lines, HTML, JUnit XML) and the comparison of two runs.

``write_reports(report, run_dir)`` writes all four files into a folder;
``compare(a, b)`` says what changed between two runs, and
``print_comparison`` shows it in the terminal.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from localeval.errors import InputError
from localeval.reports.compare import (
    Change,
    ChangeKind,
    Comparison,
    MetricComparison,
    classify,
    compare,
)
from localeval.reports.html import render_html, write_html
from localeval.reports.jsonl import cases_jsonl, read_cases, write_cases
from localeval.reports.junit import junit_xml, write_junit
from localeval.reports.terminal import comparison_table, print_comparison, summary_table
from localeval.results import RunReport

#: The file each format gets in a run folder.
REPORT_FILES: dict[str, str] = {
    "json": "report.json",
    "cases": "cases.jsonl",
    "html": "report.html",
    "junit": "junit.xml",
}

_WRITERS: dict[str, Callable[[RunReport, Path], None]] = {
    "json": lambda report, path: report.save(path),
    "cases": write_cases,
    "html": write_html,
    "junit": write_junit,
}


def write_reports(
    report: RunReport,
    directory: Path | None = None,
    *,
    json_path: Path | None = None,
    cases_path: Path | None = None,
    html_path: Path | None = None,
    junit_path: Path | None = None,
) -> dict[str, Path]:
    """Write the report in every format asked for; returns {format: path written}, in that order.

    With ``directory``, each format goes to its :data:`REPORT_FILES` name there
    unless its own path is given; without it, only the formats given a path are
    written. Each file is written atomically and its folder created. Raises
    :class:`InputError` when nothing is asked for or a file cannot be written.
    """
    given = {"json": json_path, "cases": cases_path, "html": html_path, "junit": junit_path}
    paths: dict[str, Path] = {}
    for fmt, path in given.items():
        if path is not None:
            paths[fmt] = path
        elif directory is not None:
            paths[fmt] = directory / REPORT_FILES[fmt]
    if not paths:
        raise InputError("write_reports needs a directory or at least one file path")
    for fmt, path in paths.items():
        try:
            _WRITERS[fmt](report, path)
        except OSError as err:
            raise InputError(f"{path}: cannot write the {fmt} report ({err.strerror or err})") from err
    return paths


__all__ = [
    "REPORT_FILES",
    "Change",
    "ChangeKind",
    "Comparison",
    "MetricComparison",
    "cases_jsonl",
    "classify",
    "compare",
    "comparison_table",
    "junit_xml",
    "print_comparison",
    "read_cases",
    "render_html",
    "summary_table",
    "write_cases",
    "write_html",
    "write_junit",
    "write_reports",
]
