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

from localeval.reports.compare import Change, Comparison

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
_WORDS = {
    "regression": "pass → fail",
    "fix": "fail → pass",
    "errored": "scored → error",
    "recovered": "error → scored",
    "score": "score moved",
    "added": "only in B",
    "removed": "only in A",
}


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
    """The changes, one row each: case, metric, what changed, A's and B's scores, the delta."""
    table = Table(title=f"Changes from {printable(comparison.run_a)} (A) to {printable(comparison.run_b)} (B)")
    table.add_column("case")
    table.add_column("metric")
    table.add_column("change")
    for column in ("A", "B", "Δ"):
        table.add_column(column, justify="right")
    for change in comparison.changes[:limit]:
        table.add_row(
            printable(change.case),
            printable(change.metric or "(whole case)"),
            _kind(change),
            _score(change.score_a),
            _score(change.score_b) if change.kind != "errored" else "[yellow]error[/]",
            "" if change.delta is None else f"{change.delta:+.3f}",
        )
    return table


def summary_table(comparison: Comparison) -> Table:
    """Per metric: how many cases were compared, the counts of each change, the mean scores."""
    table = Table(title="Per metric")
    columns = ("metric", "compared", "regressions", "fixes", "score moved", "errored", "recovered",
               "mean A", "mean B", "Δ mean")
    for column in columns:
        table.add_column(column, justify="left" if column == "metric" else "right")
    for m in comparison.metrics:
        table.add_row(
            printable(m.metric), str(m.compared),
            f"[red]{m.regressions}[/]" if m.regressions else "0",
            f"[green]{m.fixes}[/]" if m.fixes else "0",
            str(m.score_changes), str(m.errored), str(m.recovered),
            _score(m.mean_a), _score(m.mean_b),
            "-" if m.mean_delta is None else f"{m.mean_delta:+.3f}",
        )
    return table


def print_comparison(console: Console, comparison: Comparison, limit: int = MAX_ROWS) -> None:
    """The changes table (or a line saying there are none), the per-metric table, and a summary line."""
    if comparison.changes:
        print_table(console, comparison_table(comparison, limit))
        if len(comparison.changes) > limit:
            print_line(console, f"{len(comparison.changes) - limit} more changes not shown.")
    else:
        print_line(console, "No changes.")
    print_table(console, summary_table(comparison))
    for side, names in (("A", comparison.metrics_only_in_a), ("B", comparison.metrics_only_in_b)):
        if names:
            print_line(console, f"Metrics only in {side}: {printable(', '.join(names))}")
    note = _dataset_note(comparison)
    if note is not None:
        print_line(console, note)
    print_line(console, _summary_line(comparison))


def _dataset_note(comparison: Comparison) -> str | None:
    """A warning when the runs judged different data, a note when that cannot be told; else None."""
    same = comparison.same_dataset
    if same:
        return None
    sides = (("A", comparison.dataset_a, comparison.cases_in_a), ("B", comparison.dataset_b, comparison.cases_in_b))
    if same is None:
        older = [side for side, dataset, _ in sides if dataset is None]
        which = "neither report records it" if len(older) == 2 else f"the report of {older[0]} does not record it"
        return (f"[yellow]Note:[/] cannot tell whether both runs judged the same dataset: {which} "
                "(written by an older localeval).")
    judged = "; ".join(
        f"{side}: {n} case{'' if n == 1 else 's'}"
        + ("" if dataset is None else f" of {printable(dataset.path)}, sha256 {dataset.sha256}")
        for side, dataset, n in sides
    )
    matched = "the same position" if comparison.matched_by == "index" else "the same name"
    return (f"[bold yellow]Warning:[/] the runs judged different datasets ({judged}); "
            f"each row compares the cases at {matched}.")


def _summary_line(comparison: Comparison) -> str:
    counts = [
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
    word = _WORDS[change.kind]
    return f"[{style}]{word}[/]" if style else word


def _score(score: float | None) -> str:
    return "-" if score is None else f"{score:.3f}"
