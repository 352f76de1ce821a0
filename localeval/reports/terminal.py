"""What the terminal shows of a comparison of two runs, and how every table and message line is printed.

Output is read in terminals, CI logs and pipes. ``print_line`` prints a message
that never wraps (a wrapped error breaks grep); ``print_table`` fits a table to a
terminal, but elsewhere prints it as wide as its content, so that no value is cut.

Text that comes from data (a case's name or output, an error quoting it, a report from
a file, a server's reply) goes into markup through :func:`printable`: rich markup in it
is text, and a control character is shown as an escape (``\\x1b``), so that nothing in
it sets the window's title, makes a hyperlink, clears the screen or reorders the line.
``print_line`` shows control characters so in whatever it is given, too.
"""

from __future__ import annotations

import re

from rich.console import Console
from rich.markup import escape
from rich.segment import Segments
from rich.table import Table

from localeval.reports.compare import CHANGE_WORDS, Change, Comparison, Gate
from localeval.reports.textdiff import DiffSpan
from localeval.reports.verdict import signed

#: What a terminal acts on rather than shows: C0 (ESC among them), DEL, C1 (a one-byte CSI among them),
#: and the Unicode controls that reorder what follows them (bidi embeddings, overrides, isolates).
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}

#: Wider than any table: the room a table is measured in when it need not fit a terminal.
_UNLIMITED = 1_000_000

#: Beyond this many changes the table lists the first ones and says how many more there are.
MAX_ROWS = 50

_STYLE = {
    "regression": "bold red",
    "errored": "bold yellow",
    "fix": "green",
    "recovered": "cyan",
    "score": "",
    "added": "blue",
    "removed": "blue",
}
_VERDICT_STYLE = {"worse": "bold red", "better": "green", "mixed": "yellow"}
#: How a word diff marks its changes in a terminal, which may have no colour: git's word-diff markers.
_MARKS = {"removed": ("[-", "-]", "red"), "added": ("{+", "+}", "green")}


def printable(text: str) -> str:
    """``text`` (from a case, a report, a server) as rich markup that prints as itself: its markup
    escaped, its control characters shown as escapes (``\\x1b``, ``\\n``, ``\\u202e``)."""
    return escape(visible(text))


def visible(text: str) -> str:
    """``text`` with each control character written as its escape (``\\x1b``, ``\\n``, ``\\u202e``); a
    backslash stays one: this is for eyes, not for parsing back."""
    return _CONTROLS.sub(_escaped, text)


def _escaped(control: re.Match[str]) -> str:
    char = control.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def print_line(console: Console, markup: str) -> None:
    """Print one line of rich markup that is never wrapped, however narrow the console or long a path.

    For errors, warnings and summaries: CI logs are grepped line by line. A control character in
    ``markup`` is shown as its escape (:func:`visible`): the line stays one line, and data that a
    caller put in it acts on no terminal.
    """
    console.print(visible(markup), highlight=False, soft_wrap=True)


def print_table(console: Console, table: Table) -> None:
    """Print ``table``: fitted to a terminal's width, or elsewhere as wide as its content.

    A terminal has a width, and rich shrinks a table to it, wrapping cells and
    cutting words to "…". Piped output has none (rich assumes 80 columns), and a
    CI log or a script reads the values ("exact_match", "+0.125") there: each
    column gets its widest cell, no cell is wrapped or cut.
    """
    if console.is_terminal:
        console.print(table)
        return
    width = console.measure(table, options=console.options.update_width(_UNLIMITED)).maximum
    lines = console.render(table, console.options.update_width(width))
    console.print(Segments(lines), crop=False)  # crop=False: lines may be wider than the console


def comparison_table(comparison: Comparison, limit: int = MAX_ROWS) -> Table:
    """The results that changed, one row each: case, metric, what changed, A's and B's scores, the delta."""
    table = Table(title=f"Changes from {printable(comparison.run_a)} (A) to {printable(comparison.run_b)} (B)")
    table.add_column("case")
    table.add_column("metric")
    table.add_column("change")
    for column in ("A", "B", "Δ"):
        table.add_column(column, justify="right")
    for change in _result_changes(comparison)[:limit]:
        table.add_row(
            printable(change.case),
            printable(change.metric or ""),
            _kind(change),
            _score(change.score_a),
            _score(change.score_b) if change.kind != "errored" else "[yellow]error[/]",
            "" if change.delta is None else signed(change.delta),
        )
    return table


def summary_table(comparison: Comparison) -> Table:
    """Per metric: the cases scored in both runs, the means, the mean change with its 95% interval,
    the pass rates, the flips each way, McNemar's p and the verdict."""
    table = Table(title="Per metric")
    columns = ("metric", "cases", "mean A", "mean B", "Δ mean", "95% CI", "pass A", "pass B",
               "pass → fail", "fail → pass", "McNemar p", "verdict")
    for column in columns:
        table.add_column(column, justify="left" if column in ("metric", "verdict") else "right")
    for m in comparison.metrics:
        change = m.mean_change
        table.add_row(
            printable(m.metric), str(m.scored), _score(m.mean_a), _score(m.mean_b),
            "-" if m.mean_delta is None else signed(m.mean_delta),
            "-" if change is None else f"{signed(change.low)} to {signed(change.high)}",
            _rate(m.pass_rate_a), _rate(m.pass_rate_b),
            f"[red]{m.regressions}[/]" if m.regressions else "0",
            f"[green]{m.fixes}[/]" if m.fixes else "0",
            f"{m.mcnemar_p:.3g}", _verdict(m.verdict),
        )
    return table


def print_comparison(console: Console, comparison: Comparison, limit: int = MAX_ROWS) -> None:
    """What changed, then whether it is real: the changed results, the outputs' diffs, the
    per-metric table and verdicts, what is only in one run, and a summary line."""
    changes = _result_changes(comparison)
    if changes:
        print_table(console, comparison_table(comparison, limit))
        if len(changes) > limit:
            print_line(console, f"{len(changes) - limit} more changed results not shown.")
    elif not comparison.outputs_changed:
        print_line(console, "No changes.")
    print_outputs(console, comparison, limit)
    print_table(console, summary_table(comparison))
    for m in comparison.metrics:
        print_line(console, f"{printable(m.metric)}: {_verdict(m.verdict)} ({m.reason()})")
    for side, names in (("A", comparison.metrics_only_in_a), ("B", comparison.metrics_only_in_b)):
        if names:
            print_line(console, f"Metrics only in {side}: {printable(', '.join(names))}")
    for side, labels in (("A", comparison.cases_only_in_a), ("B", comparison.cases_only_in_b)):
        if labels:
            print_line(console, f"Cases only in {side} ({len(labels)}): {_listed(labels)}")
    note = _dataset_note(comparison)
    if note is not None:
        print_line(console, note)
    print_line(console, _summary_line(comparison))


def print_gate(console: Console, comparison: Comparison, gate: Gate | None) -> bool:
    """Whether ``gate`` (``--fail-on-regression``) failed, printing one line that names its first failure;
    without a gate, nothing fails, and a note says when a gate would have."""
    failures = comparison.gate_failures(gate or "any")
    if failures and gate is None:
        print_line(console, f"[yellow]note:[/] exit 0 although {len(failures)} regression(s) were found: "
                            "compare exits 1 on them only with --fail-on-regression mean, flip or any")
    elif failures:
        more = f"; and {len(failures) - 1} more" if len(failures) > 1 else ""
        print_line(console, f"[bold red]regression[/] (--fail-on-regression {gate}): {printable(failures[0])}{more}")
    return bool(failures) and gate is not None


def print_outputs(console: Console, comparison: Comparison, limit: int = MAX_ROWS) -> None:
    """Each case whose output changed: its label, then the word diff, [-removed-] and {+added+}."""
    changed = comparison.outputs_changed
    if not changed:
        return
    print_line(console, f"[bold]Outputs that changed ({len(changed)}):[/] [red]{escape('[-removed-]')}[/] "
                        f"[green]{escape('{+added+}')}[/]")
    for case in changed[:limit]:
        print_line(console, f"[bold]{printable(case.label)}[/]")
        for line in diff_lines(case.diff):
            print_line(console, "  " + line)
    if len(changed) > limit:
        print_line(console, f"{len(changed) - limit} more changed outputs not shown.")


def diff_lines(spans: list[DiffSpan]) -> list[str]:
    """A word diff as lines of markup: removed text in [-…-] (red), added in {+…+} (green), each line of
    the texts on a line of its own; a change of whitespace alone is shown as its escapes (``\\n``)."""
    lines = [""]
    for span in spans:
        if span.op != "same" and span.text.isspace():
            lines[-1] += _marked(span.op, printable(span.text))
            continue
        for number, piece in enumerate(span.text.split("\n")):
            if number:
                lines.append("")
            if piece:
                lines[-1] += printable(piece) if span.op == "same" else _marked(span.op, printable(piece))
    return lines


def _marked(op: str, markup: str) -> str:
    opening, closing, style = _MARKS[op]
    return f"[{style}]{escape(opening)}{markup}{closing}[/]"


def _result_changes(comparison: Comparison) -> list[Change]:
    """The changes of results: a whole case only in one run is listed on its own line instead."""
    return [c for c in comparison.changes if c.metric is not None]


def _listed(labels: list[str], shown: int = 10) -> str:
    more = f" and {len(labels) - shown} more" if len(labels) > shown else ""
    return printable(", ".join(labels[:shown])) + more


def _dataset_note(comparison: Comparison) -> str | None:
    found = comparison.dataset_note()
    if found is None:
        return None
    level, text = found
    return f"[bold yellow]Warning:[/] {printable(text)}" if level == "warning" else f"[yellow]Note:[/] {printable(text)}"


def _summary_line(comparison: Comparison) -> str:
    counts = [
        (len(comparison.outputs_changed), "output changed", "outputs changed"),
        (comparison.count("regression"), "regression", "regressions"),
        (comparison.count("fix"), "fix", "fixes"),
        (comparison.count("score"), "score moved", "scores moved"),
        (comparison.count("errored"), "new error", "new errors"),
        (comparison.count("recovered"), "recovered", "recovered"),
        (len(comparison.cases_only_in_a), "case only in A", "cases only in A"),
        (len(comparison.cases_only_in_b), "case only in B", "cases only in B"),
    ]
    said = ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in counts if n)
    tolerance = f", tolerance {comparison.tolerance:g}" if comparison.tolerance else ""
    n = comparison.cases_compared
    return (
        f"{n} case{'' if n == 1 else 's'} matched by {comparison.matched_by}{tolerance}: "
        f"{said or 'nothing changed'}."
    )


def _kind(change: Change) -> str:
    style = _STYLE[change.kind]
    word = CHANGE_WORDS[change.kind]
    return f"[{style}]{word}[/]" if style else word


def _verdict(verdict: str) -> str:
    style = _VERDICT_STYLE.get(verdict)
    return f"[{style}]{verdict}[/]" if style else verdict


def _score(score: float | None) -> str:
    return "-" if score is None else f"{score:.3f}"


def _rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"
