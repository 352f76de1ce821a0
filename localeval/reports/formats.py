"""Report formats by name: each is a file name in a run folder and a function that renders the text.

This is the one place a format is added: write ``render_x(report) -> str`` in a
module of its own under ``reports/`` and add a :class:`ReportFormat` line to
:data:`FORMATS`. :func:`write_reports` writes every format the same way
(atomically, its folder created), so a format never deals with files.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from localeval.data.results import RunReport
from localeval.errors import InputError
from localeval.files import write_text_atomically
from localeval.reports.html import render_html
from localeval.reports.jsonl import cases_jsonl
from localeval.reports.junit import junit_xml
from localeval.reports.results_csv import results_csv


@dataclass(frozen=True)
class ReportFormat:
    """One report format: its name, its file name in a run folder, and how it renders a report."""

    name: str
    file_name: str
    description: str
    render: Callable[[RunReport], str]


FORMATS: dict[str, ReportFormat] = {
    f.name: f
    for f in (
        ReportFormat("json", "report.json", "the versioned JSON report", RunReport.to_json),
        ReportFormat("cases", "cases.jsonl", "one case per line (JSON Lines)", lambda r: cases_jsonl(r.cases)),
        ReportFormat("html", "report.html", "a self-contained HTML page", render_html),
        ReportFormat("junit", "junit.xml", "JUnit XML for CI systems", junit_xml),
        ReportFormat("csv", "results.csv", "one row per case and metric, for spreadsheets", results_csv),
    )
}

#: The file each format gets in a run folder.
REPORT_FILES: dict[str, str] = {name: f.file_name for name, f in FORMATS.items()}


def write_reports(
    report: RunReport, directory: Path | None = None, copies: Mapping[str, Path | None] | None = None
) -> list[Path]:
    """Write ``report`` in every format into ``directory``, and each of ``copies`` ({format: path}) too.

    Returns the paths written, the directory's first. Each file is written
    atomically, its folder created. Raises :class:`InputError` for an unknown
    format, when nothing is asked for, or when a file cannot be written.
    """
    targets = [(name, directory / f.file_name) for name, f in FORMATS.items()] if directory is not None else []
    for name, path in (copies or {}).items():
        if name not in FORMATS:
            raise InputError(f"unknown report format {name!r} (known: {', '.join(FORMATS)})")
        if path is not None:
            targets.append((name, path))
    if not targets:
        raise InputError("write_reports needs a directory or at least one file path")
    for name, path in targets:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomically(path, FORMATS[name].render(report))
        except OSError as err:
            raise InputError(f"{path}: cannot write the {name} report ({err.strerror or err})") from err
    return [path for _, path in targets]
