"""What the CLI prints: the results table, the summary (the progress bar is :mod:`localeval.reports.progress`).

Every table goes through ``print_table`` and every error or warning line through
``print_line`` (:mod:`localeval.reports.terminal`): outside a terminal no value is
cut, and no message line is ever wrapped. Every text from a case or a report (a name,
an error, a metric's name) goes in through ``printable``: its markup and its control
characters are shown, not acted on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from localeval.cli.arena_console import arena_cell, print_arena
from localeval.data.results import CaseResult, GateResult, MetricResult, RunReport, RunStats
from localeval.reports.figures import mean_score, pass_rate
from localeval.reports.progress import PROGRESS_PERIOD_S as PROGRESS_PERIOD_S
from localeval.reports.progress import Pace as Pace
from localeval.reports.progress import print_finishing as print_finishing
from localeval.reports.progress import progress_bar as progress_bar
from localeval.reports.rules import composite_failure, turn_count
from localeval.reports.terminal import print_line, print_table, printable

if TYPE_CHECKING:
    from localeval.metaeval.correlations import Correlations
    from localeval.metaeval.evaluation import MetaEvalReport

#: Beyond this many cases the table lists only those that failed or errored.
MAX_ROWS = 50


def print_report(console: Console, report: RunReport) -> None:
    metrics = [s.metric for s in report.summary]
    rows = report.cases
    if len(rows) > MAX_ROWS:
        rows = [c for c in rows if any(not r.passed for r in c.results)][:MAX_ROWS]
        print_line(console, f"{len(report.cases)} cases; showing {len(rows)} that failed or errored.")
    table = Table(title="Results", show_lines=False)
    table.add_column("#", justify="right")
    table.add_column("case")
    for name in metrics:
        table.add_column(printable(name), justify="right")
    for case in rows:
        turns = turn_count(case)  # a conversation is one row, its length beside its name
        label = (case.name or case.location or "") + ("" if turns is None else f" ({turns} turns)")
        label += f" @ {case.target}" if case.target else ""
        table.add_row(str(case.index + 1), printable(label), *map(_cell, case.results))
    print_table(console, table)
    _print_composite_failures(console, rows)
    print_table(console, _summary_table(report))
    if report.target_summaries:
        print_table(console, _targets_table(report))
    for summary in report.summary:
        print_arena(console, summary)
    stats = report.stats
    print_line(console, f"{len(report.cases)} cases in {stats.duration_s:.1f} s{_cost(stats)}.")


def _print_composite_failures(console: Console, cases: list[CaseResult]) -> None:
    """One line per failed composite of ``cases``: which part failed it (its cell shows only the
    aggregate's score, which may clear the threshold)."""
    for case in cases:
        for result in case.results:
            why = composite_failure(result)
            if why is not None:
                where = printable(str(case.location or case.index + 1))
                print_line(console, f"[red]{where}[/] {printable(result.metric)}: {printable(why)}")


def _targets_table(report: RunReport) -> Table:
    """Several targets side by side: per metric, each target's pass rate and mean score."""
    table = Table(title="By target (pass rate, mean score)")
    table.add_column("metric")
    for name in report.target_summaries:
        table.add_column(printable(name), justify="right")
    for i, summary in enumerate(report.summary):
        cells = []
        for summaries in report.target_summaries.values():
            mine = summaries[i]
            rate = "-" if mine.pass_rate is None else f"{mine.pass_rate:.0%}"
            mean = "-" if mine.mean_score is None else f"{mine.mean_score:.3f}"
            cells.append(f"{rate} {mean}" + (f" ({mine.errored} errors)" if mine.errored else ""))
        table.add_row(printable(summary.metric), *cells)
    return table


def _cost(stats: RunStats) -> str:
    """What the judge did: ", 25 model calls, 0 from cache, 6120 prompt + 410 completion tokens"."""
    if stats.model_calls is None:
        return ""
    tokens = "" if stats.prompt_tokens is None else (
        f", {stats.prompt_tokens} prompt + {stats.completion_tokens} completion tokens"
    )
    return f", {stats.model_calls} model calls, {stats.cache_hits} from cache{tokens}"


def _cell(result: MetricResult) -> str:
    if result.errored:
        return "[bold yellow]error[/]"
    mark = "[green]pass[/]" if result.passed else "[red]fail[/]"
    return arena_cell(result) or f"{result.score:.3f} {mark}"


def _summary_table(report: RunReport) -> Table:
    table = Table(title="Summary")
    for column in ("metric", "passed", "failed", "errored", "pass rate [95% CI]", "mean score [95% CI]"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for s in report.summary:
        table.add_row(printable(s.metric), str(s.passed), str(s.failed), str(s.errored), str(pass_rate(s)),
                      str(mean_score(s)))
    return table


def print_gates(console: Console, gates: list[GateResult]) -> None:
    """The run's gates, one row each (required, reached, the pass rate's 95% Wilson interval), and a line
    saying how many were reached; nothing when the run has none."""
    if not gates:
        return
    table = Table(title="Gates")
    for column in ("metric", "gate", "required", "actual", "95% interval", "scored", "result"):
        table.add_column(column, justify="left" if column in ("metric", "gate") else "right")
    for gate in gates:
        share = gate.rule == "min_pass_rate"
        table.add_row(
            printable(gate.metric), "pass rate ≥" if share else "mean score ≥", _figure(share, gate.required),
            "-" if gate.actual is None else _figure(share, gate.actual),
            f"{gate.low:.1%}–{gate.high:.1%}" if gate.low is not None and gate.high is not None else "",
            str(gate.scored), "[green]pass[/]" if gate.passed else "[red]FAIL[/]",
        )
    print_table(console, table)
    reached = sum(1 for gate in gates if gate.passed)
    print_line(console, f"Gates: {reached} of {len(gates)} reached.")


def _figure(share: bool, value: float) -> str:
    """A gate's figure: a pass rate as a percentage ("90.0%"), a mean score as itself ("0.812")."""
    return f"{value:.1%}" if share else f"{value:.3f}"


def print_errors(console: Console, report: RunReport) -> None:
    """One line per errored result, so the reason is not hidden in the JSON."""
    for case in report.cases:
        for r in case.results:
            if r.errored:
                where = printable(str(case.location or case.index + 1))
                print_line(console, f"[yellow]{where}[/] {printable(r.metric)}: {printable(r.error or '')}")


def print_alignment(console: Console, report: MetaEvalReport) -> None:
    """Each scoring method's correlations with the human scores: pooled, then summary-level."""
    pooled = _alignment_table(f"Agreement with {printable(report.human)}, pooled", ["items", "errored"])
    for m in report.methods:
        c = m.pooled
        pooled.add_row(printable(m.method), str(c.items), str(m.errored), *_coefficients(c))
    print_table(console, pooled)
    group = printable(report.group or "")
    if report.group is not None:
        summary = _alignment_table(f"Summary-level, per {group}", ["groups", "items"])
        for m in report.methods:
            if m.summary_level is not None:
                c = m.summary_level
                summary.add_row(printable(m.method), str(c.groups), str(c.items), *_coefficients(c))
        print_table(console, summary)
    print_line(  # one line: it names the data file, whose path may be long
        console,
        f"{report.records} records of {printable(report.data)}, metric {printable(report.metric)}. "
        "r: Pearson, ρ: Spearman (95%: bootstrap interval), τ: Kendall τ-b."
        + (f" Summary-level: correlated within each {group}, averaged over those with 2+ "
           "items where neither side is constant." if report.group is not None else ""),
    )
    correlations = [c for m in report.methods for c in (m.pooled, m.summary_level) if c is not None]
    if any(c.spearman is None for c in correlations):
        print_line(
            console,
            "-: undefined: fewer than two scored items, or the judge's or the humans' scores do "
            f"not vary{f' (summary-level: in any {group})' if report.group is not None else ''}.",
        )


def _alignment_table(title: str, counts: list[str]) -> Table:
    table = Table(title=title)
    for column in ("method", *counts, "r", "ρ", "ρ 95%", "τ"):
        table.add_column(column, justify="left" if column == "method" else "right")
    return table


def _coefficients(c: Correlations) -> list[str]:
    r, rho, tau = ("-" if v is None else f"{v:.3f}" for v in (c.pearson, c.spearman, c.kendall))
    interval = "-" if c.spearman_interval is None else "[{:.2f}, {:.2f}]".format(*c.spearman_interval)
    return [r, rho, interval, tau]


def print_item_errors(console: Console, report: MetaEvalReport, limit: int = 5) -> None:
    """The first few items each method could not score, and how many more there were."""
    for m in report.methods:
        failed = [item for item in report.items if item.method == m.method and item.error]
        for item in failed[:limit]:
            where = printable(f"{report.data}:{item.line}")
            print_line(console, f"[yellow]{where}[/] {printable(m.method)}: {printable(item.error or '')}")
        if len(failed) > limit:
            print_line(console, f"{printable(m.method)}: {len(failed) - limit} more items could not be scored")

