"""What the CLI prints, read as CI logs and pipes read it: no wrapped message line, no cut value."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from localeval.cli.console import print_errors, print_report
from localeval.data.results import CaseResult, MetricResult, MetricSummary, RunReport
from localeval.reports.terminal import print_line, print_table

LONG_PATH = "/tmp/" + "a-rather-long-folder-name/" * 6 + "cases.jsonl"


def console(width: int, *, terminal: bool = False) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=width, force_terminal=terminal, color_system=None), out


def report(metric: str = "answer_relevancy (logprobs)") -> RunReport:
    scored = MetricResult(metric=metric, kind="k", score=0.8125, passed=True, threshold=0.5)
    errored = MetricResult(metric=metric, kind="k", threshold=0.5,
                           error="BackendError: no reply from the judge after 3 attempts")
    cases = [
        CaseResult(index=0, name="the first case, with a long name", location=f"{LONG_PATH}:1", results=[scored]),
        CaseResult(index=1, location=f"{LONG_PATH}:2", results=[errored]),
    ]
    summary = [MetricSummary.of(metric, [scored, errored])]
    return RunReport(run_id="r", created_at="2026-11-01T00:00:00+00:00", localeval_version="0.1.0",
                     cases=cases, summary=summary)


def test_a_message_line_never_wraps_however_narrow_the_console() -> None:
    for terminal in (False, True):
        narrow, out = console(40, terminal=terminal)
        print_line(narrow, f"[yellow]{LONG_PATH}:5[/] logprobs: BackendError: no reply")
        assert out.getvalue() == f"{LONG_PATH}:5 logprobs: BackendError: no reply\n"


def test_each_errored_result_is_one_whole_line() -> None:
    narrow, out = console(40)
    print_errors(narrow, report())
    assert out.getvalue().splitlines() == [
        f"{LONG_PATH}:2 answer_relevancy (logprobs): BackendError: no reply from the judge after 3 attempts"
    ]


def test_outside_a_terminal_the_results_keep_every_value_whole() -> None:
    piped, out = console(80)
    print_report(piped, report())
    lines = out.getvalue().splitlines()
    assert "…" not in out.getvalue()
    row = next(line for line in lines if line.startswith("│ 1 "))
    assert [cell.strip() for cell in row.split("│")[1:-1]] == ["1", "the first case, with a long name", "0.812 pass"]
    assert any(line.startswith("│ 2 ") and f"{LONG_PATH}:2" in line and "error" in line for line in lines)
    summary = next(line for line in lines if line.startswith("│ answer_relevancy"))
    assert [cell.strip() for cell in summary.split("│")[1:-1]] == [
        "answer_relevancy (logprobs)", "1", "0", "1", "100% [21–100]", "0.812"  # Wilson's 1 of 1; one mean
    ]
    assert lines[-1] == "2 cases in 0.0 s."


def test_print_table_fits_a_terminal_and_sizes_to_content_elsewhere() -> None:
    table = Table(title="T")
    for column in ("name", "description"):
        table.add_column(column)
    description = "a description of thirty-odd words, " * 4
    table.add_row("model-with-a-long-name", description)
    terminal, out = console(50, terminal=True)
    print_table(terminal, table)
    assert max(len(line) for line in out.getvalue().splitlines()) <= 50
    piped, out = console(50)
    print_table(piped, table)
    row = next(line for line in out.getvalue().splitlines() if "model-with-a-long-name" in line)
    assert description.strip() in row
