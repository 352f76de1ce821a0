"""What the terminal shows of a comparison of two runs, in the style of :mod:`localeval.cli.console`."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from localeval.reports.compare import Change, Comparison

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


def comparison_table(comparison: Comparison, limit: int = MAX_ROWS) -> Table:
    """The changes, one row each: case, metric, what changed, A's and B's scores, the delta."""
    table = Table(title=f"Changes from {escape(comparison.run_a)} (A) to {escape(comparison.run_b)} (B)")
    table.add_column("case")
    table.add_column("metric")
    table.add_column("change")
    for column in ("A", "B", "Δ"):
        table.add_column(column, justify="right")
    for change in comparison.changes[:limit]:
        table.add_row(
            escape(change.case),
            escape(change.metric or "(whole case)"),
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
            escape(m.metric), str(m.compared),
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
        console.print(comparison_table(comparison, limit))
        if len(comparison.changes) > limit:
            console.print(f"{len(comparison.changes) - limit} more changes not shown.")
    else:
        console.print("No changes.")
    console.print(summary_table(comparison))
    for side, names in (("A", comparison.metrics_only_in_a), ("B", comparison.metrics_only_in_b)):
        if names:
            console.print(f"Metrics only in {side}: {escape(', '.join(names))}")
    console.print(_summary_line(comparison), highlight=False)


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
