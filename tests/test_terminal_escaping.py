"""Text from cases, reports and servers reaches the terminal as text (issue 25, item 7b).

A case's name, input or output, a metric's error quoting them, another run's report: any of
them may hold escape sequences (ESC ] 0 sets the window's title, ESC ] 8 makes a hyperlink,
ESC [ 2J clears the screen, a bidi override reorders the line). Everything localeval prints of
them goes through :func:`localeval.reports.terminal.printable`: control characters shown as
escapes (``\\x1b``), rich markup as text. On a terminal and piped alike.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from command_line import Project
from rich.console import Console

from localeval.cli.console import print_errors, print_report
from localeval.data.results import CaseResult, MetricResult, MetricSummary, RunReport
from localeval.reports.compare import compare
from localeval.reports.terminal import print_comparison, print_line, printable

TITLE = "\x1b]0;pwned\x07"  # sets the terminal window's title
LINK = "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"  # a hyperlink
CLEAR = "\x1b[2J\x1b[H"  # clears the screen
CSI = "\x9b31m"  # C1's one-byte CSI
BIDI = "\u202egnp.exe"  # right-to-left override
NASTY = f"{TITLE}{LINK}{CLEAR}{CSI}{BIDI}[bold]x[/]"
#: What each looks like once printed.
SHOWN = ("\\x1b]0;pwned\\x07", "\\x1b]8;;http://evil.example/\\x1b\\click\\x1b]8;;\\x1b\\", "\\x1b[2J\\x1b[H",
         "\\x9b31m", "\\u202egnp.exe", "[bold]x[/]")


def test_control_characters_are_shown_escaped_and_markup_as_text() -> None:
    assert printable("tab\there\nnew\rline\x00\x7f") == "tab\\there\\nnew\\rline\\x00\\x7f"
    assert printable("naïve café — 東京 🙂 [red]") == "naïve café — 東京 🙂 \\[red]"
    printed = io.StringIO()
    Console(file=printed, width=500, color_system=None).print(printable(NASTY), soft_wrap=True)
    assert printed.getvalue() == "".join(SHOWN) + "\n"


def console(terminal: bool) -> tuple[Console, io.StringIO]:
    """A console as on a terminal or in a pipe; no colours, so that any ESC in what it wrote came from data."""
    out = io.StringIO()
    return Console(file=out, width=300, force_terminal=terminal, color_system=None), out


def report(name: str, output: str, error: str | None) -> RunReport:
    ok = MetricResult(metric=f"m{NASTY}", kind="exact_match", score=1.0, passed=True, threshold=0.5)
    broken = MetricResult(metric=f"m{NASTY}", kind="exact_match", threshold=0.5, error=error) if error else ok
    cases = [CaseResult(index=0, name=name, location=f"cases.jsonl:1{NASTY}", inputs={"actual_output": output},
                        results=[broken], target=f"t{NASTY}")]
    summary = [MetricSummary.of(f"m{NASTY}", [broken])]
    return RunReport(run_id=f"r{NASTY}", created_at="now", localeval_version="0", cases=cases, summary=summary)


@pytest.mark.parametrize("terminal", [True, False])
def test_the_results_table_and_the_error_lines_show_escapes(terminal: bool) -> None:
    out, printed = console(terminal)
    run = report(f"case {NASTY}", NASTY, f"the judge quoted {NASTY}")
    print_report(out, run)
    print_errors(out, run)
    text = printed.getvalue()
    assert "\x1b" not in text and "\x9b" not in text and "\u202e" not in text
    assert f"case {''.join(SHOWN)}" in text  # the case's name in the results table
    assert f"the judge quoted {''.join(SHOWN)}" in text  # the error line: one line, whole


@pytest.mark.parametrize("terminal", [True, False])
def test_a_comparison_shows_escapes(terminal: bool) -> None:
    out, printed = console(terminal)
    before, after = report(f"case {NASTY}", "a", None), report(f"case {NASTY}", "b", "broke")
    print_comparison(out, compare(before, after))
    text = printed.getvalue()
    assert "\x1b" not in text and "\x9b" not in text and "\u202e" not in text
    assert "\\x1b]0;pwned\\x07" in text


def test_a_message_line_shows_escapes_whoever_wrote_it() -> None:
    out, printed = console(True)
    print_line(out, f"[yellow]warning:[/] a path {TITLE}")
    assert printed.getvalue() == "warning: a path \\x1b]0;pwned\\x07\n"


def test_run_report_and_compare_print_no_escape_sequence_from_a_case(project: Project, tmp_path: Path) -> None:
    lines = [{"name": f"capital {NASTY}", "input": f"Capital of France? {CLEAR}", "actual_output": f"Paris {TITLE}",
              "expected_output": "Paris"},
             {"name": f"sum {LINK}", "input": "2 + 2?", "actual_output": "4", "expected_output": "4"}]
    project.write("cases.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    project.write("eval.toml", '[[metrics]]\nmetric = "exact_match"\n')
    first = project.localeval("run", "cases.jsonl", "-c", "eval.toml", "--run-dir", "a")
    lines[0]["actual_output"] = "Paris"
    project.write("cases.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    second = project.localeval("run", "cases.jsonl", "-c", "eval.toml", "--run-dir", "b")
    again = project.localeval("report", "a")
    compared = project.localeval("compare", "a", "b")
    assert (first.returncode, second.returncode, again.returncode) == (1, 0, 0), first.stderr + second.stderr
    for done in (first, second, again, compared):
        printed = done.stdout + done.stderr
        assert "\x1b" not in printed and "\x9b" not in printed and "\u202e" not in printed, printed
    assert "capital \\x1b]0;pwned\\x07" in first.stdout.replace("\n", "")
    assert "capital \\x1b]0;pwned\\x07" in compared.stdout.replace("\n", "")


def test_an_input_error_that_quotes_case_text_prints_it_escaped(tmp_path: Path) -> None:
    from command_line import localeval

    data = tmp_path / "cases.jsonl"
    data.write_text(json.dumps({"input": "q", "actual_output": "a", f"extra{CLEAR}": 1}) + "\n", encoding="utf-8")
    result = localeval("run", str(data), "-m", "exact_match", "--map", f"{TITLE}=input")
    assert result.returncode == 2
    assert "\x1b" not in result.stderr and "\\x1b" in result.stderr
