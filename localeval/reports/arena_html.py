"""The HTML report's arena section: per arena metric, what it found and the cases it found it on.

Read from the metric's run summary (``MetricSummary.details``, written by
:func:`localeval.metrics.arena.arena_summary`) and its results: the ranking, each
contestant's Bradley–Terry strength and win rate with their 95% intervals; every
pair's verdict (one better, or no significant difference); a matrix of each
contestant's mean preference over each other; every pair's P(first) in both
orders, so the judge's position bias is on the page; and each case, its input and
the contestants' outputs side by side under the case's outcome. Every text from a
case or a name is escaped.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from localeval.data.results import CaseResult, MetricResult, MetricSummary, RunReport
from localeval.reports.arena_figures import record_text, strength_text, win_rate_text

#: The case's fields the page shows above the outputs (the outputs are the contestants).
_HIDDEN = ("contestants", "actual_output", "metadata", "name")


def render_arena(report: RunReport) -> str:
    """Every arena summary of the run as an article; empty when the run had no arena."""
    return "".join(_article(s, report.cases) for s in report.summary if s.details.get("pairs"))


def _article(summary: MetricSummary, cases: list[CaseResult]) -> str:
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
        f'<div class="arena-tables">{ranking}{_verdicts(details)}{_matrix(details)}</div>{_pairs(details)}'
        f"{_cases(summary.metric, cases)}</article>"
    )


def _ranking(details: dict[str, Any]) -> str:
    smoothing = details.get("smoothing") or 0.0
    note = f", smoothed by {smoothing:g} virtual wins a pair" if smoothing else ""
    rows = "".join(
        f'<tr><td class="n">{r["rank"]}</td><td>{escape(r["name"])}</td><td class="n">{strength_text(r)}</td>'
        f'<td class="n">{win_rate_text(r)}</td><td class="n">{record_text(r)}</td></tr>'
        for r in details["ranking"]
    )
    return (
        f'<table class="ranking"><caption>Ranking (Bradley–Terry{note}), 95% intervals</caption>'
        "<thead><tr><th>rank</th><th>contestant</th><th>strength</th><th>win rate (a tie is half)</th>"
        "<th>won / tied / lost</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )


def _verdicts(details: dict[str, Any]) -> str:
    """Each pair: who was preferred how often, A's win rate with its interval, and the verdict."""
    rows = "".join(
        f'<tr><td>{escape(p["a"])}</td><td>{escape(p["b"])}</td><td class="n">{record_text(p)}</td>'
        f'<td class="n">{win_rate_text(p)}</td>'
        f'<td class="{"verdict better" if p.get("better") else "verdict same"}">{escape(str(p.get("verdict", "–")))}</td></tr>'
        for p in details["pairs"]
    )
    return (
        '<table class="verdicts"><caption>Verdicts: better when A\'s win rate interval excludes 50%</caption>'
        "<thead><tr><th>A</th><th>B</th><th>A preferred / tie / B preferred</th><th>A's win rate</th>"
        f"<th>verdict</th></tr></thead><tbody>{rows}</tbody></table>"
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


def _cases(metric: str, cases: list[CaseResult]) -> str:
    """Each case judged by ``metric``: its input, then the outputs side by side under its outcome."""
    found = [(case, r) for case in cases for r in case.results if r.metric == metric]
    shown = "".join(_case(case, result) for case, result in found if case.inputs.get("contestants"))
    return f'<section class="arena-cases"><h4>Cases, outputs side by side</h4>{shown}</section>' if shown else ""


def _case(case: CaseResult, result: MetricResult) -> str:
    outputs: dict[str, Any] = case.inputs["contestants"]
    preferred = result.details.get("preferred") or []
    if result.errored:
        outcome = f'<p class="outcome error">error: {escape(result.error or "")}</p>'
    else:
        word = str(result.details.get("outcome", ""))
        kind = "tie" if not preferred else "pass" if result.passed else "fail"
        outcome = f'<p class="outcome {kind}">{escape(word)} · score {result.score:.3f}{_pair_lines(result)}</p>'
    fields = "".join(
        f"<div><dt>{escape(k)}</dt><dd>{_value(v)}</dd></div>" for k, v in case.inputs.items() if k not in _HIDDEN
    )
    columns = "".join(
        f'<figure class="output{" preferred" if name in preferred else ""}">'
        f"<figcaption>{escape(name)}</figcaption>{_value(text)}</figure>"
        for name, text in outputs.items()
    )
    title = case.name or f"case {case.index + 1}"
    return (
        f'<div class="arena-case"><h5>{escape(title)}</h5>{outcome}<dl class="fields">{fields}</dl>'
        f'<div class="outputs" style="--outputs: {len(outputs)}">{columns}</div></div>'
    )


def _pair_lines(result: MetricResult) -> str:
    """With three or more contestants, each pair's outcome after the case's."""
    pairs = result.details.get("pairs") or []
    if len(pairs) < 2:
        return ""
    return "".join(f"<br>{escape(p['a'])} / {escape(p['b'])}: {escape(str(p.get('outcome', '')))}" for p in pairs)


def _value(value: Any) -> str:
    if isinstance(value, str):
        return f'<div class="text">{escape(value)}</div>'
    return f'<pre class="json">{escape(json.dumps(value, indent=2, ensure_ascii=False, default=str))}</pre>'


def _names(pairs: list[dict[str, Any]]) -> list[str]:
    names: list[str] = []
    for pair in pairs:
        names += [n for n in (pair["a"], pair["b"]) if n not in names]
    return names
