"""What the terminal shows of an arena: each case's outcome in the results table, then per arena
metric the ranking with its intervals, every pair's verdict, and the judge's position bias.

Read from the results' and the summary's ``details`` (:mod:`localeval.metrics.arena`); every name
comes from the user's data and goes in through ``printable``.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from localeval.data.results import MetricResult, MetricSummary
from localeval.reports.arena_figures import record_text, strength_text, win_rate_text
from localeval.reports.terminal import print_line, print_table, printable


def arena_cell(result: MetricResult) -> str | None:
    """An arena result's cell: its score and outcome ("0.700 new preferred", "0.480 tie within the
    judge's noise"), green when it passed, red when not; None for any other result."""
    outcome = result.details.get("outcome") if result.kind == "arena" else None
    if not isinstance(outcome, str) or result.score is None:
        return None
    colour = "yellow" if not result.details.get("preferred") else "green" if result.passed else "red"
    return f"{result.score:.3f} [{colour}]{printable(outcome)}[/]"


def print_arena(console: Console, summary: MetricSummary) -> None:
    """An arena metric's ranking, its pairs' verdicts and the position bias; nothing for another metric."""
    details = summary.details
    if not details.get("pairs"):
        return
    if details.get("ranking"):
        print_table(console, _ranking_table(summary.metric, details))
    else:
        print_line(console, printable(f"{summary.metric}: no ranking: {details.get('ranking_error', '')}"))
    print_table(console, _verdicts_table(summary.metric, details["pairs"]))
    print_line(console, printable(f"{summary.metric}: mean P(first) {details['mean_p_first']:.3f} "
                                  "over both orders of every pair (0.5: no position bias)."))


def _ranking_table(metric: str, details: dict[str, Any]) -> Table:
    """Best first: Bradley–Terry strength and win rate (a tie half a win), each with its 95% interval."""
    smoothing = details.get("smoothing") or 0.0
    title = f"Ranking: {printable(metric)}" + (f" (smoothed by {smoothing:g} virtual wins a pair)" if smoothing else "")
    table = Table(title=title)
    for column in ("rank", "contestant", "strength [95% CI]", "win rate [95% CI]", "won / tied / lost"):
        table.add_column(column, justify="left" if column == "contestant" else "right")
    for row in details["ranking"]:
        table.add_row(str(row["rank"]), printable(row["name"]), strength_text(row), win_rate_text(row),
                      record_text(row))
    return table


def _verdicts_table(metric: str, pairs: list[dict[str, Any]]) -> Table:
    """Each pair: how often A or B was preferred or neither over the cases, A's win rate with its interval, the verdict."""
    table = Table(title=f"Verdicts: {printable(metric)}")
    for column in ("A", "B", "A preferred / tie / B preferred", "A's win rate [95% CI]", "verdict"):
        table.add_column(column, justify="left" if column in ("A", "B", "verdict") else "right")
    for pair in pairs:
        table.add_row(printable(pair["a"]), printable(pair["b"]), record_text(pair), win_rate_text(pair),
                      printable(pair.get("verdict", "–")))
    return table
