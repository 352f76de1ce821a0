"""The HTML report's arena section: per arena metric, the ranking and the pairwise preferences.

Read from the metric's run summary (``MetricSummary.details``, written by
:func:`localeval.metrics.arena.arena_summary`): the Bradley–Terry ranking with win
rates, a matrix of each contestant's mean preference over each other, and every
pair's P(first) in both orders, so the judge's position bias is on the page.
"""

from __future__ import annotations

from html import escape
from typing import Any

from localeval.data.results import MetricSummary, RunReport


def render_arena(report: RunReport) -> str:
    """Every arena summary of the run as an article; empty when the run had no arena."""
    return "".join(_article(s) for s in report.summary if s.details.get("pairs"))


def _article(summary: MetricSummary) -> str:
    details = summary.details
    anchor = "arena-" + "".join(c if c.isalnum() else "-" for c in summary.metric)
    bias = (
        f'<p class="bias">Mean P(first) over both orders of every pair: <b>{details["mean_p_first"]:.3f}</b> '
        f"(0.5: the judge does not care which output it reads first) · {details['cases']} cases</p>"
    )
    ranking = _ranking(details) if details.get("ranking") else (
        f'<p class="error">No ranking: {escape(str(details.get("ranking_error", "")))}</p>'
    )
    return (
        f'<article class="arena" id="{anchor}"><h3>Arena: {escape(summary.metric)}</h3>{bias}'
        f'<div class="arena-tables">{ranking}{_matrix(details)}</div>{_pairs(details)}</article>'
    )


def _ranking(details: dict[str, Any]) -> str:
    smoothing = details.get("smoothing") or 0.0
    note = f", smoothed by {smoothing:g} virtual wins a pair" if smoothing else ""
    rows = "".join(
        f'<tr><td class="n">{r["rank"]}</td><td>{escape(r["name"])}</td><td class="n">{r["strength"]:+.3f}</td>'
        f'<td class="n">{r["win_rate"]:.1%}</td><td class="n">{r["comparisons"]}</td></tr>'
        for r in details["ranking"]
    )
    return (
        f'<table class="ranking"><caption>Ranking (Bradley–Terry{note})</caption>'
        "<thead><tr><th>rank</th><th>contestant</th><th>strength</th><th>win rate</th><th>comparisons</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )


def _matrix(details: dict[str, Any]) -> str:
    """Row over column: the mean preference, read from each pair in either direction."""
    preference: dict[tuple[str, str], float] = {}
    for pair in details["pairs"]:
        preference[(pair["a"], pair["b"])] = pair["preference"]
        preference[(pair["b"], pair["a"])] = 1.0 - pair["preference"]
    names = [r["name"] for r in details.get("ranking") or []] or _names(details["pairs"])
    head = "".join(f"<th>{escape(n)}</th>" for n in names)
    rows = "".join(
        f"<tr><th>{escape(row)}</th>"
        + "".join(_cell(preference.get((row, col)), row == col) for col in names)
        + "</tr>"
        for row in names
    )
    return (
        '<table class="pairwise"><caption>Preference of the row over the column</caption>'
        f"<thead><tr><th></th>{head}</tr></thead><tbody>{rows}</tbody></table>"
    )


def _cell(value: float | None, diagonal: bool) -> str:
    if diagonal or value is None:
        return '<td class="n none">–</td>'
    side = "win" if value > 0.5 else "loss" if value < 0.5 else "tie"
    return f'<td class="n {side}">{value:.3f}</td>'


def _pairs(details: dict[str, Any]) -> str:
    rows = "".join(
        f'<tr><td>{escape(p["a"])}</td><td>{escape(p["b"])}</td><td class="n">{p["cases"]}</td>'
        f'<td class="n">{p["preference"]:.3f}</td><td class="n">{p["p_first"][0]:.3f}</td>'
        f'<td class="n">{p["p_first"][1]:.3f}</td></tr>'
        for p in details["pairs"]
    )
    return (
        '<details class="pairs"><summary>every pair, both orders</summary><table class="pairs">'
        "<thead><tr><th>A</th><th>B</th><th>cases</th><th>preference for A</th>"
        "<th>P(first), A first</th><th>P(first), B first</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></details>"
    )


def _names(pairs: list[dict[str, Any]]) -> list[str]:
    names: list[str] = []
    for pair in pairs:
        names += [n for n in (pair["a"], pair["b"]) if n not in names]
    return names
